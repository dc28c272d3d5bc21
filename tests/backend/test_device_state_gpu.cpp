// The scale state on a CUDA context, label `cuda`: each test skips without an sm_90
// GPU, with the reason. The forward's E4M3 output and amax_o, and the stream-ordered pickup of
// device amaxes (cudaMemcpyAsync into page-locked staging, then cudaLaunchHostFunc), checked
// against the same GPU's F32 output, not against the CPU engine: nothing here claims
// bit-equality between the hardware and the emulator.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/numerics/float8.hpp"
#include "tests/common/cuda_test_device.hpp"
#include "tests/training/training_test_support.hpp"
#include "tools/common/fresh_seed.hpp"
#include "tools/common/host_tensor.hpp"

namespace fp8attn::training_test {
namespace {

using fp8attn::testing::device_copy;

fp8attn_context cuda_context(std::string* why) {
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_CUDA;
  o.log_level = FP8ATTN_LOG_OFF;
  fp8attn_context ctx = nullptr;
  fp8attn_error err = make_error();
  if (fp8attn_context_create(&o, &ctx, &err) != FP8ATTN_OK) {
    *why = err.message;
    return nullptr;
  }
  return ctx;
}

fp8attn_tensor on_device(fp8attn_tensor t) {
  t.device = FP8ATTN_DEVICE_CUDA;
  return t;
}

template <class T>
std::vector<T> to_host(const T* device, size_t n) {
  std::vector<T> host(n);
  EXPECT_EQ(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

TEST(DeviceStateGpu, ForwardAndDeviceReportsReachTheStateOnTheStream) {
  std::string why;
  fp8attn_context ctx = cuda_context(&why);
  if (ctx == nullptr) GTEST_SKIP() << "needs an sm_90 GPU: " << why;
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const Shape s{2, 300, 500, 4, 2, 128};
  Inputs in = random_inputs(s, rng, 1.3f);
  fp8attn_scale_state_options o{};
  o.struct_size = sizeof o;
  o.num_layers = 2;
  for (int t = 0; t < FP8ATTN_NUM_TENSOR_KINDS; ++t) o.recipe[t] = FP8ATTN_RECIPE_DELAYED;
  o.recipe[FP8ATTN_TENSOR_LOGIT] = FP8ATTN_RECIPE_GEOMETRY;
  fp8attn_scale_state state = nullptr;
  ASSERT_EQ(fp8attn_scale_state_create(ctx, &o, &state, nullptr), FP8ATTN_OK);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);

  // A device report of Q, K and V amaxes, then the step: the scales follow (448 / amax).
  const std::vector<float> reported = {2.5f, 3.0f, 1.75f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f};
  float* device_amax = device_copy(reported);
  fp8attn_error err = make_error();
  ASSERT_EQ(fp8attn_scale_state_report_amax_device(state, 1, device_amax, stream, &err), FP8ATTN_OK) << err.message;
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);  // the ordering rule: synchronize before step()
  ASSERT_EQ(fp8attn_scale_state_step(state, nullptr), FP8ATTN_OK);
  float scale_q = 0.0f, inv[3] = {};
  ASSERT_EQ(fp8attn_scale_state_get_scale(state, 1, FP8ATTN_TENSOR_Q, &scale_q, &inv[0], nullptr), FP8ATTN_OK);
  EXPECT_EQ(scale_q, static_cast<float>(448.0 / 2.5));
  for (int kind = 1; kind < 3; ++kind)
    ASSERT_EQ(fp8attn_scale_state_get_scale(state, 1, kind, nullptr, &inv[kind], nullptr), FP8ATTN_OK);

  // The F32 output with the state's descales, then the E4M3 output with the state.
  std::vector<void*> buffers;
  auto keep = [&](auto* p) { buffers.push_back(p); return p; };
  fp8attn_attention_args a{};
  a.struct_size = sizeof a;
  a.q = on_device(tensor(keep(device_copy(in.q)), FP8ATTN_DTYPE_E4M3, {s.batch, s.seqlen_q, s.heads_q, s.head_dim}));
  a.k = on_device(tensor(keep(device_copy(in.k)), FP8ATTN_DTYPE_E4M3, {s.batch, s.seqlen_k, s.heads_kv, s.head_dim}));
  a.v = on_device(tensor(keep(device_copy(in.v)), FP8ATTN_DTYPE_E4M3, {s.batch, s.seqlen_k, s.heads_kv, s.head_dim}));
  const size_t n = static_cast<size_t>(s.q_elems());
  float* out_f32 = keep(device_copy(std::vector<float>(n, std::nanf(""))));
  uint8_t* out_e4m3 = keep(device_copy(std::vector<uint8_t>(n, 0x7F)));
  std::vector<float> descale_values = {inv[0], inv[1], inv[2]};
  float* descales = keep(device_copy(descale_values));
  fp8attn_plan f32_plan = nullptr, e4m3_plan = nullptr;
  fp8attn_attention_desc d = make_desc(s, FP8ATTN_DTYPE_F32);
  ASSERT_EQ(fp8attn_plan_create(ctx, &d, &f32_plan, nullptr), FP8ATTN_OK);
  d.output_dtype = FP8ATTN_DTYPE_E4M3;
  ASSERT_EQ(fp8attn_plan_create(ctx, &d, &e4m3_plan, nullptr), FP8ATTN_OK);
  size_t bytes = 0;
  ASSERT_EQ(fp8attn_plan_workspace_size(e4m3_plan, s.batch, s.seqlen_q, s.seqlen_k, &bytes, nullptr), FP8ATTN_OK);
  void* workspace = nullptr;
  ASSERT_EQ(cudaMalloc(&workspace, bytes + 1), cudaSuccess);
  buffers.push_back(workspace);

  fp8attn_attention_args f = a;
  f.out = on_device(tensor(out_f32, FP8ATTN_DTYPE_F32, {s.batch, s.seqlen_q, s.heads_q, s.head_dim}));
  fp8attn_tensor* per_tensor[3] = {&f.q_descale, &f.k_descale, &f.v_descale};
  for (int i = 0; i < 3; ++i) {
    *per_tensor[i] = on_device(tensor(descales + i, FP8ATTN_DTYPE_F32, {s.batch, s.heads_kv}));
    per_tensor[i]->stride[0] = per_tensor[i]->stride[1] = 0;
  }
  ASSERT_EQ(fp8attn_attention_forward(f32_plan, &f, workspace, bytes, stream, &err), FP8ATTN_OK) << err.message;
  a.out = on_device(tensor(out_e4m3, FP8ATTN_DTYPE_E4M3, {s.batch, s.seqlen_q, s.heads_q, s.head_dim}));
  a.scale_state = state;
  a.scale_state_layer = 1;
  float amax_o = -1.0f;
  a.amax_o = &amax_o;
  ASSERT_EQ(fp8attn_attention_forward(e4m3_plan, &a, workspace, bytes, stream, &err), FP8ATTN_OK) << err.message;
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);

  const std::vector<float> o_f32 = to_host(out_f32, n);
  const std::vector<uint8_t> e4m3 = to_host(out_e4m3, n);
  float scale_o = 0.0f;
  ASSERT_EQ(fp8attn_scale_state_get_scale(state, 1, FP8ATTN_TENSOR_O, &scale_o, nullptr, nullptr), FP8ATTN_OK);
  EXPECT_EQ(scale_o, 1.0f) << "no O amax before this step: the call used scale 1";
  int64_t differ = 0;
  for (size_t i = 0; i < n; ++i) differ += e4m3[i] != num::float_to_e4m3(o_f32[i] * scale_o);
  std::printf("amax_o %.9g, max |O| of the F32 call %.9g; %lld E4M3 bytes differ\n", amax_o, max_abs(o_f32),
              static_cast<long long>(differ));
  EXPECT_EQ(amax_o, max_abs(o_f32)) << "one GPU, one kernel arithmetic: the same max";
  EXPECT_EQ(differ, 0);
  // The forward's report is in: the next step's O scale follows its amax (margin 0).
  ASSERT_EQ(fp8attn_scale_state_step(state, nullptr), FP8ATTN_OK);
  ASSERT_EQ(fp8attn_scale_state_get_scale(state, 1, FP8ATTN_TENSOR_O, &scale_o, nullptr, nullptr), FP8ATTN_OK);
  EXPECT_EQ(scale_o, static_cast<float>(448.0 / amax_o));

  // A NaN entry: the report is dropped whole on the stream, the call itself succeeds.
  const std::vector<uint8_t> blob = serialize(state);
  std::vector<float> bad = reported;
  bad[FP8ATTN_TENSOR_K] = std::nanf("");
  ASSERT_EQ(cudaMemcpy(device_amax, bad.data(), bad.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(fp8attn_scale_state_report_amax_device(state, 1, device_amax, stream, &err), FP8ATTN_OK) << err.message;
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(serialize(state), blob);

  for (void* p : buffers) cudaFree(p);
  cudaFree(device_amax);
  cudaStreamDestroy(stream);
  fp8attn_plan_destroy(f32_plan);
  fp8attn_plan_destroy(e4m3_plan);
  fp8attn_scale_state_destroy(state);
  fp8attn_context_destroy(ctx);
}

}  // namespace
}  // namespace fp8attn::training_test
