// The vector decode of an E4M3 KV block into panel_gemm's panels (decoded_block in
// query_tile.cpp): K sixteen keys at a time, V row by row, each code widened exactly through FP16
// (decode_fp32_vec.hpp's decode_e4m3_row). Included by query_tile.cpp only, inside its per-ISA
// namespace (isa/query_tile_in_isa.cpp).
//
// NOTE: why. decoded_block read each code through a 256-entry table, one scalar load and store
// per element, scattered across K's column panels (stride 16 floats): a profile of the decode
// path in tensor-core mode put about 60 % of its time there. A K panel ([head_dim][16], keys in
// the lanes) is the transpose of its 16 keys' rows, so the codes are transposed byte for byte
// first (decode_fp32_keys.hpp) and the panel is then one contiguous run of 16 · head_dim codes.
// The values are exact either way (E4M3 values are FP32 values). The table's NaN keeps the code's
// sign and the FP16 route's does not, so a panel or row holding a NaN code returns false and the
// caller decodes the block through the table: every bit of the block is the table's.
#pragma once

#include <cstdint>

#include "lib/attention/engine/decode_fp32_vec.hpp"
#include "lib/attention/engine/decode_fp32_keys.hpp"
#include "lib/attention/engine/decode_fp32_values.hpp"

namespace fp8attn::engine {

/// Largest head_dim the vector decode takes (its transpose buffer lives on the stack).
constexpr int kMaxVectorDecodeDim = 256;

/// Writes the K panel of the 16 keys whose codes' rows are `rows` (head_dim d, a multiple of 16,
/// at most kMaxVectorDecodeDim): panel[e·16 + j] = K[j][e]. Returns false, having written nothing,
/// when some code is a NaN.
inline bool decode_e4m3_key_panel(const uint8_t* const* rows, int d, float* panel) {
  alignas(64) uint8_t kt[16 * kMaxVectorDecodeDim];
  if (decode_fp32_vec::transpose_key_bytes<16>(rows, d, kt)) return false;
  decode_fp32_vec::decode_e4m3_row(kt, 16 * d, panel);
  return true;
}

/// Writes one value row (dv codes, a multiple of 16) into its slot of V's panels: the 16 values
/// from e0 to out + e0·pitch (a panel of 16 values spans 16·pitch floats: pitch is block_n).
/// Returns false, having written nothing, when some code is a NaN.
inline bool decode_e4m3_value_row(const uint8_t* row, int dv, float* out, int64_t pitch) {
  if (decode_fp32_vec::value_codes_hold_nan(&row, 1, dv)) return false;
  for (int e0 = 0; e0 < dv; e0 += decode_fp32_vec::kLanes)
    decode_fp32_vec::decode_e4m3_row(row + e0, decode_fp32_vec::kLanes, out + e0 * pitch);
  return true;
}

}  // namespace fp8attn::engine
