// NVTX ranges around plan creation and every execute call, on every backend, so a profile of a
// serving stack shows fp8attn's calls whether they ran on the GPU or the CPU. NVTX3 is
// header-only (it finds a profiler through NVTX_INJECTION64_PATH at run time, and costs a
// branch otherwise); the build defines FP8ATTN_HAVE_NVTX3 when the CUDA toolkit's nvtx3 headers
// are found. Without them a range is a no-op and its name is never formatted.
#pragma once

#include <cstddef>
#include <utility>

#include <fmt/core.h>

namespace fp8attn {

/// Opens a range named by `format` and `args` (fmt syntax: "fp8attn_attention_forward b{} sq{}")
/// for the scope.
/// NOTE: the name is formatted into a fixed buffer on the stack: an execute call makes no heap
/// allocation (tests/hardening counts them), NVTX or not. Names longer than the buffer are cut.
class NvtxRange {
 public:
  template <class... Args>
  explicit NvtxRange(fmt::format_string<Args...> format, Args&&... args) {
#if defined(FP8ATTN_HAVE_NVTX3)
    push(format, fmt::make_format_args(args...));
#else
    (void)format;
    ((void)args, ...);
#endif
  }
  ~NvtxRange() {
#if defined(FP8ATTN_HAVE_NVTX3)
    pop();
#endif
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

#if defined(FP8ATTN_HAVE_NVTX3)
 private:
  // NOTE: out of line (capi/nvtx_range.cpp), like the logger's formatting (lib/core/log.hpp): the
  // formatting engine and NVTX's loader are compiled once, not in every entry point's file.
  static void push(fmt::string_view format, fmt::format_args args);
  static void pop();
#endif
};

}  // namespace fp8attn
