// The BF16 attention forward (kernels/sm90/attention, HGMMA) on FP8ATTN_BACKEND_EMULATOR against
// the CPU engine through the C API: equal bits for outputs, LSE and telemetry, on fresh random
// BF16 inputs, each case under round-robin and three shuffled schedules. The short cases (label
// emu); the longer ones are in test_bf16_fwd_emu_matrix.cpp (label emu_matrix).
#include <gtest/gtest.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "tests/kernels/bf16_fwd_emu_support.hpp"

namespace fp8attn::testing {
namespace {

using namespace fp8attn::workloads;

/// Every head dim (64: three consumer warpgroups, BlockM 192), causal and not, ragged lengths.
TEST(Bf16FwdEmu, EveryHeadDimCausalAndNot) {
  for (int hd : {64, 128, 256}) {
    const int bn = bf16_block_n(hd);
    for (bool causal : {false, true}) {
      Bf16Case c;
      c.shape = {1, 2 * bn / 3 + 37, 2 * bn + 5, 2, 1, hd};
      c.causal = causal;
      c.out_dtype = causal ? FP8ATTN_DTYPE_F32 : FP8ATTN_DTYPE_BF16;
      c.telemetry = !causal || hd != 128;
      c.name = "bf16 hd" + std::to_string(hd) + (causal ? " causal" : " full");
      run_bf16_case(c);
    }
  }
}

/// GQA 4:1 (causal, more keys than queries) and MQA 3:1.
TEST(Bf16FwdEmu, GroupedAndMultiQueryHeads) {
  Bf16Case gqa;
  gqa.shape = {1, 70, 300, 8, 2, 128};
  gqa.causal = true;
  gqa.name = "bf16 GQA 4:1";
  run_bf16_case(gqa);
  Bf16Case mqa;
  mqa.shape = {2, 100, 150, 3, 1, 64};
  mqa.name = "bf16 MQA 3:1";
  run_bf16_case(mqa);
}

/// A sliding window (blocks outside skipped, edge blocks masked per element), then causal with a
/// left window, in forward KV order.
TEST(Bf16FwdEmu, SlidingWindows) {
  Bf16Case c;
  c.shape = {1, 150, 500, 2, 1, 128};
  c.window_left = 200;
  c.window_right = 30;
  c.name = "bf16 window (200, 30)";
  run_bf16_case(c);
  c.causal = true;
  c.window_right = -1;
  c.kv_order = FP8ATTN_KV_ORDER_FORWARD;
  c.name = "bf16 causal window 200, forward order";
  run_bf16_case(c);
}

/// Varlen with three sequences (one without queries), causal and not.
TEST(Bf16FwdEmu, VarlenThreeSequences) {
  const std::vector<int32_t> cu_q = {0, 90, 90, 200};
  const std::vector<int32_t> cu_k = {0, 150, 200, 420};
  const AttentionShape shape{1, cu_q.back(), cu_k.back(), 2, 1, 128};
  for (bool causal : {false, true}) {
    const uint64_t seed = fresh_seed();
    Bf16Case c;
    c.shape = shape;
    c.causal = causal;
    c.out_dtype = FP8ATTN_DTYPE_F32;
    ForwardOptions o;
    o.cu_seqlens_q = &cu_q;
    o.cu_seqlens_k = &cu_k;
    expect_emulator_matches_engine(bf16_desc(c), shape, bf16_inputs(c, seed), seed, o,
                                   causal ? "bf16 varlen causal" : "bf16 varlen");
  }
}

/// The standard and the stabilized softmax on the same inputs, with every odd key a copy of the
/// one before it: each row's block max is tied, so the stabilized variant shifts the max
/// (sm90::stabilized_block_max). Both match the engine bit for bit, and the shift fired: the
/// stabilized kernel's outputs differ from the standard kernel's.
TEST(Bf16FwdEmu, StabilizedSoftmaxOnTiedMaxima) {
  for (int hd : {64, 256}) {
    const uint64_t seed = fresh_seed();
    Bf16Case c;
    c.shape = {1, 130, 2 * bf16_block_n(hd) + 11, 2, 1, hd};
    c.causal = hd == 64;
    c.duplicate_keys = true;
    const QuantizedInputs in = bf16_inputs(c, seed);
    c.name = "bf16 hd" + std::to_string(hd) + " tied maxima, standard";
    expect_emulator_matches_engine(bf16_desc(c), c.shape, in, seed, {}, c.name.c_str());
    c.stabilized = true;
    c.name = "bf16 hd" + std::to_string(hd) + " tied maxima, stabilized";
    expect_emulator_matches_engine(bf16_desc(c), c.shape, in, seed, {}, c.name.c_str());

    Bf16Case standard = c;
    standard.stabilized = false;
    const ForwardResult plain = run_emulated(bf16_desc(standard), c.shape, in, "round-robin");
    const ForwardResult shifted = run_emulated(bf16_desc(c), c.shape, in, "round-robin");
    ASSERT_EQ(plain.status, FP8ATTN_OK);
    ASSERT_EQ(shifted.status, FP8ATTN_OK);
    const int64_t changed = bit_mismatches(plain.out, shifted.out);
    std::printf("hd%d tied maxima: the stabilized shift changed %lld of %zu outputs (seed %llu)\n", hd,
                static_cast<long long>(changed), plain.out.size(), static_cast<unsigned long long>(seed));
    EXPECT_GT(changed, static_cast<int64_t>(plain.out.size() / 10)) << "the stabilized shift did not fire, seed " << seed;
  }
  // Fresh keys without copies, stabilized, at head_dim 128.
  Bf16Case r;
  r.shape = {1, 100, 400, 2, 2, 128};
  r.stabilized = true;
  r.name = "bf16 hd128 stabilized";
  run_bf16_case(r);
}

/// The refusal's status name, or "" when the call ran (run_forward throws on a failed call).
std::string refusal(const fp8attn_attention_desc& d, const AttentionShape& shape, const QuantizedInputs& in,
                    const ForwardOptions& o) {
  try {
    (void)run_emulated(d, shape, in, "round-robin", o);
  } catch (const std::exception& e) {
    std::printf("refused: %s\n", e.what());
    return std::string(e.what());
  }
  return "";
}

/// What the BF16 kernel does not run is refused with UNSUPPORTED_ON_BACKEND and a reason: two-level
/// accumulation, and V with its keys contiguous. The CPU backend runs both.
TEST(Bf16FwdEmu, RefusesPromotionAndKeysContiguousV) {
  const uint64_t seed = fresh_seed();
  Bf16Case c;
  c.shape = {1, 64, 100, 1, 1, 64};
  const QuantizedInputs in = bf16_inputs(c, seed);
  fp8attn_attention_desc promote = bf16_desc(c);
  promote.pv_promote_interval = 2;
  const std::string why_promote = refusal(promote, c.shape, in, {});
  EXPECT_NE(why_promote.find("UNSUPPORTED_ON_BACKEND"), std::string::npos) << why_promote;
  EXPECT_NE(why_promote.find("pv_promote_interval"), std::string::npos) << why_promote;
  ForwardOptions vt;
  vt.v_keys_contiguous = true;
  const std::string why_vt = refusal(bf16_desc(c), c.shape, in, vt);
  EXPECT_NE(why_vt.find("UNSUPPORTED_ON_BACKEND"), std::string::npos) << why_vt;
  EXPECT_NE(why_vt.find("keys contiguous"), std::string::npos) << why_vt;
  ForwardOptions cpu = vt;
  cpu.backend = FP8ATTN_BACKEND_CPU;
  EXPECT_EQ(run_forward(bf16_desc(c), c.shape, in, cpu).status, FP8ATTN_OK);
  EXPECT_EQ(run_forward(promote, c.shape, in, {}).status, FP8ATTN_OK);
}

}  // namespace
}  // namespace fp8attn::testing
