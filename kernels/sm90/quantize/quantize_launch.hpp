// Launch geometry of the quantizer kernels, shared by the emulator and CUDA launchers: the grid,
// and the head dims with an instantiation.
#pragma once

#include <string>

#include "kernels/sm90/quantize/quantize_kernel.hpp"

namespace fp8attn::sm90::quant {

/// Why the kernels cannot run `p` ("" when they can): the head dim has no instantiation, or the
/// grid would be empty or exceed CUDA's limits.
inline std::string kernel_refusal(const QuantizeParams& p) {
  if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256)
    return "the quantizer kernels are instantiated for head_dim 64, 128 and 256, not " + std::to_string(p.head_dim);
  if (p.units_per_head < 1 || p.heads < 1 || p.batch < 1) return "the quantizer grid would be empty";
  if (p.units_per_head > 2147483647 || p.heads > 65535 || p.batch > 65535)
    return "the quantizer grid exceeds CUDA's limits (units ≤ 2^31 − 1, heads and batch ≤ 65535)";
  if (p.unit_amax == nullptr) return "unit_amax (the workspace of unit_count floats) is null";
  return "";
}

/// Calls launch(kernel_pass_1, kernel_pass_2) with the instantiations for p.head_dim (which
/// kernel_refusal accepted).
template <class Launch>
void with_quantize_kernels(const QuantizeParams& p, Launch&& launch) {
  switch (p.head_dim) {
    case 64: launch(&quantize_amax_kernel<64>, &quantize_cast_kernel<64>); break;
    case 128: launch(&quantize_amax_kernel<128>, &quantize_cast_kernel<128>); break;
    default: launch(&quantize_amax_kernel<256>, &quantize_cast_kernel<256>); break;
  }
}

}  // namespace fp8attn::sm90::quant
