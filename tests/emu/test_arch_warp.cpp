// Warp shuffles and byte permutes pinned to their definitions: shfl.sync (PTX ISA 9.0 §9.7.9.6)
// as CUDA's __shfl_sync / __shfl_xor_sync use it, checked against the CUDA C Programming Guide's
// statements of the width semantics; __byte_perm against libdevice's and CUB's examples; prmt's
// sign replication against PTX ISA 9.0 §9.7.9.7.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "emu_test_support.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/warp.hpp"

namespace fp8attn::emu {
namespace {

using testing::Schedule;

constexpr unsigned kWarps = 4, kThreads = 32 * kWarps;

// Per thread: xor with masks 1 and 5 at full width, xor 4 at width 8, xor 16 at width 16,
// idx from lane 0, idx (lane+1)%32, idx 3 at width 16, idx 35 at width 16, butterfly sum.
constexpr unsigned kShuffleKinds = 9;

void shuffle_kernel(const int32_t* in, int32_t* out) {
  const unsigned tid = arch::thread_rank(), lane = arch::lane_idx();
  const int32_t v = in[tid];
  int32_t* o = out + tid * kShuffleKinds;
  o[0] = arch::shfl_xor_sync(arch::kFullWarpMask, v, 1);
  o[1] = arch::shfl_xor_sync(arch::kFullWarpMask, v, 5);
  o[2] = arch::shfl_xor_sync(arch::kFullWarpMask, v, 4, 8);
  o[3] = arch::shfl_xor_sync(arch::kFullWarpMask, v, 16, 16);
  o[4] = arch::shfl_sync(arch::kFullWarpMask, v, 0);
  o[5] = arch::shfl_sync(arch::kFullWarpMask, v, static_cast<int>((lane + 1) % 32));
  o[6] = arch::shfl_sync(arch::kFullWarpMask, v, 3, 16);
  o[7] = arch::shfl_sync(arch::kFullWarpMask, v, 35, 16);
  int32_t sum = v;  // butterfly reduction: every lane ends with the warp's sum
  for (int m = 16; m >= 1; m /= 2) sum += arch::shfl_xor_sync(arch::kFullWarpMask, sum, m);
  o[8] = sum;
}

// Expected values, written from the CUDA C Programming Guide's wording (not from the PTX
// pseudocode the emulator runs): __shfl_sync returns var of lane srcLane % width of the caller's
// width-lane segment; __shfl_xor_sync returns var of lane ^ laneMask, except that a lane whose
// partner lies in a LATER segment keeps its own value.
int32_t expect_xor(const std::vector<int32_t>& in, unsigned tid, unsigned mask, unsigned width) {
  const unsigned lane = tid % 32, partner = lane ^ mask;
  if (partner / width > lane / width) return in[tid];
  return in[tid - lane + partner];
}
int32_t expect_idx(const std::vector<int32_t>& in, unsigned tid, unsigned src, unsigned width) {
  const unsigned lane = tid % 32;
  return in[tid - lane + (lane / width) * width + src % width];
}

TEST(ArchWarp, ShufflesFollowTheCudaWidthSemantics) {
  for (const Schedule& s : testing::schedules()) {
    std::mt19937 rng(static_cast<uint32_t>(s.seed) + 3);
    std::vector<int32_t> in(kThreads), out(kThreads * kShuffleKinds, 0x7eadbeef);
    for (auto& v : in) v = static_cast<int32_t>(rng() % 2000001) - 1000000;
    launch(testing::config({1, 1, 1}, {kThreads, 1, 1}, 0, s), &shuffle_kernel,
           static_cast<const int32_t*>(in.data()), out.data());
    unsigned wrong = 0;
    for (unsigned tid = 0; tid < kThreads; ++tid) {
      const unsigned lane = tid % 32;
      int32_t warp_sum = 0;
      for (unsigned l = 0; l < 32; ++l) warp_sum += in[tid - lane + l];
      const int32_t want[kShuffleKinds] = {
          expect_xor(in, tid, 1, 32),  expect_xor(in, tid, 5, 32), expect_xor(in, tid, 4, 8),
          expect_xor(in, tid, 16, 16), expect_idx(in, tid, 0, 32), expect_idx(in, tid, (lane + 1) % 32, 32),
          expect_idx(in, tid, 3, 16),  expect_idx(in, tid, 35, 16), warp_sum};
      for (unsigned k = 0; k < kShuffleKinds; ++k) {
        if (out[tid * kShuffleKinds + k] != want[k]) {
          ++wrong;
          ADD_FAILURE() << "thread " << tid << " shuffle kind " << k << ": expected " << want[k]
                        << ", got " << out[tid * kShuffleKinds + k];
        }
      }
    }
    std::printf("%s: %u of %u shuffle results wrong\n", testing::schedule_name(s).c_str(), wrong,
                kThreads * kShuffleKinds);
  }
}

// xor 16 at width 16 is the case where the two rules differ from a plain xor: lanes 0..15 have
// their partner in the later segment and keep their value; lanes 16..31 read lanes 0..15.
TEST(ArchWarp, XorIntoALaterSegmentKeepsTheOwnValue) {
  std::vector<int32_t> in(kThreads), out(kThreads * kShuffleKinds);
  for (unsigned i = 0; i < kThreads; ++i) in[i] = static_cast<int32_t>(1000 + i);
  launch(testing::config({1, 1, 1}, {kThreads, 1, 1}, 0, {false, 0}), &shuffle_kernel,
         static_cast<const int32_t*>(in.data()), out.data());
  EXPECT_EQ(out[3 * kShuffleKinds + 3], 1003);   // lane 3 keeps its own value
  EXPECT_EQ(out[19 * kShuffleKinds + 3], 1003);  // lane 19 reads lane 3
  std::printf("lane 3 -> %d, lane 19 -> %d\n", out[3 * kShuffleKinds + 3], out[19 * kShuffleKinds + 3]);
}

// Two halves of a warp shuffle independently with disjoint member masks; 64-bit values move as
// two 32-bit halves.
void masked_halves_kernel(const double* in, double* out) {
  const unsigned tid = arch::thread_rank(), lane = arch::lane_idx();
  const uint32_t mask = lane < 16 ? 0x0000ffffu : 0xffff0000u;
  out[tid] = arch::shfl_sync(mask, in[tid], static_cast<int>((lane & ~15u) | ((lane + 3) % 16)));
}

TEST(ArchWarp, DisjointMemberMasksShuffleIndependently) {
  for (const Schedule& s : testing::schedules()) {
    std::mt19937_64 rng(s.seed + 1);
    std::vector<double> in(64), out(64, -1.0);
    for (auto& v : in) v = static_cast<double>(rng() >> 11) * 0x1.0p-53 - 0.5;
    launch(testing::config({1, 1, 1}, {64, 1, 1}, 0, s), &masked_halves_kernel,
           static_cast<const double*>(in.data()), out.data());
    unsigned wrong = 0;
    for (unsigned tid = 0; tid < 64; ++tid) {
      const unsigned lane = tid % 32;
      wrong += out[tid] != in[tid - lane + ((lane & ~15u) | ((lane + 3) % 16))];
    }
    std::printf("%s: %u of 64 masked 64-bit shuffles wrong\n", testing::schedule_name(s).c_str(), wrong);
    EXPECT_EQ(wrong, 0u);
  }
}

void source_outside_mask_kernel() {
  const unsigned lane = arch::lane_idx();
  if (lane < 16) arch::shfl_sync(0x0000ffffu, 1, 20);  // lane 20 is not a member
}
void caller_outside_mask_kernel() { arch::shfl_sync(0x0000ffffu, 1, 0); }
void mismatched_masks_kernel() {
  arch::shfl_xor_sync(arch::lane_idx() == 7 ? 0x7fffffffu : arch::kFullWarpMask, 1, 1);
}
void bad_width_kernel() { arch::shfl_sync(arch::kFullWarpMask, 1, 0, 12); }

TEST(ArchWarp, UndefinedShufflesAreReported) {
  for (const Schedule& s : testing::schedules()) {
    const LaunchConfig c = testing::config({1, 1, 1}, {32, 1, 1}, 0, s);
    const std::pair<std::string, const char*> cases[] = {
        {testing::kernel_error_of([&] { launch(c, &source_outside_mask_kernel); }), "not in the member mask"},
        {testing::kernel_error_of([&] { launch(c, &caller_outside_mask_kernel); }), "does not name the calling lane"},
        {testing::kernel_error_of([&] { launch(c, &mismatched_masks_kernel); }), "deadlock"},
        {testing::kernel_error_of([&] { launch(c, &bad_width_kernel); }), "power of 2"},
    };
    for (const auto& [message, must_contain] : cases) {
      std::printf("%s: %s\n", testing::schedule_name(s).c_str(), message.c_str());
      EXPECT_NE(message.find(must_contain), std::string::npos) << message;
    }
  }
}

// __byte_perm: CUB's PRMT documentation example, libdevice's definition applied to the usual
// selectors (byte reverse, low / high halves), and the upper 16 selector bits being ignored.
TEST(ArchWarp, BytePermExamples) {
  struct Case {
    uint32_t x, y, s, want;
  };
  const Case cases[] = {
      {0x03020100u, 0x07060504u, 0x7531u, 0x07050301u},      // CUB PRMT example
      {0x03020100u, 0x07060504u, 0xffff7531u, 0x07050301u},  // upper 16 bits ignored
      {0x11223344u, 0x55667788u, 0x0123u, 0x44332211u},      // byte reverse of x
      {0xaaaabbbbu, 0xccccddddu, 0x5410u, 0xddddbbbbu},      // low halves: {y.lo, x.lo}
      {0xaaaabbbbu, 0xccccddddu, 0x7632u, 0xccccaaaau},      // high halves: {y.hi, x.hi}
      {0x03020100u, 0x07060504u, 0x4444u, 0x04040404u},      // broadcast of y's byte 0
  };
  for (const Case& c : cases) {
    const uint32_t got = arch::byte_perm(c.x, c.y, c.s);
    std::printf("byte_perm(0x%08x, 0x%08x, 0x%x) = 0x%08x (expected 0x%08x)\n", c.x, c.y, c.s, got, c.want);
    EXPECT_EQ(got, c.want);
  }
}

// prmt default mode: a selector nibble with bit 3 set replicates the selected byte's sign bit.
TEST(ArchWarp, PrmtReplicatesTheSignWithBit3) {
  EXPECT_EQ(arch::prmt(0x00000080u, 0u, 0x8888u), 0xffffffffu);  // byte 0x80: sign 1
  EXPECT_EQ(arch::prmt(0x0000007fu, 0u, 0x0008u), 0x7f7f7f00u);  // byte 0x7f: sign 0 in byte 0
  EXPECT_EQ(arch::prmt(0x03020100u, 0x07060504u, 0x7531u), 0x07050301u);
  // Nibbles from the low end: 1 -> a.byte1 = 0x00; a (sel 2, sign) -> sign of 0x00 = 0x00;
  // 3 -> a.byte3 = 0x80; b (sel 3, sign) -> sign of 0x80 = 0xff.
  EXPECT_EQ(arch::prmt(0x80000000u, 0x00000000u, 0xb3a1u), 0xff800000u);
  std::printf("prmt(0x80000000, 0, 0xb3a1) = 0x%08x\n", arch::prmt(0x80000000u, 0u, 0xb3a1u));
}

void byte_perm_sign_selector_kernel(uint32_t* out) { *out = arch::byte_perm(1u, 2u, 0x0008u); }

TEST(ArchWarp, BytePermWithSignSelectorIsRejected) {
  uint32_t out = 0;
  const std::string message = testing::kernel_error_of(
      [&] { launch(testing::config({1, 1, 1}, {1, 1, 1}, 0, {false, 0}), &byte_perm_sign_selector_kernel, &out); });
  std::printf("%s\n", message.c_str());
  EXPECT_NE(message.find("bit 3"), std::string::npos) << message;
}

}  // namespace
}  // namespace fp8attn::emu
