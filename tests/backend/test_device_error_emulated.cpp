// A device-runtime failure reaches the caller as FP8ATTN_STATUS_DEVICE_ERROR, with a message
// that names the failing call, and leaves every output as it was. The
// emulated runtime fails each launch when FP8ATTN_EMULATOR_FAIL=launch is set at context
// creation, as a CUDA launch that returns an error would; the GpuBackend host code and the ABI
// layer above it are the code a GPU runs. Each case first runs without the injection, so a case
// that cannot reach its launch fails here instead of passing vacuously.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/backend/backend_test_support.hpp"
#include "tests/quantize/quantize_test_support.hpp"
#include "tools/common/attention_inputs.hpp"
#include "tools/common/forward_runner.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::backend_testing {
namespace {

/// Sets FP8ATTN_EMULATOR_FAIL for the lifetime of the object (contexts read it at creation).
struct InjectedLaunchFailure {
  InjectedLaunchFailure() { setenv("FP8ATTN_EMULATOR_FAIL", "launch", 1); }
  ~InjectedLaunchFailure() { unsetenv("FP8ATTN_EMULATOR_FAIL"); }
};

bool all_bytes(const void* data, size_t bytes, unsigned char value) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i)
    if (p[i] != value) return false;
  return true;
}

TEST(DeviceErrorEmulated, AttentionForwardLaunchFailureIsDeviceErrorAndOutputsStayPoisoned) {
  const uint64_t seed = workloads::fresh_seed();
  workloads::AttentionShape shape;
  shape.batch = 2, shape.seqlen_q = 80, shape.seqlen_k = 150, shape.heads_q = 4, shape.heads_kv = 2, shape.head_dim = 64;
  const workloads::QuantizedInputs in = workloads::quantize(workloads::normal_inputs(shape, seed), FP8ATTN_DTYPE_E4M3,
                                                            workloads::ScaleGranularity::PerHead);
  fp8attn_attention_desc desc = workloads::make_desc(shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
  workloads::ForwardOptions options;
  options.backend = FP8ATTN_BACKEND_EMULATOR;

  const workloads::ForwardResult ok = workloads::run_forward(desc, shape, in, options);
  ASSERT_EQ(ok.status, FP8ATTN_OK) << "seed " << seed;

  InjectedLaunchFailure inject;
  workloads::ForwardSession session(desc, shape, in, options);
  std::string message;
  try {
    session.run();
  } catch (const std::runtime_error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("FP8ATTN_STATUS_DEVICE_ERROR"), std::string::npos) << message;
  EXPECT_NE(message.find("attention forward launch failed"), std::string::npos) << message;
  const workloads::ForwardResult failed = session.result();
  // The runner poisons F32 outputs with 0xFF bytes and the LSE with −12345.
  EXPECT_TRUE(all_bytes(failed.out.data(), failed.out.size() * sizeof(float), 0xFF));
  for (float lse : failed.lse) ASSERT_EQ(lse, -12345.0f);
}

TEST(DeviceErrorEmulated, QuantizerLaunchFailureIsDeviceErrorAndOutputsStayPoisoned) {
  const uint64_t seed = workloads::fresh_seed();
  const std::vector<int64_t> shape = {2, 96, 2, 64}, stride = {96 * 2 * 64, 2 * 64, 64, 1};
  std::vector<float> x = quant::testing::outlier_values(2 * 96 * 2 * 64, seed, false);
  const fp8attn_tensor input = quant::testing::make_tensor(x.data(), FP8ATTN_DTYPE_F32, shape, stride);
  const fp8attn_quantize_options opts = quant::testing::options(FP8ATTN_QUANT_PER_HEAD, 0, true, seed);
  auto run = [&](fp8attn_context ctx, std::vector<uint8_t>& out, std::vector<float>& descale, float& amax,
                 fp8attn_error& err) {
    const fp8attn_tensor o = quant::testing::make_tensor(out.data(), FP8ATTN_DTYPE_E4M3, shape, stride);
    const fp8attn_tensor d = quant::testing::make_tensor(descale.data(), FP8ATTN_DTYPE_F32, {2, 2}, {2, 1});
    size_t bytes = 0;
    EXPECT_EQ(fp8attn_quantize_workspace_size(ctx, &input, nullptr, 96, &opts, &bytes, &err), FP8ATTN_OK) << err.message;
    std::vector<unsigned char> workspace(bytes, 0xCD);
    return fp8attn_quantize_async(ctx, &input, nullptr, 96, &opts, &o, &d, &amax, workspace.data(), bytes, nullptr, &err);
  };
  std::vector<uint8_t> out(x.size(), 0xEE);
  std::vector<float> descale(4, -7.0f);
  float amax = -1.0f;
  fp8attn_error err{};
  err.struct_size = sizeof err;
  fp8attn_context ok = make_context(FP8ATTN_BACKEND_EMULATOR);
  ASSERT_EQ(run(ok, out, descale, amax, err), FP8ATTN_OK) << err.message;
  fp8attn_context_destroy(ok);

  InjectedLaunchFailure inject;
  fp8attn_context failing = make_context(FP8ATTN_BACKEND_EMULATOR);
  out.assign(x.size(), 0xEE);
  descale.assign(4, -7.0f);
  amax = -1.0f;
  EXPECT_EQ(run(failing, out, descale, amax, err), FP8ATTN_STATUS_DEVICE_ERROR);
  EXPECT_NE(std::string(err.message).find("quantizer launch failed"), std::string::npos) << err.message;
  EXPECT_TRUE(all_bytes(out.data(), out.size(), 0xEE));
  for (float d : descale) EXPECT_EQ(d, -7.0f);
  EXPECT_EQ(amax, -1.0f);
  fp8attn_context_destroy(failing);
}

TEST(DeviceErrorEmulated, SpectralGemmFailureIsDeviceErrorAndSigmasStayPoisoned) {
  const uint64_t seed = workloads::fresh_seed();
  E4m3Weight wq(4 * 32, 64, 64, seed), wk(2 * 32, 64, 64, seed + 1);
  const fp8attn_tensor tq = wq.tensor(), tk = wk.tensor();
  auto run = [&](fp8attn_context ctx, std::vector<float>& sigma, fp8attn_error& err) {
    size_t bytes = 0;
    EXPECT_EQ(fp8attn_qk_spectral_norms_workspace_size(ctx, 4, 2, 32, 64, &bytes, &err), FP8ATTN_OK) << err.message;
    std::vector<unsigned char> workspace(bytes, 0xCD);
    return fp8attn_qk_spectral_norms(ctx, &tq, &tk, 4, 2, 32, nullptr, sigma.data(), workspace.data(), bytes, nullptr,
                                     &err);
  };
  std::vector<float> sigma(4, -1.0f);
  fp8attn_error err{};
  err.struct_size = sizeof err;
  fp8attn_context ok = make_context(FP8ATTN_BACKEND_EMULATOR);
  ASSERT_EQ(run(ok, sigma, err), FP8ATTN_OK) << err.message;
  EXPECT_GT(sigma[0], 0.0f);
  fp8attn_context_destroy(ok);

  InjectedLaunchFailure inject;
  fp8attn_context failing = make_context(FP8ATTN_BACKEND_EMULATOR);
  sigma.assign(4, -1.0f);
  EXPECT_EQ(run(failing, sigma, err), FP8ATTN_STATUS_DEVICE_ERROR);
  EXPECT_NE(std::string(err.message).find("batched GEMM"), std::string::npos) << err.message;
  for (float s : sigma) EXPECT_EQ(s, -1.0f);
  fp8attn_context_destroy(failing);
}

TEST(DeviceErrorEmulated, MalformedFailureVariableIsRefusedAtContextCreation) {
  setenv("FP8ATTN_EMULATOR_FAIL", "sometimes", 1);
  fp8attn_context_options o{};
  o.struct_size = sizeof o;
  o.backend = FP8ATTN_BACKEND_EMULATOR;
  fp8attn_context ctx = nullptr;
  fp8attn_error err{};
  err.struct_size = sizeof err;
  EXPECT_EQ(fp8attn_context_create(&o, &ctx, &err), FP8ATTN_STATUS_BAD_OPTION);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_NE(std::string(err.message).find("FP8ATTN_EMULATOR_FAIL"), std::string::npos) << err.message;
  unsetenv("FP8ATTN_EMULATOR_FAIL");
}

}  // namespace
}  // namespace fp8attn::backend_testing
