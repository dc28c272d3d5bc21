// The CPU quantizer: fp8attn_quantize's two passes (kernels/sm90/quantize/quantize_params.hpp)
// on the context's worker threads, with the kernel's arithmetic (quantize_math.hpp), so the
// Hopper kernel's output equals it bit for bit.
#pragma once

#include "kernels/sm90/quantize/quantize_params.hpp"
#include "lib/core/thread_pool.hpp"

namespace fp8attn::quant {

/// Quantizes `p` (validated by make_quantize_params; its unit_amax is ignored and a private
/// buffer used). Pass 1 writes nothing the caller sees; when an amax comes out NaN or infinite
/// it throws Error(FP8ATTN_STATUS_NUMERICS) before pass 2 writes any output. Returns the amax
/// of the whole (rotated) tensor.
float quantize_on_cpu(const sm90::quant::QuantizeParams& p, ThreadPool& pool);

}  // namespace fp8attn::quant
