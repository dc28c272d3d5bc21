// libfp8attn_cuda on an sm_90 GPU, through the C API with a CUDA context (label `cuda`; each test
// skips here with its reason, and scripts/run-gpu-checks.sh fails when they skip):
// - fp8attn_quantize_async bit-equal to the CPU quantizer (outlier inputs, rotation, per block);
// - fp8attn_qk_spectral_norms (cuBLASLt FP8 Grams) within 1e-3 relative of the CPU path;
// - a forward captured in a CUDA graph and replayed gives the eager call's bits;
// - two streams with two workspaces in parallel give each problem's single-stream bits.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tests/backend/backend_test_support.hpp"
#include "tests/common/cuda_test_device.hpp"
#include "tests/quantize/quantize_test_support.hpp"
#include "tools/common/attention_inputs.hpp"
#include "tools/common/forward_runner.hpp"
#include "tools/common/fresh_seed.hpp"
#include "tools/common/host_tensor.hpp"

namespace fp8attn::backend_testing {
namespace {

using namespace fp8attn::workloads;
using fp8attn::testing::device_copy;

/// A CUDA context, or the reason to skip.
fp8attn_context cuda_context(std::string* why) {
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_CUDA;
  fp8attn_context ctx = nullptr;
  fp8attn_error err{};
  err.struct_size = sizeof err;
  if (fp8attn_context_create(&o, &ctx, &err) != FP8ATTN_OK) {
    *why = err.message;
    return nullptr;
  }
  return ctx;
}
#define FP8ATTN_NEED_GPU(ctx)                                             \
  std::string why_;                                                      \
  fp8attn_context ctx = cuda_context(&why_);                             \
  if (ctx == nullptr) GTEST_SKIP() << "needs an sm_90 GPU: " << why_

template <class T>
std::vector<T> to_host(const T* device, size_t n) {
  std::vector<T> host(n);
  EXPECT_EQ(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

fp8attn_tensor on_device(fp8attn_tensor t, void* data) {
  t.data = data;
  t.device = FP8ATTN_DEVICE_CUDA;
  return t;
}

TEST(CudaBackendGpu, QuantizeBitEqualToTheCpu) {
  FP8ATTN_NEED_GPU(ctx);
  const uint64_t seed = workloads::fresh_seed();
  const int64_t b = 2, s = 300, h = 4, d = 128;
  const std::vector<float> x = quant::testing::outlier_values(static_cast<size_t>(b * s * h * d), seed, false);
  const fp8attn_quantize_options o = quant::testing::options(FP8ATTN_QUANT_PER_BLOCK, 128, true, seed, 1);
  const int64_t blocks = (s + 127) / 128;
  std::vector<float> in_host = x;
  std::vector<uint8_t> want(x.size(), 0xEE);
  std::vector<float> want_descale(static_cast<size_t>(b * h * blocks), -7.0f);
  float want_amax = -1.0f;
  fp8attn_context cpu = make_context(FP8ATTN_BACKEND_CPU);
  const fp8attn_tensor in_t = dense_host_tensor(in_host.data(), FP8ATTN_DTYPE_F32, {b, s, h, d});
  const fp8attn_tensor out_t = dense_host_tensor(want.data(), FP8ATTN_DTYPE_E4M3, {b, s, h, d});
  const fp8attn_tensor ds_t = dense_host_tensor(want_descale.data(), FP8ATTN_DTYPE_F32, {b, h, blocks});
  ASSERT_EQ(fp8attn_quantize(cpu, &in_t, nullptr, &o, &out_t, &ds_t, &want_amax, nullptr), FP8ATTN_OK);
  fp8attn_context_destroy(cpu);

  float* in_d = device_copy(x);
  uint8_t* out_d = device_copy(std::vector<uint8_t>(x.size(), 0xEE));
  float* ds_d = device_copy(std::vector<float>(want_descale.size(), -7.0f));
  float* amax_d = device_copy(std::vector<float>(1, -1.0f));
  size_t bytes = 0;
  const fp8attn_tensor in_g = on_device(in_t, in_d), out_g = on_device(out_t, out_d), ds_g = on_device(ds_t, ds_d);
  ASSERT_EQ(fp8attn_quantize_workspace_size(ctx, &in_g, nullptr, 0, &o, &bytes, nullptr), FP8ATTN_OK);
  void* ws = nullptr;
  ASSERT_EQ(cudaMalloc(&ws, bytes), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  fp8attn_error err{};
  err.struct_size = sizeof err;
  ASSERT_EQ(fp8attn_quantize_async(ctx, &in_g, nullptr, 0, &o, &out_g, &ds_g, amax_d, ws, bytes, stream, &err),
            FP8ATTN_OK)
      << err.message;
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(to_host(out_d, want.size()), want);
  const std::vector<float> got_descale = to_host(ds_d, want_descale.size());
  EXPECT_EQ(std::memcmp(got_descale.data(), want_descale.data(), got_descale.size() * sizeof(float)), 0);
  EXPECT_EQ(to_host(amax_d, 1)[0], want_amax);
  for (void* p : {static_cast<void*>(in_d), static_cast<void*>(out_d), static_cast<void*>(ds_d),
                  static_cast<void*>(amax_d), ws})
    cudaFree(p);
  cudaStreamDestroy(stream);
  fp8attn_context_destroy(ctx);
}

TEST(CudaBackendGpu, SpectralNormsWithin1e3OfTheCpu) {
  FP8ATTN_NEED_GPU(ctx);
  const uint64_t seed = workloads::fresh_seed();
  const int32_t hq = 8, hkv = 2, dh = 64;
  const int64_t dm = 512;
  E4m3Weight wq(int64_t{hq} * dh, dm, dm, seed), wk(int64_t{hkv} * dh, dm, dm, seed + 1);
  fp8attn_power_iteration_options o{};
  o.struct_size = sizeof o;
  o.wq_descale = wq.descale;
  o.wk_descale = wk.descale;
  fp8attn_context cpu = make_context(FP8ATTN_BACKEND_CPU);
  std::vector<float> want(hq, -1.0f);
  size_t cpu_bytes = 0;
  ASSERT_EQ(fp8attn_qk_spectral_norms_workspace_size(cpu, hq, hkv, dh, dm, &cpu_bytes, nullptr), FP8ATTN_OK);
  std::vector<unsigned char> cpu_ws(cpu_bytes);
  const fp8attn_tensor tq = wq.tensor(), tk = wk.tensor();
  ASSERT_EQ(fp8attn_qk_spectral_norms(cpu, &tq, &tk, hq, hkv, dh, &o, want.data(), cpu_ws.data(), cpu_bytes, nullptr,
                                      nullptr),
            FP8ATTN_OK);
  fp8attn_context_destroy(cpu);

  uint8_t* q_d = device_copy(wq.bits);
  uint8_t* k_d = device_copy(wk.bits);
  float* sigma_d = device_copy(std::vector<float>(hq, -1.0f));
  size_t bytes = 0;
  ASSERT_EQ(fp8attn_qk_spectral_norms_workspace_size(ctx, hq, hkv, dh, dm, &bytes, nullptr), FP8ATTN_OK);
  void* ws = nullptr;
  ASSERT_EQ(cudaMalloc(&ws, bytes), cudaSuccess);
  const fp8attn_tensor gq = on_device(tq, q_d), gk = on_device(tk, k_d);
  fp8attn_error err{};
  err.struct_size = sizeof err;
  ASSERT_EQ(fp8attn_qk_spectral_norms(ctx, &gq, &gk, hq, hkv, dh, &o, sigma_d, ws, bytes, nullptr, &err), FP8ATTN_OK)
      << err.message;
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> got = to_host(sigma_d, hq);
  for (int h = 0; h < hq; ++h)
    EXPECT_LE(std::fabs(got[h] - want[h]), 1e-3f * want[h]) << "head " << h << ": GPU " << got[h] << ", CPU " << want[h];
  for (void* p : {static_cast<void*>(q_d), static_cast<void*>(k_d), static_cast<void*>(sigma_d), ws}) cudaFree(p);
  fp8attn_context_destroy(ctx);
}

/// One forward's device buffers and arguments (BF16 output, poisoned).
struct DeviceForward {
  AttentionShape shape;
  std::vector<void*> buffers;
  uint16_t* out = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  fp8attn_attention_args args{};
  DeviceForward(const AttentionShape& s, fp8attn_plan plan, uint64_t seed) : shape(s) {
    const QuantizedInputs in = quantize(normal_inputs(s, seed), FP8ATTN_DTYPE_E4M3, ScaleGranularity::PerHead);
    auto keep = [&](auto* p) { buffers.push_back(p); return p; };
    out = keep(device_copy(std::vector<uint16_t>(elements(), 0xFFFF)));
    args.struct_size = sizeof args;
    args.q = on_device(dense_host_tensor(nullptr, FP8ATTN_DTYPE_E4M3, {s.batch, s.seqlen_q, s.heads_q, s.head_dim}),
                       keep(device_copy(in.q)));
    args.k = on_device(dense_host_tensor(nullptr, FP8ATTN_DTYPE_E4M3, {s.batch, s.seqlen_k, s.heads_kv, s.head_dim}),
                       keep(device_copy(in.k)));
    args.v = on_device(dense_host_tensor(nullptr, FP8ATTN_DTYPE_E4M3, {s.batch, s.seqlen_k, s.heads_kv, s.head_dim}),
                       keep(device_copy(in.v)));
    args.out = on_device(dense_host_tensor(nullptr, FP8ATTN_DTYPE_BF16, {s.batch, s.seqlen_q, s.heads_q, s.head_dim}), out);
    args.q_descale = on_device(dense_host_tensor(nullptr, FP8ATTN_DTYPE_F32, {s.batch, s.heads_kv}), keep(device_copy(in.q_descale)));
    args.k_descale = on_device(dense_host_tensor(nullptr, FP8ATTN_DTYPE_F32, {s.batch, s.heads_kv}), keep(device_copy(in.k_descale)));
    args.v_descale = on_device(dense_host_tensor(nullptr, FP8ATTN_DTYPE_F32, {s.batch, s.heads_kv}), keep(device_copy(in.v_descale)));
    EXPECT_EQ(fp8attn_plan_workspace_size(plan, s.batch, s.seqlen_q, s.seqlen_k, &workspace_bytes, nullptr), FP8ATTN_OK);
    EXPECT_EQ(cudaMalloc(&workspace, workspace_bytes + 1), cudaSuccess);
    buffers.push_back(workspace);
  }
  ~DeviceForward() {
    for (void* p : buffers) cudaFree(p);
  }
  size_t elements() const { return static_cast<size_t>(shape.batch * shape.seqlen_q * shape.heads_q * shape.head_dim); }
  void poison() { EXPECT_EQ(cudaMemset(out, 0xFF, elements() * 2), cudaSuccess); }
  int32_t run(fp8attn_plan plan, cudaStream_t stream) {
    return fp8attn_attention_forward(plan, &args, workspace, workspace_bytes, stream, nullptr);
  }
  std::vector<uint16_t> result() { return to_host(out, elements()); }
};

TEST(CudaBackendGpu, GraphCaptureAndReplayOfAForward) {
  FP8ATTN_NEED_GPU(ctx);
  const AttentionShape s{2, 700, 900, 8, 2, 128};
  fp8attn_attention_desc d = make_desc(s, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16);
  d.causal = 1;
  fp8attn_plan plan = nullptr;
  ASSERT_EQ(fp8attn_plan_create(ctx, &d, &plan, nullptr), FP8ATTN_OK);
  DeviceForward f(s, plan, workloads::fresh_seed());
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ASSERT_EQ(f.run(plan, stream), FP8ATTN_OK);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  const std::vector<uint16_t> eager = f.result();
  f.poison();
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(f.run(plan, stream), FP8ATTN_OK);  // captured: must not allocate or synchronize
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  EXPECT_EQ(f.result()[0], 0xFFFF) << "capture ran the kernel";
  for (int replay = 0; replay < 2; ++replay) {
    f.poison();
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(f.result(), eager) << "replay " << replay;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
}

TEST(CudaBackendGpu, TwoStreamsWithTwoWorkspacesInParallel) {
  FP8ATTN_NEED_GPU(ctx);
  const AttentionShape s{1, 2048, 2048, 16, 4, 64};
  fp8attn_attention_desc d = make_desc(s, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_BF16);
  d.telemetry = 1;  // the counters live in each call's workspace: two workspaces, no sharing
  fp8attn_plan plan = nullptr;
  ASSERT_EQ(fp8attn_plan_create(ctx, &d, &plan, nullptr), FP8ATTN_OK);
  const uint64_t seed = workloads::fresh_seed();
  DeviceForward a(s, plan, seed), b(s, plan, seed + 1);
  cudaStream_t sa = nullptr, sb = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking), cudaSuccess);
  // Alone, one after the other.
  ASSERT_EQ(a.run(plan, sa), FP8ATTN_OK);
  ASSERT_EQ(cudaStreamSynchronize(sa), cudaSuccess);
  ASSERT_EQ(b.run(plan, sb), FP8ATTN_OK);
  ASSERT_EQ(cudaStreamSynchronize(sb), cudaSuccess);
  const std::vector<uint16_t> alone_a = a.result(), alone_b = b.result();
  fp8attn_telemetry ta{}, tb{};
  ta.struct_size = tb.struct_size = sizeof ta;
  ASSERT_EQ(fp8attn_attention_telemetry_copy_async(plan, a.workspace, a.workspace_bytes, &ta, sa, nullptr), FP8ATTN_OK);
  ASSERT_EQ(fp8attn_attention_telemetry_copy_async(plan, b.workspace, b.workspace_bytes, &tb, sb, nullptr), FP8ATTN_OK);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // Together, several rounds, on two streams with their own workspaces.
  for (int round = 0; round < 3; ++round) {
    a.poison(), b.poison();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(a.run(plan, sa), FP8ATTN_OK);
    ASSERT_EQ(b.run(plan, sb), FP8ATTN_OK);
    fp8attn_telemetry ra{}, rb{};
    ra.struct_size = rb.struct_size = sizeof ra;
    ASSERT_EQ(fp8attn_attention_telemetry_copy_async(plan, a.workspace, a.workspace_bytes, &ra, sa, nullptr), FP8ATTN_OK);
    ASSERT_EQ(fp8attn_attention_telemetry_copy_async(plan, b.workspace, b.workspace_bytes, &rb, sb, nullptr), FP8ATTN_OK);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(a.result(), alone_a) << "round " << round;
    EXPECT_EQ(b.result(), alone_b) << "round " << round;
    EXPECT_EQ(ra.p_positive, ta.p_positive);
    EXPECT_EQ(rb.p_positive, tb.p_positive);
  }
  cudaStreamDestroy(sa);
  cudaStreamDestroy(sb);
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
}

}  // namespace
}  // namespace fp8attn::backend_testing
