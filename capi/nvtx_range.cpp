// NvtxRange's push and pop (lib/core/nvtx.hpp), compiled once. Only this target has NVTX3.
#include "lib/core/nvtx.hpp"

#if defined(FP8ATTN_HAVE_NVTX3)
#include <fmt/format.h>
#include <nvtx3/nvToolsExt.h>

namespace fp8attn {

void NvtxRange::push(fmt::string_view format, fmt::format_args args) {
  // NOTE: a fixed buffer on the stack: no heap allocation in an execute call; longer names are cut.
  char name[192];
  const auto end = fmt::vformat_to_n(name, sizeof name - 1, format, args);
  *end.out = '\0';
  nvtxRangePushA(name);
}

void NvtxRange::pop() { nvtxRangePop(); }

}  // namespace fp8attn
#endif
