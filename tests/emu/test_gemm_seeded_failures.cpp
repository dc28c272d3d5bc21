// Seeded failures: copies of the GEMM kernel with a planted bug (gemm_seeded_faults.hpp). The
// emulator must report each one as a KernelError naming what went wrong, under every schedule
// tried, while the unmodified copy passes under the same schedules.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/numerics/float8.hpp"
#include "kernels/sm90/gemm/gemm_host.hpp"
#include "tests/emu/gemm_seeded_faults.hpp"

namespace fp8attn::test {
namespace {

using Cfg = sm90::GemmConfig<sm90::GemmInput::E4M3>;

/// Runs the faulty copy on a 128 x 128 x 512 FP8 problem (4 k-tiles: each stage is refilled);
/// returns the KernelError text, or "" when the kernel ran to the end.
template <Fault kFault>
std::string run_faulty(uint64_t seed, bool shuffle) {
  constexpr int M = 128, N = 128, K = 512;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<uint8_t> a(M * K), b(N * K);
  for (auto& x : a) x = num::float_to_e4m3(nd(rng));
  for (auto& x : b) x = num::float_to_e4m3(nd(rng));
  std::vector<float> c(M * N, std::nanf(""));
  sm90::GemmProblem p;
  p.a = a.data();
  p.lda = K;
  p.b = b.data();
  p.ldb = K;
  p.c = c.data();
  p.ldc = N;
  p.m = M;
  p.n = N;
  p.k = K;
  sm90::GemmPlan plan;
  EXPECT_EQ(sm90::plan_gemm(p, &plan), "");
  const sm90::GemmParams params{arch::make_emulated_tensor_map(plan.a), arch::make_emulated_tensor_map(plan.b), c.data(), M, N, K, N};
  emu::LaunchConfig config;
  config.grid = emu::Dim3{plan.grid_x, plan.grid_y, 1};
  config.block = emu::Dim3{plan.threads, 1, 1};
  config.dynamic_smem_bytes = plan.smem_bytes;
  config.seed = seed;
  config.shuffle = shuffle;
  try {
    emu::launch(config, &faulty_gemm_kernel<Cfg, kFault>, params);
  } catch (const emu::KernelError& e) {
    return e.what();
  }
  return {};
}

template <Fault kFault>
void expect_reported(const char* name, const std::vector<const char*>& any_of) {
  for (uint64_t seed : {1, 2, 3}) {
    for (bool shuffle : {false, true}) {
      const std::string error = run_faulty<kFault>(seed, shuffle);
      bool named = false;
      for (const char* word : any_of) named = named || error.find(word) != std::string::npos;
      EXPECT_TRUE(named) << name << " (seed " << seed << (shuffle ? ", shuffled" : "") << ") reported: \"" << error << "\"";
      std::printf("%s, seed %llu%s: %.240s\n", name, static_cast<unsigned long long>(seed), shuffle ? " shuffled" : "",
                  error.empty() ? "(no report)" : error.c_str());
    }
  }
}

TEST(GemmSeededFailures, TheUnmodifiedCopyRunsClean) {
  for (uint64_t seed : {1, 2, 3})
    for (bool shuffle : {false, true}) EXPECT_EQ(run_faulty<Fault::None>(seed, shuffle), "") << "seed " << seed;
  std::printf("unmodified copy: no report under 6 schedules\n");
}

// Without the consumers' wait on the "full" barrier, their wgmma reads of a stage are unordered
// with the TMA writes into it: a shared-memory race.
TEST(GemmSeededFailures, MissingFullBarrierWaitIsReportedAsARace) {
  expect_reported<Fault::MissingFullBarrierWait>("missing full-barrier wait", {"race"});
}

// Without the producer's wait on the "empty" barrier it runs a phase ahead: the consumers then
// wait for a parity that has already gone by, and the emulator reports the stuck threads.
TEST(GemmSeededFailures, MissingEmptyBarrierWaitIsReported) {
  expect_reported<Fault::MissingEmptyBarrierWait>("missing empty-barrier wait", {"race", "deadlock"});
}

// Consumers starting at parity 1 on a fresh "full" barrier wait for a phase that needs the
// producer's third load, which waits for the consumers: reported as a deadlock naming each
// thread, barrier and phase.
TEST(GemmSeededFailures, WrongMbarrierPhaseIsReported) {
  expect_reported<Fault::WrongFullBarrierPhase>("wrong full-barrier phase", {"race", "deadlock"});
}

TEST(GemmSeededFailures, OutOfBoundsSharedMemoryWriteIsReported) {
  expect_reported<Fault::OutOfBoundsSmemWrite>("out-of-bounds shared memory write", {"outside", "out of bounds"});
}

}  // namespace
}  // namespace fp8attn::test
