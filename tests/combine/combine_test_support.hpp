// Shared by the combine tests: strided host tensors for the four arguments of
// fp8attn_attention_combine, fresh random partials, an independent FP64 merge, and a runner
// that poisons the outputs before the call.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "kernels/numerics/bfloat16.hpp"

namespace fp8attn::combine_testing {

/// A host tensor of rank ≤ 4 stored in a byte vector. `order` lists the dims from the outermost
/// to the innermost in memory; `pad` extra elements follow each innermost row.
struct HostTensor {
  int32_t dtype = FP8ATTN_DTYPE_F32;
  std::vector<int64_t> shape, stride;
  std::vector<uint8_t> bytes;

  HostTensor() = default;
  HostTensor(int32_t dt, std::vector<int64_t> dims, std::vector<int> order = {}, int64_t pad = 0)
      : dtype(dt), shape(std::move(dims)) {
    const int rank = static_cast<int>(shape.size());
    if (order.empty())
      for (int i = 0; i < rank; ++i) order.push_back(i);
    stride.assign(rank, 0);
    int64_t step = 1;
    for (int i = rank - 1; i >= 0; --i) {
      stride[order[i]] = step;
      step *= shape[order[i]] + (i == rank - 1 ? pad : 0);
    }
    bytes.assign(static_cast<size_t>(std::max<int64_t>(step, 1) * elem()), 0xFF);  // NaN poison
  }
  int64_t elem() const { return dtype == FP8ATTN_DTYPE_BF16 ? 2 : 4; }
  int64_t offset(std::array<int64_t, 4> i) const {
    int64_t o = 0;
    for (size_t d = 0; d < shape.size(); ++d) o += i[d] * stride[d];
    return o;
  }
  float get(std::array<int64_t, 4> i) const {
    const int64_t o = offset(i);
    if (dtype == FP8ATTN_DTYPE_BF16) {
      uint16_t b;
      std::memcpy(&b, &bytes[o * 2], 2);
      return num::bf16_to_float(b);
    }
    float f;
    std::memcpy(&f, &bytes[o * 4], 4);
    return f;
  }
  void set(std::array<int64_t, 4> i, float v) {
    const int64_t o = offset(i);
    if (dtype == FP8ATTN_DTYPE_BF16) {
      const uint16_t b = num::float_to_bf16(v);
      std::memcpy(&bytes[o * 2], &b, 2);
    } else {
      std::memcpy(&bytes[o * 4], &v, 4);
    }
  }
  void poison() { std::fill(bytes.begin(), bytes.end(), uint8_t{0xFF}); }
  fp8attn_tensor view() {
    fp8attn_tensor t{};
    t.struct_size = sizeof t;
    t.data = bytes.data();
    t.dtype = dtype;
    t.device = FP8ATTN_DEVICE_HOST;
    t.rank = static_cast<int32_t>(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) t.shape[d] = shape[d], t.stride[d] = stride[d];
    return t;
  }
};

struct Layout {
  int32_t o_dtype = FP8ATTN_DTYPE_F32, out_dtype = FP8ATTN_DTYPE_F32;
  std::vector<int> po_order, pl_order, out_order, lse_order;  // empty: dense
  int64_t pad = 0;
  bool with_lse = true;
};

/// The four tensors of one call, with fresh random partials: O_p ~ N(0,1), lse_p ~ N(0, lse_sd²)
/// + lse_shift, and each part empty (−inf, its O poisoned with NaN) with probability
/// empty_fraction; rows listed in `all_empty` have every part empty.
struct Problem {
  int64_t parts, tokens, heads, dim;
  HostTensor po, pl, out, lse;
  Layout layout;

  Problem(int64_t p, int64_t t, int64_t h, int64_t d, const Layout& l)
      : parts(p), tokens(t), heads(h), dim(d),
        po(l.o_dtype, {p, t, h, d}, l.po_order, l.pad), pl(FP8ATTN_DTYPE_F32, {p, t, h}, l.pl_order, l.pad),
        out(l.out_dtype, {t, h, d}, l.out_order, l.pad), lse(FP8ATTN_DTYPE_F32, {t, h}, l.lse_order, l.pad), layout(l) {}

  void fill(uint64_t seed, double lse_sd = 3.0, double lse_shift = 0.0, double empty_fraction = 0.0,
            const std::vector<int64_t>& all_empty_rows = {}) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    for (int64_t p = 0; p < parts; ++p)
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t row = t * heads + h;
          const bool empty = uniform(rng) < empty_fraction ||
                             std::find(all_empty_rows.begin(), all_empty_rows.end(), row) != all_empty_rows.end();
          pl.set({p, t, h, 0}, empty ? -INFINITY : static_cast<float>(lse_shift + lse_sd * normal(rng)));
          for (int64_t e = 0; e < dim; ++e) po.set({p, t, h, e}, empty ? NAN : normal(rng));
        }
  }

  fp8attn_combine_args args() {
    fp8attn_combine_args a{};
    a.struct_size = sizeof a;
    a.partial_out = po.view();
    a.partial_lse = pl.view();
    a.out = out.view();
    if (layout.with_lse) a.lse = lse.view();
    return a;
  }
};

/// The merge in FP64, written from its definition (not the library's): out = Σ exp(lse_p − lse)·O_p
/// over parts with a finite LSE, lse = log Σ exp(lse_p).
struct Fp64Merge {
  std::vector<double> out, lse;  // [t, h, e], [t, h]
};
inline Fp64Merge fp64_merge(const Problem& pr) {
  Fp64Merge r;
  r.out.assign(static_cast<size_t>(pr.tokens * pr.heads * pr.dim), 0.0);
  r.lse.assign(static_cast<size_t>(pr.tokens * pr.heads), -INFINITY);
  for (int64_t t = 0; t < pr.tokens; ++t)
    for (int64_t h = 0; h < pr.heads; ++h) {
      double m = -INFINITY;
      for (int64_t p = 0; p < pr.parts; ++p) m = std::max(m, static_cast<double>(pr.pl.get({p, t, h, 0})));
      if (m == -INFINITY) continue;
      double s = 0.0;
      for (int64_t p = 0; p < pr.parts; ++p) s += std::exp(pr.pl.get({p, t, h, 0}) - m);
      const double lse = m + std::log(s);
      r.lse[t * pr.heads + h] = lse;
      for (int64_t p = 0; p < pr.parts; ++p) {
        const double x = pr.pl.get({p, t, h, 0});
        if (x == -INFINITY) continue;
        for (int64_t e = 0; e < pr.dim; ++e) r.out[(t * pr.heads + h) * pr.dim + e] += std::exp(x - lse) * pr.po.get({p, t, h, e});
      }
    }
  return r;
}

inline fp8attn_context make_context(int32_t backend, int threads = 2) {
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = backend;
  o.num_threads = threads;
  fp8attn_context ctx = nullptr;
  EXPECT_EQ(fp8attn_context_create(&o, &ctx, nullptr), FP8ATTN_OK);
  return ctx;
}

/// Poisons the outputs, then runs the call with the queried workspace; returns the status.
inline int32_t run_combine(fp8attn_context ctx, Problem& pr, std::string* message = nullptr) {
  pr.out.poison();
  pr.lse.poison();
  fp8attn_error err{};
  err.struct_size = sizeof err;
  fp8attn_combine_args a = pr.args();
  size_t bytes = 0;
  int32_t status = fp8attn_attention_combine_workspace_size(ctx, &a, &bytes, &err);
  if (status != FP8ATTN_OK) {
    if (message) *message = err.message;
    return status;
  }
  std::vector<uint8_t> ws(bytes + 1);
  status = fp8attn_attention_combine(ctx, &a, ws.data(), bytes, nullptr, &err);
  if (message) *message = err.message;
  return status;
}

}  // namespace fp8attn::combine_testing
