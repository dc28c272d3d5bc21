// The emulator's execution model: thread identity per fiber, 384-thread CTAs, grids spread over
// host threads, deterministic schedules per seed, and kernel failures surfacing as KernelError.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <set>
#include <span>
#include <stdexcept>
#include <vector>

#include "emu_test_support.hpp"
#include "kernels/arch/barrier.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"

namespace fp8attn::emu {
namespace {

using testing::Schedule;

constexpr unsigned kIdentityFields = 12;

// Each thread writes what the arch layer tells it about itself, after a barrier so that the
// values are read again after every fiber has been suspended and resumed at least once.
void identity_kernel(uint32_t* out) {
  const auto t = arch::thread_idx();
  arch::syncthreads();
  const auto b = arch::block_idx(), bd = arch::block_dim(), gd = arch::grid_dim();
  const unsigned cta = b.x + gd.x * (b.y + gd.y * b.z);
  const unsigned threads = bd.x * bd.y * bd.z;
  uint32_t* mine = out + (size_t{cta} * threads + arch::thread_rank()) * kIdentityFields;
  const uint32_t fields[kIdentityFields] = {t.x, t.y, t.z, b.x, b.y, b.z, bd.x, bd.y,
                                            gd.x, arch::warp_idx(), arch::lane_idx(),
                                            arch::warpgroup_idx()};
  std::copy(fields, fields + kIdentityFields, mine);
}

TEST(EmuRuntime, ThreadIdentityFor384ThreadCtasOverAGrid) {
  const Dim3 grid{3, 2, 2}, block{32, 3, 4};  // 384 threads = 3 warpgroups per CTA
  const size_t threads = block.volume(), ctas = grid.volume();
  for (const Schedule& s : testing::schedules()) {
    std::vector<uint32_t> out(ctas * threads * kIdentityFields, 0xdeadbeefu);  // poison
    LaunchConfig c = testing::config(grid, block, 0, s);
    c.host_threads = 2;
    launch(c, &identity_kernel, out.data());
    size_t mismatches = 0;
    for (unsigned bz = 0; bz < grid.z; ++bz)
      for (unsigned by = 0; by < grid.y; ++by)
        for (unsigned bx = 0; bx < grid.x; ++bx)
          for (unsigned tz = 0; tz < block.z; ++tz)
            for (unsigned ty = 0; ty < block.y; ++ty)
              for (unsigned tx = 0; tx < block.x; ++tx) {
                const unsigned cta = bx + grid.x * (by + grid.y * bz);
                const unsigned tid = tx + block.x * (ty + block.y * tz);
                const uint32_t want[kIdentityFields] = {tx, ty, tz, bx, by, bz, block.x, block.y,
                                                        grid.x, tid / 32, tid % 32, tid / 128};
                const uint32_t* got = &out[(size_t{cta} * threads + tid) * kIdentityFields];
                if (!std::equal(want, want + kIdentityFields, got)) ++mismatches;
              }
    std::printf("%s: %zu threads checked, %zu with a wrong identity\n",
                testing::schedule_name(s).c_str(), ctas * threads, mismatches);
    EXPECT_EQ(mismatches, 0u) << testing::schedule_name(s);
  }
}

// Order in which the threads of one CTA pass the point after a barrier.
void order_kernel(unsigned* order, unsigned* next) {
  arch::syncthreads();
  order[(*next)++] = arch::thread_rank();  // one CTA, one host thread: fibers never overlap
}

std::vector<unsigned> pass_order(const Schedule& s, unsigned threads) {
  std::vector<unsigned> order(threads, ~0u);
  unsigned next = 0;
  launch(testing::config({1, 1, 1}, {threads, 1, 1}, 0, s), &order_kernel, order.data(), &next);
  return order;
}

TEST(EmuRuntime, ScheduleIsDeterministicPerSeedAndShuffledAcrossSeeds) {
  constexpr unsigned kThreads = 128;
  std::vector<unsigned> identity(kThreads);
  std::iota(identity.begin(), identity.end(), 0u);
  // Round-robin: the last thread to arrive completes the barrier and runs on; the waiters then
  // resume in thread order.
  std::vector<unsigned> round_robin{kThreads - 1};
  round_robin.insert(round_robin.end(), identity.begin(), identity.end() - 1);
  EXPECT_EQ(pass_order({false, 0}, kThreads), round_robin);

  std::set<std::vector<unsigned>> distinct;
  for (uint64_t seed : {1, 2, 3, 4}) {
    const auto first = pass_order({true, seed}, kThreads);
    const auto again = pass_order({true, seed}, kThreads);
    EXPECT_EQ(first, again) << "shuffled schedule, seed " << seed << " is not reproducible";
    auto sorted = first;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, identity) << "every thread passes exactly once";
    distinct.insert(first);
  }
  std::printf("4 shuffle seeds gave %zu distinct orders of %u threads\n", distinct.size(), kThreads);
  EXPECT_EQ(distinct.size(), 4u);
}

void throwing_kernel(int bad_thread) {
  if (static_cast<int>(arch::thread_rank()) == bad_thread) throw std::runtime_error("bad input");
  arch::syncthreads();
}

TEST(EmuRuntime, ExceptionInKernelBecomesKernelErrorNamingCtaAndThread) {
  for (const Schedule& s : testing::schedules()) {
    const std::string message = testing::kernel_error_of([&] {
      launch(testing::config({2, 1, 1}, {64, 1, 1}, 0, s), &throwing_kernel, 37);
    });
    std::printf("%s: %s\n", testing::schedule_name(s).c_str(), message.c_str());
    EXPECT_NE(message.find("CTA (0,0,0)"), std::string::npos) << message;
    EXPECT_NE(message.find("tid 37"), std::string::npos) << message;
    EXPECT_NE(message.find("bad input"), std::string::npos) << message;
  }
}

// Collectives: each member passes its thread index; the last to arrive sees the members' data in
// lane order (warp) or thread-in-warpgroup order (warpgroup), and writes back, to every member,
// the position at which it found that member plus 1000 * the number of members.
struct CollectiveSlot {
  unsigned tid;
  unsigned result;
};

void collective_kernel(unsigned* warp_out, unsigned* warpgroup_out) {
  const unsigned tid = arch::thread_rank();
  auto op = [](std::span<void* const> members) {
    for (size_t i = 0; i < members.size(); ++i) {
      auto* slot = static_cast<CollectiveSlot*>(members[i]);
      slot->result = static_cast<unsigned>(1000 * members.size() + i);
    }
  };
  CollectiveSlot mine{tid, ~0u};
  collective(Group::Warpgroup, &mine, op);
  warpgroup_out[tid] = mine.result;
  mine.result = ~0u;
  collective(Group::Warp, &mine, op);
  warp_out[tid] = mine.result;
}

TEST(EmuRuntime, CollectivesOrderMembersAndHandlePartialGroups) {
  // 304 threads: warpgroups of 128, 128 and 48; the last warp has 16 lanes.
  constexpr unsigned kThreads = 304;
  for (const Schedule& s : testing::schedules()) {
    std::vector<unsigned> warp_out(kThreads, 0xdead), warpgroup_out(kThreads, 0xdead);
    launch(testing::config({1, 1, 1}, {kThreads, 1, 1}, 0, s), &collective_kernel, warp_out.data(),
           warpgroup_out.data());
    unsigned wrong = 0;
    for (unsigned t = 0; t < kThreads; ++t) {
      const unsigned warp_members = std::min(32u, kThreads - t / 32 * 32);
      const unsigned group_members = std::min(128u, kThreads - t / 128 * 128);
      wrong += warp_out[t] != 1000 * warp_members + t % 32;
      wrong += warpgroup_out[t] != 1000 * group_members + t % 128;
    }
    std::printf("%s: %u of %u collective results wrong\n", testing::schedule_name(s).c_str(), wrong,
                2 * kThreads);
    EXPECT_EQ(wrong, 0u) << testing::schedule_name(s);
  }
}

// Per-CTA schedules depend on the seed and the CTA index only, not on how many host threads run
// the grid: each CTA records its threads' pass order after a barrier.
void per_cta_order_kernel(unsigned* orders, unsigned* counters) {
  arch::syncthreads();
  const unsigned cta = arch::block_idx().x;
  orders[cta * 64 + counters[cta]++] = arch::thread_rank();  // one CTA never spans host threads
}

TEST(EmuRuntime, ShuffledGridIsIndependentOfTheHostThreadCount) {
  constexpr unsigned kCtas = 6;
  std::vector<unsigned> results[2];
  for (int host_threads : {1, 2}) {
    std::vector<unsigned> orders(kCtas * 64, ~0u), counters(kCtas, 0);
    LaunchConfig c = testing::config({kCtas, 1, 1}, {64, 1, 1}, 0, {true, 99});
    c.host_threads = host_threads;
    launch(c, &per_cta_order_kernel, orders.data(), counters.data());
    results[host_threads - 1] = orders;
  }
  const bool differs_across_ctas = !std::equal(results[0].begin(), results[0].begin() + 64, results[0].begin() + 64);
  std::printf("1 vs 2 host threads: orders %s; CTA 0 and CTA 1 orders differ: %s\n",
              results[0] == results[1] ? "identical" : "DIFFERENT", differs_across_ctas ? "yes" : "no");
  EXPECT_EQ(results[0], results[1]);
  EXPECT_TRUE(differs_across_ctas) << "each CTA draws its own schedule";
}

// The largest CTA Hopper allows: 1024 threads (32 warps, 8 warpgroups), each writing its word,
// then reading another warp's word after a barrier, with the race check on.
void max_cta_kernel(const uint32_t* in, uint32_t* out) {
  uint32_t* smem = arch::dynamic_smem<uint32_t>();
  const unsigned t = arch::thread_rank();
  arch::smem_store(&smem[t], in[t]);
  arch::syncthreads();
  out[t] = arch::smem_load(&smem[(t + 321) % 1024]);
}

TEST(EmuRuntime, MaximumCtaOf1024Threads) {
  for (const Schedule& s : {testing::schedules()[0], testing::schedules()[2]}) {
    std::mt19937 rng(static_cast<uint32_t>(s.seed) + 1024);
    std::vector<uint32_t> in(1024), out(1024, 0xdeadbeefu);
    for (auto& v : in) v = rng();
    launch(testing::config({1, 1, 1}, {32, 32, 1}, 4096, s), &max_cta_kernel,
           static_cast<const uint32_t*>(in.data()), out.data());
    unsigned wrong = 0;
    for (unsigned t = 0; t < 1024; ++t) wrong += out[t] != in[(t + 321) % 1024];
    std::printf("%s: %u of 1024 values wrong\n", testing::schedule_name(s).c_str(), wrong);
    EXPECT_EQ(wrong, 0u);
  }
}

void empty_kernel() {}

TEST(EmuRuntime, LaunchRejectsConfigurationsBeyondHopperLimits) {
  LaunchConfig too_many_threads;
  too_many_threads.block = {1025, 1, 1};
  EXPECT_THROW(launch(too_many_threads, &empty_kernel), KernelError);
  LaunchConfig too_much_smem;
  too_much_smem.dynamic_smem_bytes = 227 * 1024 + 1;
  EXPECT_THROW(launch(too_much_smem, &empty_kernel), KernelError);
  LaunchConfig empty_grid;
  empty_grid.grid = {0, 1, 1};
  EXPECT_THROW(launch(empty_grid, &empty_kernel), KernelError);
}

TEST(EmuRuntime, ThisThreadOutsideAKernelIsAnError) {
  EXPECT_THROW(this_thread(), KernelError);
  EXPECT_THROW(dynamic_smem(), KernelError);
}

}  // namespace
}  // namespace fp8attn::emu
