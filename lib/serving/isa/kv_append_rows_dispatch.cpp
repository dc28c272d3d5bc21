#include "lib/cpu_isa/cpu_isa.hpp"
#include "lib/serving/kv_append_rows.hpp"

// FP8ATTN_CPU_ISA_VARIANTS (set by fp8attn_add_cpu_isa_builds, lib/cpu_isa/CMakeLists.txt): 1
// when the AVX2 and AVX-512 builds are compiled in, 0 when only the one build is.
#ifndef FP8ATTN_CPU_ISA_VARIANTS
#define FP8ATTN_CPU_ISA_VARIANTS 0
#endif

namespace fp8attn {

namespace kv_append_baseline {
const serving::KvAppendRowOps& kv_append_row_ops();
}
#if FP8ATTN_CPU_ISA_VARIANTS
namespace kv_append_avx2 {
const serving::KvAppendRowOps& kv_append_row_ops();
}
namespace kv_append_avx512 {
const serving::KvAppendRowOps& kv_append_row_ops();
}
#endif

namespace serving {

const KvAppendRowOps& kv_append_row_ops() {
  // NOTE: read on every call (once per append, not per row), so set_active_cpu_isa switches the
  // append together with the engine and the quantizer.
  const CpuIsa isa = active_cpu_isa();
#if FP8ATTN_CPU_ISA_VARIANTS
  if (isa >= CpuIsa::kAvx512) return kv_append_avx512::kv_append_row_ops();
  if (isa == CpuIsa::kAvx2) return kv_append_avx2::kv_append_row_ops();
#endif
  (void)isa;
  return kv_append_baseline::kv_append_row_ops();
}

}  // namespace serving
}  // namespace fp8attn
