// The decode kernels' launches, on the seam of the attention forward (fwd_launch.hpp): a decode
// launch is an FwdLaunch whose key has decode set; the device runtimes route it here. The
// emulator build (decode_emulated.cpp) and the sm_90a build (decode_sm90a.cu) each compile the
// decode instantiation table (decode_config.hpp) in their own translation unit.
#pragma once

#include <string>

#include "kernels/sm90/attention/fwd_launch.hpp"

struct CUstream_st;

namespace fp8attn::emu {
struct LaunchConfig;
}

namespace fp8attn::sm90 {

/// Runs the decode launch on the SIMT emulator; throws emu::KernelError for anything the emulator
/// catches, std::invalid_argument for a key without a kernel or a bad map.
void launch_attention_decode_emulated(const FwdLaunch& launch, const emu::LaunchConfig& schedule);

/// Plan-time setup of one decode kernel (its dynamic shared memory limit); "" on success.
std::string prepare_attention_decode_cuda(const FwdKernelKey& key);

/// Encodes the tensor maps and enqueues the decode kernel on `stream`; "" on success.
std::string launch_attention_decode_cuda(const FwdLaunch& launch, CUstream_st* stream);

}  // namespace fp8attn::sm90
