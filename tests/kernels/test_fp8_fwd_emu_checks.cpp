// Checks of the emulated FP8 attention kernel beyond the case matrix: the FP64 oracle's bound,
// the device runtime's counters (an execute call allocates and synchronizes nothing), the
// backend's refusals, and seeded failures that the emulator must report.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/emu/runtime.hpp"
#include "kernels/sm90/attention/attention_fwd_emulated.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/backend/emulated_runtime.hpp"
#include "lib/backend/gpu/attention_fwd_plan.hpp"
#include "lib/context/context.hpp"
#include "tests/kernels/fp8_fwd_emu_support.hpp"
#include "tools/common/fresh_seed.hpp"
#include "tools/common/host_tensor.hpp"
#include "tools/common/low_precision_reference.hpp"

namespace fp8attn::testing {
namespace {

using namespace fp8attn::workloads;

/// A small problem and its C API arguments over caller-owned host buffers (outputs poisoned).
struct Problem {
  AttentionShape shape{1, 150, 250, 2, 1, 128};
  QuantizedInputs in;
  std::vector<uint16_t> out;
  std::vector<float> lse;
  fp8attn_attention_args args{};
  explicit Problem(uint64_t seed) {
    in = quantize(normal_inputs(shape, seed), FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerTensor);
    const auto& s = shape;
    out.assign(static_cast<size_t>(s.seqlen_q * s.heads_q * s.head_dim), 0xFFFF);
    lse.assign(static_cast<size_t>(s.heads_q * s.seqlen_q), -12345.0f);
    args.struct_size = sizeof args;
    args.q = dense_host_tensor(in.q.data(), FP8ATTN_DTYPE_E4M3, {1, s.seqlen_q, s.heads_q, s.head_dim});
    args.k = dense_host_tensor(in.k.data(), FP8ATTN_DTYPE_E4M3, {1, s.seqlen_k, s.heads_kv, s.head_dim});
    args.v = dense_host_tensor(in.v.data(), FP8ATTN_DTYPE_E4M3, {1, s.seqlen_k, s.heads_kv, s.head_dim});
    args.out = dense_host_tensor(out.data(), FP8ATTN_DTYPE_BF16, {1, s.seqlen_q, s.heads_q, s.head_dim});
    args.lse = dense_host_tensor(lse.data(), FP8ATTN_DTYPE_F32, {1, s.heads_q, s.seqlen_q});
  }
  fp8attn_attention_desc desc() const { return make_desc(shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16); }
  bool outputs_poisoned() const {
    for (uint16_t x : out)
      if (x != 0xFFFF) return false;
    for (float x : lse)
      if (x != -12345.0f) return false;
    return true;
  }
};

fp8attn_context emulator_context() {
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_EMULATOR;
  fp8attn_context ctx = nullptr;
  EXPECT_EQ(fp8attn_context_create(&o, &ctx, nullptr), FP8ATTN_OK);
  return ctx;
}

// The emulated kernel against the FP64 oracle on N(0,1) inputs quantized per tensor, causal,
// head_dim 128: max |kernel − oracle| ≤ 2·max |P-rounded reference − oracle| + 1e-3 (the CPU
// engine's bound, FlashAttention-3's test).
TEST(Fp8FwdEmuChecks, WithinTheOracleBound) {
  const uint64_t seed = fresh_seed();
  const AttentionShape shape{1, 300, 500, 2, 1, 128};
  const AttentionInputs real = normal_inputs(shape, seed);
  const QuantizedInputs q = quantize(real, FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerHead);
  fp8attn_attention_desc d = make_desc(shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
  d.causal = 1;
  const ForwardResult kernel = run_emulated(d, shape, q, "round-robin");
  const ForwardResult oracle = run_forward(d, shape, q, {FP8ATTN_BACKEND_REFERENCE});
  ASSERT_EQ(kernel.status, FP8ATTN_OK);
  const auto ref = low_precision_reference(d, shape, dequantize(real, q));
  const double err = max_abs_diff(kernel.out, oracle.out), bound = 2 * max_abs_diff(ref, oracle.out) + 1e-3;
  std::printf("emulated kernel: max|kernel - oracle| = %.3e, bound %.3e (seed %llu)\n", err, bound,
              static_cast<unsigned long long>(seed));
  EXPECT_LE(err, bound) << "seed " << seed;
}

// The smallest every-N case of a head dim, on its every-N tile (tile_config.hpp): three KV blocks
// promoted every two, causal, bit-equal to the engine under every schedule (the larger cases are
// Fp8FwdEmu.PromotionEveryNBlocksAtHeadDim*, label emu_matrix).
void expect_every_two_blocks_match(int head_dim, bool telemetry) {
  const uint64_t seed = fresh_seed();
  const int bn = sm90::attention_tile(head_dim, true, sm90::PvPromotion::EveryN).block_n;
  const AttentionShape shape{1, 70, 3 * bn - 50, 2, 1, head_dim};
  const QuantizedInputs q = quantize(normal_inputs(shape, seed), FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerHead);
  fp8attn_attention_desc d = make_desc(shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
  d.causal = 1;
  d.pv_promote_interval = 2;
  d.telemetry = telemetry;
  d.accumulator_model = 1;
  d.accumulator_mantissa_bits = 13;
  const std::string name = "hd" + std::to_string(head_dim) + " every 2 blocks, causal" + (telemetry ? ", telemetry" : "");
  expect_emulator_matches_engine(d, shape, q, seed, {}, name.c_str());
}

// Head_dim 128: its own BlockN 128.
TEST(Fp8FwdEmuChecks, EveryTwoBlocksAtHeadDim128) { expect_every_two_blocks_match(128, false); }

// Head_dim 256: the head-dim split tile (BlockM 64, two warpgroups per 64 rows), with telemetry
// (P̃ counted once per row).
TEST(Fp8FwdEmuChecks, EveryTwoBlocksAtHeadDim256) { expect_every_two_blocks_match(256, true); }

// A ragged query tile with telemetry: 29 rows, so the second warp's upper rows (its valid[1]
// half) stop at row 28 and rows 29..31 are padding that the kernel must not count in P̃'s
// telemetry. Bit-equal to the engine (outputs, LSE, counts) under every schedule.
TEST(Fp8FwdEmuChecks, RaggedTileTelemetryCountsNoPaddingRow) {
  const uint64_t seed = fresh_seed();
  const AttentionShape shape{1, 29, 100, 2, 1, 64};
  const QuantizedInputs q = quantize(normal_inputs(shape, seed), FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerHead);
  fp8attn_attention_desc d = make_desc(shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
  d.telemetry = 1;
  expect_emulator_matches_engine(d, shape, q, seed, {}, "hd64, 29 query rows, telemetry");
}

// A forward call on the emulator backend launches once and neither allocates device memory nor
// synchronizes, so on CUDA it can be captured in a graph.
TEST(Fp8FwdEmuChecks, ForwardMakesNoAllocationOrSynchronization) {
  Problem p(fresh_seed());
  fp8attn_context ctx = emulator_context();
  fp8attn_attention_desc d = p.desc();
  d.telemetry = 1;
  fp8attn_telemetry telemetry{};
  telemetry.struct_size = sizeof telemetry;
  p.args.telemetry = &telemetry;
  fp8attn_plan plan = nullptr;
  ASSERT_EQ(fp8attn_plan_create(ctx, &d, &plan, nullptr), FP8ATTN_OK);
  size_t bytes = 0;
  ASSERT_EQ(fp8attn_plan_workspace_size(plan, 1, p.shape.seqlen_q, p.shape.seqlen_k, &bytes, nullptr), FP8ATTN_OK);
  std::vector<unsigned char> workspace(bytes, 0xAB);
  const DeviceRuntimeCounters& counters = *ctx->impl.runtime_counters();
  const uint64_t allocations = counters.allocations, syncs = counters.synchronizations, launches = counters.launches;
  ASSERT_EQ(fp8attn_attention_forward(plan, &p.args, workspace.data(), bytes, nullptr, nullptr), FP8ATTN_OK);
  EXPECT_EQ(counters.allocations - allocations, 0u);
  EXPECT_EQ(counters.synchronizations - syncs, 0u);
  EXPECT_EQ(counters.launches - launches, 1u);
  EXPECT_GT(telemetry.p_positive, 0u);
  EXPECT_FALSE(p.outputs_poisoned());
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
}

// What the Hopper kernel does not run is refused with a specific status and a message, at plan
// creation where the description decides it, and with outputs untouched where the tensors do.
TEST(Fp8FwdEmuChecks, RefusesWhatTheKernelCannotRun) {
  Problem p(fresh_seed());
  fp8attn_context ctx = emulator_context();
  fp8attn_error err{};
  err.struct_size = sizeof err;
  fp8attn_plan plan = nullptr;
  // BF16 runs (tests/kernels/test_bf16_fwd_emu.cpp), but without two-level accumulation.
  fp8attn_attention_desc bf16 = make_desc(p.shape, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16);
  bf16.pv_promote_interval = 1;
  EXPECT_EQ(fp8attn_plan_create(ctx, &bf16, &plan, &err), FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND);
  EXPECT_NE(std::string(err.message).find("BF16"), std::string::npos) << err.message;
  // Every-N promotion runs at every head dim (at 256 on the head-dim split tile, BlockM 64).
  fp8attn_attention_desc every2 = p.desc();
  every2.pv_promote_interval = 2;
  ASSERT_EQ(fp8attn_plan_create(ctx, &every2, &plan, &err), FP8ATTN_OK) << err.message;
  fp8attn_plan_destroy(plan);
  plan = nullptr;
  AttentionShape hd256 = p.shape;
  hd256.head_dim = 256;
  fp8attn_attention_desc every16 = make_desc(hd256, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16);
  every16.pv_promote_interval = 16;
  ASSERT_EQ(fp8attn_plan_create(ctx, &every16, &plan, &err), FP8ATTN_OK) << err.message;
  int32_t block_m = 0, block_n = 0;
  ASSERT_EQ(fp8attn_plan_get_tile(plan, &block_m, &block_n, &err), FP8ATTN_OK);
  EXPECT_EQ(block_m, 64) << "head_dim 256 every-N: the head-dim split tile";
  EXPECT_EQ(block_n, 96);
  fp8attn_plan_destroy(plan);
  plan = nullptr;

  const fp8attn_attention_desc d = p.desc();
  ASSERT_EQ(fp8attn_plan_create(ctx, &d, &plan, &err), FP8ATTN_OK);
  auto* fake_stream = reinterpret_cast<CUstream_st*>(0x1);
  EXPECT_EQ(fp8attn_attention_forward(plan, &p.args, nullptr, 0, fake_stream, &err), FP8ATTN_STATUS_BAD_STREAM);
  // Every other head of K: a stride TMA can load, but a dim stride of 2 it cannot.
  std::vector<uint8_t> wide(p.in.k.size() * 2, 0x38);
  fp8attn_attention_args strided = p.args;
  strided.k.data = wide.data();
  for (int i = 0; i < 4; ++i) strided.k.stride[i] *= 2;
  // The queried workspace (the GPU backends always hold their counters there), so that the call
  // reaches the tensor checks.
  size_t bytes = 0;
  ASSERT_EQ(fp8attn_plan_workspace_size(plan, p.shape.batch, p.shape.seqlen_q, p.shape.seqlen_k, &bytes, &err), FP8ATTN_OK);
  std::vector<unsigned char> workspace(bytes + 1);
  EXPECT_EQ(fp8attn_attention_forward(plan, &strided, workspace.data(), bytes, nullptr, &err),
            FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND);
  EXPECT_NE(std::string(err.message).find("dim stride"), std::string::npos) << err.message;
  EXPECT_TRUE(p.outputs_poisoned());
  // 2^29 query rows: the producer's 32-bit key arithmetic has no room (attention_fwd_plan.cpp);
  // refused before any byte is read (the buffers are the small problem's).
  fp8attn_attention_args long_q = p.args;
  long_q.q.shape[1] = int64_t{1} << 29;
  long_q.out.shape[1] = int64_t{1} << 29;
  long_q.lse.shape[2] = int64_t{1} << 29;
  for (fp8attn_tensor* t : {&long_q.q, &long_q.out}) t->stride[0] = t->shape[1] * t->stride[1];
  long_q.lse.stride[1] = long_q.lse.shape[2], long_q.lse.stride[0] = long_q.lse.shape[1] * long_q.lse.shape[2];
  EXPECT_EQ(fp8attn_attention_forward(plan, &long_q, workspace.data(), bytes, nullptr, &err),
            FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND);
  EXPECT_NE(std::string(err.message).find("2^29 rows"), std::string::npos) << err.message;
  EXPECT_TRUE(p.outputs_poisoned());
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);

  setenv("FP8ATTN_EMULATOR_SCHEDULE", "shuffle:", 1);
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_EMULATOR;
  fp8attn_context bad = nullptr;
  EXPECT_EQ(fp8attn_context_create(&o, &bad, &err), FP8ATTN_STATUS_BAD_OPTION);
  EXPECT_EQ(bad, nullptr);
  unsetenv("FP8ATTN_EMULATOR_SCHEDULE");
}

/// The kernel with a planted bug, on the problem's launch; returns the emulator's report.
/// kOverlap forces either schedule of the main loop (fwd_mainloop.hpp) on the problem's head_dim
/// 128, so the hazard of each is planted where it would occur.
template <sm90::FwdFault kPlanted, bool kOverlap = sm90::FwdConfig<128, sm90::PvPromotion::Off, false>::kIntraWgOverlap>
struct Faulty : sm90::FwdConfig<128, sm90::PvPromotion::Off, false> {
  static constexpr sm90::FwdFault kFault = kPlanted;
  static constexpr bool kIntraWgOverlap = kOverlap;
};

/// Register budgets over the launch pool (the config's own static_assert sees the base values).
struct OverBudget : sm90::FwdConfig<128, sm90::PvPromotion::Off, false> {
  static constexpr uint32_t kProducerRegisters = 32;
};

template <class Cfg>
std::string run_faulty(uint64_t schedule_seed, bool shuffle) {
  Problem p(fresh_seed());
  const AttentionConfig config = make_attention_config(p.desc());
  const AttentionProblem problem = make_attention_problem(config, p.args, FP8ATTN_DEVICE_HOST);
  const sm90::FwdLaunch launch = gpu::plan_attention_fwd(config, problem, nullptr, 2);
  emu::LaunchConfig schedule;
  schedule.seed = schedule_seed;
  schedule.shuffle = shuffle;
  schedule.mma_model = launch.mma_model;
  try {
    sm90::run_attention_fwd_emulated<Cfg>(launch, schedule);
  } catch (const emu::KernelError& e) {
    return e.what();
  }
  return "";
}

TEST(Fp8FwdEmuChecks, SeededFailuresAreReported) {
  // The unbroken kernel runs clean under the same harness.
  EXPECT_EQ(run_faulty<Faulty<sm90::FwdFault::None>>(1, true), "");
  const std::string dropped = run_faulty<Faulty<sm90::FwdFault::DropTurnBarrier>>(2, true);
  std::printf("dropped turn barrier: %s\n", dropped.c_str());
  EXPECT_NE(dropped.find("deadlock"), std::string::npos) << dropped;
  const std::string phase = run_faulty<Faulty<sm90::FwdFault::WrongFullPhase>>(3, false);
  std::printf("wrong mbarrier phase: %s\n", phase.c_str());
  EXPECT_NE(phase.find("deadlock"), std::string::npos) << phase;
  const std::string rewrite = run_faulty<Faulty<sm90::FwdFault::RewritePBeforeWait>>(4, true);
  std::printf("P converted before the wait: %s\n", rewrite.c_str());
  EXPECT_NE(rewrite.find("A register"), std::string::npos) << rewrite;
  // The intra-warpgroup overlap: block j's P converted into the registers that P·V of block j − 1
  // still reads, before its wait (and the same schedule unbroken runs clean).
  EXPECT_EQ((run_faulty<Faulty<sm90::FwdFault::None, true>>(5, true)), "");
  const std::string early = run_faulty<Faulty<sm90::FwdFault::RewritePBeforeWait, true>>(6, true);
  std::printf("overlapped: next P converted before the P·V wait: %s\n", early.c_str());
  EXPECT_NE(early.find("A register"), std::string::npos) << early;
  const std::string serial = run_faulty<Faulty<sm90::FwdFault::RewritePBeforeWait, false>>(7, true);
  EXPECT_NE(serial.find("A register"), std::string::npos) << serial;
  // The budgets that hung an H200: a producer at 32 next to two consumers at 240 need 65536
  // registers, the 384 threads' launch pool holds 64512 (register_pool.cpp).
  const std::string pool = run_faulty<OverBudget>(8, true);
  std::printf("producer at 32 registers: %s\n", pool.c_str());
  EXPECT_NE(pool.find("deadlock"), std::string::npos) << pool;
  EXPECT_NE(pool.find("setmaxnreg.inc to 240"), std::string::npos) << pool;
}

}  // namespace
}  // namespace fp8attn::testing
