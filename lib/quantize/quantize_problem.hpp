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

/// Validates and translates. `options` is a full-size copy (defaults filled). unit_amax is left
/// null: the caller provides units() floats. Throws Error with the first problem's status.
sm90::quant::QuantizeParams make_quantize_params(const fp8attn_tensor* input, const fp8attn_tensor* cu_seqlens,
                                                 const fp8attn_quantize_options& options,
                                                 const fp8attn_tensor* output, const fp8attn_tensor* descale);

/// Number of work units (the length of unit_amax).
inline int64_t unit_count(const sm90::quant::QuantizeParams& p) { return p.batch * p.heads * p.units_per_head; }

}  // namespace fp8attn::quant
