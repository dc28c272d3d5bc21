// Shared by the tests of the call contract at its edges (extreme scales, empty tensors, the
// single-key backward, descales on BF16 inputs): small padded problems through the C ABI on each
// host-memory backend (CPU engine, FP64 reference, emulated Hopper kernels), with fresh random
// inputs and outputs poisoned before every call.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#include "tools/common/fresh_seed.hpp"
#include "tools/common/host_tensor.hpp"

namespace fp8attn::contract_test {

using workloads::dense_host_tensor;

inline const char* backend_name(int32_t b) {
  switch (b) {
    case FP8ATTN_BACKEND_CPU: return "cpu";
    case FP8ATTN_BACKEND_REFERENCE: return "reference";
    case FP8ATTN_BACKEND_EMULATOR: return "emulator";
    default: return "?";
  }
}

inline constexpr int32_t kHostBackends[] = {FP8ATTN_BACKEND_CPU, FP8ATTN_BACKEND_REFERENCE, FP8ATTN_BACKEND_EMULATOR};

inline uint64_t announced_seed() {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  return seed;
}

/// A context and a plan; destroyed together.
struct Planned {
  fp8attn_context ctx = nullptr;
  fp8attn_plan plan = nullptr;
  Planned(int32_t backend, const fp8attn_attention_desc& d) {
    fp8attn_context_options o{};
    o.struct_size = sizeof o;
    o.backend = backend;
    o.num_threads = 2;
    EXPECT_EQ(fp8attn_context_create(&o, &ctx, nullptr), FP8ATTN_OK);
    if (ctx) {
      EXPECT_EQ(fp8attn_plan_create(ctx, &d, &plan, nullptr), FP8ATTN_OK);
    }
  }
  ~Planned() {
    fp8attn_plan_destroy(plan);
    fp8attn_context_destroy(ctx);
  }
  Planned(const Planned&) = delete;
  Planned& operator=(const Planned&) = delete;
};

inline fp8attn_attention_desc make_desc(int32_t input, int32_t output, int head_dim, int heads = 2) {
  fp8attn_attention_desc d{};
  d.struct_size = sizeof d;
  fp8attn_attention_desc_init(&d);
  d.input_dtype = input;
  d.output_dtype = output;
  d.head_dim = head_dim;
  d.head_dim_v = head_dim;
  d.num_heads_q = d.num_heads_kv = heads;
  return d;
}

inline fp8attn_error fresh_error() {
  fp8attn_error e{};
  e.struct_size = sizeof e;
  return e;
}

/// E4M3 codes of N(0, 1) values: never a NaN code.
inline std::vector<uint8_t> random_e4m3(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint8_t> x(n);
  for (auto& e : x) e = num::float_to_e4m3(normal(rng));
  return x;
}

/// BF16 codes of N(0, stddev²) values.
inline std::vector<uint16_t> random_bf16(size_t n, std::mt19937_64& rng, float stddev = 1.0f) {
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<uint16_t> x(n);
  for (auto& e : x) e = num::float_to_bf16(normal(rng));
  return x;
}

inline constexpr float kPoison = -777.0f;

inline bool untouched(const std::vector<float>& x) {
  for (float e : x)
    if (std::memcmp(&e, &kPoison, sizeof e) != 0) return false;
  return true;
}

/// A padded forward problem [batch, seqlen, heads, head_dim] with heads_q = heads_kv = `heads`:
/// random inputs of `input` dtype, an F32 output and LSE, both poisoned.
struct ForwardCall {
  int64_t batch, seqlen_q, seqlen_k;
  int heads, head_dim;
  int32_t input;
  std::vector<uint8_t> q8, k8, v8;
  std::vector<uint16_t> q16, k16, v16;
  std::vector<float> out, lse;
  fp8attn_attention_args args{};

  ForwardCall(int32_t input_dtype, int64_t b, int64_t sq, int64_t sk, int h, int d, uint64_t seed,
              float bf16_stddev = 1.0f)
      : batch(b), seqlen_q(sq), seqlen_k(sk), heads(h), head_dim(d), input(input_dtype) {
    std::mt19937_64 rng(seed);
    const size_t nq = static_cast<size_t>(b * sq * h * d), nk = static_cast<size_t>(b * sk * h * d);
    void *q, *k, *v;
    if (input == FP8ATTN_DTYPE_E4M3) {
      q8 = random_e4m3(nq, rng), k8 = random_e4m3(nk, rng), v8 = random_e4m3(nk, rng);
      q = q8.data(), k = k8.data(), v = v8.data();
    } else {
      q16 = random_bf16(nq, rng, bf16_stddev), k16 = random_bf16(nk, rng, bf16_stddev), v16 = random_bf16(nk, rng);
      q = q16.data(), k = k16.data(), v = v16.data();
    }
    out.assign(nq, kPoison);
    lse.assign(static_cast<size_t>(b * h * sq), kPoison);
    args.struct_size = sizeof args;
    args.q = dense_host_tensor(q, input, {b, sq, h, d});
    args.k = dense_host_tensor(k, input, {b, sk, h, d});
    args.v = dense_host_tensor(v, input, {b, sk, h, d});
    args.out = dense_host_tensor(out.data(), FP8ATTN_DTYPE_F32, {b, sq, h, d});
    args.lse = dense_host_tensor(lse.data(), FP8ATTN_DTYPE_F32, {b, h, sq});
  }

  void poison() {
    std::fill(out.begin(), out.end(), kPoison);
    std::fill(lse.begin(), lse.end(), kPoison);
  }

  /// Queries the workspace, allocates it and runs the forward.
  int32_t run(fp8attn_plan plan, fp8attn_error* err) {
    size_t bytes = 0;
    const int32_t s = fp8attn_plan_workspace_size(plan, batch, seqlen_q, seqlen_k, &bytes, err);
    if (s != FP8ATTN_OK) return s;
    std::vector<unsigned char> workspace(bytes + 1, 0xA5);
    return fp8attn_attention_forward(plan, &args, workspace.data(), bytes, nullptr, err);
  }
};

/// A stride-0 F32 descale [batch, heads] holding one value.
struct BroadcastDescale {
  float value;
  explicit BroadcastDescale(float v) : value(v) {}
  fp8attn_tensor tensor(int64_t batch, int heads) {
    fp8attn_tensor t = dense_host_tensor(&value, FP8ATTN_DTYPE_F32, {batch, heads});
    t.stride[0] = t.stride[1] = 0;
    return t;
  }
};

}  // namespace fp8attn::contract_test
