#include "lib/quantize/quantize_rows.hpp"

#include "lib/attention/engine/isa/query_tile_dispatch.hpp"

// FP8ATTN_QUANTIZE_ISA_VARIANTS (set by lib/quantize/isa/CMakeLists.txt): 1 when the AVX2 and
// AVX-512 builds are compiled in, 0 when only the one build is.
#ifndef FP8ATTN_QUANTIZE_ISA_VARIANTS
#define FP8ATTN_QUANTIZE_ISA_VARIANTS 0
#endif

namespace fp8attn {

namespace quantize_baseline {
const quant::QuantizeRowOps& quantize_row_ops();
}
#if FP8ATTN_QUANTIZE_ISA_VARIANTS
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
  // test's set_active_cpu_isa switches the quantizer together with the engine.
  const engine::CpuIsa isa = engine::active_cpu_isa();
#if FP8ATTN_QUANTIZE_ISA_VARIANTS
  if (isa == engine::CpuIsa::kAvx512) return quantize_avx512::quantize_row_ops();
  if (isa == engine::CpuIsa::kAvx2) return quantize_avx2::quantize_row_ops();
#endif
  (void)isa;
  return quantize_baseline::quantize_row_ops();
}

}  // namespace quant
}  // namespace fp8attn
