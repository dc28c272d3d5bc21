// The scale state's serialized form: versioned, little-endian, CRC32C-checked.
//
// Layout, version 1 (all integers and floats little-endian; floats are IEEE binary32 bits):
//   0  char[4] magic "F8SS"          4  u32 version = 1          8  u64 total length in bytes
//  16  u32 num_layers               20  u32 tensor kinds (8)    24  u32 amax_history_len H
//  28  u32 amax_algo                32  f32 margin              36  i32 burn_in_steps
//  40  f32 token_norm_bound         44  f32 alpha_margin        48  f32 alpha_decay
//  52  i32 grad_dtype               56  i32 recipe[8]           88  u64 step_count
//  96  per layer: geometry (f32 σ_max, i32 head_dim, f32 B_X, f32 α, f32 ρ_max, i32 burn-in
//      steps seen, u32 burn-in done), then per tensor kind: f32 scale, f32 scale_inv,
//      u32 history position, f32 history[H]
// end  u32 CRC32C of every byte before it
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lib/scale/scale_state_data.hpp"

namespace fp8attn {

inline constexpr uint32_t kScaleStateBlobVersion = 1;

/// Size in bytes of the blob of `data`.
size_t scale_state_blob_size(const ScaleStateData& data);

/// Writes the blob into `out` (at least scale_state_blob_size(data) bytes).
void write_scale_state_blob(const ScaleStateData& data, uint8_t* out);

/// Parses and checks a blob. Throws Error with FP8ATTN_STATUS_TRUNCATED_BLOB,
/// _BAD_BLOB_VERSION, _CHECKSUM_MISMATCH or _NUMERICS; never returns a partial state.
ScaleStateData read_scale_state_blob(const uint8_t* blob, size_t len);

}  // namespace fp8attn
