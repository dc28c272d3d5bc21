// The CPU combine's row merge for one vector ISA, in namespace fp8attn::combine_<isa>
// (lib/combine/combine_rows.hpp).
//
// NOTE: every function here is either in that namespace or has internal linkage, and the shared
// headers' helpers (combine_math.hpp, the BF16 conversions) are small inline functions that are
// inlined: an out-of-line copy under a shared name would be a weak symbol that the linker could
// keep from the AVX-512 object for every caller (tests/portability/check_isa_symbols.sh).
// CMake compiles this file once per ISA, FP8ATTN_CPU_ISA_BUILD naming it (lib/cpu_isa).
#include "lib/cpu_isa/isa_build.hpp"
#define FP8ATTN_COMBINE_ISA_NAMESPACE FP8ATTN_CPU_ISA_PASTE(combine_, FP8ATTN_CPU_ISA_BUILD)
#define FP8ATTN_COMBINE_ISA_NAME FP8ATTN_CPU_ISA_STRING(FP8ATTN_CPU_ISA_BUILD)

#include <array>
#include <cmath>
#include <cstdint>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/sm90/combine/combine_math.hpp"
#include "lib/combine/combine_rows.hpp"

namespace fp8attn::FP8ATTN_COMBINE_ISA_NAMESPACE {
namespace {

using combine::kRowsPerItem;
using sm90::combine::CombineParams;

/// Parts requested ahead of the one being added (combine_rows).
constexpr int32_t kPartsAhead = 2;

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

}  // namespace

/// This build's row merge (lib/combine/isa/combine_rows_dispatch.cpp picks one).
const combine::CombineRowOps& combine_row_ops() {
  static const combine::CombineRowOps ops{&combine_rows, FP8ATTN_COMBINE_ISA_NAME};
  return ops;
}

}  // namespace fp8attn::FP8ATTN_COMBINE_ISA_NAMESPACE
