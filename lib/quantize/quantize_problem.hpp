// fp8attn_quantize's arguments after validation: every tensor, sequence length and option is
// checked here, in one place, before anything is written (the ABI's "outputs untouched on
// failure"). Backends read only the resulting parameters.
#pragma once

#include <cstdint>

#include "fp8attn/fp8attn.h"
#include "kernels/sm90/quantize/quantize_params.hpp"

namespace fp8attn::quant {

/// Rows per work unit when the granularity does not fix it (per-tensor, per-head).
/// NOTE: 128 rows keep a unit's pass-1 work (128 rotations of d floats) large enough to amortize
/// scheduling on the CPU pool, and match one Q tile of the attention kernel (BlockM = 128).
inline constexpr int64_t kDefaultUnitRows = 128;

/// Where the tensors live. `max_seqlen` (packed layouts): 0 reads the longest sequence from
/// host cu_seqlens; a device call, which cannot read cu_seqlens, passes the caller's value.
struct QuantizeDevice {
  int32_t device = FP8ATTN_DEVICE_HOST;
  int64_t max_seqlen = 0;
};

/// Validates and translates. `options` is a full-size copy (defaults filled). unit_amax is left
/// null: the caller provides units() floats. Throws Error with the first problem's status.
sm90::quant::QuantizeParams make_quantize_params(const fp8attn_tensor* input, const fp8attn_tensor* cu_seqlens,
                                                 const fp8attn_quantize_options& options,
                                                 const fp8attn_tensor* output, const fp8attn_tensor* descale,
                                                 const QuantizeDevice& where = {});

/// The unit count of a quantize call from the input's shape and the options alone (the
/// workspace query): validates what it reads. `max_seqlen` as in QuantizeDevice, required ≥ 1
/// for packed inputs (cu_seqlens is not read).
int64_t quantize_unit_count(const fp8attn_tensor* input, const fp8attn_tensor* cu_seqlens, int64_t max_seqlen,
                            const fp8attn_quantize_options& options);

/// Workspace bytes of fp8attn_quantize_async(): one float per unit, rounded up to 256 bytes.
/// NOTE: units ≤ 2^24·2^12·2^30 floats would overflow; the unit count is checked to fit int64
/// and the product here to fit size_t by the caller's checked_mul.
inline size_t quantize_workspace_bytes(int64_t units) {
  return (static_cast<size_t>(units) * sizeof(float) + 255) / 256 * 256;
}

/// Number of work units (the length of unit_amax).
inline int64_t unit_count(const sm90::quant::QuantizeParams& p) { return p.batch * p.heads * p.units_per_head; }

}  // namespace fp8attn::quant
