// fp8attn::engine's backward tiles (backward_tile.hpp), forwarded to the widest build of
// backward_tile.cpp this CPU runs: the same choice as the forward's query tile
// (lib/cpu_isa/cpu_isa.hpp, FP8ATTN_CPU_ISA included). Every build computes the same bits.
#include "lib/attention/engine/backward_tile.hpp"
#include "lib/cpu_isa/cpu_isa.hpp"

// FP8ATTN_CPU_ISA_VARIANTS: as in query_tile_dispatch.cpp.
#ifndef FP8ATTN_CPU_ISA_VARIANTS
#define FP8ATTN_CPU_ISA_VARIANTS 0
#endif

namespace fp8attn {

#define FP8ATTN_DECLARE_ISA_BUILD(ns)                                                                         \
  namespace ns {                                                                                              \
  size_t backward_tile_scratch_bytes(const AttentionConfig& config);                                         \
  uint64_t run_key_block_backward(const AttentionConfig& config, const AttentionBackwardProblem& problem,    \
                                  const engine::KeyBlockCoord& at, const engine::DqAccumulator& dq,           \
                                  void* scratch);                                                             \
  }
FP8ATTN_DECLARE_ISA_BUILD(engine_baseline)
#if FP8ATTN_CPU_ISA_VARIANTS
FP8ATTN_DECLARE_ISA_BUILD(engine_avx2)
FP8ATTN_DECLARE_ISA_BUILD(engine_avx512)
#endif
#undef FP8ATTN_DECLARE_ISA_BUILD

namespace engine {

// The layout of the scratch is the same text in every build.
size_t backward_tile_scratch_bytes(const AttentionConfig& config) {
  return engine_baseline::backward_tile_scratch_bytes(config);
}

uint64_t run_key_block_backward(const AttentionConfig& config, const AttentionBackwardProblem& problem,
                                const KeyBlockCoord& at, const DqAccumulator& dq, void* scratch) {
#if FP8ATTN_CPU_ISA_VARIANTS
  const CpuIsa isa = active_cpu_isa();
  if (isa >= CpuIsa::kAvx512) return engine_avx512::run_key_block_backward(config, problem, at, dq, scratch);
  if (isa == CpuIsa::kAvx2) return engine_avx2::run_key_block_backward(config, problem, at, dq, scratch);
#endif
  return engine_baseline::run_key_block_backward(config, problem, at, dq, scratch);
}

}  // namespace engine
}  // namespace fp8attn
