// NVTX ranges around plan creation and every execute call, on every backend, so a profile of a
// serving stack shows fp8attn's calls whether they ran on the GPU or the CPU. NVTX3 is
// header-only (it finds a profiler through NVTX_INJECTION64_PATH at run time, and costs a
// branch otherwise); the build defines FP8ATTN_HAVE_NVTX3 when the CUDA toolkit's nvtx3 headers
// are found. Without them a range is a no-op and its name is never formatted.
#pragma once

#include <cstddef>
#include <utility>

#include <spdlog/spdlog.h>  // fmt, as spdlog is configured for the build (external or bundled)

#if defined(FP8ATTN_HAVE_NVTX3)
#include <nvtx3/nvToolsExt.h>
#endif

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
    char name[192];
    const auto end = fmt::format_to_n(name, sizeof name - 1, format, std::forward<Args>(args)...);
    *end.out = '\0';
    nvtxRangePushA(name);
#else
    (void)format;
    ((void)args, ...);
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
