// Shared pieces of the quantizer tests: seeds, host tensor views, a context, and a plain
// reference quantizer written from the definition (one loop per descale slice, no work units).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#include "lib/quantize/hadamard_rotation.hpp"
#include "tests/common/host_api_support.hpp"

namespace fp8attn::quant::testing {

using api_testing::Context;
using api_testing::make_tensor;
using api_testing::test_seed;

inline fp8attn_quantize_options options(int32_t granularity, int32_t block_rows, bool rotate, uint64_t seed,
                                        int32_t margin = 0, int32_t head_group = 0, int32_t leading_rows = 0) {
  fp8attn_quantize_options o{};
  o.struct_size = sizeof o;
  o.granularity = granularity;
  o.block_rows = block_rows;
  o.rotate = rotate ? 1u : 0u;
  o.seed = seed;
  o.margin = margin;
  o.head_group = head_group;
  o.leading_rows = leading_rows;
  return o;
}

/// Logical rows of one problem: values[((b·seqlen + s)·heads + h)·d + e] for the padded
/// layout, or rows of a packed layout (b ignored; seq = packed row) with cu_seqlens.
struct Rows {
  int64_t batch, seqlen, heads, dim;  // packed: batch = sequences, seqlen = total rows
  std::vector<int32_t> cu_seqlens;    // empty when padded
  std::vector<float> values;          // real values, already representable in the input dtype
  int64_t first_row(int64_t b) const { return cu_seqlens.empty() ? b * seqlen : cu_seqlens[b]; }
  int64_t rows(int64_t b) const { return cu_seqlens.empty() ? seqlen : cu_seqlens[b + 1] - cu_seqlens[b]; }
  int64_t max_rows() const {
    int64_t m = 0;
    for (int64_t b = 0; b < batch; ++b) m = std::max(m, rows(b));
    return m;
  }
  const float* row(int64_t global_row, int64_t h) const { return &values[(global_row * heads + h) * dim]; }
};

/// Outlier-heavy values (FlashAttention-3's N(0,1) + N(0,100)·Bernoulli(0.001), with the
/// Bernoulli raised to 0.01 so small tests see outliers), rounded to BF16 when `bf16`.
inline std::vector<float> outlier_values(size_t n, uint64_t seed, bool bf16) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> base(0.0f, 1.0f), outlier(0.0f, 10.0f);
  std::bernoulli_distribution rare(0.01);
  std::vector<float> v(n);
  for (float& x : v) {
    x = base(rng) + (rare(rng) ? outlier(rng) : 0.0f);
    if (bf16) x = num::round_to_bf16(x);
  }
  return v;
}

/// Per-block descales, from the definition: blocks of block_rows from row 0, or, with L leading
/// rows, rows [0, L) and then blocks of block_rows.
inline int64_t block_of_row(int64_t s, const fp8attn_quantize_options& o) {
  if (o.leading_rows == 0) return s / o.block_rows;
  return s < o.leading_rows ? 0 : 1 + (s - o.leading_rows) / o.block_rows;
}
inline int64_t per_block_count(int64_t max_rows, const fp8attn_quantize_options& o) {
  if (o.leading_rows == 0) return (max_rows + o.block_rows - 1) / o.block_rows;
  return 1 + (std::max<int64_t>(0, max_rows - o.leading_rows) + o.block_rows - 1) / o.block_rows;
}

/// The expected result of fp8attn_quantize, from the definition: per descale slice, rotate
/// each row (kernel order), take the amax, scale = ldexp(448 / amax, −margin) (1 when amax is
/// 0), cast with float_to_e4m3. Output and descales in the logical layouts: bytes like
/// Rows::values, descales [batch][groups][blocks] (per-tensor: one; per-head: blocks = 1).
struct Expected {
  std::vector<uint8_t> bytes;
  std::vector<float> descale;
  float amax = 0.0f;
};
inline Expected reference_quantize(const Rows& r, const fp8attn_quantize_options& o) {
  const int log2_d = exact_log2(r.dim);
  const int64_t group = o.head_group == 0 ? 1 : o.head_group;
  const int64_t groups = r.heads / group;
  const int64_t blocks = o.granularity == FP8ATTN_QUANT_PER_BLOCK ? per_block_count(r.max_rows(), o) : 1;
  // The transformed values, row by row.
  std::vector<float> x(r.values.size());
  for (size_t i = 0; i < x.size(); i += static_cast<size_t>(r.dim)) {
    std::copy_n(&r.values[i], r.dim, &x[i]);
    if (o.rotate) rotate_row(&x[i], log2_d, o.seed);
  }
  // Which descale slot each (sequence, row, head) uses.
  auto slot = [&](int64_t b, int64_t s, int64_t h) -> int64_t {
    if (o.granularity == FP8ATTN_QUANT_PER_TENSOR) return 0;
    const int64_t blk = o.granularity == FP8ATTN_QUANT_PER_BLOCK ? block_of_row(s, o) : 0;
    return (b * groups + h / group) * blocks + blk;
  };
  const int64_t slots = o.granularity == FP8ATTN_QUANT_PER_TENSOR ? 1 : r.batch * groups * blocks;
  std::vector<float> amax(static_cast<size_t>(slots), 0.0f);
  Expected e;
  for (int64_t b = 0; b < r.batch; ++b)
    for (int64_t s = 0; s < r.rows(b); ++s)
      for (int64_t h = 0; h < r.heads; ++h)
        for (int64_t k = 0; k < r.dim; ++k) {
          const float a = std::fabs(x[((r.first_row(b) + s) * r.heads + h) * r.dim + k]);
          amax[slot(b, s, h)] = std::max(amax[slot(b, s, h)], a);
          e.amax = std::max(e.amax, a);
        }
  std::vector<float> scale(amax.size());
  e.descale.resize(amax.size());
  for (size_t i = 0; i < amax.size(); ++i) {
    scale[i] = amax[i] > 0.0f ? std::ldexp(448.0f / amax[i], -o.margin) : 1.0f;
    e.descale[i] = 1.0f / scale[i];
  }
  e.bytes.resize(x.size());
  for (int64_t b = 0; b < r.batch; ++b)
    for (int64_t s = 0; s < r.rows(b); ++s)
      for (int64_t h = 0; h < r.heads; ++h)
        for (int64_t k = 0; k < r.dim; ++k) {
          const size_t i = static_cast<size_t>(((r.first_row(b) + s) * r.heads + h) * r.dim + k);
          e.bytes[i] = num::float_to_e4m3(x[i] * scale[slot(b, s, h)]);
        }
  return e;
}

}  // namespace fp8attn::quant::testing
