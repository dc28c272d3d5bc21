// fp8attn_kv_append_async's problem after validation, as plain data both the CPU implementation
// (lib/serving) and the Hopper kernel (kv_append_kernel.hpp) read, and the per-row arithmetic
// they share: where a token's row lands in the paged cache, how its elements are read, and the
// scale of a (token, head) from its amax (the quantizer's rule, quantize_math.hpp).
//
// One row is (token t, KV head h, K or V): head_dim (K) or head_dim_v (V) elements, written to
// page slot / page_size, offset slot % page_size of its cache. The cast is decided by the row
// alone, so rows are independent and any schedule gives the same bits.
#pragma once

#include <cstdint>

#include "kernels/sm90/quantize/quantize_math.hpp"

namespace fp8attn::sm90::kv {

/// Explicit numbers: the same values as fp8attn_kv_scale_granularity.
enum class Scale : int32_t { None = 0, PerHead = 1, PerTokenHead = 2 };
enum class InputType : int32_t { F32 = 0, BF16 = 1, E4M3 = 2 };
enum class CacheType : int32_t { E4M3 = 0, BF16 = 1 };

/// One tensor of the append (K or V): the new rows, the cache and the descales.
struct KvSide {
  const void* input = nullptr;  ///< [tokens, heads, dim] at in_stride (elements)
  int64_t in_stride[3] = {0, 0, 0};
  void* cache = nullptr;  ///< [num_pages, page_size, heads, dim] at cache_stride (elements)
  int64_t cache_stride[4] = {0, 0, 0, 0};
  /// PerHead: F32 [heads], read (descale_stride[2] the head stride). PerTokenHead: F32
  /// [num_pages, page_size, heads], written at the slots. None: null.
  float* descale = nullptr;
  int64_t descale_stride[3] = {0, 0, 0};
  int64_t dim = 0;
  bool rotate = false;  ///< K only
};

struct KvAppendParams {
  KvSide k, v;
  InputType input_type = InputType::F32;
  CacheType cache_type = CacheType::E4M3;
  Scale scale = Scale::None;
  const int64_t* slot_mapping = nullptr;  ///< I64 [tokens] at slot_stride
  int64_t slot_stride = 1;
  int64_t tokens = 0, heads = 0, num_pages = 0, page_size = 1;
  int32_t log2_head_dim = 0;  ///< K's head_dim when rotating
  uint64_t seed = 0;
};

/// Slots the cache holds: num_pages · page_size (validated to fit int64).
FP8ATTN_QUANT_FN int64_t slot_count(const KvAppendParams& p) { return p.num_pages * p.page_size; }

/// Token t's slot, or −1 when the token is skipped: a negative slot (padding) or one past the
/// cache. NOTE: the host refuses slots past the cache where it can read them; device-resident
/// slot mappings reach the kernel unchecked, so the kernel skips such a slot rather than write
/// outside the cache.
FP8ATTN_QUANT_FN int64_t token_slot(const KvAppendParams& p, int64_t t) {
  const int64_t slot = p.slot_mapping[t * p.slot_stride];
  return slot >= 0 && slot < slot_count(p) ? slot : -1;
}

FP8ATTN_QUANT_FN int64_t input_offset(const KvSide& s, int64_t t, int64_t h, int64_t e) {
  return t * s.in_stride[0] + h * s.in_stride[1] + e * s.in_stride[2];
}
FP8ATTN_QUANT_FN int64_t cache_offset(const KvSide& s, int64_t page_size, int64_t slot, int64_t h, int64_t e) {
  return (slot / page_size) * s.cache_stride[0] + (slot % page_size) * s.cache_stride[1] + h * s.cache_stride[2] +
         e * s.cache_stride[3];
}
FP8ATTN_QUANT_FN int64_t token_descale_offset(const KvSide& s, int64_t page_size, int64_t slot, int64_t h) {
  return (slot / page_size) * s.descale_stride[0] + (slot % page_size) * s.descale_stride[1] + h * s.descale_stride[2];
}

/// Element e of row (t, h) widened to float (F32 or BF16 input; E4M3 input is copied as bits).
FP8ATTN_QUANT_FN float load_element(const KvAppendParams& p, const KvSide& s, int64_t t, int64_t h, int64_t e) {
  const int64_t at = input_offset(s, t, h, e);
  return p.input_type == InputType::BF16 ? quant::bf16_bits_to_float(static_cast<const uint16_t*>(s.input)[at])
                                         : static_cast<const float*>(s.input)[at];
}

/// What multiplies or divides a row before its E4M3 cast. PerHead and None divide by the layer's
/// descale (code = round(x / descale), the header's rule; None: descale 1, so x itself);
/// PerTokenHead multiplies by the row's scale (448 / amax), exactly as fp8attn_quantize does
/// per token, and stores descale = 1 / scale.
struct RowScale {
  bool multiply;  ///< true: x · factor; false: x / factor
  float factor;
};
FP8ATTN_QUANT_FN float apply_row_scale(const RowScale& r, float x) { return r.multiply ? x * r.factor : x / r.factor; }

/// The PerTokenHead scale of a row whose elements have this amax (max of quant::amax_term):
/// the quantizer's (448 / amax) / 2^margin with margin 0, and 1 for a row of zeros.
FP8ATTN_QUANT_FN float token_scale(float amax) { return quant::scale_from_amax(amax, 0); }

}  // namespace fp8attn::sm90::kv
