// fp8attn::engine's query tile (query_tile.hpp), forwarded to the build of query_tile.cpp that
// lib/cpu_isa chooses (FP8ATTN_CPU_ISA included). Every build computes the same bits.
#include "lib/attention/engine/decode_tile.hpp"
#include "lib/attention/engine/query_tile.hpp"
#include "lib/cpu_isa/cpu_isa.hpp"

// FP8ATTN_CPU_ISA_VARIANTS (set by fp8attn_add_cpu_isa_builds, lib/cpu_isa/CMakeLists.txt): 1
// when the AVX2 and AVX-512 builds are compiled in (x86-64, FP8ATTN_NATIVE=OFF), 0 when only the
// one build is.
#ifndef FP8ATTN_CPU_ISA_VARIANTS
#define FP8ATTN_CPU_ISA_VARIANTS 0
#endif

namespace fp8attn {

// The per-ISA builds' entry points (query_tile_in_isa.cpp).
#define FP8ATTN_DECLARE_ISA_BUILD(ns)                                                                              \
  namespace ns {                                                                                                   \
  size_t query_tile_scratch_bytes(const AttentionConfig& config);                                                 \
  void run_query_tile(const AttentionConfig& config, const AttentionProblem& problem,                             \
                      const engine::QueryTileCoord& at, void* scratch, engine::KvBlockCache& kv,                   \
                      engine::TileTelemetry& telemetry, const engine::EngineHooks& hooks);                         \
  size_t decode_tile_scratch_bytes(const AttentionConfig& config);                                                \
  void run_decode_tile(const AttentionConfig& config, const AttentionProblem& problem,                            \
                       const engine::DecodeTileCoord& at, void* scratch, engine::KvBlockCache& kv,                 \
                       engine::TileTelemetry& telemetry, const engine::DecodePartials& partials);                 \
  void store_output(const AttentionProblem& p, int64_t b, int64_t row, int head, int e, float o,                  \
                    engine::TileTelemetry& telemetry);                                                             \
  }
FP8ATTN_DECLARE_ISA_BUILD(engine_baseline)
#if FP8ATTN_CPU_ISA_VARIANTS
FP8ATTN_DECLARE_ISA_BUILD(engine_avx2)
FP8ATTN_DECLARE_ISA_BUILD(engine_avx512)
#endif
#undef FP8ATTN_DECLARE_ISA_BUILD

namespace engine {
namespace {

using RunQueryTile = void (*)(const AttentionConfig&, const AttentionProblem&, const QueryTileCoord&, void*, KvBlockCache&,
                              TileTelemetry&, const EngineHooks&);

RunQueryTile build_of(CpuIsa isa) {
#if FP8ATTN_CPU_ISA_VARIANTS
  if (isa >= CpuIsa::kAvx512) return &engine_avx512::run_query_tile;
  if (isa == CpuIsa::kAvx2) return &engine_avx2::run_query_tile;
#endif
  (void)isa;
  return &engine_baseline::run_query_tile;
}

using RunDecodeTile = void (*)(const AttentionConfig&, const AttentionProblem&, const DecodeTileCoord&, void*,
                               KvBlockCache&, TileTelemetry&, const DecodePartials&);

RunDecodeTile decode_build_of(CpuIsa isa) {
#if FP8ATTN_CPU_ISA_VARIANTS
  if (isa >= CpuIsa::kAvx512) return &engine_avx512::run_decode_tile;
  if (isa == CpuIsa::kAvx2) return &engine_avx2::run_decode_tile;
#endif
  (void)isa;
  return &engine_baseline::run_decode_tile;
}

}  // namespace

size_t decode_tile_scratch_bytes(const AttentionConfig& config) {
  return engine_baseline::decode_tile_scratch_bytes(config);
}

void run_decode_tile(const AttentionConfig& config, const AttentionProblem& problem, const DecodeTileCoord& at,
                     void* scratch, KvBlockCache& kv, TileTelemetry& telemetry, const DecodePartials& partials) {
  decode_build_of(active_cpu_isa())(config, problem, at, scratch, kv, telemetry, partials);
}

// NOTE: a scalar store, the same in every build.
void store_output(const AttentionProblem& p, int64_t b, int64_t row, int head, int e, float o,
                  TileTelemetry& telemetry) {
  engine_baseline::store_output(p, b, row, head, e, o, telemetry);
}

// The layout of a tile's scratch is the same text in every build.
size_t query_tile_scratch_bytes(const AttentionConfig& config) {
  return engine_baseline::query_tile_scratch_bytes(config);
}

void run_query_tile(const AttentionConfig& config, const AttentionProblem& problem, const QueryTileCoord& at,
                    void* scratch, KvBlockCache& kv, TileTelemetry& telemetry, const EngineHooks& hooks) {
  build_of(active_cpu_isa())(config, problem, at, scratch, kv, telemetry, hooks);
}

}  // namespace engine
}  // namespace fp8attn
