// Launching the TN GEMM on a GPU (CUDA build only; libfp8attn_cuda's side of the kernel).
#pragma once

#include <string>

#include "kernels/sm90/gemm/gemm_host.hpp"

struct CUstream_st;

namespace fp8attn::sm90 {

/// Plans `problem` (device pointers), encodes its tensor maps with the driver and launches the
/// kernel on `stream`. Allocates nothing and does not synchronize. Returns an empty string on
/// success, else why nothing was launched or the launch failed.
std::string run_gemm_cuda(const GemmProblem& problem, CUstream_st* stream);

}  // namespace fp8attn::sm90
