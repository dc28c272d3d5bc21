// The FP8 attention kernel (kernels/sm90/attention) on FP8ATTN_BACKEND_EMULATOR against the CPU
// engine through the C API: equal bits for outputs, LSE and telemetry, on fresh random E4M3
// inputs (N(0,1) quantized per (sequence, KV head) unless a case says otherwise), each case under
// round-robin and three shuffled schedules.
#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/sm90/tile_config.hpp"
#include "tests/kernels/fp8_fwd_emu_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::testing {
namespace {

using namespace fp8attn::workloads;

struct Case {
  AttentionShape shape;
  bool causal = false;
  int32_t window_left = -1, window_right = -1;
  int32_t kv_order = FP8ATTN_KV_ORDER_REVERSE;
  int32_t p_scale_log2 = 8;
  int32_t promote = 0;
  int32_t sink_tokens = 0;
  bool telemetry = true;
  bool block_descales = false;
  bool stabilized = false;
  bool accumulator_model = false;
  bool v_keys_contiguous = false;
  int32_t out_dtype = FP8ATTN_DTYPE_BF16;
  std::string name;
};

void run_case(const Case& c) {
  const uint64_t seed = fresh_seed();
  const auto tile = sm90::attention_tile(c.shape.head_dim, true, sm90::pv_promotion_of_interval(c.promote));
  const AttentionInputs real = normal_inputs(c.shape, seed);
  const QuantizedInputs q = c.block_descales
                                ? quantize(real, FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerBlock, tile.block_m,
                                           tile.block_n, c.sink_tokens)
                                : quantize(real, FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerHead);
  fp8attn_attention_desc d = make_desc(c.shape, FP8ATTN_DTYPE_E4M3, c.out_dtype);
  d.causal = c.causal;
  d.window_left = c.window_left;
  d.window_right = c.window_right;
  d.kv_order = c.kv_order;
  d.p_scale_log2 = c.p_scale_log2;
  d.pv_promote_interval = c.promote;
  d.sink_tokens = c.sink_tokens;
  d.telemetry = c.telemetry;
  if (c.stabilized) d.softmax_variant = FP8ATTN_SOFTMAX_STABILIZED;
  // NOTE: the tensor core's addition is the default; the flag sets it explicitly, as a caller would.
  if (c.accumulator_model) d.accumulator_model = FP8ATTN_ACCUMULATOR_TENSOR_CORE;
  ForwardOptions options;
  options.v_keys_contiguous = c.v_keys_contiguous;
  expect_emulator_matches_engine(d, c.shape, q, seed, options, c.name.c_str());
}

/// Query and key lengths 1, BlockN − 1, BlockN, BlockN + 1 and 3·BlockN + 5, each varied with
/// the other held at a length that spans several blocks (head_dim 128, BlockN 224).
TEST(Fp8FwdEmu, SequenceLengthsAroundTheBlockSize) {
  const int bn = sm90::attention_tile(128, true, sm90::PvPromotion::Off).block_n;
  const std::vector<int64_t> lengths = {1, bn - 1, bn, bn + 1, 3 * bn + 5};
  for (int64_t len : lengths) {
    Case c;
    c.shape = {1, len, 3 * bn + 5, 2, 1, 128};
    c.name = "hd128 q=" + std::to_string(len) + " k=" + std::to_string(3 * bn + 5);
    run_case(c);
    c.shape = {1, bn + 1, len, 2, 1, 128};
    c.causal = len % 2 == 1;
    c.name = "hd128 q=" + std::to_string(bn + 1) + " k=" + std::to_string(len) + (c.causal ? " causal" : "");
    run_case(c);
  }
}

/// Every head dim, causal and not, with ragged lengths on both sides.
TEST(Fp8FwdEmu, EveryHeadDimCausalAndNot) {
  for (int hd : {64, 128, 256}) {
    const int bn = sm90::attention_tile(hd, true, sm90::PvPromotion::Off).block_n;
    for (bool causal : {false, true}) {
      Case c;
      c.shape = {2, bn + 37, 2 * bn + 5, 2, 2, hd};
      c.causal = causal;
      c.out_dtype = causal ? FP8ATTN_DTYPE_F32 : FP8ATTN_DTYPE_BF16;
      c.name = "hd" + std::to_string(hd) + (causal ? " causal" : " full");
      run_case(c);
    }
  }
}

/// GQA 4:1 and MQA (one KV head for three query heads), causal with more keys than queries.
TEST(Fp8FwdEmu, GroupedAndMultiQueryHeads) {
  Case gqa;
  gqa.shape = {1, 150, 300, 8, 2, 128};
  gqa.causal = true;
  gqa.name = "GQA 4:1";
  run_case(gqa);
  Case mqa;
  mqa.shape = {2, 130, 200, 3, 1, 64};
  mqa.name = "MQA 3:1";
  run_case(mqa);
}

/// A sliding window: blocks outside it are skipped, edge blocks masked element by element.
TEST(Fp8FwdEmu, SlidingWindows) {
  Case c;
  c.shape = {1, 500, 700, 2, 1, 128};
  c.window_left = 250;
  c.window_right = 40;
  c.name = "window (250, 40)";
  run_case(c);
  c.causal = true;
  c.window_right = -1;
  c.name = "causal window 250";
  run_case(c);
  // Windows wider than any sequence, with more queries than keys (a negative diagonal): the
  // kernel's producer walks keys in 32 bits, where diagonal - INT32_MAX would overflow; the plan
  // clamps such windows to Sq + Sk (the same mask).
  c.shape = {1, 700, 500, 2, 1, 128};
  c.causal = false;
  c.window_left = INT32_MAX;
  c.window_right = INT32_MAX;
  c.name = "windows of INT32_MAX, Sq > Sk";
  run_case(c);
}

/// Forward KV order, S_p = 1, the stabilized softmax and the accumulator model.
TEST(Fp8FwdEmu, OrderScaleVariantAndAccumulatorModel) {
  Case c;
  c.shape = {1, 260, 700, 2, 1, 128};
  c.kv_order = FP8ATTN_KV_ORDER_FORWARD;
  c.p_scale_log2 = 0;
  c.name = "forward order, S_p = 1";
  run_case(c);
  c.kv_order = FP8ATTN_KV_ORDER_REVERSE;
  c.p_scale_log2 = 8;
  c.stabilized = true;
  c.name = "stabilized softmax";
  run_case(c);
  c.stabilized = false;
  c.accumulator_model = true;
  c.name = "tensor core accumulation set explicitly";
  run_case(c);
}

/// Two-level accumulation: every block (all head dims), every 3 blocks (head_dim 64), and per-block
/// descales of Q, K and V (which promote every block), with and without sink isolation.
TEST(Fp8FwdEmu, PromotionBlockDescalesAndSinks) {
  for (int hd : {64, 128, 256}) {
    Case c;
    c.shape = {1, 200, 4 * sm90::attention_tile(hd, true, sm90::PvPromotion::EveryBlock).block_n + 9, 2, 1, hd};
    c.promote = 1;
    c.accumulator_model = true;
    c.name = "hd" + std::to_string(hd) + " promotion every block";
    run_case(c);
  }
  Case n;
  n.shape = {1, 300, 1000, 2, 2, 64};
  n.promote = 3;
  n.accumulator_model = true;
  n.causal = true;
  n.name = "hd64 promotion every 3 blocks";
  run_case(n);
  Case b;
  b.shape = {1, 300, 800, 2, 1, 128};
  b.block_descales = true;
  b.name = "per-block descales";
  run_case(b);
  b.sink_tokens = 4;
  b.name = "per-block descales with sink isolation";
  run_case(b);
  b.block_descales = false;
  b.telemetry = false;
  b.name = "sink isolation, no telemetry";
  run_case(b);
}

/// The every-N promotion cases of one head dim, on its every-N tile (the shapes' head_dim):
///   1. N = 2, telemetry on, 5 blocks and a partial one;
///   2. N = 2, GQA, causal, F32 output, 3 blocks and a partial one;
///   3. N = 16 over 18 blocks (a promotion inside the loop), causal and not;
///   4. N = 2 with a window (250, 40), then causal with a window of 250 and V keys contiguous.
/// The shapes give batch, query rows and heads (smaller at head_dim 256, whose kernel is slower to
/// emulate); the key lengths of 1–3 follow the tile's BlockN, so none is a multiple of it.
struct EveryNShapes {
  AttentionShape first, gqa, long_loop, window;
};

void run_every_n_cases(const EveryNShapes& s) {
  const int hd = s.first.head_dim;
  const int bn = sm90::attention_tile(hd, true, sm90::PvPromotion::EveryN).block_n;
  const std::string at = "hd" + std::to_string(hd) + " every ";
  Case c;
  c.shape = s.first;
  c.shape.seqlen_k = 5 * bn + 9;
  c.promote = 2;
  c.accumulator_model = true;
  c.name = at + "2 blocks, telemetry";
  run_case(c);
  c.telemetry = false;
  c.shape = s.gqa;
  c.shape.seqlen_k = 3 * bn + 37;
  c.causal = true;
  c.out_dtype = FP8ATTN_DTYPE_F32;
  c.name = at + "2 blocks, GQA " + std::to_string(s.gqa.heads_q / s.gqa.heads_kv) + ":1, causal";
  run_case(c);
  c.shape = s.long_loop;
  c.shape.seqlen_k = 17 * bn + 5;
  c.causal = false;
  c.promote = 16;
  c.name = at + "16 blocks, 18 blocks";
  run_case(c);
  c.causal = true;
  c.name = at + "16 blocks, causal";
  run_case(c);
  c.shape = s.window;
  c.causal = false;
  c.promote = 2;
  c.window_left = 250;
  c.window_right = 40;
  c.name = at + "2 blocks, window (250, 40)";
  run_case(c);
  c.causal = true;
  c.window_right = -1;
  c.v_keys_contiguous = true;
  c.name = at + "2 blocks, causal window 250, V keys contiguous";
  run_case(c);
}

/// Two-level accumulation every N > 1 blocks at head_dim 128, on that kernel's own tile (BlockN
/// 128, not 224: tile_config.hpp): N = 2 and 16 (with more than 16 blocks, so that a promotion
/// falls inside the loop), causal and not, GQA, sliding windows, varlen, key lengths that are no
/// multiple of BlockN, V with its keys contiguous, and telemetry on in one case.
TEST(Fp8FwdEmu, PromotionEveryNBlocksAtHeadDim128) {
  ASSERT_EQ(sm90::attention_tile(128, true, sm90::PvPromotion::EveryN).block_n, 128) << "the every-N tile of head_dim 128";
  run_every_n_cases({{1, 200, 0, 2, 1, 128}, {2, 150, 0, 8, 2, 128}, {1, 130, 0, 2, 1, 128}, {1, 500, 700, 2, 1, 128}});
}

/// Varlen with every-N promotion at head_dim 128: three sequences, one empty of queries, one with
/// more than three KV blocks.
TEST(Fp8FwdEmu, PromotionEveryNBlocksAtHeadDim128Varlen) {
  const int bn = sm90::attention_tile(128, true, sm90::PvPromotion::EveryN).block_n;
  const std::vector<int32_t> cu_q = {0, 130, 130, 400};
  const std::vector<int32_t> cu_k = {0, 250, 300, 3 * bn + 300};
  const AttentionShape shape{1, cu_q.back(), cu_k.back(), 4, 2, 128};
  const uint64_t seed = fresh_seed();
  const QuantizedInputs q = quantize(normal_inputs(shape, seed), FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerTensor);
  fp8attn_attention_desc d = make_desc(shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
  d.causal = 1;
  d.pv_promote_interval = 2;
  ForwardOptions o;
  o.cu_seqlens_q = &cu_q;
  o.cu_seqlens_k = &cu_k;
  expect_emulator_matches_engine(d, shape, q, seed, o, "hd128 every 2 blocks, varlen causal");
}

/// Query tiles that visit no KV block: a sequence without keys, and causal rows above the diagonal
/// of a sequence with far fewer keys than queries. Such a tile loads no Q and writes O = 0 and
/// LSE = −inf (a consumer that released a Q it never read let the next tile's load run a phase
/// ahead of a lagging warp's parity wait: a deadlock).
TEST(Fp8FwdEmu, VarlenTilesWithoutKeys) {
  const std::vector<int32_t> cu_q = {0, 130, 400, 420};
  const std::vector<int32_t> cu_k = {0, 0, 10, 40};
  const AttentionShape shape{1, cu_q.back(), cu_k.back(), 2, 1, 64};
  const uint64_t seed = fresh_seed();
  const QuantizedInputs q = quantize(normal_inputs(shape, seed), FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerTensor);
  fp8attn_attention_desc d = make_desc(shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
  d.causal = 1;
  d.telemetry = 1;
  ForwardOptions o;
  o.cu_seqlens_q = &cu_q;
  o.cu_seqlens_k = &cu_k;
  expect_emulator_matches_engine(d, shape, q, seed, o, "varlen tiles without keys");
}

/// Two-level accumulation every N > 1 blocks at head_dim 256, on the head-dim split tile (BlockM
/// 64, BlockN 96; two warpgroups share the 64 rows, each with 128 columns of O: tile_config.hpp):
/// N = 2 and 16 (18 blocks, so a promotion falls inside the loop), causal and not, GQA, windows,
/// query lengths past one BlockM, key lengths no multiple of BlockN, V with its keys contiguous,
/// and telemetry on in the first case (each row's P̃ counted once, though two warpgroups run it).
TEST(Fp8FwdEmu, PromotionEveryNBlocksAtHeadDim256) {
  const auto tile = sm90::attention_tile(256, true, sm90::PvPromotion::EveryN);
  ASSERT_EQ(tile.block_m, 64) << "the head-dim split tile of head_dim 256";
  ASSERT_EQ(tile.head_dim_split, 2);
  run_every_n_cases({{1, 100, 0, 2, 1, 256}, {2, 90, 0, 4, 1, 256}, {1, 70, 0, 1, 1, 256}, {1, 300, 500, 1, 1, 256}});
}

/// Per-block Q and K descales (V per head) with every-N promotion at head_dim 256: the Q blocks
/// are the split tile's 64 rows in the engine and in the kernel alike. (Per-block V descales are
/// refused there: PromotionEveryNWithPerBlockVDescalesRefused.)
TEST(Fp8FwdEmu, PromotionEveryNWithQAndKBlockDescalesAtHeadDim256) {
  const auto tile = sm90::attention_tile(256, true, sm90::PvPromotion::EveryN);
  for (const bool causal : {false, true}) {
    const AttentionShape shape{1, 3 * tile.block_m + 7, 4 * tile.block_n + 11, 2, 1, 256};
    const uint64_t seed = fresh_seed();
    const AttentionInputs real = normal_inputs(shape, seed);
    QuantizedInputs q = quantize(real, FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerBlock, tile.block_m, tile.block_n);
    const QuantizedInputs per_head = quantize(real, FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerHead);
    q.v = per_head.v;
    q.v_descale = per_head.v_descale;
    q.v_block_descale.clear();
    ASSERT_GT(q.q_blocks, 3) << "several 64-row Q blocks, each with its own descale";
    fp8attn_attention_desc d = make_desc(shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16);
    d.causal = causal;
    d.pv_promote_interval = 2;
    d.telemetry = 1;
    expect_emulator_matches_engine(d, shape, q, seed, ForwardOptions{},
                                   causal ? "hd256 every 2, Q/K block descales, causal" : "hd256 every 2, Q/K block descales");
  }
}

/// Varlen with every-N promotion at head_dim 256: three sequences, one empty of queries, one with
/// more than three KV blocks, telemetry on.
TEST(Fp8FwdEmu, PromotionEveryNBlocksAtHeadDim256Varlen) {
  const int bn = sm90::attention_tile(256, true, sm90::PvPromotion::EveryN).block_n;
  const std::vector<int32_t> cu_q = {0, 130, 130, 300};
  const std::vector<int32_t> cu_k = {0, 250, 300, 3 * bn + 300};
  const AttentionShape shape{1, cu_q.back(), cu_k.back(), 2, 1, 256};
  const uint64_t seed = fresh_seed();
  const QuantizedInputs q = quantize(normal_inputs(shape, seed), FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerTensor);
  fp8attn_attention_desc d = make_desc(shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
  d.causal = 1;
  d.pv_promote_interval = 2;
  d.telemetry = 1;
  ForwardOptions o;
  o.cu_seqlens_q = &cu_q;
  o.cu_seqlens_k = &cu_k;
  expect_emulator_matches_engine(d, shape, q, seed, o, "hd256 every 2 blocks, varlen causal, telemetry");
}

/// Per-block V descales promote every block, on the every-block kernel, whose tile is not the
/// every-N one (head_dim 128: BlockN 224, not 128; head_dim 256: BlockM 128, not 64), so the
/// backend refuses them with an every-N interval.
TEST(Fp8FwdEmu, PromotionEveryNWithPerBlockVDescalesRefused) {
  for (int hd : {128, 256}) {
    const auto tile = sm90::attention_tile(hd, true, sm90::PvPromotion::EveryN);
    const uint64_t seed = fresh_seed();
    const AttentionShape small{1, 130, 2 * tile.block_n + 9, 2, 1, hd};
    const QuantizedInputs blocks = quantize(normal_inputs(small, seed), FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerBlock,
                                            tile.block_m, tile.block_n);
    fp8attn_attention_desc bd = make_desc(small, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16);
    bd.pv_promote_interval = 2;
    EXPECT_EQ(run_forward(bd, small, blocks).status, FP8ATTN_OK) << "the CPU engine runs it, hd " << hd;
    std::string why;
    try {
      run_emulated(bd, small, blocks, "round-robin");
    } catch (const std::exception& e) {
      why = e.what();
    }
    std::printf("hd%d: %s\n", hd, why.c_str());
    EXPECT_NE(why.find("FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND"), std::string::npos) << "got: " << why;
    EXPECT_NE(why.find("per-block V descales"), std::string::npos) << why;
    EXPECT_NE(why.find("not the every-N tile " + std::to_string(tile.block_m)), std::string::npos) << why;
  }
}

/// V passed with its keys contiguous: the kernel loads Vᵀ with TMA instead of transposing it.
TEST(Fp8FwdEmu, VWithKeysContiguous) {
  for (int hd : {64, 128, 256}) {
    Case c;
    c.promote = hd == 256 ? 1 : 0;
    const int bn = sm90::attention_tile(hd, true, sm90::pv_promotion_of_interval(c.promote)).block_n;
    c.shape = {2, 150, 2 * bn + 7, 2, 1, hd};
    c.v_keys_contiguous = true;
    c.causal = hd == 64;
    c.name = "hd" + std::to_string(hd) + " V keys contiguous";
    run_case(c);
  }
}

/// Varlen with three sequences of different query and key lengths (one of them empty of queries).
TEST(Fp8FwdEmu, VarlenThreeSequences) {
  const std::vector<int32_t> cu_q = {0, 130, 130, 400};
  const std::vector<int32_t> cu_k = {0, 250, 300, 800};
  const AttentionShape shape{1, cu_q.back(), cu_k.back(), 4, 2, 128};
  for (bool causal : {false, true}) {
    const uint64_t seed = fresh_seed();
    const QuantizedInputs q = quantize(normal_inputs(shape, seed), FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerTensor);
    fp8attn_attention_desc d = make_desc(shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
    d.causal = causal;
    d.telemetry = 1;
    ForwardOptions o;
    o.cu_seqlens_q = &cu_q;
    o.cu_seqlens_k = &cu_k;
    expect_emulator_matches_engine(d, shape, q, seed, o, causal ? "varlen causal" : "varlen");
  }
}

}  // namespace
}  // namespace fp8attn::testing
