// FlashAttention-3's comparison point for FP8 error bounds: a reference that keeps the inputs'
// quantization and rounds P to the same low precision as the kernel, but otherwise computes
// in high precision with the exact row max. The engine's error against the FP64 oracle should
// be at most about twice this reference's.
#pragma once

#include <cstdint>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "tools/common/attention_inputs.hpp"

namespace fp8attn::workloads {

/// Per row: S = q·kᵀ·scale (double, dequantized inputs); P̃ = exp(S − max)·S_p; l = Σ P̃;
/// O = Σ cast(P̃)·v / l with cast = E4M3 (S_p = 2^p_scale_log2) or BF16 (S_p = 1); O rounded to
/// BF16. Padded layout only; `desc` supplies masks, scale and dtypes.
std::vector<float> low_precision_reference(const fp8attn_attention_desc& desc, const AttentionShape& shape,
                                           const DequantizedInputs& in);

/// max |a − b| over all elements.
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b);
/// sqrt(mean (a − b)²).
double rmse(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace fp8attn::workloads
