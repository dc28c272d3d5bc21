// fp8attn_attention_telemetry_copy_async on the emulator backend: the forward keeps its counters
// in the workspace, and the copy call reproduces what the forward itself reported, with no
// allocation and no synchronization. Inputs: N(0,1) Q, K, V quantized to E4M3 per tensor.
#include <cstring>
#include <string>
#include <vector>

#include "tests/backend/backend_test_support.hpp"
#include "tools/common/attention_inputs.hpp"
#include "tools/common/forward_runner.hpp"
#include "tools/common/fresh_seed.hpp"
#include "tools/common/host_tensor.hpp"

namespace fp8attn::backend_testing {
namespace {

using namespace fp8attn::workloads;

struct Forward {
  AttentionShape shape{1, 96, 160, 2, 1, 64};
  QuantizedInputs in;
  std::vector<uint16_t> out;
  fp8attn_attention_args args{};
  explicit Forward(uint64_t seed) {
    in = quantize(normal_inputs(shape, seed), FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerTensor);
    const auto& s = shape;
    out.assign(static_cast<size_t>(s.seqlen_q * s.heads_q * s.head_dim), 0xFFFF);
    args.struct_size = sizeof args;
    args.q = dense_host_tensor(in.q.data(), FP8ATTN_DTYPE_E4M3, {1, s.seqlen_q, s.heads_q, s.head_dim});
    args.k = dense_host_tensor(in.k.data(), FP8ATTN_DTYPE_E4M3, {1, s.seqlen_k, s.heads_kv, s.head_dim});
    args.v = dense_host_tensor(in.v.data(), FP8ATTN_DTYPE_E4M3, {1, s.seqlen_k, s.heads_kv, s.head_dim});
    args.out = dense_host_tensor(out.data(), FP8ATTN_DTYPE_BF16, {1, s.seqlen_q, s.heads_q, s.head_dim});
  }
};

TEST(TelemetryCopyEmulated, CopiesWhatTheForwardCounted) {
  const uint64_t seed = fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  Forward f(seed);
  fp8attn_context ctx = make_context(FP8ATTN_BACKEND_EMULATOR);
  fp8attn_attention_desc d = make_desc(f.shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16);
  d.telemetry = 1;
  fp8attn_plan plan = nullptr;
  ASSERT_EQ(fp8attn_plan_create(ctx, &d, &plan, nullptr), FP8ATTN_OK);
  size_t bytes = 0;
  ASSERT_EQ(fp8attn_plan_workspace_size(plan, 1, f.shape.seqlen_q, f.shape.seqlen_k, &bytes, nullptr), FP8ATTN_OK);
  std::vector<unsigned char> workspace(bytes, 0xAB);
  fp8attn_telemetry reported{};
  reported.struct_size = sizeof reported;
  f.args.telemetry = &reported;
  ASSERT_EQ(fp8attn_attention_forward(plan, &f.args, workspace.data(), bytes, nullptr, nullptr), FP8ATTN_OK);
  ASSERT_GT(reported.p_positive, 0u);
  ASSERT_GT(reported.max_abs_scaled_logit, 0.0f);

  fp8attn_telemetry copied{};
  std::memset(&copied, 0x5A, sizeof copied);  // poisoned
  copied.struct_size = sizeof copied;
  fp8attn_error err{};
  err.struct_size = sizeof err;
  const CounterSnapshot before = CounterSnapshot::of(ctx);
  ASSERT_EQ(fp8attn_attention_telemetry_copy_async(plan, workspace.data(), bytes, &copied, nullptr, &err), FP8ATTN_OK)
      << err.message;
  const CounterSnapshot added = CounterSnapshot::of(ctx).since(before);
  EXPECT_EQ(added.allocations, 0u);
  EXPECT_EQ(added.synchronizations, 0u);
  EXPECT_EQ(added.copies, 1u);
  EXPECT_EQ(copied.struct_size, sizeof copied);
  EXPECT_EQ(copied.p_positive, reported.p_positive);
  EXPECT_EQ(copied.p_underflow, reported.p_underflow);
  EXPECT_EQ(copied.max_abs_scaled_logit, reported.max_abs_scaled_logit);

  // Refusals: a short workspace or struct, a plan without telemetry, the CPU backend.
  EXPECT_EQ(fp8attn_attention_telemetry_copy_async(plan, workspace.data(), bytes - 1, &copied, nullptr, &err),
            FP8ATTN_STATUS_WORKSPACE_TOO_SMALL);
  fp8attn_telemetry small = copied;
  small.struct_size = sizeof small - 1;
  EXPECT_EQ(fp8attn_attention_telemetry_copy_async(plan, workspace.data(), bytes, &small, nullptr, &err),
            FP8ATTN_STATUS_BAD_STRUCT_SIZE);
  d.telemetry = 0;
  fp8attn_plan quiet = nullptr;
  ASSERT_EQ(fp8attn_plan_create(ctx, &d, &quiet, nullptr), FP8ATTN_OK);
  EXPECT_EQ(fp8attn_attention_telemetry_copy_async(quiet, workspace.data(), bytes, &copied, nullptr, &err),
            FP8ATTN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("telemetry"), std::string::npos) << err.message;
  fp8attn_context cpu = make_context(FP8ATTN_BACKEND_CPU);
  fp8attn_plan cpu_plan = nullptr;
  d.telemetry = 1;
  ASSERT_EQ(fp8attn_plan_create(cpu, &d, &cpu_plan, nullptr), FP8ATTN_OK);
  EXPECT_EQ(fp8attn_attention_telemetry_copy_async(cpu_plan, workspace.data(), bytes, &copied, nullptr, &err),
            FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND);
  fp8attn_plan_destroy(cpu_plan);
  fp8attn_context_destroy(cpu);
  fp8attn_plan_destroy(quiet);
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
}

}  // namespace
}  // namespace fp8attn::backend_testing
