// The combine kernel on a device runtime: whether it can run a validated problem. Written once
// for the CUDA runtime and the emulator.
#pragma once

#include "kernels/sm90/combine/combine_params.hpp"

namespace fp8attn::gpu {

/// Throws Error(UNSUPPORTED_ON_BACKEND) when the kernel cannot run p.
void check_combine_supported(const sm90::combine::CombineParams& p);

}  // namespace fp8attn::gpu
