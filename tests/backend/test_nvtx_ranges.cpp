// NVTX ranges on the CPU and emulator backends, seen by an NVTX injection library (the way Nsight
// Systems sees them): plan creation and every execute call open one range named after the
// operation and its shape, and close it, also when the call fails.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/backend/backend_test_support.hpp"
#include "tools/common/attention_inputs.hpp"
#include "tools/common/forward_runner.hpp"
#include "tools/common/host_tensor.hpp"

namespace fp8attn::backend_testing {
namespace {

using namespace fp8attn::workloads;

/// What the recorder saw, read through the already-loaded injection library.
struct Recorded {
  std::string names;
  int depth = -1, pops = -1;
  static Recorded now() {
    Recorded r;
    void* lib = dlopen(FP8ATTN_NVTX_RECORDER_PATH, RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) return r;
    using Fn = const char* (*)(int*, int*);
    auto fn = reinterpret_cast<Fn>(dlsym(lib, "fp8attn_test_nvtx_ranges"));
    if (fn != nullptr) r.names = fn(&r.depth, &r.pops);
    dlclose(lib);
    return r;
  }
};

TEST(NvtxRanges, PlanForwardQuantizeAndSpectralOpenNamedRanges) {
  const AttentionShape s{1, 40, 70, 2, 1, 64};
  fp8attn_context ctx = make_context(FP8ATTN_BACKEND_CPU);
  fp8attn_attention_desc d = make_desc(s, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
  d.causal = 1;
  fp8attn_plan plan = nullptr;
  ASSERT_EQ(fp8attn_plan_create(ctx, &d, &plan, nullptr), FP8ATTN_OK);
  Recorded r = Recorded::now();
  ASSERT_EQ(r.depth, 0) << "the injection library was not loaded (NVTX_INJECTION64_PATH) or a range is open";
  EXPECT_NE(r.names.find("fp8attn_plan_create hq2 hkv1 d64 causal\n"), std::string::npos) << r.names;

  const ForwardResult f = run_forward_on_plan(plan, d, s, quantize(normal_inputs(s, 5), FP8ATTN_DTYPE_E4M3,
                                                                   ScaleGranularity::PerTensor));
  ASSERT_EQ(f.status, FP8ATTN_OK);
  r = Recorded::now();
  EXPECT_NE(r.names.find("fp8attn_attention_forward b1 sq40 sk70 hq2 hkv1 d64 causal\n"), std::string::npos) << r.names;

  // The quantizer's execute call, on the CPU backend.
  std::vector<float> x(2 * 64, 0.5f);
  std::vector<uint8_t> y(x.size());
  float descale = 0.0f;
  const fp8attn_tensor in = dense_host_tensor(x.data(), FP8ATTN_DTYPE_F32, {1, 2, 1, 64});
  const fp8attn_tensor out = dense_host_tensor(y.data(), FP8ATTN_DTYPE_E4M3, {1, 2, 1, 64});
  const fp8attn_tensor ds = dense_host_tensor(&descale, FP8ATTN_DTYPE_F32, {1});
  std::vector<unsigned char> ws(256);
  ASSERT_EQ(fp8attn_quantize_async(ctx, &in, nullptr, 0, nullptr, &out, &ds, nullptr, ws.data(), ws.size(), nullptr,
                                   nullptr),
            FP8ATTN_OK);
  r = Recorded::now();
  EXPECT_NE(r.names.find("fp8attn_quantize b1 h1 d64 units1\n"), std::string::npos) << r.names;

  // The spectral norms on the emulator, and a call that fails inside its range.
  fp8attn_context emu = make_context(FP8ATTN_BACKEND_EMULATOR);
  E4m3Weight w(2 * 32, 64, 64, 9);
  const fp8attn_tensor tw = w.tensor();
  float sigma[2];
  size_t bytes = 0;
  ASSERT_EQ(fp8attn_qk_spectral_norms_workspace_size(emu, 2, 2, 32, 64, &bytes, nullptr), FP8ATTN_OK);
  std::vector<unsigned char> sws(bytes);
  ASSERT_EQ(fp8attn_qk_spectral_norms(emu, &tw, &tw, 2, 2, 32, nullptr, sigma, sws.data(), bytes, nullptr, nullptr),
            FP8ATTN_OK);
  EXPECT_EQ(fp8attn_qk_spectral_norms(emu, &tw, &tw, 2, 2, 32, nullptr, sigma, sws.data(), 1, nullptr, nullptr),
            FP8ATTN_STATUS_WORKSPACE_TOO_SMALL);
  r = Recorded::now();
  size_t count = 0;
  for (size_t at = r.names.find("fp8attn_qk_spectral_norms hq2 hkv2 d32 dm64\n"); at != std::string::npos;
       at = r.names.find("fp8attn_qk_spectral_norms hq2 hkv2 d32 dm64\n", at + 1))
    ++count;
  EXPECT_EQ(count, 2u) << r.names;
  EXPECT_EQ(r.depth, 0) << "a range was left open";
  size_t lines = 0;
  for (char c : r.names) lines += c == '\n';
  EXPECT_EQ(static_cast<size_t>(r.pops), lines);
  fp8attn_context_destroy(emu);
  fp8attn_plan_destroy(plan);
  fp8attn_context_destroy(ctx);
}

}  // namespace
}  // namespace fp8attn::backend_testing
