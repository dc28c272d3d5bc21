// NVTX ranges around plan creation and every execute call, on every backend, so a profile of a
// serving stack shows fp8attn's calls whether they ran on the GPU or the CPU. NVTX3 is
// header-only (it finds a profiler through NVTX_INJECTION64_PATH at run time, and costs a
// branch otherwise); the build defines FP8ATTN_HAVE_NVTX3 when the CUDA toolkit's nvtx3 headers
// are found. Without them a range is a no-op and its name is never built.
#pragma once

#include <string>

#include <spdlog/fmt/fmt.h>  // the callers format the shape text with fmt::format

#if defined(FP8ATTN_HAVE_NVTX3)
#include <nvtx3/nvToolsExt.h>
#endif

namespace fp8attn {

/// Opens a range named "<op> <shape>" for the scope. `shape` is a callable returning the shape
/// text, called only when NVTX is compiled in.
class NvtxRange {
 public:
  template <class ShapeText>
  NvtxRange(const char* op, ShapeText&& shape) {
#if defined(FP8ATTN_HAVE_NVTX3)
    const std::string name = std::string(op) + " " + shape();
    nvtxRangePushA(name.c_str());
#else
    (void)op;
    (void)shape;
#endif
  }
  ~NvtxRange() {
#if defined(FP8ATTN_HAVE_NVTX3)
    nvtxRangePop();
#endif
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace fp8attn
