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

#if defined(__AVX__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/sm90/combine/combine_math.hpp"
#include "lib/combine/combine_rows.hpp"

namespace fp8attn::FP8ATTN_COMBINE_ISA_NAMESPACE {
namespace {

using combine::kRowsPerItem;
using sm90::combine::CombineParams;
using sm90::combine::kMaxParts;

/// Parts requested ahead of the one being added (combine_rows_by_part).
constexpr int32_t kPartsAhead = 2;

/// Bytes of the parts requested ahead of the row being merged (combine_rows_by_row): about half of L1,
/// so that a requested line is still there when its row comes.
constexpr int64_t kBytesAhead = 16384;

/// Elements of a row merged at a time: the sums of one chunk stay in L1.
constexpr int64_t kChunk = 128;

void store_o(const CombineParams& p, int64_t at, float value) {
  if (p.out_bf16)
    static_cast<uint16_t*>(p.out)[at] = num::float_to_bf16(value);
  else
    static_cast<float*>(p.out)[at] = value;
}

/// The weights and factors of an item's rows, part-major so that a part's weights of every row sit
/// in one vector, and each row's (token, head).
/// NOTE: the coordinates are stepped once per item, not divided out of the row index per row and
/// again at each use.
struct ItemWeights {
  alignas(64) std::array<std::array<float, kRowsPerItem>, kMaxParts> w;
  alignas(64) std::array<float, kRowsPerItem> scale, lse;  // row_factors' two values
  std::array<int64_t, kRowsPerItem> t, h;
};

/// The weights, factors and LSEs of rows [r0, r0 + rows) in the kernel's order of operations per row
/// (combine_kernel.hpp); stores the LSEs.
/// NOTE: the rows are the inner loop, so the maximum, ex2, the sums and row_factors' division and
/// selects run across rows in vector lanes, each row's operations and their order unchanged; one
/// row at a time, this chain of dependent operations took a third of a merge of two L3-resident
/// parts. Rows past `rows` repeat the item's first row.
void item_weights(const CombineParams& p, int64_t r0, int64_t rows, ItemWeights& iw) {
  using namespace sm90::combine;
  alignas(64) std::array<int64_t, kRowsPerItem> at;  // each row's LSE offset, less the part's
  alignas(64) std::array<float, kRowsPerItem> m, sum;
  const int64_t t0 = r0 / p.heads, h0 = r0 % p.heads;
  int64_t t = t0, h = h0;
  for (int64_t i = 0; i < kRowsPerItem; ++i) {
    iw.t[i] = i < rows ? t : t0;
    iw.h[i] = i < rows ? h : h0;
    at[i] = partial_lse_offset(p, 0, iw.t[i], iw.h[i]);
    m[i] = -INFINITY;
    sum[i] = 0.0f;
    if (++h == p.heads) {
      h = 0;
      ++t;
    }
  }
  // A full item of a dense [parts, tokens, heads] LSE reads each part's values as whole vectors.
  const bool dense_lse = rows == kRowsPerItem && p.pl_stride[2] == 1 && p.pl_stride[1] == p.heads;
  for (int32_t part = 0; part < p.num_parts; ++part) {
    float* lse_p = iw.w[part].data();
    const float* src = p.partial_lse + part * p.pl_stride[0];
    if (dense_lse)
      for (int64_t i = 0; i < kRowsPerItem; ++i) lse_p[i] = src[at[0] + i];
    else
      for (int64_t i = 0; i < kRowsPerItem; ++i) lse_p[i] = src[at[i]];
    // NOTE: unrolled (at 16 rows per call), this loop became scalar compares and branches, a
    // quarter of the weights' time; rolled, it vectorizes.
#pragma GCC unroll 1
    for (int64_t i = 0; i < kRowsPerItem; ++i) m[i] = max_lse(m[i], lse_p[i]);
  }
  for (int32_t part = 0; part < p.num_parts; ++part) {
    float* w_p = iw.w[part].data();
    for (int64_t i = 0; i < kRowsPerItem; ++i) {
      w_p[i] = part_weight(w_p[i], m[i]);
      sum[i] = arch::add_rn(sum[i], w_p[i]);
    }
  }
  // row_factors, lane by lane: 1/s and log(s) for every row, then the empty and poisoned rows'
  // values in their place (their s is 0, so both are computed and replaced). The host's log has
  // no branches, so its loop vectorizes too.
  for (int64_t i = 0; i < kRowsPerItem; ++i) iw.scale[i] = 1.0f / sum[i];
  for (int64_t i = 0; i < kRowsPerItem; ++i) iw.lse[i] = arch::natural_log(sum[i]);
  for (int64_t i = 0; i < kRowsPerItem; ++i) {
    const bool poisoned = m[i] != m[i], empty = m[i] == -INFINITY;
    iw.scale[i] = poisoned ? NAN : (empty ? 0.0f : iw.scale[i]);
    iw.lse[i] = poisoned ? NAN : (empty ? -INFINITY : arch::add_rn(m[i], iw.lse[i]));
  }
  if (p.lse == nullptr) return;
  if (rows == kRowsPerItem && p.lse_stride[1] == 1 && p.lse_stride[0] == p.heads) {
    float* dst = p.lse + lse_offset(p, iw.t[0], iw.h[0]);
    for (int64_t i = 0; i < kRowsPerItem; ++i) dst[i] = iw.lse[i];
  } else {
    for (int64_t i = 0; i < rows; ++i) p.lse[lse_offset(p, iw.t[i], iw.h[i])] = iw.lse[i];
  }
}

/// Row (t, h)'s out[e0, e0 + n) from its sums.
/// NOTE: with stream, a unit-stride run 16-byte aligned goes out through streaming stores: out is
/// written once and not read here, and an ordinary store first reads each line it fills (a third
/// of the bytes of a two-part merge from memory). The caller asks for them only when the call's
/// bytes exceed the last-level cache: where they fit, a streaming store sends out to memory that
/// the next reader would have found in the cache. combine_rows ends with a store fence.
void store_chunk(const CombineParams& p, int64_t t, int64_t h, int64_t e0, int64_t n, const float* acc, float scale,
                 bool stream) {
  using namespace sm90::combine;
  const int64_t at = out_offset(p, t, h, e0);
#if defined(__SSE2__)
  if (stream && p.out_stride[2] == 1 && n % 8 == 0) {
    alignas(16) float v[kChunk];
    for (int64_t e = 0; e < n; ++e) v[e] = finish_out(acc[e], scale);
    if (!p.out_bf16) {
      float* dst = static_cast<float*>(p.out) + at;
      if (reinterpret_cast<uintptr_t>(dst) % 16 == 0) {
        for (int64_t e = 0; e < n; e += 4) _mm_stream_ps(dst + e, _mm_load_ps(v + e));
        return;
      }
    } else {
      uint16_t* dst = static_cast<uint16_t*>(p.out) + at;
      if (reinterpret_cast<uintptr_t>(dst) % 16 == 0) {
        // NOTE: round_to_bf16 selects where float_to_bf16 branches, so the loop vectorizes; both
        // give the same bits (NaN becomes 0x7FFF).
        alignas(16) uint16_t b[kChunk];
        for (int64_t e = 0; e < n; ++e)
          b[e] = static_cast<uint16_t>(std::bit_cast<uint32_t>(num::round_to_bf16(v[e])) >> 16);
        for (int64_t e = 0; e < n; e += 8) {
          const __m128i eight = _mm_load_si128(reinterpret_cast<const __m128i*>(b + e));
          _mm_stream_si128(reinterpret_cast<__m128i*>(dst + e), eight);
        }
        return;
      }
    }
  }
#endif
  if (p.out_stride[2] == 1) {
    // NOTE: a contiguous run through one pointer, BF16 rounded by selects (round_to_bf16), so both
    // loops vectorize; store_o's dtype test and NaN branch per element kept the BF16 form scalar.
    // The merge waits on its loads, so neither form measured faster at the bench's shapes.
    if (!p.out_bf16) {
      float* dst = static_cast<float*>(p.out) + at;
      for (int64_t e = 0; e < n; ++e) dst[e] = finish_out(acc[e], scale);
    } else {
      uint16_t* dst = static_cast<uint16_t*>(p.out) + at;
      for (int64_t e = 0; e < n; ++e)
        dst[e] = static_cast<uint16_t>(std::bit_cast<uint32_t>(num::round_to_bf16(finish_out(acc[e], scale))) >> 16);
    }
    return;
  }
  for (int64_t e = 0; e < n; ++e) store_o(p, out_offset(p, t, h, e0 + e), finish_out(acc[e], scale));
}

/// acc[e] = accumulate_part(acc[e], weight, scale, O_p[base + e·step]) for e < n (n ≤ kChunk), with
/// acc[e] read as +0 for the first part added (first).
/// NOTE: the dtype, a contiguous row and a whole chunk are decided once per part, so the common
/// loops (F32 or BF16, unit stride, 128 elements) vectorize with a fixed trip count; each
/// element's operations are the same in every form. The first part's +0 replaces a zero fill of
/// the sums, which the compiler made a `rep stos` that took a fifth of a two-part merge.
void add_part(const CombineParams& p, int64_t base, int64_t n, float weight, float scale, float* acc, bool first) {
  using sm90::combine::accumulate_part;
  const int64_t step = p.po_stride[3];
  auto run = [&](auto&& load) {
    auto loop = [&](auto from_zero, int64_t count) {
      for (int64_t e = 0; e < count; ++e)
        acc[e] = accumulate_part(decltype(from_zero)::value ? 0.0f : acc[e], weight, scale, load(e));
    };
    using Zero = std::true_type;
    using Sums = std::false_type;
    if (n == kChunk)
      first ? loop(Zero{}, kChunk) : loop(Sums{}, kChunk);
    else
      first ? loop(Zero{}, n) : loop(Sums{}, n);
  };
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

/// The widest vector of this build, in floats, and the sums of a row held in registers at a time.
#if defined(__AVX512F__)
// NOTE: GCC 12's AVX-512 intrinsics pass an undefined source (_mm512_undefined_*) to their
// builtins, and -Wmaybe-uninitialized reports it wherever they are inlined (fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
constexpr int kVecFloats = 16;
using VecF = __m512;
VecF load_vec(const float* x) { return _mm512_loadu_ps(x); }
VecF load_vec(const uint16_t* x) {  // BF16: bf16_to_float's bits, x << 16
  const __m512i words = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(words, 16));
}
VecF splat_vec(float x) { return _mm512_set1_ps(x); }
void store_vec(float* x, VecF v) { _mm512_storeu_ps(x, v); }
/// 32 BF16 values as floats in two vectors, in the order of the words' unpacking: each 128-bit lane
/// of `lo` holds words 0-3 of the same lane of the input, `hi` words 4-7.
/// NOTE: one load and two unpacks per 32 values (each word below a zero word is its float) where
/// load_vec takes two widening loads and two shifts; the sums keep this order, which
/// natural_order_pair undoes once per row.
void load_bf16_pair(const uint16_t* x, VecF& lo, VecF& hi) {
  const __m512i words = _mm512_loadu_si512(x);
  lo = _mm512_castsi512_ps(_mm512_unpacklo_epi16(_mm512_setzero_si512(), words));
  hi = _mm512_castsi512_ps(_mm512_unpackhi_epi16(_mm512_setzero_si512(), words));
}
/// The inverse of load_bf16_pair's order: values 0-15 into `lo`, 16-31 into `hi`.
void natural_order_pair(VecF& lo, VecF& hi) {
  const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i second = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  const VecF a = _mm512_permutex2var_ps(lo, first, hi), b = _mm512_permutex2var_ps(lo, second, hi);
  lo = a;
  hi = b;
}
#elif defined(__AVX2__)
constexpr int kVecFloats = 8;
using VecF = __m256;
VecF load_vec(const float* x) { return _mm256_loadu_ps(x); }
VecF load_vec(const uint16_t* x) {
  const __m256i words = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(words, 16));
}
VecF splat_vec(float x) { return _mm256_set1_ps(x); }
void store_vec(float* x, VecF v) { _mm256_storeu_ps(x, v); }
#elif defined(__SSE2__)
constexpr int kVecFloats = 4;
using VecF = __m128;
VecF load_vec(const float* x) { return _mm_loadu_ps(x); }
VecF load_vec(const uint16_t* x) {  // each word below a zero word: x << 16
  const __m128i four = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x));
  return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), four));
}
VecF splat_vec(float x) { return _mm_set1_ps(x); }
void store_vec(float* x, VecF v) { _mm_storeu_ps(x, v); }
#endif
#if defined(__SSE2__)
constexpr int kMaxSumVecs = 8;

/// out[e0, e0 + Vecs · kVecFloats) of row (t, h), every part's contiguous row added in registers.
/// NOTE: the same operations per element as add_part (the part's weight times scale, that times
/// O, added to the sum read as +0 for the first part, in part order), with the sums in registers
/// instead of an L1 array: add_part's loads and stores of the sums for every part took more
/// issue slots than the parts' own reads, which a merge of L3-resident parts waits on.
template <int Vecs>
void row_chunk_in_registers(const CombineParams& p, int64_t t, int64_t h, int64_t e0, const ItemWeights& iw,
                            int64_t i, bool stream) {
  using namespace sm90::combine;
  VecF acc[Vecs];
  bool first = true;
  for (int32_t part = 0; part < p.num_parts; ++part) {
    const float w = iw.w[part][i];
    if (w == 0.0f) continue;
    const float ws = arch::mul_rn(w, iw.scale[i]);
    const VecF wv = splat_vec(ws);
    const int64_t base = partial_out_offset(p, part, t, h, e0);
    VecF o[Vecs];
    if (p.partial_out_bf16) {
      const uint16_t* row = static_cast<const uint16_t*>(p.partial_out) + base;
#if defined(__AVX512F__)
      if constexpr (Vecs % 2 == 0) {
        for (int v = 0; v < Vecs; v += 2) load_bf16_pair(row + v * kVecFloats, o[v], o[v + 1]);
      } else
#endif
      {
        for (int v = 0; v < Vecs; ++v) o[v] = load_vec(row + v * kVecFloats);
      }
    } else {
      const float* row = static_cast<const float*>(p.partial_out) + base;
      for (int v = 0; v < Vecs; ++v) o[v] = load_vec(row + v * kVecFloats);
    }
    if (first)
      for (int v = 0; v < Vecs; ++v) acc[v] = VecF{} + wv * o[v];
    else
      for (int v = 0; v < Vecs; ++v) acc[v] = acc[v] + wv * o[v];
    first = false;
  }
  for (int v = 0; v < Vecs; ++v)
    if (first) acc[v] = VecF{};
#if defined(__AVX512F__)
  if constexpr (Vecs % 2 == 0)
    if (p.partial_out_bf16)
      for (int v = 0; v < Vecs; v += 2) natural_order_pair(acc[v], acc[v + 1]);
#endif
  const float scale = iw.scale[i];
  if (!stream && !p.out_bf16 && p.out_stride[2] == 1) {
    // finish_out: a poisoned row's scale (NaN) in every element.
    float* dst = static_cast<float*>(p.out) + out_offset(p, t, h, e0);
    if (scale != scale)
      for (int v = 0; v < Vecs; ++v) acc[v] = splat_vec(scale);
    for (int v = 0; v < Vecs; ++v) store_vec(dst + v * kVecFloats, acc[v]);
    return;
  }
  alignas(64) float sums[Vecs * kVecFloats];
  for (int v = 0; v < Vecs; ++v) std::memcpy(sums + v * kVecFloats, &acc[v], sizeof acc[v]);
  store_chunk(p, t, h, e0, Vecs * kVecFloats, sums, iw.scale[i], stream);
}

#endif  // __SSE2__

/// combine_rows row by row, for rows of a few parts.
/// NOTE: row by row, the parts inner, a row's sums in registers (row_chunk_in_registers; in L1
/// for a strided row and the columns past the last whole vector); each part's row about
/// kBytesAhead on is requested while this one is added, so every part is a stream kept ahead of
/// its use (the hardware prefetcher alone lost track of tens of parts, and runs of a few KiB per
/// part, the earlier parts-outer order, ended before it ramped up). Only where the call's bytes
/// exceed the cache (stream): from the L3 the hardware prefetcher keeps up, and the requests' own
/// stalls took a sixth of a two-part merge.
void combine_rows_by_row(const CombineParams& p, int64_t r0, int64_t rows, const ItemWeights& iw, bool stream) {
  using namespace sm90::combine;
  const int64_t elem = p.partial_out_bf16 ? 2 : 4;
  const int64_t total_rows = row_count(p);
  const int64_t step = p.po_stride[3];
  const int64_t row_bytes = p.num_parts * p.head_dim * elem;  // one row of every part
  const int64_t rows_ahead = std::clamp<int64_t>(kBytesAhead / (row_bytes > 0 ? row_bytes : 1), 1, kRowsPerItem);
  for (int64_t r = r0; r < r0 + rows; ++r) {
    const int64_t t = iw.t[r - r0], h = iw.h[r - r0];
    const float scale = iw.scale[r - r0];
    // Contiguous rows only: a strided row's elements would each be a request of their own.
    if (stream && step == 1 && r + rows_ahead < total_rows) {
      const int64_t ra = r + rows_ahead;
      for (int32_t part = 0; part < p.num_parts; ++part) {
        const char* ahead =
            static_cast<const char*>(p.partial_out) + elem * partial_out_offset(p, part, ra / p.heads, ra % p.heads, 0);
        for (int64_t b = 0; b < p.head_dim * elem; b += 64) __builtin_prefetch(ahead + b);
      }
    }
    int64_t e0 = 0;
#if defined(__SSE2__)
    if (step == 1) {
      const int64_t i = r - r0;
      for (; p.head_dim - e0 >= kMaxSumVecs * kVecFloats; e0 += kMaxSumVecs * kVecFloats)
        row_chunk_in_registers<kMaxSumVecs>(p, t, h, e0, iw, i, stream);
      if (p.head_dim - e0 >= 4 * kVecFloats) {
        row_chunk_in_registers<4>(p, t, h, e0, iw, i, stream);
        e0 += 4 * kVecFloats;
      }
      if (p.head_dim - e0 >= 2 * kVecFloats) {
        row_chunk_in_registers<2>(p, t, h, e0, iw, i, stream);
        e0 += 2 * kVecFloats;
      }
      if (p.head_dim - e0 >= kVecFloats) {
        row_chunk_in_registers<1>(p, t, h, e0, iw, i, stream);
        e0 += kVecFloats;
      }
    }
#endif
    for (; e0 < p.head_dim; e0 += kChunk) {
      const int64_t n = p.head_dim - e0 < kChunk ? p.head_dim - e0 : kChunk;
      alignas(64) float acc[kChunk];
      bool first = true;
      for (int32_t part = 0; part < p.num_parts; ++part) {
        const float w = iw.w[part][r - r0];
        if (w == 0.0f) continue;
        add_part(p, partial_out_offset(p, part, t, h, e0), n, w, scale, acc, first);
        first = false;
      }
      if (first)
        for (int64_t e = 0; e < n; ++e) acc[e] = 0.0f;
      store_chunk(p, t, h, e0, n, acc, scale, stream);
    }
  }
}

/// combine_rows with the parts outer, then rows, then elements, for rows of many parts: each
/// part's rows of the item are one contiguous run of its tensor (a dense layout), read while the
/// item's sums (32 KiB) stay in L1 and L2. Each element still sums its parts in index order.
void combine_rows_by_part(const CombineParams& p, int64_t r0, int64_t rows, const ItemWeights& iw, bool stream,
                          std::array<std::array<float, kChunk>, kRowsPerItem>& acc) {
  using namespace sm90::combine;
  for (int64_t e0 = 0; e0 < p.head_dim; e0 += kChunk) {
    const int64_t n = p.head_dim - e0 < kChunk ? p.head_dim - e0 : kChunk;
    std::array<bool, kRowsPerItem> first;
    first.fill(true);
    const int64_t elem = p.partial_out_bf16 ? 2 : 4;
    for (int32_t part = 0; part < p.num_parts; ++part)
      for (int64_t i = 0; i < rows; ++i) {
        // NOTE: the same row of the part after next requested now: each part's run of the item is
        // a few KiB, too short for the hardware prefetcher to ramp up before the next part's.
        // Requested into L2, not L1: the sums (32 KiB) and two parts' runs ahead (64 KiB) do not
        // fit an L1, where lines could be evicted before their use (32 F32 parts on an Intel Xeon:
        // 29.4 against 27.9 GB/s, medians of ten alternating runs, within the machine's spread).
        // Contiguous rows only: a strided row's elements would each be a request of their own.
        if (p.po_stride[3] == 1 && part + kPartsAhead < p.num_parts && iw.w[part + kPartsAhead][i] != 0.0f) {
          const int64_t t = iw.t[i], h = iw.h[i];
          const char* ahead =
              static_cast<const char*>(p.partial_out) + elem * partial_out_offset(p, part + kPartsAhead, t, h, e0);
          for (int64_t b = 0; b < n * elem; b += 64) __builtin_prefetch(ahead + b, 0, 2);
        }
        if (iw.w[part][i] == 0.0f) continue;
        add_part(p, partial_out_offset(p, part, iw.t[i], iw.h[i], e0), n, iw.w[part][i],
                 iw.scale[i], acc[i].data(), first[i]);
        first[i] = false;
      }
    for (int64_t i = 0; i < rows; ++i) {
      if (first[i])
        for (int64_t e = 0; e < n; ++e) acc[i][e] = 0.0f;
    }
    for (int64_t i = 0; i < rows; ++i)
      store_chunk(p, iw.t[i], iw.h[i], e0, n, acc[i].data(), iw.scale[i], stream);
  }
}

/// Rows [r0, r0 + rows) (rows ≤ kRowsPerItem), in the kernel's order of operations per element:
/// out[e] = Σ over the parts in index order of (w_p · scale) · O_p[e], from +0. Both loop orders
/// give every element the same operations in the same order.
/// NOTE: measured on a Zen 4 (docs/performance.md, the combine): row by row ran 8 F32 parts about
/// 1.3× the parts-outer order and 32 parts about 0.85×, where a row of every part (16 KiB) no
/// longer leaves room in L1 for the requests ahead; the parts-outer order reads 32 KiB runs.
void combine_rows(const CombineParams& p, int64_t r0, int64_t rows, bool stream_out) {
  // NOTE: per thread, not on the stack: the weights of 256 parts × 64 rows and the parts-outer
  // order's sums take 96 KiB, more than a host's small thread stacks (musl's 128 KiB) should hold.
  struct Scratch {
    ItemWeights iw;
    std::array<std::array<float, kChunk>, kRowsPerItem> sums;
  };
  static thread_local Scratch scratch;
  ItemWeights& iw = scratch.iw;
  item_weights(p, r0, rows, iw);
  const int64_t row_bytes = p.num_parts * p.head_dim * (p.partial_out_bf16 ? 2 : 4);
  if (row_bytes <= kBytesAhead / 2)
    combine_rows_by_row(p, r0, rows, iw, stream_out);
  else
    combine_rows_by_part(p, r0, rows, iw, stream_out, scratch.sums);
#if defined(__SSE2__)
  if (stream_out) _mm_sfence();  // the streaming stores of store_chunk
#endif
}

}  // namespace

/// This build's row merge (lib/combine/isa/combine_rows_dispatch.cpp picks one).
const combine::CombineRowOps& combine_row_ops() {
  static const combine::CombineRowOps ops{&combine_rows, FP8ATTN_COMBINE_ISA_NAME};
  return ops;
}

}  // namespace fp8attn::FP8ATTN_COMBINE_ISA_NAMESPACE
