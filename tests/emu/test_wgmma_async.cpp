// The asynchronous contract of wgmma (PTX ISA 9.0 §9.7.15.7): what wait_group N guarantees, and
// the misuses the emulator reports: a missing fence, accumulators touched before the covering
// wait, operands that differ across the warpgroup, FP8 operands that are not K-major, a
// non-zero descriptor base offset. Also the accumulator-precision hook of mma_order.hpp.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/emu/wgmma_test_support.hpp"

namespace fp8attn::test {
namespace {

constexpr int kN = 16;

// A and B of one m64n16k32 E4M3 mma in shared memory (128B swizzle): A = 1 everywhere in column
// k = 0, B(0, n) = n + 1, so D(m, n) = D + (n + 1).
struct Fixture {
  std::vector<uint8_t> image;
  uint64_t da = 0, db = 0;
  Fixture() {
    std::vector<uint16_t> a(64 * 32, 0), b(kN * 32, 0);
    for (int m = 0; m < 64; ++m) a[m * 32] = num::float_to_e4m3(1.0f);
    for (int n = 0; n < kN; ++n) b[n * 32] = num::float_to_e4m3(static_cast<float>(n + 1));
    const auto pa = make_placement(true, arch::Swizzle::B128, 1, 0, 64, 32);
    const auto pb = make_placement(true, arch::Swizzle::B128, 1, 8192, kN, 32);
    pa.write(image, a);
    pb.write(image, b);
    da = pa.descriptor(0);
    db = pb.descriptor(0);
  }
};

enum class Misuse { None, ReadBeforeWait, WriteBeforeWait, NoFence, DivergentDescriptor, WaitOneOfTwo };

struct AsyncArgs {
  const uint8_t* image;
  uint32_t image_bytes;
  uint64_t da, db;
  Misuse misuse;
  float* early;  // [thread][kN/2]: accumulators read at the misuse point
  float* late;   // [thread][kN/2]: accumulators after wait_group 0
};

void async_kernel(AsyncArgs args) {
  const unsigned t = emu::this_thread().linear_tid;
  if (t == 0) {
    emu::check_smem_access(emu::dynamic_smem(), args.image_bytes, true);
    std::memcpy(emu::dynamic_smem(), args.image, args.image_bytes);
  }
  emu::barrier_sync(0, 0);
  arch::WgmmaAccF32<kN> acc, acc2;
  for (int i = 0; i < kN / 2; ++i) acc[i] = acc2[i] = 100.0f;
  if (args.misuse != Misuse::NoFence) arch::wgmma_fence();
  const uint64_t db = args.misuse == Misuse::DivergentDescriptor && t == 77 ? args.db + 1 : args.db;
  arch::wgmma_fp8<kN>(acc, args.da, db, true);
  arch::wgmma_commit_group();
  if (args.misuse == Misuse::WaitOneOfTwo) {
    arch::wgmma_fp8<kN>(acc2, args.da, args.db, true);
    arch::wgmma_commit_group();
    arch::wgmma_wait_group<1>();  // the first group is complete, the second may still be pending
    for (int i = 0; i < kN / 2; ++i) args.early[t * (kN / 2) + i] = acc[i];
  }
  if (args.misuse == Misuse::ReadBeforeWait)
    for (int i = 0; i < kN / 2; ++i) args.early[t * (kN / 2) + i] = acc[i];
  if (args.misuse == Misuse::WriteBeforeWait && t == 5) acc[3] = 0.0f;
  arch::wgmma_wait_group<0>();
  for (int i = 0; i < kN / 2; ++i) args.late[t * (kN / 2) + i] = args.misuse == Misuse::WaitOneOfTwo ? acc2[i] : acc[i];
}

std::string run_async(Misuse misuse, std::vector<float>& early, std::vector<float>& late, uint64_t seed) {
  static const Fixture fx;
  early.assign(128 * kN / 2, std::nanf(""));
  late.assign(128 * kN / 2, std::nanf(""));
  emu::LaunchConfig config;
  config.block.x = 128;
  config.dynamic_smem_bytes = 16384;
  config.seed = seed;
  config.shuffle = true;
  try {
    emu::launch(config, &async_kernel,
                AsyncArgs{fx.image.data(), static_cast<uint32_t>(fx.image.size()), fx.da, fx.db, misuse, early.data(), late.data()});
  } catch (const emu::KernelError& e) {
    return e.what();
  }
  return {};
}

float expected_d(int t, int i) { return 100.0f + static_cast<float>(arch::wgmma_d_coord(t, i).col + 1); }

TEST(WgmmaAsync, CorrectUseGivesTheProduct) {
  std::vector<float> early, late;
  ASSERT_EQ(run_async(Misuse::None, early, late, 1), "");
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < kN / 2; ++i) ASSERT_EQ(late[t * kN / 2 + i], expected_d(t, i)) << "thread " << t << " d" << i;
  std::printf("thread 0 d0 = %g after wait_group 0 (expected %g)\n", late[0], expected_d(0, 0));
}

TEST(WgmmaAsync, ReadBeforeWaitSeesOldValuesSoTheKernelFailsVisibly) {
  std::vector<float> early, late;
  ASSERT_EQ(run_async(Misuse::ReadBeforeWait, early, late, 2), "");
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < kN / 2; ++i) {
      ASSERT_EQ(early[t * kN / 2 + i], 100.0f) << "the mma must not have run before its wait_group";
      ASSERT_EQ(late[t * kN / 2 + i], expected_d(t, i));
    }
  std::printf("read before wait: %g (old value), after wait: %g\n", early[0], late[0]);
}

TEST(WgmmaAsync, WaitGroupOneRetiresAllButTheNewestGroup) {
  std::vector<float> early, late;
  ASSERT_EQ(run_async(Misuse::WaitOneOfTwo, early, late, 3), "");
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < kN / 2; ++i) {
      ASSERT_EQ(early[t * kN / 2 + i], expected_d(t, i)) << "the older group is complete after wait_group 1";
      ASSERT_EQ(late[t * kN / 2 + i], expected_d(t, i));
    }
  std::printf("after wait_group 1 the older group's d0 = %g\n", early[0]);
}

TEST(WgmmaAsync, ReportsAccumulatorWrittenBeforeWait) {
  std::vector<float> early, late;
  const std::string error = run_async(Misuse::WriteBeforeWait, early, late, 4);
  std::printf("report: %s\n", error.c_str());
  EXPECT_NE(error.find("thread 5 of the warpgroup changed accumulator register 3"), std::string::npos) << error;
}

TEST(WgmmaAsync, ReportsMissingFence) {
  std::vector<float> early, late;
  const std::string error = run_async(Misuse::NoFence, early, late, 5);
  std::printf("report: %s\n", error.c_str());
  EXPECT_NE(error.find("without a wgmma.fence"), std::string::npos) << error;
}

TEST(WgmmaAsync, ReportsDescriptorsThatDifferAcrossTheWarpgroup) {
  std::vector<float> early, late;
  const std::string error = run_async(Misuse::DivergentDescriptor, early, late, 6);
  std::printf("report: %s\n", error.c_str());
  EXPECT_NE(error.find("thread 77 issued a wgmma.mma_async whose"), std::string::npos) << error;
}

TEST(WgmmaAsync, RejectsNonKMajorFp8AndNonZeroBaseOffset) {
  emu::WgmmaOperation op;
  op.n = 64;
  float acc[32] = {};
  for (auto& p : op.accumulators) p = acc;
  op.major_b = emu::OperandMajor::MN;
  EXPECT_THROW(emu::validate_wgmma_operation(op), std::invalid_argument);
  op.major_b = emu::OperandMajor::K;
  EXPECT_NO_THROW(emu::validate_wgmma_operation(op));
  op.desc_b |= 1ull << 49;  // base offset 1
  try {
    emu::validate_wgmma_operation(op);
    ADD_FAILURE() << "a non-zero base offset must be refused";
  } catch (const std::invalid_argument& e) {
    std::printf("refused: %s\n", e.what());
  }
}

TEST(WgmmaAsync, TruncateMantissaRoundsTowardZero) {
  EXPECT_EQ(arch::truncate_mantissa(1.0f + 0x1.0p-10f + 0x1.0p-20f, 10), 1.0f + 0x1.0p-10f);
  EXPECT_EQ(arch::truncate_mantissa(-(1.0f + 0x1.fp-11f), 10), -1.0f);
  EXPECT_EQ(arch::truncate_mantissa(3.14159f, 23), 3.14159f);
  EXPECT_TRUE(std::isinf(arch::truncate_mantissa(INFINITY, 5)));
}

// Under the tensor core's addition (the default) two chained instructions over random inputs and
// accumulators must equal the test's own writing of the rule (tests/common), and differ from
// the Fp32 accumulation somewhere.
TEST(WgmmaAsync, TensorCoreAdditionMatchesTheIndependentRule) {
  std::mt19937_64 rng(77);
  constexpr int N = 32, K = 64;
  const auto a = random_elements(emu::MmaInputType::E4M3, 64 * K, rng);
  const auto b = random_elements(emu::MmaInputType::E4M3, N * K, rng);
  const auto pa = make_placement(true, arch::Swizzle::B64, 1, 0, 64, K);
  const auto pb = make_placement(true, arch::Swizzle::B64, 1, 8192, N, K);
  std::vector<uint8_t> image;
  pa.write(image, a);
  pb.write(image, b);
  const uint64_t da[2] = {pa.descriptor(0), pa.descriptor(32)}, db[2] = {pb.descriptor(0), pb.descriptor(32)};
  MmaKernelArgs args;
  args.image = image.data();
  args.image_bytes = static_cast<uint32_t>(image.size());
  args.desc_a = da;
  args.desc_b = db;
  args.k_blocks = 2;
  args.first_accumulates = true;
  std::vector<float> d_in(64 * N);
  std::normal_distribution<float> nd(0.0f, 1000.0f);
  for (auto& x : d_in) x = nd(rng);
  const auto d = run_mma<N>(args, d_in, 77, false, arch::tensor_core_accumulation());
  const auto full = run_mma<N>(args, d_in, 77, false, arch::MmaPrecisionModel{});
  int mismatches = 0, differs_from_full = 0;
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < N; ++n) {
      float acc = d_in[m * N + n];
      for (int k0 = 0; k0 < K; k0 += 32) {
        float av[32], bv[32];
        for (int k = 0; k < 32; ++k) {
          av[k] = decode(emu::MmaInputType::E4M3, a[m * K + k0 + k]);
          bv[k] = decode(emu::MmaInputType::E4M3, b[n * K + k0 + k]);
        }
        acc = reference_tensor_core_instruction(acc, av, bv, 32, kE4m3Widths);
      }
      mismatches += std::memcmp(&acc, &d[m * N + n], 4) != 0;
      differs_from_full += d[m * N + n] != full[m * N + n];
    }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(differs_from_full, 0);
  std::printf("tensor core addition: %d mismatches vs the independent rule, %d of %d outputs differ from FP32\n",
              mismatches, differs_from_full, 64 * N);
}

}  // namespace
}  // namespace fp8attn::test
