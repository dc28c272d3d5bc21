// The CUDA entry points of the attention forward's sm_90a build (attention_fwd_sm90a.cu), for the
// CUDA device runtime. Each returns an empty string on success, else what failed.
#pragma once

#include <string>

#include "kernels/sm90/attention/fwd_launch.hpp"

struct CUstream_st;

namespace fp8attn::sm90 {

/// Plan-time setup of one kernel: its dynamic shared memory limit. Call once per kernel.
std::string prepare_attention_fwd_cuda(const FwdKernelKey& key);

/// Encodes the tensor maps and enqueues the kernel on `stream`; never synchronizes.
std::string launch_attention_fwd_cuda(const FwdLaunch& launch, CUstream_st* stream);

}  // namespace fp8attn::sm90
