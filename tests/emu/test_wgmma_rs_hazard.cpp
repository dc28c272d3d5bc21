// RS-form wgmma: the A registers belong to the pending mma until the wgmma.wait_group covering it
// (PTX ISA 9.0 §9.7.15.7.3; rewriting them earlier is undefined behaviour). The attention kernel's
// PV product is the case that matters: P of block j sits in the A fragment, and converting P of
// block j+1 into the same registers before the wait reads garbage on an H100. The emulator must
// report that rewrite naming the thread and the register, and accept the correct order, whose
// result is bit-equal to the CPU reference.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>

#include "tests/emu/emu_test_support.hpp"
#include "tests/emu/wgmma_test_support.hpp"

namespace fp8attn::test {
namespace {

constexpr int kN = 32, kK = 64, kBlocks = kK / 32;

struct RsArgs {
  const uint8_t* image;
  uint32_t image_bytes;
  uint64_t db[kBlocks];
  const uint32_t* a_regs;  // [block][thread][4]: the packed A (P) fragment of each k-block
  bool rewrite_before_wait;
  unsigned bad_thread;  // with rewrite_before_wait: the thread that converts early ...
  int bad_register;     // ... and the register it overwrites
  float* out;           // [thread][kN/2], poisoned by the caller
};

void load_fragment(const RsArgs& args, int block, unsigned t, arch::WgmmaAFragment& p) {
  for (int r = 0; r < 4; ++r) p.reg[r] = args.a_regs[(static_cast<size_t>(block) * arch::kWarpgroupThreads + t) * 4 + r];
}

// The PV pattern: one fragment P reused across KV blocks, each block's mma in its own group.
void rs_kernel(RsArgs args) {
  const unsigned t = emu::this_thread().linear_tid;
  if (t == 0) {
    emu::check_smem_access(emu::dynamic_smem(), args.image_bytes, true);
    std::memcpy(emu::dynamic_smem(), args.image, args.image_bytes);
  }
  emu::barrier_sync(0, 0);
  arch::WgmmaAccF32<kN> acc;
  for (int i = 0; i < kN / 2; ++i) acc[i] = 0.0f;
  arch::WgmmaAFragment p;
  load_fragment(args, 0, t, p);
  for (int block = 0; block < kBlocks; ++block) {
    arch::wgmma_fence();
    arch::wgmma_fp8<kN>(acc, p, args.db[block], block > 0);
    arch::wgmma_commit_group();
    const bool last = block + 1 == kBlocks;
    // The bug: one thread converts the next block's P into the pending mma's registers.
    if (args.rewrite_before_wait && !last && t == args.bad_thread)
      p.reg[args.bad_register] = args.a_regs[(static_cast<size_t>(block + 1) * arch::kWarpgroupThreads + t) * 4 +
                                             args.bad_register];
    arch::wgmma_wait_group<0>();
    if (!last) load_fragment(args, block + 1, t, p);  // the correct place: after the wait
  }
  for (int i = 0; i < kN / 2; ++i) args.out[t * (kN / 2) + i] = acc[i];
}

struct Problem {
  std::vector<uint16_t> a, b;  // 64 x kK and kN x kK, E4M3 bit patterns
  std::vector<uint32_t> regs;  // [block][thread][4]
  std::vector<uint8_t> image;
  uint64_t db[kBlocks];
};

Problem make_problem(std::mt19937_64& rng) {
  Problem pr;
  pr.a = random_elements(emu::MmaInputType::E4M3, 64 * kK, rng);
  pr.b = random_elements(emu::MmaInputType::E4M3, static_cast<size_t>(kN) * kK, rng);
  pr.regs.assign(static_cast<size_t>(kBlocks) * arch::kWarpgroupThreads * 4, 0);
  for (int block = 0; block < kBlocks; ++block)
    for (int t = 0; t < arch::kWarpgroupThreads; ++t)
      for (int v = 0; v < 16; ++v) {
        const auto c = arch::wgmma_a_fp8_coord(t, v);
        pr.regs[(static_cast<size_t>(block) * arch::kWarpgroupThreads + t) * 4 + v / 4] |=
            static_cast<uint32_t>(pr.a[c.row * kK + block * 32 + c.col]) << (8 * (v % 4));
      }
  const auto pb = make_placement(true, arch::Swizzle::B64, 1, 0, kN, kK);
  pb.write(pr.image, pr.b);
  for (int block = 0; block < kBlocks; ++block) pr.db[block] = pb.descriptor(static_cast<size_t>(block) * 32);
  return pr;
}

std::string run(const Problem& pr, const emu::testing::Schedule& s, bool rewrite, unsigned bad_thread, int bad_register,
                std::vector<float>& out) {
  out.assign(static_cast<size_t>(arch::kWarpgroupThreads) * (kN / 2), std::nanf(""));
  RsArgs args{pr.image.data(), static_cast<uint32_t>(pr.image.size()), {}, pr.regs.data(), rewrite, bad_thread,
              bad_register, out.data()};
  for (int block = 0; block < kBlocks; ++block) args.db[block] = pr.db[block];
  const auto config = emu::testing::config({1, 1, 1}, {arch::kWarpgroupThreads, 1, 1}, (pr.image.size() + 1023) / 1024 * 1024, s);
  return emu::testing::kernel_error_of([&] { emu::launch(config, &rs_kernel, args); });
}

TEST(WgmmaRsHazard, ReportsARegisterRewrittenBeforeTheCoveringWait) {
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  const Problem pr = make_problem(rng);
  for (const auto& s : emu::testing::schedules()) {
    // A register whose next-block value differs, so the rewrite changes its bits.
    unsigned thread = 0;
    int reg = 0;
    do {
      thread = static_cast<unsigned>(rng() % arch::kWarpgroupThreads);
      reg = static_cast<int>(rng() % 4);
    } while (pr.regs[thread * 4 + reg] == pr.regs[(arch::kWarpgroupThreads + thread) * 4 + reg]);
    std::vector<float> out;
    const std::string error = run(pr, s, true, thread, reg, out);
    std::printf("%s, thread %u register %d: %s\n", emu::testing::schedule_name(s).c_str(), thread, reg, error.c_str());
    const std::string expected =
        "thread " + std::to_string(thread) + " of the warpgroup rewrote A register " + std::to_string(reg) + " ";
    EXPECT_NE(error.find(expected), std::string::npos) << error << " (input seed " << seed << ")";
    EXPECT_NE(error.find("§9.7.15.7.3"), std::string::npos) << error;
  }
}

TEST(WgmmaRsHazard, ConvertingAfterTheWaitIsAcceptedAndBitEqual) {
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  const Problem pr = make_problem(rng);
  const std::vector<float> zero(static_cast<size_t>(64) * kN, 0.0f);
  const auto expect = reference_mma(emu::MmaInputType::E4M3, pr.a, pr.b, 64, kN, kK, 32, zero, false);
  for (const auto& s : emu::testing::schedules()) {
    std::vector<float> out;
    ASSERT_EQ(run(pr, s, false, 0, 0, out), "") << emu::testing::schedule_name(s);
    int mismatches = 0;
    for (int t = 0; t < arch::kWarpgroupThreads; ++t)
      for (int i = 0; i < kN / 2; ++i) {
        const auto c = arch::wgmma_d_coord(t, i);
        mismatches += std::memcmp(&out[t * (kN / 2) + i], &expect[static_cast<size_t>(c.row) * kN + c.col], 4) != 0;
      }
    EXPECT_EQ(mismatches, 0) << emu::testing::schedule_name(s) << ", input seed " << seed;
    std::printf("%s: %d of %d outputs differ bitwise from the reference (input seed %llu)\n",
                emu::testing::schedule_name(s).c_str(), mismatches, 64 * kN, static_cast<unsigned long long>(seed));
  }
}

}  // namespace
}  // namespace fp8attn::test
