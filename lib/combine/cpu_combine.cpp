#include "lib/combine/cpu_combine.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/sm90/combine/combine_math.hpp"

namespace fp8attn::combine {
namespace {

using sm90::combine::CombineParams;

/// Rows per work item: enough to amortize the pool's hand-out, few enough to balance 2..64
/// workers on a few thousand rows.
constexpr int64_t kRowsPerItem = 16;

/// Parts requested ahead of the one being added (combine_rows).
constexpr int32_t kPartsAhead = 2;

float load_o(const CombineParams& p, int64_t at) {
  return p.partial_out_bf16 ? num::bf16_to_float(static_cast<const uint16_t*>(p.partial_out)[at])
                            : static_cast<const float*>(p.partial_out)[at];
}

void store_o(const CombineParams& p, int64_t at, float value) {
  if (p.out_bf16)
    static_cast<uint16_t*>(p.out)[at] = num::float_to_bf16(value);
  else
    static_cast<float*>(p.out)[at] = value;
}

/// The weights, factors and LSE of one row, in the kernel's order of operations
/// (combine_kernel.hpp); stores the LSE.
sm90::combine::RowFactors row_weights(const CombineParams& p, int64_t t, int64_t h, float* w) {
  using namespace sm90::combine;
  float m = -INFINITY;
  for (int32_t part = 0; part < p.num_parts; ++part) m = max_lse(m, p.partial_lse[partial_lse_offset(p, part, t, h)]);
  float sum = 0.0f;
  for (int32_t part = 0; part < p.num_parts; ++part) {
    w[part] = part_weight(p.partial_lse[partial_lse_offset(p, part, t, h)], m);
    sum = arch::add_rn(sum, w[part]);
  }
  const RowFactors f = row_factors(m, sum);
  if (p.lse != nullptr) p.lse[lse_offset(p, t, h)] = f.lse;
  return f;
}

/// Rows [r0, r0 + rows) (rows ≤ kRowsPerItem), in the kernel's order of operations per element:
/// out[e] = Σ over the parts in index order of (w_p · scale) · O_p[e], from +0.
/// NOTE: parts outer, then rows, then elements: each part's rows of the item are one contiguous
/// run of its tensor (a dense layout), read while the item's sums stay in L1. Row by row with the
/// parts inner, every part was a stream of its own, and with tens of parts the hardware
/// prefetcher lost track of them. Each element still sums its parts in index order.
void combine_rows(const CombineParams& p, int64_t r0, int64_t rows) {
  using namespace sm90::combine;
  constexpr int64_t kChunk = 128;
  std::array<std::array<float, kMaxParts>, kRowsPerItem> w;
  std::array<RowFactors, kRowsPerItem> f;
  std::array<std::array<float, kChunk>, kRowsPerItem> acc;
  for (int64_t i = 0; i < rows; ++i) f[i] = row_weights(p, (r0 + i) / p.heads, (r0 + i) % p.heads, w[i].data());
  for (int64_t e0 = 0; e0 < p.head_dim; e0 += kChunk) {
    const int64_t n = p.head_dim - e0 < kChunk ? p.head_dim - e0 : kChunk;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t e = 0; e < n; ++e) acc[i][e] = 0.0f;
    const int64_t elem = p.partial_out_bf16 ? 2 : 4;
    for (int32_t part = 0; part < p.num_parts; ++part)
      for (int64_t i = 0; i < rows; ++i) {
        // NOTE: the same row of the part after next requested now: each part's run of the item is
        // a few KiB, too short for the hardware prefetcher to ramp up before the next part's.
        // Contiguous rows only: a strided row's elements would each be a request of their own.
        if (p.po_stride[3] == 1 && part + kPartsAhead < p.num_parts && w[i][part + kPartsAhead] != 0.0f) {
          const char* ahead = static_cast<const char*>(p.partial_out) +
                              elem * partial_out_offset(p, part + kPartsAhead, (r0 + i) / p.heads, (r0 + i) % p.heads, e0);
          for (int64_t b = 0; b < n * elem; b += 64) __builtin_prefetch(ahead + b);
        }
        if (w[i][part] == 0.0f) continue;
        const int64_t base = partial_out_offset(p, part, (r0 + i) / p.heads, (r0 + i) % p.heads, e0);
        const float weight = w[i][part], scale = f[i].scale;
        float* a = acc[i].data();
        // NOTE: the dtype and a contiguous row are decided once per part, so the common loops
        // (F32 or BF16, unit stride) vectorize; each element's operations are the same in all four.
        auto run = [&](auto&& load) {
          for (int64_t e = 0; e < n; ++e) a[e] = accumulate_part(a[e], weight, scale, load(e));
        };
        const int64_t step = p.po_stride[3];
        if (p.partial_out_bf16) {
          const uint16_t* row = static_cast<const uint16_t*>(p.partial_out) + base;
          if (step == 1)
            run([&](int64_t e) { return num::bf16_to_float(row[e]); });
          else
            run([&](int64_t e) { return num::bf16_to_float(row[e * step]); });
        } else {
          const float* row = static_cast<const float*>(p.partial_out) + base;
          if (step == 1)
            run([&](int64_t e) { return row[e]; });
          else
            run([&](int64_t e) { return row[e * step]; });
        }
      }
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t t = (r0 + i) / p.heads, h = (r0 + i) % p.heads;
      for (int64_t e = 0; e < n; ++e) store_o(p, out_offset(p, t, h, e0 + e), finish_out(acc[i][e], f[i].scale));
    }
  }
}

void reference_row(const CombineParams& p, int64_t t, int64_t h) {
  using namespace sm90::combine;
  double m = -INFINITY;
  bool poison = false;
  for (int32_t part = 0; part < p.num_parts; ++part) {
    const double x = p.partial_lse[partial_lse_offset(p, part, t, h)];
    poison = poison || std::isnan(x) || x == INFINITY;
    m = x > m ? x : m;
  }
  double sum = 0.0;
  if (!poison && m != -INFINITY)
    for (int32_t part = 0; part < p.num_parts; ++part)
      sum += std::exp(static_cast<double>(p.partial_lse[partial_lse_offset(p, part, t, h)]) - m);
  const double lse = poison ? NAN : (m == -INFINITY ? -INFINITY : m + std::log(sum));
  if (p.lse != nullptr) p.lse[lse_offset(p, t, h)] = static_cast<float>(lse);
  for (int64_t e = 0; e < p.head_dim; ++e) {
    double acc = poison ? NAN : 0.0;
    if (!poison && m != -INFINITY)
      for (int32_t part = 0; part < p.num_parts; ++part) {
        const double x = p.partial_lse[partial_lse_offset(p, part, t, h)];
        if (x == -INFINITY) continue;  // an empty part's O is not read
        acc += std::exp(x - lse) * static_cast<double>(load_o(p, partial_out_offset(p, part, t, h, e)));
      }
    store_o(p, out_offset(p, t, h, e), static_cast<float>(acc));
  }
}

template <class Row>
void for_each_row(const CombineParams& p, ThreadPool& pool, Row&& row) {
  const int64_t rows = sm90::combine::row_count(p);
  if (rows == 0) return;
  pool.parallel_for((rows + kRowsPerItem - 1) / kRowsPerItem, [&](int64_t item, int) {
    const int64_t end = (item + 1) * kRowsPerItem < rows ? (item + 1) * kRowsPerItem : rows;
    for (int64_t r = item * kRowsPerItem; r < end; ++r) row(r / p.heads, r % p.heads);
  });
}

}  // namespace

void combine_on_cpu(const CombineParams& p, ThreadPool& pool) {
  const int64_t rows = sm90::combine::row_count(p);
  if (rows == 0) return;
  pool.parallel_for((rows + kRowsPerItem - 1) / kRowsPerItem, [&](int64_t item, int) {
    const int64_t r0 = item * kRowsPerItem;
    combine_rows(p, r0, rows - r0 < kRowsPerItem ? rows - r0 : kRowsPerItem);
  });
}

void combine_reference(const CombineParams& p, ThreadPool& pool) {
  for_each_row(p, pool, [&](int64_t t, int64_t h) { reference_row(p, t, h); });
}

}  // namespace fp8attn::combine
