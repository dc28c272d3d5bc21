// The emulated BF16 attention backward beyond bit equality: its atomic mode against the FP64
// oracle, a planted bug the emulator must report, the execute call's device-runtime counters (no
// allocation, no synchronization), and the refusals of what the kernel does not run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/emu/runtime.hpp"
#include "kernels/sm90/attention/attention_bwd_emulated.hpp"
#include "lib/attention/attention_backward_problem.hpp"
#include "lib/attention/attention_config.hpp"
#include "lib/attention/oracle_backward.hpp"
#include "lib/attention/plan.hpp"
#include "lib/backend/emulated_runtime.hpp"
#include "lib/backend/gpu/attention_bwd_plan.hpp"
#include "lib/numerics/bfloat16.hpp"
#include "tests/kernels/bf16_bwd_emu_support.hpp"

namespace fp8attn::testing {
using namespace fp8attn::workloads;
namespace {

double rel_l2(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}

/// Atomic mode (deterministic = 0): dQ shares are added into one F32 accumulator in whatever order
/// the CTAs finish, so dq is not bit-reproducible; dk and dv do not depend on the mode.
/// Metric: relative L2 error ‖kernel − oracle‖₂ / ‖oracle‖₂ per tensor, inputs q, k, v, dout
/// ~ N(0, 1) rounded to BF16 (fresh seeds). Bound: 6e-3, the CPU engine's bound against the same
/// oracle (tests/attention/test_backward_vs_oracle.cpp: BF16 roundings of P, dS and the stored
/// gradients give 2e-3 to 3e-3); the order of the F32 adds changes dq by a few F32 ulps, far below.
/// dk and dv must still equal the engine's bits.
TEST(Bf16BwdEmuChecks, AtomicModeWithinBoundOfTheOracle) {
  constexpr double kRelL2Bound = 6e-3;
  for (int hd : {64, 128}) {
    BwdCase c;
    c.shape = {1, 150, 300, 2, 1, hd};  // three key blocks add into each query block's dQ
    c.causal = hd == 128;
    c.name = "atomic hd" + std::to_string(hd) + (c.causal ? " causal" : "");
    const uint64_t seed = fresh_seed();
    const AttentionInputs real = normal_inputs(c.shape, seed);
    const BwdInputs x = bwd_inputs(c, seed);
    BackwardSession engine(bwd_desc(c), c.shape, x.in, x.dout, bwd_options(c, FP8ATTN_BACKEND_CPU, 1));
    engine.forward();
    engine.backward();
    auto kernel = emulated_session(c, x, "shuffle:" + std::to_string(seed), 0);
    kernel->copy_forward_from(engine);
    ASSERT_EQ(kernel->try_backward(), FP8ATTN_OK) << kernel->error().message;
    EXPECT_EQ(kernel->dk_bytes(), engine.dk_bytes()) << c.name << ", seed " << seed;
    EXPECT_EQ(kernel->dv_bytes(), engine.dv_bytes()) << c.name << ", seed " << seed;

    const DequantizedInputs deq = dequantize(real, x.in);
    std::vector<double> g(x.dout.size());
    for (size_t i = 0; i < g.size(); ++i) g[i] = num::bf16_to_float(x.dout[i]);
    const std::vector<int64_t> cu_q = uniform_row_offsets(1, c.shape.seqlen_q), cu_k = uniform_row_offsets(1, c.shape.seqlen_k);
    std::vector<double> dq(deq.q.size()), dk(deq.k.size()), dv(deq.v.size());
    oracle_backward_dense(make_attention_config(bwd_desc(c)), cu_q, cu_k, deq.q.data(), deq.k.data(), deq.v.data(),
                          g.data(), dq.data(), dk.data(), dv.data());
    const double eq = rel_l2(kernel->dq(), dq), ek = rel_l2(kernel->dk(), dk), ev = rel_l2(kernel->dv(), dv);
    const double engine_dq = rel_l2(engine.dq(), dq);
    std::printf("[%s] seed %llu: rel L2 dq %.2e (engine %.2e) dk %.2e dv %.2e (bound %.0e)\n", c.name.c_str(),
                static_cast<unsigned long long>(seed), eq, engine_dq, ek, ev, kRelL2Bound);
    EXPECT_LT(eq, kRelL2Bound) << c.name << ", seed " << seed;
    EXPECT_LT(ek, kRelL2Bound) << c.name << ", seed " << seed;
    EXPECT_LT(ev, kRelL2Bound) << c.name << ", seed " << seed;
  }
}

/// Consumer 1 skips the named barrier that publishes dS before dQ = dS·K: consumer 0 then waits
/// at it alone, and the emulator reports the deadlock (and the unbroken kernel runs clean).
template <sm90::BwdFault kPlanted>
std::string run_faulty(uint64_t schedule_seed, bool proxy_fence_check = false) {
  BwdCase c;
  c.shape = {1, 70, 100, 1, 1, 64};
  const BwdInputs x = bwd_inputs(c, fresh_seed());
  BackwardSession session(bwd_desc(c), c.shape, x.in, x.dout, bwd_options(c, FP8ATTN_BACKEND_CPU, 1));
  session.forward();
  const AttentionConfig config = make_attention_config(bwd_desc(c));
  const AttentionBackwardProblem problem = make_attention_backward_problem(config, session.args(), FP8ATTN_DEVICE_HOST);
  std::vector<unsigned char> workspace(gpu::attention_bwd_workspace_bytes(config, 1, c.shape.seqlen_q, c.shape.seqlen_k));
  const sm90::BwdLaunch launch = gpu::plan_attention_bwd(config, problem, workspace.data());
  emu::LaunchConfig schedule;
  schedule.seed = schedule_seed;
  schedule.shuffle = true;
  schedule.proxy_fence_check = proxy_fence_check;
  try {
    sm90::run_attention_bwd_emulated<sm90::BwdConfig<64, kPlanted>>(launch, schedule);
  } catch (const emu::KernelError& e) {
    return e.what();
  }
  return "";
}

TEST(Bf16BwdEmuChecks, DroppedBarrierIsReported) {
  // The unbroken kernel runs clean, with the check that dS (written by the consumers, read by
  // wgmma) is fenced before the async proxy reads it.
  EXPECT_EQ(run_faulty<sm90::BwdFault::None>(1, true), "");
  const std::string dropped = run_faulty<sm90::BwdFault::DropDsReadyBarrier>(2);
  std::printf("dropped dS barrier: %s\n", dropped.c_str());
  EXPECT_NE(dropped.find("deadlock"), std::string::npos) << dropped;
}

/// One backward call on the emulator backend: three launches (preprocess, main, dQ), no device
/// allocation, no synchronization (so on CUDA it can be captured in a graph).
TEST(Bf16BwdEmuChecks, BackwardMakesNoAllocationOrSynchronization) {
  BwdCase c;
  c.shape = {1, 70, 100, 2, 1, 64};
  const BwdInputs x = bwd_inputs(c, fresh_seed());
  BackwardSession engine(bwd_desc(c), c.shape, x.in, x.dout, bwd_options(c, FP8ATTN_BACKEND_CPU, 1));
  engine.forward();
  auto kernel = emulated_session(c, x, "round-robin", 1);
  kernel->copy_forward_from(engine);
  const DeviceRuntimeCounters& counters = *kernel->plan()->context->runtime_counters();
  const uint64_t allocations = counters.allocations, syncs = counters.synchronizations, launches = counters.launches;
  ASSERT_EQ(kernel->try_backward(), FP8ATTN_OK) << kernel->error().message;
  EXPECT_EQ(counters.allocations - allocations, 0u);
  EXPECT_EQ(counters.synchronizations - syncs, 0u);
  EXPECT_EQ(counters.launches - launches, 1u);  // the runtime's one backward launch (three kernels)
}

bool all_poison(const std::vector<unsigned char>& bytes) {
  for (unsigned char b : bytes)
    if (b != kGradientPoison) return false;
  return true;
}

fp8attn_context emulator_context() {
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_EMULATOR;
  fp8attn_context ctx = nullptr;
  fp8attn_error err{};
  err.struct_size = sizeof err;
  EXPECT_EQ(fp8attn_context_create(&o, &ctx, &err), FP8ATTN_OK) << err.message;
  return ctx;
}

/// The workspace query of a plan of `desc` on the emulator: its status and message.
int32_t query_status(const fp8attn_attention_desc& desc, std::string& message) {
  fp8attn_context ctx = emulator_context();
  fp8attn_plan plan = nullptr;
  fp8attn_error err{};
  err.struct_size = sizeof err;
  EXPECT_EQ(fp8attn_plan_create(ctx, &desc, &plan, &err), FP8ATTN_OK) << err.message;
  size_t bytes = 0;
  const int32_t status = fp8attn_plan_backward_workspace_size(plan, 1, 64, 64, &bytes, &err);
  message = err.message;
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
  return status;
}

/// What the Hopper backward does not run is refused with a specific status and message, before
/// any output is written: head_dim 256, F32 out and dout, an FP8 plan, a workspace below the
/// query's size.
TEST(Bf16BwdEmuChecks, RefusalsLeaveOutputsUntouched) {
  std::string message;
  const AttentionShape s256{1, 64, 64, 1, 1, 256};
  EXPECT_EQ(query_status(make_desc(s256, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16), message),
            FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND);
  EXPECT_NE(message.find("head_dim 64 and 128"), std::string::npos) << message;
  const AttentionShape s64{1, 64, 64, 1, 1, 64};
  EXPECT_EQ(query_status(make_desc(s64, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_F32), message),
            FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND);
  EXPECT_NE(message.find("output_dtype"), std::string::npos) << message;
  EXPECT_EQ(query_status(make_desc(s64, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16), message),
            FP8ATTN_STATUS_UNSUPPORTED_DTYPE);
  EXPECT_NE(message.find("BF16"), std::string::npos) << message;

  // A workspace one byte short: WORKSPACE_TOO_SMALL, nothing written.
  BwdCase c;
  c.shape = {1, 40, 60, 2, 1, 64};
  const BwdInputs x = bwd_inputs(c, fresh_seed());
  BackwardSession engine(bwd_desc(c), c.shape, x.in, x.dout, bwd_options(c, FP8ATTN_BACKEND_CPU, 1));
  engine.forward();
  auto kernel = emulated_session(c, x, "round-robin", 1);
  kernel->copy_forward_from(engine);
  ASSERT_GT(kernel->workspace_bytes(), 0u);
  EXPECT_EQ(kernel->backward_with(kernel->args(), kernel->workspace_bytes() - 1), FP8ATTN_STATUS_WORKSPACE_TOO_SMALL);
  EXPECT_NE(std::string(kernel->error().message).find("workspace"), std::string::npos) << kernel->error().message;
  EXPECT_TRUE(all_poison(kernel->dq_bytes()) && all_poison(kernel->dk_bytes()) && all_poison(kernel->dv_bytes()));
}

}  // namespace
}  // namespace fp8attn::testing
