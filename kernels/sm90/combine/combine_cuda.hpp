// The sm_90a build of the combine kernel: one launch on a stream. Device pointers throughout;
// nothing is synchronized or allocated.
#pragma once

#include <string>

#include "kernels/sm90/combine/combine_params.hpp"

struct CUstream_st;

namespace fp8attn::sm90::combine {

/// Enqueues the kernel on `stream` (nothing for an empty problem); "" on success, else why not
/// (a refused problem or a launch error).
std::string run_combine_cuda(const CombineParams& p, CUstream_st* stream);

}  // namespace fp8attn::sm90::combine
