#include "lib/quantize/quantize_rows.hpp"

#include "lib/cpu_isa/cpu_isa.hpp"

// FP8ATTN_CPU_ISA_VARIANTS (set by fp8attn_add_cpu_isa_builds, lib/cpu_isa/CMakeLists.txt): 1
// when the AVX2 and AVX-512 builds are compiled in, 0 when only the one build is.
#ifndef FP8ATTN_CPU_ISA_VARIANTS
#define FP8ATTN_CPU_ISA_VARIANTS 0
#endif

namespace fp8attn {

namespace quantize_baseline {
const quant::QuantizeRowOps& quantize_row_ops();
}
#if FP8ATTN_CPU_ISA_VARIANTS
namespace quantize_avx2 {
const quant::QuantizeRowOps& quantize_row_ops();
}
namespace quantize_avx512 {
const quant::QuantizeRowOps& quantize_row_ops();
}
#endif

namespace quant {

const QuantizeRowOps& quantize_row_ops() {
  // NOTE: read on every call (one relaxed atomic load per quantize call, not per row), so a
  // test's set_active_cpu_isa switches the quantizer together with the engine (lib/cpu_isa).
  const CpuIsa isa = active_cpu_isa();
#if FP8ATTN_CPU_ISA_VARIANTS
  if (isa >= CpuIsa::kAvx512) return quantize_avx512::quantize_row_ops();
  if (isa == CpuIsa::kAvx2) return quantize_avx2::quantize_row_ops();
#endif
  (void)isa;
  return quantize_baseline::quantize_row_ops();
}

}  // namespace quant
}  // namespace fp8attn
