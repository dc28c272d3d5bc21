// Shared by the training-output tests: a context, a plan, E4M3 inputs drawn from
// N(0, σ) and quantized with a given scale, and forward calls through the public C API.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "tools/common/host_tensor.hpp"
#include "kernels/numerics/float8.hpp"

namespace fp8attn::training_test {

struct Shape {
  int64_t batch = 2, seqlen_q = 70, seqlen_k = 90;
  int heads_q = 4, heads_kv = 2, head_dim = 64;
  int64_t q_elems() const { return batch * seqlen_q * heads_q * head_dim; }
  int64_t kv_elems() const { return batch * seqlen_k * heads_kv * head_dim; }
};

inline fp8attn_tensor tensor(void* data, int32_t dtype, std::initializer_list<int64_t> shape) {
  return workloads::dense_host_tensor(data, dtype, std::vector<int64_t>(shape));
}

/// A per-tensor descale as a stride-0 F32 [batch, heads_kv] tensor.
inline fp8attn_tensor broadcast_descale(const float* value, const Shape& s) {
  fp8attn_tensor t = tensor(const_cast<float*>(value), FP8ATTN_DTYPE_F32, {s.batch, s.heads_kv});
  t.stride[0] = t.stride[1] = 0;
  return t;
}

inline fp8attn_context make_context(int32_t backend = FP8ATTN_BACKEND_CPU, int threads = 2) {
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = backend;
  o.num_threads = threads;
  o.log_level = FP8ATTN_LOG_OFF;
  fp8attn_context ctx = nullptr;
  EXPECT_EQ(fp8attn_context_create(&o, &ctx, nullptr), FP8ATTN_OK);
  return ctx;
}

inline fp8attn_attention_desc make_desc(const Shape& s, int32_t output_dtype, bool telemetry = false, bool causal = false) {
  fp8attn_attention_desc d{};
  d.struct_size = sizeof d;
  EXPECT_EQ(fp8attn_attention_desc_init(&d), FP8ATTN_OK);
  d.output_dtype = output_dtype;
  d.head_dim = s.head_dim;
  d.num_heads_q = s.heads_q;
  d.num_heads_kv = s.heads_kv;
  d.telemetry = telemetry ? 1u : 0u;
  d.causal = causal ? 1u : 0u;
  return d;
}

/// N(0, σ) values quantized to E4M3 with `scale` (x·scale, round to nearest even, saturating),
/// and the amax of the unquantized values.
struct Quantized {
  std::vector<uint8_t> bits;
  float amax = 0.0f;
};

inline Quantized draw_e4m3(int64_t n, float sigma, float scale, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, sigma);
  Quantized q;
  q.bits.resize(static_cast<size_t>(n));
  for (auto& b : q.bits) {
    const float x = normal(rng);
    q.amax = std::fmax(q.amax, std::fabs(x));
    b = num::float_to_e4m3(x * scale);
  }
  return q;
}

struct Inputs {
  std::vector<uint8_t> q, k, v;
};

inline Inputs random_inputs(const Shape& s, std::mt19937_64& rng, float sigma = 1.0f, float scale = 1.0f) {
  return {draw_e4m3(s.q_elems(), sigma, scale, rng).bits, draw_e4m3(s.kv_elems(), sigma, scale, rng).bits,
          draw_e4m3(s.kv_elems(), sigma, scale, rng).bits};
}

/// Arguments over `in` and an output buffer of `out_dtype` (caller-owned, poisoned by the caller).
inline fp8attn_attention_args make_args(const Shape& s, Inputs& in, void* out, int32_t out_dtype) {
  fp8attn_attention_args a{};
  a.struct_size = sizeof a;
  a.q = tensor(in.q.data(), FP8ATTN_DTYPE_E4M3, {s.batch, s.seqlen_q, s.heads_q, s.head_dim});
  a.k = tensor(in.k.data(), FP8ATTN_DTYPE_E4M3, {s.batch, s.seqlen_k, s.heads_kv, s.head_dim});
  a.v = tensor(in.v.data(), FP8ATTN_DTYPE_E4M3, {s.batch, s.seqlen_k, s.heads_kv, s.head_dim});
  a.out = tensor(out, out_dtype, {s.batch, s.seqlen_q, s.heads_q, s.head_dim});
  return a;
}

/// A plan with its workspace, destroyed at scope end.
struct PlanFixture {
  fp8attn_plan plan = nullptr;
  std::vector<unsigned char> workspace;
  PlanFixture(fp8attn_context ctx, const fp8attn_attention_desc& desc, const Shape& s) {
    EXPECT_EQ(fp8attn_plan_create(ctx, &desc, &plan, nullptr), FP8ATTN_OK);
    size_t bytes = 0;
    if (plan) {
      EXPECT_EQ(fp8attn_plan_workspace_size(plan, s.batch, s.seqlen_q, s.seqlen_k, &bytes, nullptr), FP8ATTN_OK);
    }
    workspace.resize(bytes == 0 ? 1 : bytes);
  }
  ~PlanFixture() { fp8attn_plan_destroy(plan); }
  int32_t run(const fp8attn_attention_args& a, fp8attn_error* err = nullptr) {
    return fp8attn_attention_forward(plan, &a, workspace.data(), workspace.size(), nullptr, err);
  }
};

inline fp8attn_error make_error() {
  fp8attn_error e{};
  e.struct_size = sizeof e;
  return e;
}

inline std::vector<uint8_t> serialize(fp8attn_scale_state state) {
  size_t size = 0;
  EXPECT_EQ(fp8attn_scale_state_serialize(state, nullptr, 0, &size, nullptr), FP8ATTN_OK);
  std::vector<uint8_t> blob(size, 0xCD);
  size_t written = 0;
  EXPECT_EQ(fp8attn_scale_state_serialize(state, blob.data(), blob.size(), &written, nullptr), FP8ATTN_OK);
  return blob;
}

inline float max_abs(const std::vector<float>& x) {
  float m = 0.0f;
  for (float v : x) m = std::fmax(m, std::fabs(v));
  return m;
}

}  // namespace fp8attn::training_test
