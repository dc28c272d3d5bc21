// Consecutive query tiles run as one engine call, up to kMaxTilesPerCall of them (tile_engine.cpp's
// query_tiles_run_together), so that the products prepare each block's K and V once for all the
// tiles that visit it; each tile keeps its own KV schedule (causal and windowed tiles visit
// different blocks, and two-level accumulation counts each tile's own blocks).
// Each row's operations must stay those of its own tile: the engine's out, LSE and telemetry with
// the tiles paired must equal, bit for bit, the same forward with every tile alone (a P-cast hook,
// here one that only counts, keeps the tiles apart). Inputs: outlier inputs (N(0,1) with
// large-magnitude channels), fresh seed; one worker and eight or more tiles per KV head, so that
// the work items hold two to eight tiles (runs of four, two, and a last one alone); ragged last
// tiles; causal masks, sliding windows, sinks and two-level accumulation beside the plain case.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "tests/common/engine_cases.hpp"
#include "tools/common/forward_runner.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::testing {
using namespace fp8attn::workloads;
namespace {

const EngineCase kCases[] = {
    {"e4m3 tensor-core addition, GQA 2:1, d128", FP8ATTN_DTYPE_E4M3, {1, 1200, 450, 4, 2, 128},
     [](fp8attn_attention_desc&) {}, ScaleGranularity::PerHead},
    {"e4m3 FP32 accumulation, two-level accumulation, d64", FP8ATTN_DTYPE_E4M3, {1, 1500, 333, 1, 1, 64},
     [](fp8attn_attention_desc& d) {
       d.accumulator_model = FP8ATTN_ACCUMULATOR_FP32;
       d.pv_promote_interval = 2;
     },
     ScaleGranularity::PerHead},
    {"e4m3 forward order, sinks, batch 2, d128", FP8ATTN_DTYPE_E4M3, {2, 1100, 500, 1, 1, 128},
     [](fp8attn_attention_desc& d) {
       d.kv_order = FP8ATTN_KV_ORDER_FORWARD;
       d.sink_tokens = 4;
     },
     ScaleGranularity::PerHead},
    {"bf16 stabilized softmax, d256", FP8ATTN_DTYPE_BF16, {1, 2100, 300, 2, 2, 256},
     [](fp8attn_attention_desc& d) { d.softmax_variant = FP8ATTN_SOFTMAX_STABILIZED; }, ScaleGranularity::Unit},
    {"e4m3 causal, d128", FP8ATTN_DTYPE_E4M3, {1, 1200, 1200, 2, 2, 128},
     [](fp8attn_attention_desc& d) { d.causal = 1; }, ScaleGranularity::PerHead},
    {"e4m3 causal, two-level accumulation every 2 blocks, sinks, d64", FP8ATTN_DTYPE_E4M3, {1, 1500, 1700, 2, 2, 64},
     [](fp8attn_attention_desc& d) {
       d.causal = 1;
       d.pv_promote_interval = 2;
       d.sink_tokens = 4;
     },
     ScaleGranularity::PerHead},
    {"e4m3 sliding window 300 left, 40 right, forward order, d128", FP8ATTN_DTYPE_E4M3, {1, 1300, 1400, 2, 2, 128},
     [](fp8attn_attention_desc& d) {
       d.window_left = 300;
       d.window_right = 40;
       d.kv_order = FP8ATTN_KV_ORDER_FORWARD;
     },
     ScaleGranularity::PerHead},
    {"bf16 causal, sliding window 200, d256", FP8ATTN_DTYPE_BF16, {1, 1100, 1100, 2, 2, 256},
     [](fp8attn_attention_desc& d) {
       d.causal = 1;
       d.window_left = 200;
     },
     ScaleGranularity::Unit},
};

TEST(EngineTilePairs, TilesRunAsOneCallKeepEveryBit) {
  const uint64_t seed = fresh_seed();
  for (const EngineCase& c : kCases) {
    const EngineCaseInputs in = engine_case_inputs(c, seed);
    const ForwardResult together = run_engine_with_hooks(in.desc, c.shape, in.q, {}, 1);
    int64_t casts = 0;
    engine::EngineHooks apart;
    apart.on_p_cast = [&](int64_t, int, int64_t, int64_t, const float*, int count) { casts += count; };
    const ForwardResult alone = run_engine_with_hooks(in.desc, c.shape, in.q, apart, 1);
    const std::string where = std::string(c.name) + ", seed " + std::to_string(seed);
    ASSERT_GT(casts, 0) << where;
    expect_same_bits(alone, together, where + ", tiles together against alone");
    std::printf("%s: tiles together and alone bit-equal (%zu outputs)\n", c.name, together.out.size());
  }
}

}  // namespace
}  // namespace fp8attn::testing
