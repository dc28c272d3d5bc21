// fp8attn_qk_spectral_norms on the emulator backend: the device plan (FP8 Gram GEMMs through the
// project's sm90 GEMM kernel on the SIMT emulator, FP32 powers, FP32 power iteration) against
// the CPU path (OpenBLAS Grams, double iteration) on the same E4M3 weights with per-tensor
// descales. Weights: test::random_weights (low-rank plus noise, spectrum decaying as e^(−i/8)),
// GQA 4:2 and MHA. Bound: |σ_emu − σ_cpu| ≤ 1e-3·σ_cpu per head (FP32 Grams and iteration against
// FP32 Grams and a double iteration, both to tolerance 1e-6). No allocation, no synchronization.
#include <cmath>
#include <string>
#include <vector>

#include "tests/backend/backend_test_support.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::backend_testing {
namespace {

struct Shape {
  int32_t heads_q, heads_kv, head_dim;
  int64_t d_model;
};

struct Sigmas {
  std::vector<float> sigma, residual, warm;
  std::vector<int32_t> iterations;
};

Sigmas spectral(fp8attn_context ctx, const Shape& s, E4m3Weight& wq, E4m3Weight& wk, bool count) {
  Sigmas out;
  out.sigma.assign(static_cast<size_t>(s.heads_q), -1.0f);
  out.residual.assign(static_cast<size_t>(s.heads_q), -1.0f);
  out.iterations.assign(static_cast<size_t>(s.heads_q), -1);
  out.warm.assign(static_cast<size_t>(s.heads_q * s.head_dim), 0.0f);
  fp8attn_power_iteration_options o{};
  o.struct_size = sizeof o;
  o.wq_descale = wq.descale;
  o.wk_descale = wk.descale;
  o.seed = 7;
  o.warm_start = out.warm.data();
  o.iterations_out = out.iterations.data();
  o.residual_out = out.residual.data();
  fp8attn_error err{};
  err.struct_size = sizeof err;
  size_t bytes = 0;
  EXPECT_EQ(fp8attn_qk_spectral_norms_workspace_size(ctx, s.heads_q, s.heads_kv, s.head_dim, s.d_model, &bytes, &err),
            FP8ATTN_OK)
      << err.message;
  std::vector<unsigned char> workspace(bytes, 0xCD);
  const fp8attn_tensor tq = wq.tensor(), tk = wk.tensor();
  const CounterSnapshot before = count ? CounterSnapshot::of(ctx) : CounterSnapshot{};
  EXPECT_EQ(fp8attn_qk_spectral_norms(ctx, &tq, &tk, s.heads_q, s.heads_kv, s.head_dim, &o, out.sigma.data(),
                                      workspace.data(), bytes, nullptr, &err),
            FP8ATTN_OK)
      << err.message;
  if (count) {
    const CounterSnapshot added = CounterSnapshot::of(ctx).since(before);
    EXPECT_EQ(added.allocations, 0u);
    EXPECT_EQ(added.synchronizations, 0u);
    EXPECT_GT(added.launches, 0u);
  }
  return out;
}

TEST(SpectralEmulated, SigmaMatchesTheCpuPath) {
  const uint64_t seed = workloads::fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  fp8attn_context cpu = make_context(FP8ATTN_BACKEND_CPU);
  fp8attn_context emu = make_context(FP8ATTN_BACKEND_EMULATOR);
  for (const Shape s : {Shape{4, 2, 64, 128}, Shape{2, 2, 32, 160}}) {
    SCOPED_TRACE("heads " + std::to_string(s.heads_q) + ":" + std::to_string(s.heads_kv) + " d_h " +
                 std::to_string(s.head_dim) + " d " + std::to_string(s.d_model));
    // Rows padded to a multiple of 16 bytes past d_model: the plan must use the row stride.
    E4m3Weight wq(int64_t{s.heads_q} * s.head_dim, s.d_model, s.d_model + 32, seed);
    E4m3Weight wk(int64_t{s.heads_kv} * s.head_dim, s.d_model, s.d_model + 32, seed + 1);
    const Sigmas want = spectral(cpu, s, wq, wk, false);
    const Sigmas got = spectral(emu, s, wq, wk, true);
    for (int h = 0; h < s.heads_q; ++h) {
      ASSERT_GT(want.sigma[h], 0.0f);
      EXPECT_LE(std::fabs(got.sigma[h] - want.sigma[h]), 1e-3f * want.sigma[h])
          << "head " << h << ": emulator " << got.sigma[h] << ", CPU " << want.sigma[h];
      EXPECT_GE(got.iterations[h], 1);
      EXPECT_GE(got.residual[h], 0.0f);
      EXPECT_LE(got.residual[h], 1e-2f);
      float norm2 = 0.0f;
      for (int i = 0; i < s.head_dim; ++i) norm2 += got.warm[h * s.head_dim + i] * got.warm[h * s.head_dim + i];
      EXPECT_NEAR(norm2, 1.0f, 1e-4f);  // the converged unit vector, for the next warm start
    }
  }
  fp8attn_context_destroy(emu);
  fp8attn_context_destroy(cpu);
}

// What the FP8 GEMMs cannot read is refused with a specific status, and σ is not written.
TEST(SpectralEmulated, RefusesWhatTheFp8GemmsCannotRead) {
  fp8attn_context emu = make_context(FP8ATTN_BACKEND_EMULATOR);
  fp8attn_error err{};
  err.struct_size = sizeof err;
  std::vector<unsigned char> ws(size_t{4} << 20);
  float sigma[2] = {-1.0f, -1.0f};
  E4m3Weight odd(2 * 32, 40, 48, 1);  // d_model 40: rows of 40 bytes
  const fp8attn_tensor t_odd = odd.tensor();
  EXPECT_EQ(fp8attn_qk_spectral_norms(emu, &t_odd, &t_odd, 2, 2, 32, nullptr, sigma, ws.data(), ws.size(), nullptr, &err),
            FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND);
  EXPECT_NE(std::string(err.message).find("d_model"), std::string::npos) << err.message;
  std::vector<float> f32(2 * 32 * 64, 0.5f);
  fp8attn_tensor t_f32 = E4m3Weight(2 * 32, 64, 64, 2).tensor();
  t_f32.data = f32.data();
  t_f32.dtype = FP8ATTN_DTYPE_F32;
  EXPECT_EQ(fp8attn_qk_spectral_norms(emu, &t_f32, &t_f32, 2, 2, 32, nullptr, sigma, ws.data(), ws.size(), nullptr, &err),
            FP8ATTN_STATUS_UNSUPPORTED_DTYPE);
  EXPECT_NE(std::string(err.message).find("E4M3"), std::string::npos) << err.message;
  E4m3Weight ok(2 * 32, 64, 64, 3);
  const fp8attn_tensor t_ok = ok.tensor();
  size_t bytes = 0;
  ASSERT_EQ(fp8attn_qk_spectral_norms_workspace_size(emu, 2, 2, 32, 64, &bytes, &err), FP8ATTN_OK);
  EXPECT_EQ(fp8attn_qk_spectral_norms(emu, &t_ok, &t_ok, 2, 2, 32, nullptr, sigma, ws.data(), bytes - 1, nullptr, &err),
            FP8ATTN_STATUS_WORKSPACE_TOO_SMALL);
  EXPECT_EQ(sigma[0], -1.0f);
  EXPECT_EQ(sigma[1], -1.0f);
  fp8attn_context_destroy(emu);
}

}  // namespace
}  // namespace fp8attn::backend_testing
