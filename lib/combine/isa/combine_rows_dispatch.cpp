#include "lib/combine/combine_rows.hpp"
#include "lib/cpu_isa/cpu_isa.hpp"

// FP8ATTN_CPU_ISA_VARIANTS (set by fp8attn_add_cpu_isa_builds, lib/cpu_isa/CMakeLists.txt): 1
// when the AVX2 and AVX-512 builds are compiled in, 0 when only the one build is.
#ifndef FP8ATTN_CPU_ISA_VARIANTS
#define FP8ATTN_CPU_ISA_VARIANTS 0
#endif

namespace fp8attn {

namespace combine_baseline {
const combine::CombineRowOps& combine_row_ops();
}
#if FP8ATTN_CPU_ISA_VARIANTS
namespace combine_avx2 {
const combine::CombineRowOps& combine_row_ops();
}
namespace combine_avx512 {
const combine::CombineRowOps& combine_row_ops();
}
#endif

namespace combine {

const CombineRowOps& combine_row_ops() {
  // NOTE: read once per call, so set_active_cpu_isa switches the combine with the other loops.
  const CpuIsa isa = active_cpu_isa();
#if FP8ATTN_CPU_ISA_VARIANTS
  if (isa >= CpuIsa::kAvx512) return combine_avx512::combine_row_ops();
  if (isa == CpuIsa::kAvx2) return combine_avx2::combine_row_ops();
#endif
  (void)isa;
  return combine_baseline::combine_row_ops();
}

}  // namespace combine
}  // namespace fp8attn
