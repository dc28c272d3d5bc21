// Named barriers pinned to PTX ISA 9.0 §9.7.13.1 (PTX_FACTS.md §10): bar.sync with a thread
// count, bar.arrive producer/consumer pairs, two consumer warpgroups taking turns (pingpong), and
// the uses the ISA forbids.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "emu_test_support.hpp"
#include "kernels/arch/barrier.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"

namespace fp8attn::emu {
namespace {

using testing::Schedule;

// Two independent 128-thread groups each exchange data through shared memory, synchronized only
// by their own barrier (ids 1 and 2, 128 threads each): thread t of a group outputs the value
// written by thread 127 - t of the same group.
void two_groups_kernel(const uint32_t* in, uint32_t* out) {
  uint32_t* smem = arch::dynamic_smem<uint32_t>();
  const unsigned tid = arch::thread_rank(), group = tid / 128, t = tid % 128;
  arch::smem_store(&smem[tid], in[tid]);
  arch::named_barrier_sync(1 + group, 128);
  out[tid] = arch::smem_load(&smem[group * 128 + (127 - t)]);
}

TEST(ArchNamedBarrier, BarSyncWithThreadCountSynchronizesItsGroupOnly) {
  for (const Schedule& s : testing::schedules()) {
    std::mt19937 rng(static_cast<uint32_t>(s.seed) + 5);
    std::vector<uint32_t> in(256), out(256, 0xdeadbeefu);
    for (auto& v : in) v = rng();
    launch(testing::config({1, 1, 1}, {256, 1, 1}, 1024, s), &two_groups_kernel,
           static_cast<const uint32_t*>(in.data()), out.data());
    unsigned wrong = 0;
    for (unsigned tid = 0; tid < 256; ++tid) wrong += out[tid] != in[(tid / 128) * 128 + 127 - tid % 128];
    std::printf("%s: %u of 256 exchanged values wrong\n", testing::schedule_name(s).c_str(), wrong);
    EXPECT_EQ(wrong, 0u) << testing::schedule_name(s);
  }
}

// Producer warp 0 fills a buffer and signals with bar.arrive(kFull, 64); consumer warp 1 waits
// with bar.sync(kFull, 64), reads, and hands the buffer back with bar.arrive(kEmpty, 64), which
// the producer waits on with bar.sync(kEmpty, 64) before refilling. Each barrier resets at
// completion, so the same two ids serve every round.
constexpr unsigned kFull = 3, kEmpty = 4, kRounds = 6, kWords = 32;

void producer_consumer_kernel(const uint32_t* in, uint32_t* out) {
  uint32_t* buffer = arch::dynamic_smem<uint32_t>();
  const unsigned lane = arch::lane_idx();
  if (arch::warp_idx() == 0) {
    for (unsigned r = 0; r < kRounds; ++r) {
      if (r > 0) arch::named_barrier_sync(kEmpty, 64);
      arch::smem_store(&buffer[lane], in[r * kWords + lane]);
      arch::named_barrier_arrive(kFull, 64);
    }
  } else {
    for (unsigned r = 0; r < kRounds; ++r) {
      arch::named_barrier_sync(kFull, 64);
      // Each consumer lane reads a different producer lane's word.
      out[r * kWords + lane] = arch::smem_load(&buffer[(lane * 7) % kWords]);
      if (r + 1 < kRounds) arch::named_barrier_arrive(kEmpty, 64);
    }
  }
}

TEST(ArchNamedBarrier, BarArriveProducerConsumerOverSixRounds) {
  for (const Schedule& s : testing::schedules()) {
    std::mt19937 rng(static_cast<uint32_t>(s.seed) + 9);
    std::vector<uint32_t> in(kRounds * kWords), out(in.size(), 0xdeadbeefu);
    for (auto& v : in) v = rng();
    launch(testing::config({1, 1, 1}, {64, 1, 1}, 256, s), &producer_consumer_kernel,
           static_cast<const uint32_t*>(in.data()), out.data());
    unsigned wrong = 0;
    for (unsigned r = 0; r < kRounds; ++r)
      for (unsigned l = 0; l < kWords; ++l) wrong += out[r * kWords + l] != in[r * kWords + (l * 7) % kWords];
    std::printf("%s: %u of %zu words wrong\n", testing::schedule_name(s).c_str(), wrong, in.size());
    EXPECT_EQ(wrong, 0u) << testing::schedule_name(s);
  }
}

// bar.arrive releases but does not wait: a producer that refills the buffer right after its
// arrive, without the kEmpty hand-back, writes while the consumer may still read. Whichever order
// the schedule picks, the race check must report it and name both warps' threads.
void producer_consumer_no_handback_kernel(const uint32_t* in, uint32_t* out) {
  uint32_t* buffer = arch::dynamic_smem<uint32_t>();
  const unsigned lane = arch::lane_idx();
  if (arch::warp_idx() == 0) {
    arch::smem_store(&buffer[lane], in[lane]);
    arch::named_barrier_arrive(kFull, 64);
    arch::smem_store(&buffer[lane], in[kWords + lane]);
  } else {
    arch::named_barrier_sync(kFull, 64);
    out[lane] = arch::smem_load(&buffer[(lane * 7) % kWords]);
  }
}

TEST(ArchNamedBarrier, MissingHandBackIsARace) {
  for (const Schedule& s : testing::schedules()) {
    std::vector<uint32_t> in(2 * kWords, 1), out(in.size());
    const std::string message = testing::kernel_error_of([&] {
      launch(testing::config({1, 1, 1}, {64, 1, 1}, 256, s), &producer_consumer_no_handback_kernel,
             static_cast<const uint32_t*>(in.data()), out.data());
    });
    std::printf("%s: %s\n", testing::schedule_name(s).c_str(), message.c_str());
    EXPECT_NE(message.find("race"), std::string::npos) << message;
    EXPECT_NE(message.find("warp 0"), std::string::npos) << message;
    EXPECT_NE(message.find("warp 1"), std::string::npos) << message;
  }
}

// Pingpong between two consumer warpgroups (FlashAttention-3's schedule): warpgroup g does its
// turn, then bar.arrive on the other's barrier, then bar.sync on its own before its next turn.
// Each turn appends the warpgroup's id to a log in shared memory; the log must alternate.
constexpr unsigned kTurns = 8;

void pingpong_kernel(uint32_t* log_out) {
  uint32_t* smem = arch::dynamic_smem<uint32_t>();
  uint32_t* count = smem;
  uint32_t* log = smem + 1;
  const unsigned wg = arch::warpgroup_idx(), t = arch::thread_idx_in_warpgroup();
  const unsigned my_barrier = 5 + wg, other_barrier = 5 + (1 - wg);
  if (arch::thread_rank() == 0) arch::smem_store(count, 0u);
  arch::syncthreads();
  if (wg == 1) arch::named_barrier_sync(my_barrier, 256);  // warpgroup 0 goes first
  for (unsigned turn = 0; turn < kTurns; ++turn) {
    if (t == 0) {
      const uint32_t n = arch::smem_load(count);
      arch::smem_store(&log[n], wg);
      arch::smem_store(count, n + 1);
    }
    arch::named_barrier_arrive(other_barrier, 256);
    if (turn + 1 < kTurns || wg == 0) arch::named_barrier_sync(my_barrier, 256);
  }
  arch::syncthreads();
  if (arch::thread_rank() < 2 * kTurns) log_out[arch::thread_rank()] = arch::smem_load(&log[arch::thread_rank()]);
}

TEST(ArchNamedBarrier, PingpongBetweenTwoWarpgroupsAlternates) {
  for (const Schedule& s : testing::schedules()) {
    std::vector<uint32_t> log(2 * kTurns, 0xdeadbeefu);
    launch(testing::config({1, 1, 1}, {256, 1, 1}, 256, s), &pingpong_kernel, log.data());
    std::string text;
    unsigned wrong = 0;
    for (unsigned i = 0; i < 2 * kTurns; ++i) {
      text += std::to_string(log[i]);
      wrong += log[i] != i % 2;
    }
    std::printf("%s: turn log %s\n", testing::schedule_name(s).c_str(), text.c_str());
    EXPECT_EQ(wrong, 0u) << text;
  }
}

// ---- uses the ISA forbids ----

void count_not_warp_multiple_kernel() { arch::named_barrier_sync(1, 48); }
void id_out_of_range_kernel() { arch::named_barrier_sync(16, 64); }
void mismatched_counts_kernel() { arch::named_barrier_sync(1, arch::warp_idx() == 0 ? 64 : 128); }
void double_arrive_kernel() {
  if (arch::warp_idx() == 0) {
    arch::named_barrier_arrive(1, 128);
    arch::named_barrier_arrive(1, 128);  // before the barrier completed its current use
  } else {
    arch::named_barrier_sync(1, 128);
  }
}

TEST(ArchNamedBarrier, ForbiddenUsesAreReported) {
  for (const Schedule& s : testing::schedules()) {
    const LaunchConfig c = testing::config({1, 1, 1}, {128, 1, 1}, 0, s);
    const std::pair<std::string, const char*> cases[] = {
        {testing::kernel_error_of([&] { launch(c, &count_not_warp_multiple_kernel); }), "multiple of 32"},
        {testing::kernel_error_of([&] { launch(c, &id_out_of_range_kernel); }), "ids 0..15"},
        {testing::kernel_error_of([&] { launch(c, &mismatched_counts_kernel); }), "expects"},
        {testing::kernel_error_of([&] { launch(c, &double_arrive_kernel); }), "again before"},
    };
    for (const auto& [message, must_contain] : cases) {
      std::printf("%s: %s\n", testing::schedule_name(s).c_str(), message.c_str());
      EXPECT_NE(message.find(must_contain), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace fp8attn::emu
