// Deadlock reports: when no thread can run, launch() throws a KernelError naming every waiting
// thread and what it waits on (barrier id and expected count, mbarrier offset and parity,
// collective), and never hangs, including threads spinning in try_wait / test_wait loops.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <set>
#include <string>

#include "emu_test_support.hpp"
#include "kernels/arch/barrier.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/registers.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"
#include "kernels/arch/warp.hpp"

namespace fp8attn::emu {
namespace {

using testing::Schedule;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The threads the report lists on lines containing `what`: "[tid A-B, ..." or "[tid A, ...".
std::set<unsigned> listed_threads(const std::string& report, const std::string& what) {
  std::set<unsigned> tids;
  size_t start = 0;
  while (start < report.size()) {
    size_t end = report.find('\n', start);
    if (end == std::string::npos) end = report.size();
    const std::string line = report.substr(start, end - start);
    const size_t at = line.find("[tid ");
    if (at != std::string::npos && contains(line, what)) {
      unsigned first = 0, last = 0;
      if (std::sscanf(line.c_str() + at, "[tid %u-%u", &first, &last) == 2) {
        for (unsigned t = first; t <= last; ++t) tids.insert(t);
      } else if (std::sscanf(line.c_str() + at, "[tid %u", &first) == 1) {
        tids.insert(first);
      }
    }
    start = end + 1;
  }
  return tids;
}

std::set<unsigned> tid_range(unsigned first, unsigned last) {
  std::set<unsigned> tids;
  for (unsigned t = first; t <= last; ++t) tids.insert(t);
  return tids;
}

// Warps 0-1 (64 threads) wait on barrier 1 for 128 threads; warps 2-3 exit without arriving.
void named_barrier_short_kernel() {
  if (arch::warp_idx() < 2) arch::named_barrier_sync(1, 128);
}

TEST(EmuDeadlock, NamedBarrierMissingArrivalsNamesWaitersAndCount) {
  for (const Schedule& s : testing::schedules()) {
    const std::string message = testing::kernel_error_of(
        [&] { launch(testing::config({2, 1, 1}, {128, 1, 1}, 0, s), &named_barrier_short_kernel); });
    std::printf("%s:\n%s\n", testing::schedule_name(s).c_str(), message.c_str());
    EXPECT_TRUE(contains(message, "deadlock")) << message;
    EXPECT_TRUE(contains(message, "CTA (0,0,0)")) << message;  // the lowest failing CTA
    EXPECT_EQ(listed_threads(message, "waits in bar.sync id 1 (expects 128 threads, 64 arrived)"), tid_range(0, 63))
        << message;
    EXPECT_EQ(listed_threads(message, "exited"), tid_range(64, 127)) << message;
  }
}

// The consumers wait on parity 0 of an mbarrier expecting 2 arrivals; only one ever comes.
void mbarrier_missing_arrival_kernel() {
  auto* bar = arch::dynamic_smem<uint64_t>() + 2;  // offset 16
  if (arch::thread_rank() == 0) arch::mbarrier_init(bar, 2);
  arch::syncthreads();
  if (arch::thread_rank() == 0) {
    arch::mbarrier_arrive(bar);
  } else if (arch::warp_idx() == 1) {
    arch::mbarrier_wait_parity(bar, 0);
  }
}

TEST(EmuDeadlock, MbarrierPhaseThatNeverCompletesNamesOffsetParityAndState) {
  for (const Schedule& s : testing::schedules()) {
    const std::string message = testing::kernel_error_of(
        [&] { launch(testing::config({1, 1, 1}, {64, 1, 1}, 64, s), &mbarrier_missing_arrival_kernel); });
    std::printf("%s:\n%s\n", testing::schedule_name(s).c_str(), message.c_str());
    EXPECT_TRUE(contains(message, "deadlock")) << message;
    // In shuffle mode a waiter may be caught polling (try_wait returned false) or sleeping.
    EXPECT_TRUE(contains(message, "mbarrier.try_wait.parity 0 on the mbarrier at shared memory offset 16 "
                                  "(current phase 0 (parity 0), pending arrivals 1 of 2, tx-count 0)"))
        << message;
    EXPECT_EQ(listed_threads(message, "parity 0 on the mbarrier at shared memory offset 16"), tid_range(32, 63))
        << message;
  }
}

// A test_wait spin loop never sleeps; it must still be recognized as stuck once every other
// thread is blocked or gone and nothing changes.
void test_wait_spin_kernel() {
  auto* bar = arch::dynamic_smem<uint64_t>();
  if (arch::thread_rank() == 0) arch::mbarrier_init(bar, 1);
  arch::syncthreads();
  if (arch::thread_rank() == 5) {
    while (!arch::mbarrier_test_wait_parity(bar, 0)) {
    }
  }
}

TEST(EmuDeadlock, SpinningOnTestWaitIsADeadlockNotAHang) {
  for (const Schedule& s : testing::schedules()) {
    const std::string message = testing::kernel_error_of(
        [&] { launch(testing::config({1, 1, 1}, {32, 1, 1}, 64, s), &test_wait_spin_kernel); });
    std::printf("%s:\n%s\n", testing::schedule_name(s).c_str(), message.c_str());
    EXPECT_TRUE(contains(message, "thread (5,0,0) [tid 5, warp 0, lane 5]: polls mbarrier.try_wait.parity 0"))
        << message;
  }
}

// A spin loop on a host flag nobody sets, yielding each round.
void yield_forever_kernel(const int* flag) {
  if (arch::thread_rank() == 3) {
    while (*flag == 0) yield();
  }
  arch::syncthreads();
}

TEST(EmuDeadlock, YieldLoopWithNoProgressIsReported) {
  const int flag = 0;
  for (const Schedule& s : testing::schedules()) {
    const std::string message = testing::kernel_error_of(
        [&] { launch(testing::config({1, 1, 1}, {64, 1, 1}, 0, s), &yield_forever_kernel, &flag); });
    std::printf("%s:\n%s\n", testing::schedule_name(s).c_str(), message.c_str());
    EXPECT_TRUE(contains(message, "[tid 3, warp 0, lane 3]: polls emu::yield()")) << message;
    EXPECT_TRUE(contains(message, "waits in bar.sync id 0 (expects 64 threads, 63 arrived)")) << message;
  }
}

// __syncthreads inside a branch taken by half of the CTA.
void divergent_syncthreads_kernel() {
  if (arch::thread_rank() % 2 == 0) arch::syncthreads();
}

TEST(EmuDeadlock, DivergentSyncthreadsIsReported) {
  for (const Schedule& s : testing::schedules()) {
    const std::string message = testing::kernel_error_of(
        [&] { launch(testing::config({1, 1, 1}, {8, 1, 1}, 0, s), &divergent_syncthreads_kernel); });
    std::printf("%s:\n%s\n", testing::schedule_name(s).c_str(), message.c_str());
    for (const char* part : {"thread (0,0,0) [tid 0, warp 0, lane 0]: waits in bar.sync id 0 (expects 8 threads, 4 arrived)",
                             "thread (6,0,0) [tid 6, warp 0, lane 6]: waits in bar.sync id 0",
                             "thread (7,0,0) [tid 7, warp 0, lane 7]: exited"}) {
      EXPECT_TRUE(contains(message, part)) << part << "\n" << message;
    }
  }
}

// Two warpgroups waiting on each other's mbarrier: a cycle, not a missing thread.
void cycle_kernel() {
  auto* bars = arch::dynamic_smem<uint64_t>();
  if (arch::thread_rank() == 0) {
    arch::mbarrier_init(&bars[0], 1);
    arch::mbarrier_init(&bars[1], 1);
  }
  arch::syncthreads();
  const unsigned wg = arch::warpgroup_idx();
  arch::mbarrier_wait_parity(&bars[wg], 0);
  if (arch::thread_idx_in_warpgroup() == 0) arch::mbarrier_arrive(&bars[1 - wg]);
}

TEST(EmuDeadlock, WaitCycleBetweenWarpgroupsIsReported) {
  for (const Schedule& s : testing::schedules()) {
    const std::string message = testing::kernel_error_of(
        [&] { launch(testing::config({1, 1, 1}, {256, 1, 1}, 64, s), &cycle_kernel); });
    std::printf("%s: %zu characters of report\n", testing::schedule_name(s).c_str(), message.size());
    EXPECT_EQ(listed_threads(message, "parity 0 on the mbarrier at shared memory offset 0"), tid_range(0, 127))
        << message;
    EXPECT_EQ(listed_threads(message, "parity 0 on the mbarrier at shared memory offset 8"), tid_range(128, 255))
        << message;
    EXPECT_FALSE(contains(message, "exited")) << message;
  }
}

// The launch register pool is 65536 / threads rounded down to 8, capped at 255 → 248 per thread
// at 128 and at 256 threads (ptxas' count under __launch_bounds__(threads, 1)). One warpgroup
// asking for 256 registers then finds nothing in the pool: a planted fault the report names.
void register_pool_one_warpgroup_kernel() { arch::setmaxnreg_inc<256>(); }

// Two warpgroups: the first gives back what it holds above 248 (nothing, from a pool of 248)
// and exits; the second asks for 8 more per thread than anyone holds. With an unrounded pool of
// 255 the first would free 7 per thread and the second would run.
void register_pool_two_warpgroups_kernel() {
  if (arch::thread_rank() < 128) {
    arch::setmaxnreg_dec<248>();
  } else {
    arch::setmaxnreg_inc<256>();
  }
}

TEST(EmuDeadlock, RegisterPoolAt128And256ThreadsIsRoundedDownTo8) {
  for (const Schedule& s : testing::schedules()) {
    const std::string one = testing::kernel_error_of(
        [&] { launch(testing::config({1, 1, 1}, {128, 1, 1}, 0, s), &register_pool_one_warpgroup_kernel); });
    const std::string two = testing::kernel_error_of(
        [&] { launch(testing::config({1, 1, 1}, {256, 1, 1}, 0, s), &register_pool_two_warpgroups_kernel); });
    std::printf("%s, 128 threads:\n%s\n256 threads:\n%s\n", testing::schedule_name(s).c_str(), one.c_str(),
                two.c_str());
    for (const std::string* m : {&one, &two}) {
      EXPECT_TRUE(contains(*m, "deadlock")) << *m;
      EXPECT_TRUE(contains(*m, "setmaxnreg.inc to 256 registers per thread: the CTA's pool has 0 free")) << *m;
      EXPECT_TRUE(contains(*m, "launched with 248 per thread")) << *m;
    }
    EXPECT_EQ(listed_threads(two, "setmaxnreg.inc to 256"), tid_range(128, 255)) << two;
  }
}

}  // namespace
}  // namespace fp8attn::emu
