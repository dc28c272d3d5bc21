// The sm_90a build of the KV append kernel: launches it on a stream. Device pointers throughout;
// nothing is synchronized or allocated.
#pragma once

#include <string>

#include "kernels/sm90/kv_append/kv_append_params.hpp"

struct CUstream_st;

namespace fp8attn::sm90::kv {

/// Enqueues the kernel on `stream` (nothing for zero tokens); "" on success, else why not (a
/// refused problem or a launch error).
std::string run_kv_append_cuda(const KvAppendParams& p, CUstream_st* stream);

}  // namespace fp8attn::sm90::kv
