// The CUDA entry points of the attention backward's sm_90a build (attention_bwd_sm90a.cu), for the
// CUDA device runtime. Each returns an empty string on success, else what failed.
#pragma once

#include <string>

#include "kernels/sm90/attention/bwd_launch.hpp"

struct CUstream_st;

namespace fp8attn::sm90 {

/// Plan-time setup of one main kernel: its dynamic shared memory limit. Call once per kernel.
std::string prepare_attention_bwd_cuda(const BwdKernelKey& key);

/// Encodes the tensor maps and enqueues the three kernels on `stream`; never synchronizes.
std::string launch_attention_bwd_cuda(const BwdLaunch& launch, CUstream_st* stream);

}  // namespace fp8attn::sm90
