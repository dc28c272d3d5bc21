// fp8attn::engine's FP32 decode tile (decode_fp32.hpp), forwarded to the build of decode_fp32.cpp
// that lib/cpu_isa chooses (FP8ATTN_CPU_ISA included). Every build computes the same bits.
#include "lib/attention/engine/decode_fp32.hpp"
#include "lib/cpu_isa/cpu_isa.hpp"

// FP8ATTN_CPU_ISA_VARIANTS: as in query_tile_dispatch.cpp.
#ifndef FP8ATTN_CPU_ISA_VARIANTS
#define FP8ATTN_CPU_ISA_VARIANTS 0
#endif

namespace fp8attn {

#define FP8ATTN_DECLARE_ISA_BUILD(ns)                                                                           \
  namespace ns {                                                                                                \
  bool decode_fp32_applies(const AttentionConfig& config, const AttentionProblem& problem);                    \
  int decode_fp32_heads_per_item(const AttentionConfig& config);                                               \
  size_t decode_fp32_scratch_bytes(const AttentionConfig& config);                                             \
  void run_decode_fp32_tile(const AttentionConfig& config, const AttentionProblem& problem,                    \
                            const engine::DecodeTileCoord& at, void* scratch, engine::TileTelemetry& telemetry, \
                            const engine::DecodePartials& partials);                                           \
  }
FP8ATTN_DECLARE_ISA_BUILD(engine_baseline)
#if FP8ATTN_CPU_ISA_VARIANTS
FP8ATTN_DECLARE_ISA_BUILD(engine_avx2)
FP8ATTN_DECLARE_ISA_BUILD(engine_avx512)
#endif
#undef FP8ATTN_DECLARE_ISA_BUILD

namespace engine {

// The conditions and the scratch layout are the same text in every build.
bool decode_fp32_applies(const AttentionConfig& config, const AttentionProblem& problem) {
  return engine_baseline::decode_fp32_applies(config, problem);
}

int decode_fp32_heads_per_item(const AttentionConfig& config) {
  return engine_baseline::decode_fp32_heads_per_item(config);
}

size_t decode_fp32_scratch_bytes(const AttentionConfig& config) {
  return engine_baseline::decode_fp32_scratch_bytes(config);
}

void run_decode_fp32_tile(const AttentionConfig& config, const AttentionProblem& problem, const DecodeTileCoord& at,
                          void* scratch, TileTelemetry& telemetry, const DecodePartials& partials) {
#if FP8ATTN_CPU_ISA_VARIANTS
  const CpuIsa isa = active_cpu_isa();
  if (isa >= CpuIsa::kAvx512)
    return engine_avx512::run_decode_fp32_tile(config, problem, at, scratch, telemetry, partials);
  if (isa == CpuIsa::kAvx2) return engine_avx2::run_decode_fp32_tile(config, problem, at, scratch, telemetry, partials);
#endif
  engine_baseline::run_decode_fp32_tile(config, problem, at, scratch, telemetry, partials);
}

}  // namespace engine
}  // namespace fp8attn
