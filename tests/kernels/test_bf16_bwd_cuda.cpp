// The sm_90a build of the BF16 attention backward on a GPU, launched through the same host plan as
// the emulator (lib/backend/gpu/attention_bwd_plan.cpp), against the CPU engine. Not bit for bit:
// the GPU's exp2 (ex2.approx, 2 ulp) is only modelled on the CPU, so dq, dk and dv must agree
// within a relative L2 of 1e-2 (the engine's own error against the FP64 oracle is ≈ 2.5e-3; an
// H200 gave 3.4e-5 to 2.0e-4, docs/gpu_runs/gpu_run_h200.md). Deterministic mode must give the same bits
// on two runs.
// Skips without an sm_90 device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/sm90/attention/attention_bwd_cuda.hpp"
#include "lib/attention/attention_backward_problem.hpp"
#include "lib/attention/attention_config.hpp"
#include "lib/backend/gpu/attention_bwd_plan.hpp"
#include "tests/common/cuda_test_device.hpp"
#include "tools/common/backward_runner.hpp"
#include "tools/common/forward_runner.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::testing {
namespace {

using namespace fp8attn::workloads;

/// A copy of host tensor `t` (of `bytes` bytes) in device memory, described as a CUDA tensor.
fp8attn_tensor to_device(fp8attn_tensor t, size_t bytes, std::vector<void*>& owned) {
  void* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, bytes), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, t.data, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  owned.push_back(d);
  t.data = d;
  t.device = FP8ATTN_DEVICE_CUDA;
  return t;
}

std::vector<float> widen_bf16(const std::vector<uint16_t>& bits) {
  std::vector<float> f(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) f[i] = num::bf16_to_float(bits[i]);
  return f;
}

double rel_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    den += static_cast<double>(want[i]) * want[i];
  }
  return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}

void expect_gpu_close_to_engine(const AttentionShape& s, bool causal) {
  std::string why;
  if (!hopper_present(&why)) GTEST_SKIP() << "needs an sm_90 GPU: " << why;
  const uint64_t seed = fresh_seed();
  const QuantizedInputs in = quantize(normal_inputs(s, seed), FP8ATTN_DTYPE_BF16, ScaleGranularity::Unit);
  const std::vector<uint16_t> dout = normal_bf16(static_cast<size_t>(s.batch * s.seqlen_q * s.heads_q * s.head_dim), seed ^ 1);
  fp8attn_attention_desc d = make_desc(s, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_BF16);
  d.causal = causal;
  BackwardSession engine(d, s, in, dout);
  engine.forward();
  engine.backward();

  const size_t q_elems = static_cast<size_t>(s.batch * s.seqlen_q * s.heads_q * s.head_dim);
  const size_t k_elems = static_cast<size_t>(s.batch * s.seqlen_k * s.heads_kv * s.head_dim);
  const size_t lse_elems = static_cast<size_t>(s.batch * s.heads_q * s.seqlen_q);
  std::vector<void*> owned;
  fp8attn_attention_bwd_args a = engine.args();
  a.q = to_device(a.q, q_elems * 2, owned);
  a.k = to_device(a.k, k_elems * 2, owned);
  a.v = to_device(a.v, k_elems * 2, owned);
  a.out = to_device(a.out, q_elems * 2, owned);
  a.dout = to_device(a.dout, q_elems * 2, owned);
  a.lse = to_device(a.lse, lse_elems * 4, owned);
  const std::vector<unsigned char> poison(q_elems * 2, kGradientPoison);
  a.dq.data = const_cast<unsigned char*>(poison.data());
  a.dq = to_device(a.dq, q_elems * 2, owned);
  a.dk.data = const_cast<unsigned char*>(poison.data());
  a.dk = to_device(a.dk, k_elems * 2, owned);
  a.dv.data = const_cast<unsigned char*>(poison.data());
  a.dv = to_device(a.dv, k_elems * 2, owned);
  const AttentionConfig config = make_attention_config(d);
  const AttentionBackwardProblem problem = make_attention_backward_problem(config, a, FP8ATTN_DEVICE_CUDA);
  void* workspace = nullptr;
  ASSERT_EQ(cudaMalloc(&workspace, gpu::attention_bwd_workspace_bytes(config, s.batch, s.seqlen_q, s.seqlen_k)), cudaSuccess);
  owned.push_back(workspace);
  const sm90::BwdLaunch launch = gpu::plan_attention_bwd(config, problem, workspace);
  ASSERT_EQ(sm90::prepare_attention_bwd_cuda(launch.key), "");

  std::vector<uint16_t> runs[2][3];
  for (auto& run : runs) {
    ASSERT_EQ(sm90::launch_attention_bwd_cuda(launch, nullptr), "");
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const fp8attn_tensor* outs[3] = {&a.dq, &a.dk, &a.dv};
    const size_t elems[3] = {q_elems, k_elems, k_elems};
    for (int t = 0; t < 3; ++t) {
      run[t].resize(elems[t]);
      ASSERT_EQ(cudaMemcpy(run[t].data(), outs[t]->data, elems[t] * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    }
  }
  const std::vector<float> want[3] = {engine.dq(), engine.dk(), engine.dv()};
  const char* names[3] = {"dq", "dk", "dv"};
  for (int t = 0; t < 3; ++t) {
    const double e = rel_l2(widen_bf16(runs[0][t]), want[t]);
    std::printf("[backward cuda hd%d%s] seed %llu: %s rel L2 vs engine %.2e\n", s.head_dim, causal ? " causal" : "",
                static_cast<unsigned long long>(seed), names[t], e);
    EXPECT_LT(e, 1e-2) << names[t] << ", seed " << seed;
    EXPECT_EQ(runs[0][t], runs[1][t]) << names[t] << ": deterministic mode gave different bits on two runs";
  }
  for (void* p : owned) cudaFree(p);
}

TEST(Bf16BwdCuda, HeadDim64) { expect_gpu_close_to_engine({2, 300, 260, 4, 2, 64}, false); }
TEST(Bf16BwdCuda, HeadDim128Causal) { expect_gpu_close_to_engine({2, 300, 260, 4, 1, 128}, true); }
TEST(Bf16BwdCuda, HeadDim256Causal) { expect_gpu_close_to_engine({2, 300, 260, 4, 2, 256}, true); }

}  // namespace
}  // namespace fp8attn::testing
