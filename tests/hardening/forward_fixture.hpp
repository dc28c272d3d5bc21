// A small padded E4M3 forward problem through the C ABI, for the hardening tests: random
// E4M3 inputs (no NaN codes), F32 output poisoned before each call, its own context and plan.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tests/hardening/hardening_support.hpp"

namespace fp8attn::test {

struct ForwardFixture {
  fp8attn_context ctx = nullptr;
  fp8attn_plan plan = nullptr;
  int64_t batch, seqlen_q, seqlen_k;
  static constexpr int64_t kHeadDim = 64;
  std::vector<uint8_t> q, k, v;
  std::vector<float> out;
  fp8attn_attention_args args{};

  ForwardFixture(int64_t b, int64_t sq, int64_t sk, uint64_t seed) : batch(b), seqlen_q(sq), seqlen_k(sk) {
    ctx = make_cpu_context(2);
    fp8attn_attention_desc d{};
    d.struct_size = sizeof d;
    fp8attn_attention_desc_init(&d);
    d.head_dim = static_cast<int32_t>(kHeadDim);
    d.output_dtype = FP8ATTN_DTYPE_F32;
    if (ctx) fp8attn_plan_create(ctx, &d, &plan, nullptr);
    std::mt19937_64 rng(seed);
    auto fill = [&](std::vector<uint8_t>& x, int64_t rows) {
      // NOTE: at least one row, so that an empty tensor still has a non-NULL data pointer.
      x.resize(static_cast<size_t>(std::max<int64_t>(rows, 1) * kHeadDim));
      // E4M3 codes with |x| ≤ 0.5 (exponent field ≤ 6): no NaN code, no overflow in Q·K.
      for (auto& e : x) e = static_cast<uint8_t>((rng() % 0x38) | ((rng() & 1) << 7));
    };
    fill(q, b * sq);
    fill(k, b * sk);
    fill(v, b * sk);
    out.assign(static_cast<size_t>(std::max<int64_t>(b * sq, 1) * kHeadDim), -777.0f);
    args.struct_size = sizeof args;
    args.q = host_tensor(q.data(), FP8ATTN_DTYPE_E4M3, {b, sq, 1, kHeadDim}, dense_strides({b, sq, 1, kHeadDim}));
    args.k = host_tensor(k.data(), FP8ATTN_DTYPE_E4M3, {b, sk, 1, kHeadDim}, dense_strides({b, sk, 1, kHeadDim}));
    args.v = host_tensor(v.data(), FP8ATTN_DTYPE_E4M3, {b, sk, 1, kHeadDim}, dense_strides({b, sk, 1, kHeadDim}));
    args.out = host_tensor(out.data(), FP8ATTN_DTYPE_F32, {b, sq, 1, kHeadDim}, dense_strides({b, sq, 1, kHeadDim}));
  }
  ~ForwardFixture() {
    fp8attn_plan_destroy(plan);
    fp8attn_context_destroy(ctx);
  }
  bool ready() const { return plan != nullptr; }

  /// Queries the workspace for (batch, seqlen_q, seqlen_k), allocates it and runs the forward.
  int32_t run(fp8attn_error* err) {
    size_t bytes = 0;
    const int32_t s =
        fp8attn_plan_workspace_size(plan, batch, seqlen_q > 0 ? seqlen_q : 1, seqlen_k > 0 ? seqlen_k : 1, &bytes, err);
    if (s != FP8ATTN_OK) return s;
    workspace.assign(bytes, 0);
    return fp8attn_attention_forward(plan, &args, workspace.data(), workspace.size(), nullptr, err);
  }
  std::vector<unsigned char> workspace;
};

/// True when every element of `x` still holds the poison value.
inline bool all_poison(const std::vector<float>& x, float poison = -777.0f) {
  for (float e : x)
    if (std::memcmp(&e, &poison, sizeof e) != 0) return false;
  return true;
}

}  // namespace fp8attn::test
