// The sm_90a build of the attention forward kernels (E4M3 and BF16) on a GPU, launched through the
// same host plan as the emulator (lib/backend/gpu), against the CPU engine. Not bit for bit: ex2.approx, logf and
// the tensor core's accumulator are only modelled on the CPU, so the outputs must agree within a
// relative L2 of 1e-2 and the telemetry counts within 1% (an H200 gave 2.3e-3 to 7.0e-3 for E4M3,
// 1.2e-5 to 4.2e-5 for BF16, and equal counts: docs/gpu_runs/gpu_run_h200.md).
// Skips without an sm_90 device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/sm90/attention/attention_fwd_cuda.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/backend/gpu/attention_fwd_plan.hpp"
#include "tests/common/cuda_test_device.hpp"
#include "tools/common/forward_runner.hpp"
#include "tools/common/fresh_seed.hpp"
#include "tools/common/host_tensor.hpp"

namespace fp8attn::testing {
namespace {

using namespace fp8attn::workloads;

fp8attn_tensor on_device(fp8attn_tensor t, void* data) {
  t.data = data;
  t.device = FP8ATTN_DEVICE_CUDA;
  return t;
}

/// The GPU kernel's output (F32) and telemetry counters for `d` on `in`.
struct GpuForward {
  std::vector<float> out;
  sm90::FwdTelemetryCounters counters{};
};

GpuForward run_gpu(const AttentionShape& s, const QuantizedInputs& in, const fp8attn_attention_desc& d) {
  const int32_t dtype = d.input_dtype;
  const size_t out_elems = static_cast<size_t>(s.batch * s.seqlen_q * s.heads_q * s.head_dim);
  uint8_t* q = device_copy(in.q);
  uint8_t* k = device_copy(in.k);
  uint8_t* v = device_copy(in.v);
  float* out = device_copy(std::vector<float>(out_elems, std::nanf("")));
  float* qd = device_copy(in.q_descale);
  float* kd = device_copy(in.k_descale);
  float* vd = device_copy(in.v_descale);
  void* workspace = nullptr;
  GpuForward r;
  EXPECT_EQ(cudaMalloc(&workspace, 256), cudaSuccess);

  fp8attn_attention_args a{};
  a.struct_size = sizeof a;
  a.q = on_device(dense_host_tensor(nullptr, dtype, {s.batch, s.seqlen_q, s.heads_q, s.head_dim}), q);
  a.k = on_device(dense_host_tensor(nullptr, dtype, {s.batch, s.seqlen_k, s.heads_kv, s.head_dim}), k);
  a.v = on_device(dense_host_tensor(nullptr, dtype, {s.batch, s.seqlen_k, s.heads_kv, s.head_dim}), v);
  a.out = on_device(dense_host_tensor(nullptr, FP8ATTN_DTYPE_F32, {s.batch, s.seqlen_q, s.heads_q, s.head_dim}), out);
  a.q_descale = on_device(dense_host_tensor(nullptr, FP8ATTN_DTYPE_F32, {s.batch, s.heads_kv}), qd);
  a.k_descale = on_device(dense_host_tensor(nullptr, FP8ATTN_DTYPE_F32, {s.batch, s.heads_kv}), kd);
  a.v_descale = on_device(dense_host_tensor(nullptr, FP8ATTN_DTYPE_F32, {s.batch, s.heads_kv}), vd);
  const AttentionConfig config = make_attention_config(d);
  const AttentionProblem problem = make_attention_problem(config, a, FP8ATTN_DEVICE_CUDA);
  int sms = 0;
  EXPECT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  const sm90::FwdLaunch launch = gpu::plan_attention_fwd(config, problem, workspace, sms);
  EXPECT_EQ(sm90::prepare_attention_fwd_cuda(launch.key), "");
  EXPECT_EQ(cudaMemset(workspace, 0, 256), cudaSuccess);
  EXPECT_EQ(sm90::launch_attention_fwd_cuda(launch, nullptr), "");
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  r.out.resize(out_elems);
  EXPECT_EQ(cudaMemcpy(r.out.data(), out, out_elems * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(&r.counters, workspace, sizeof r.counters, cudaMemcpyDeviceToHost), cudaSuccess);
  for (void* p : {static_cast<void*>(q), static_cast<void*>(k), static_cast<void*>(v), static_cast<void*>(out),
                  static_cast<void*>(qd), static_cast<void*>(kd), static_cast<void*>(vd), workspace})
    cudaFree(p);
  return r;
}

/// Relative L2 distance of `got` from `want`; fails on a non-finite element of `got`.
double relative_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(std::isfinite(got[i])) << "element " << i;
    if (!std::isfinite(got[i])) return INFINITY;
    num += (got[i] - want[i]) * static_cast<double>(got[i] - want[i]);
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / den);
}

void expect_gpu_close_to_engine(const AttentionShape& s, bool causal, int32_t dtype = FP8ATTN_DTYPE_E4M3,
                                bool stabilized = false, int32_t promote = 0) {
  std::string why;
  if (!hopper_present(&why)) GTEST_SKIP() << "needs an sm_90 GPU: " << why;
  const uint64_t seed = fresh_seed();
  // BF16 inputs have unit descales (quantize fills them with 1).
  const QuantizedInputs in = quantize(normal_inputs(s, seed), dtype,
                                      dtype == FP8ATTN_DTYPE_BF16 ? ScaleGranularity::Unit : ScaleGranularity::PerHead);
  fp8attn_attention_desc d = make_desc(s, dtype, FP8ATTN_DTYPE_F32);
  d.causal = causal;
  if (stabilized) d.softmax_variant = FP8ATTN_SOFTMAX_STABILIZED;
  d.pv_promote_interval = promote;
  d.telemetry = 1;
  const ForwardResult engine = run_forward(d, s, in);
  ASSERT_EQ(engine.status, FP8ATTN_OK);
  const GpuForward gpu = run_gpu(s, in, d);
  const double rel_l2 = relative_l2(gpu.out, engine.out);
  std::printf("GPU vs CPU engine: relative L2 %.3e; P̃ > 0: %llu vs %llu (seed %llu)\n", rel_l2,
              static_cast<unsigned long long>(gpu.counters.p_positive),
              static_cast<unsigned long long>(engine.telemetry.p_positive), static_cast<unsigned long long>(seed));
  EXPECT_LE(rel_l2, 1e-2) << "seed " << seed;
  EXPECT_NEAR(static_cast<double>(gpu.counters.p_positive), static_cast<double>(engine.telemetry.p_positive),
              0.01 * static_cast<double>(engine.telemetry.p_positive));
}

TEST(Fp8FwdCuda, HeadDim128CloseToTheEngine) { expect_gpu_close_to_engine({2, 700, 900, 4, 2, 128}, false); }
TEST(Fp8FwdCuda, HeadDim64CausalCloseToTheEngine) { expect_gpu_close_to_engine({1, 500, 500, 4, 1, 64}, true); }
TEST(Fp8FwdCuda, HeadDim256CloseToTheEngine) { expect_gpu_close_to_engine({1, 300, 400, 2, 2, 256}, false); }
// Every-N promotion at head_dim 128 on its own tile (BlockN 128): 17 KV blocks, promoted every 16.
TEST(Fp8FwdCuda, HeadDim128EveryNCloseToTheEngine) {
  expect_gpu_close_to_engine({1, 300, 17 * 128 + 5, 2, 1, 128}, false, FP8ATTN_DTYPE_E4M3, false, 16);
}
// Every-N promotion at head_dim 256 on the head-dim split tile (BlockM 64, BlockN 96, two
// warpgroups per 64 rows): 18 KV blocks, promoted every 16, causal (the P̃ count checks that each
// row is counted once).
TEST(Fp8FwdCuda, HeadDim256EveryNCloseToTheEngine) {
  expect_gpu_close_to_engine({1, 300, 17 * 96 + 5, 2, 1, 256}, true, FP8ATTN_DTYPE_E4M3, false, 16);
}

// The tensor core's addition (the engine's default, kernels/ptx/mma_order.hpp, measured on H100
// and H200) against the GPU, for promotion off, every block, and S_p = 1: the GPU's distance from
// the engine under the rule and under FP32 accumulation. NOTE: under the rule the engine's tile
// products are the GPU's bit for bit (GemmCuda.MatchesTheReferenceOnRaggedShapes); what remains
// is the softmax's exp2, which the GPU computes with MUFU.EX2 and the engine does not model bit
// for bit, and whatever a different P then does through the E4M3 cast and P·V. So the check is
// that the rule is no farther from the GPU than FP32 accumulation; the printed distances say how
// much is left. Not yet run on a GPU under the rule.
TEST(Fp8FwdCuda, AccumulatorModelAgainstTheTensorCore) {
  std::string why;
  if (!hopper_present(&why)) GTEST_SKIP() << "needs an sm_90 GPU: " << why;
  const uint64_t seed = fresh_seed();
  struct Variant {
    const char* name;
    int head_dim;
    int32_t promote, p_scale_log2;
  };
  for (const Variant& v : {Variant{"hd128, promotion off, S_p = 2^8", 128, 0, 8}, Variant{"hd128, every block promoted", 128, 1, 8},
                           Variant{"hd128, S_p = 1", 128, 0, 0}, Variant{"hd64", 64, 0, 8}, Variant{"hd256", 256, 0, 8}}) {
    const AttentionShape s{2, 700, 900, 4, 2, v.head_dim};
    const QuantizedInputs in = quantize(normal_inputs(s, seed), FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerHead);
    fp8attn_attention_desc d = make_desc(s, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
    d.pv_promote_interval = v.promote;
    d.p_scale_log2 = v.p_scale_log2;
    const GpuForward gpu = run_gpu(s, in, d);
    const ForwardResult oracle = run_forward(d, s, in, {FP8ATTN_BACKEND_REFERENCE});
    ASSERT_EQ(oracle.status, FP8ATTN_OK);
    d.accumulator_model = FP8ATTN_ACCUMULATOR_TENSOR_CORE;
    const ForwardResult rule = run_forward(d, s, in);
    ASSERT_EQ(rule.status, FP8ATTN_OK);
    d.accumulator_model = FP8ATTN_ACCUMULATOR_FP32;
    const ForwardResult fp32 = run_forward(d, s, in);
    ASSERT_EQ(fp32.status, FP8ATTN_OK);
    const double modelled = relative_l2(gpu.out, rule.out), unmodelled = relative_l2(gpu.out, fp32.out);
    std::printf("%s: GPU vs engine, relative L2 under the tensor core's addition %.3e, under FP32 %.3e; vs the FP64 "
                "oracle: GPU %.3e, engine (rule) %.3e, engine (FP32) %.3e (seed %llu)\n",
                v.name, modelled, unmodelled, relative_l2(gpu.out, oracle.out), relative_l2(rule.out, oracle.out),
                relative_l2(fp32.out, oracle.out), static_cast<unsigned long long>(seed));
    EXPECT_LE(modelled, unmodelled) << v.name;
  }
}

// The BF16 forward kernels (HGMMA), standard and stabilized softmax, at every head dim.
TEST(Bf16FwdCuda, HeadDim64CausalCloseToTheEngine) {
  expect_gpu_close_to_engine({1, 500, 500, 4, 1, 64}, true, FP8ATTN_DTYPE_BF16);
}
TEST(Bf16FwdCuda, HeadDim128StabilizedCloseToTheEngine) {
  expect_gpu_close_to_engine({2, 700, 900, 4, 2, 128}, false, FP8ATTN_DTYPE_BF16, true);
}
TEST(Bf16FwdCuda, HeadDim256CloseToTheEngine) {
  expect_gpu_close_to_engine({1, 300, 400, 2, 2, 256}, true, FP8ATTN_DTYPE_BF16);
}

}  // namespace
}  // namespace fp8attn::testing
