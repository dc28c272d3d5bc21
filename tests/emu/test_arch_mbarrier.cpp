// mbarrier pinned to PTX ISA 9.0 §9.7.13.15 (PTX_FACTS.md §5): phases, parity waits, pending
// arrival counts and tx-count accounting, including a complete-tx that lands before its
// expect-tx (negative tx-count), under round-robin and shuffled schedules.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "emu_test_support.hpp"
#include "kernels/arch/barrier.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"

namespace fp8attn::emu {
namespace {

using testing::Schedule;

// Shared memory layout of the two-phase kernel.
constexpr size_t kBarOffset = 0;
constexpr size_t kPhase0Offset = 128;  // 256 bytes landed by "async copies" in phase 0
constexpr size_t kPhase0Bytes = 256;
constexpr size_t kPhase1Offset = 512;  // 64 bytes in phase 1
constexpr size_t kPhase1Bytes = 64;
constexpr size_t kSmemBytes = 1024;

// What the choreography threads observed, in order (1 = true, 0 = false, or a state token).
enum Observation : unsigned {
  kFreshTryWaitParity1,     // fresh barrier (phase 0): the "preceding phase" of parity 1 is done
  kFreshTestWaitParity0,    // phase 0 itself is not
  kArriveToken0,            // thread 32's arrive in phase 0 returns the phase before it: 0
  kAfterArrivalsTxPending,  // both arrivals in, tx-count 256: phase 0 still open
  kAfterHalfTx,             // 128 of 256 bytes completed: still open
  kAfterAllTx,              // all 256 bytes: phase 0 complete
  kParity1AfterPhase0,      // phase 1 is now current, so parity 1 is not complete
  kAfterNegativeTx,         // phase 1: complete-tx(64) before any expect-tx: tx = -64, open
  kArriveToken1,            // thread 32's arrive in phase 1 returns 1
  kAfterArriveTxNegative,   // pending 1 left: still open
  kAfterArriveExpectTx,     // arrive.expect_tx(64): tx 0, pending 0: phase 1 complete
  kObservationCount
};
const unsigned kExpected[kObservationCount] = {1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1};

// Emulates an async copy of `bytes` from global memory into shared memory that completes on
// `bar` (what a TMA load does, PTX ISA 9.0 §9.7.9.25.5.2).
void async_copy(unsigned char* smem_dst, const unsigned char* src, size_t bytes, uint64_t* bar) {
  record_async_smem_access(smem_dst, bytes, /*is_write=*/true, bar);
  std::memcpy(smem_dst, src, bytes);
  arch::mbarrier_complete_tx(bar, static_cast<uint32_t>(bytes));
}

// Warps 0-1 run the choreography, one step per bar.sync(1, 64); warps 2-3 are consumers that
// wait on each phase by parity and copy what landed to `out`.
void two_phase_kernel(const unsigned char* src, unsigned* observed, unsigned char* out) {
  unsigned char* smem = arch::dynamic_smem();
  auto* bar = reinterpret_cast<uint64_t*>(smem + kBarOffset);
  const unsigned tid = arch::thread_rank();
  if (tid == 0) arch::mbarrier_init(bar, 2);
  arch::syncthreads();
  if (tid >= 64) {
    arch::mbarrier_wait_parity(bar, 0);
    for (size_t i = tid - 64; i < kPhase0Bytes; i += 64) out[i] = arch::smem_load(smem + kPhase0Offset + i);
    // A parity wait names the current or the preceding phase only (§9.7.13.15.16): phase 1 must
    // not complete before every consumer is done waiting on phase 0.
    arch::named_barrier_arrive(2, 128);
    arch::mbarrier_wait_parity(bar, 1);
    for (size_t i = tid - 64; i < kPhase1Bytes; i += 64) {
      out[kPhase0Bytes + i] = arch::smem_load(smem + kPhase1Offset + i);
    }
    return;
  }
  auto step = [] { arch::named_barrier_sync(1, 64); };
  // Phase 0.
  if (tid == 0) {
    observed[kFreshTryWaitParity1] = arch::mbarrier_try_wait_parity(bar, 1);
    observed[kFreshTestWaitParity0] = arch::mbarrier_test_wait_parity(bar, 0);
    arch::mbarrier_arrive_expect_tx(bar, kPhase0Bytes);
  }
  step();
  if (tid == 32) {
    observed[kArriveToken0] = static_cast<unsigned>(arch::mbarrier_arrive(bar));
    observed[kAfterArrivalsTxPending] = arch::mbarrier_test_wait_parity(bar, 0);
  }
  step();
  if (tid == 0) {
    async_copy(smem + kPhase0Offset, src, kPhase0Bytes / 2, bar);
    observed[kAfterHalfTx] = arch::mbarrier_test_wait_parity(bar, 0);
    async_copy(smem + kPhase0Offset + kPhase0Bytes / 2, src + kPhase0Bytes / 2, kPhase0Bytes / 2, bar);
    observed[kAfterAllTx] = arch::mbarrier_test_wait_parity(bar, 0);
    observed[kParity1AfterPhase0] = arch::mbarrier_test_wait_parity(bar, 1);
  }
  step();
  // Phase 1: the data lands before the producer announces it.
  if (tid == 0) {
    async_copy(smem + kPhase1Offset, src + kPhase0Bytes, kPhase1Bytes, bar);
    observed[kAfterNegativeTx] = arch::mbarrier_test_wait_parity(bar, 1);
  }
  step();
  if (tid == 32) {
    observed[kArriveToken1] = static_cast<unsigned>(arch::mbarrier_arrive(bar));
    observed[kAfterArriveTxNegative] = arch::mbarrier_test_wait_parity(bar, 1);
  }
  arch::named_barrier_sync(2, 128);
  if (tid == 0) {
    arch::mbarrier_arrive_expect_tx(bar, kPhase1Bytes);
    observed[kAfterArriveExpectTx] = arch::mbarrier_test_wait_parity(bar, 1);
  }
}

TEST(ArchMbarrier, ExpectTxAndTwoPhases) {
  for (const Schedule& s : testing::schedules()) {
    std::mt19937 rng(static_cast<uint32_t>(s.seed) + 77);
    std::vector<unsigned char> src(kPhase0Bytes + kPhase1Bytes);
    for (auto& b : src) b = static_cast<unsigned char>(rng());
    std::vector<unsigned> observed(kObservationCount, 0xbadu);
    std::vector<unsigned char> out(src.size(), 0);
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<unsigned char>(~src[i]);  // poison
    launch(testing::config({1, 1, 1}, {128, 1, 1}, kSmemBytes, s), &two_phase_kernel,
           static_cast<const unsigned char*>(src.data()), observed.data(), out.data());
    std::printf("%s: observations", testing::schedule_name(s).c_str());
    for (unsigned v : observed) std::printf(" %u", v);
    std::printf("; consumer copies match: %s\n", out == src ? "yes" : "no");
    for (unsigned i = 0; i < kObservationCount; ++i) {
      EXPECT_EQ(observed[i], kExpected[i]) << "observation " << i << ", " << testing::schedule_name(s);
    }
    EXPECT_EQ(out, src) << testing::schedule_name(s);
  }
}

// Pipeline over many phases: a producer thread fills a 2-stage ring with async copies, consumer
// warps read each stage after waiting on its "full" barrier and release it on its "empty"
// barrier; the producer starts at parity 1 on the empties (CUTLASS's producer start state,
// PTX_FACTS.md §5). Any wrong parity or missing wait is a race or a wrong copy.
constexpr unsigned kStages = 2, kRounds = 9, kStageBytes = 128, kConsumers = 64;

void pipeline_kernel(const unsigned char* src, unsigned char* out_all) {
  unsigned char* smem = arch::dynamic_smem();
  unsigned char* out = out_all + arch::block_idx().x * kRounds * kStageBytes;  // per CTA
  auto* full = reinterpret_cast<uint64_t*>(smem);
  auto* empty = full + kStages;
  unsigned char* stage_data = smem + 64;
  const unsigned tid = arch::thread_rank();
  if (tid == 0) {
    for (unsigned s = 0; s < kStages; ++s) {
      arch::mbarrier_init(&full[s], 1);
      arch::mbarrier_init(&empty[s], kConsumers);
    }
  }
  arch::syncthreads();
  if (tid < 32) {
    if (tid != 0) return;
    for (unsigned r = 0; r < kRounds; ++r) {
      const unsigned s = r % kStages, parity = (r / kStages) & 1;
      arch::mbarrier_wait_parity(&empty[s], parity ^ 1);
      arch::mbarrier_arrive_expect_tx(&full[s], kStageBytes);
      async_copy(stage_data + s * kStageBytes, src + r * kStageBytes, kStageBytes, &full[s]);
    }
    return;
  }
  const unsigned c = tid - 32;
  for (unsigned r = 0; r < kRounds; ++r) {
    const unsigned s = r % kStages, parity = (r / kStages) & 1;
    arch::mbarrier_wait_parity(&full[s], parity);
    for (unsigned i = c; i < kStageBytes; i += kConsumers) {
      out[r * kStageBytes + i] = arch::smem_load(stage_data + s * kStageBytes + i);
    }
    arch::mbarrier_arrive(&empty[s]);
  }
}

TEST(ArchMbarrier, TwoStagePipelineOverNineRounds) {
  for (const Schedule& s : testing::schedules()) {
    std::mt19937 rng(static_cast<uint32_t>(s.seed) + 11);
    constexpr unsigned kCtas = 2;
    std::vector<unsigned char> src(kRounds * kStageBytes), out(kCtas * src.size());
    for (auto& b : src) b = static_cast<unsigned char>(rng());
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<unsigned char>(~src[i % src.size()]);
    LaunchConfig c = testing::config({kCtas, 1, 1}, {32 + kConsumers, 1, 1}, 1024, s);
    c.host_threads = 2;
    launch(c, &pipeline_kernel, static_cast<const unsigned char*>(src.data()), out.data());
    size_t wrong = 0;
    for (size_t i = 0; i < out.size(); ++i) wrong += out[i] != src[i % src.size()];
    std::printf("%s: %zu of %zu bytes wrong after %u rounds in %u CTAs\n", testing::schedule_name(s).c_str(),
                wrong, out.size(), kRounds, kCtas);
    EXPECT_EQ(wrong, 0u) << testing::schedule_name(s);
  }
}

// ---- misuse that the ISA leaves undefined is reported ----

void arrive_uninitialized_kernel() {
  arch::mbarrier_arrive(arch::dynamic_smem<uint64_t>());
}

void init_count_zero_kernel() { arch::mbarrier_init(arch::dynamic_smem<uint64_t>(), 0); }

void tx_overflow_kernel() {
  auto* bar = arch::dynamic_smem<uint64_t>();
  arch::mbarrier_init(bar, 1);
  arch::mbarrier_expect_tx(bar, 1u << 20);  // tx-count range is [-(2^20-1), 2^20-1]
}

void arrive_beyond_pending_kernel() {
  auto* bar = arch::dynamic_smem<uint64_t>();
  arch::mbarrier_init(bar, 1);
  arch::mbarrier_arrive_count(bar, 2);
}

// §9.7.13.15.4: a phase's completion must be observed by a True test_wait / try_wait before any
// arrive-on of the next phase. `observe` inserts that wait.
void arrive_ahead_kernel(bool observe) {
  auto* bar = arch::dynamic_smem<uint64_t>();
  if (arch::thread_rank() == 0) {
    arch::mbarrier_init(bar, 1);
    arch::mbarrier_arrive(bar);  // completes phase 0
    if (observe) arch::mbarrier_wait_parity(bar, 0);
    arch::mbarrier_arrive(bar);  // an arrive-on in phase 1
  }
}

void misaligned_kernel() {
  arch::mbarrier_init(reinterpret_cast<uint64_t*>(arch::dynamic_smem() + 4), 1);
}

// Thread 1 learns through a host flag (not a barrier) that thread 0 initialized the mbarrier.
void unordered_init_kernel(std::atomic<int>* initialized) {
  auto* bar = arch::dynamic_smem<uint64_t>();
  if (arch::thread_rank() == 0) {
    arch::mbarrier_init(bar, 2);
    initialized->store(1);
  } else if (arch::thread_rank() == 1) {
    while (initialized->load() == 0) yield();
    arch::mbarrier_arrive(bar);
  }
}

TEST(ArchMbarrier, MisuseIsReportedWithTheIsaRule) {
  for (const Schedule& s : testing::schedules()) {
    const LaunchConfig one = testing::config({1, 1, 1}, {32, 1, 1}, 64, s);
    struct Case {
      const char* name;
      std::string message;
      const char* must_contain;
    };
    std::atomic<int> initialized{0};
    const Case cases[] = {
        {"arrive on an uninitialized mbarrier",
         testing::kernel_error_of([&] { launch(one, &arrive_uninitialized_kernel); }), "not initialized"},
        {"init with count 0", testing::kernel_error_of([&] { launch(one, &init_count_zero_kernel); }),
         "[1, 2^20-1]"},
        {"tx-count overflow", testing::kernel_error_of([&] { launch(one, &tx_overflow_kernel); }),
         "tx-count"},
        {"arrive count beyond pending",
         testing::kernel_error_of([&] { launch(one, &arrive_beyond_pending_kernel); }), "pending"},
        {"misaligned object", testing::kernel_error_of([&] { launch(one, &misaligned_kernel); }),
         "8-byte aligned"},
        {"arrive in the next phase before any wait observed the completed one",
         testing::kernel_error_of([&] { launch(one, &arrive_ahead_kernel, false); }), "§9.7.13.15.4"},
        {"the same with the wait (no error expected)",
         testing::kernel_error_of([&] { launch(one, &arrive_ahead_kernel, true); }), ""},
        {"init not ordered before use",
         testing::kernel_error_of([&] { launch(one, &unordered_init_kernel, &initialized); }),
         "not ordered before"},
    };
    for (const Case& c : cases) {
      std::printf("%s, %s: %s\n", testing::schedule_name(s).c_str(), c.name, c.message.c_str());
      if (*c.must_contain == '\0') {
        EXPECT_EQ(c.message, "") << c.name;
      } else {
        EXPECT_NE(c.message.find(c.must_contain), std::string::npos) << c.name << ": " << c.message;
      }
    }
  }
}

// Many phases on one barrier, one thread: before the last arrival of phase i the parity of i
// is not complete; the last arrival completes it, and then the parity of phase i + 1 (now
// current) is not complete. The arrival count and the number of phases are drawn per schedule.
void many_phases_kernel(unsigned count, unsigned phases, unsigned* observed) {
  auto* bar = arch::dynamic_smem<uint64_t>();
  if (arch::thread_rank() != 0) return;
  arch::mbarrier_init(bar, count);
  for (unsigned i = 0; i < phases; ++i) {
    if (count > 1) arch::mbarrier_arrive_count(bar, count - 1);
    observed[3 * i] = arch::mbarrier_test_wait_parity(bar, i & 1);  // one arrival pending
    arch::mbarrier_arrive(bar);
    observed[3 * i + 1] = arch::mbarrier_test_wait_parity(bar, i & 1);
    observed[3 * i + 2] = arch::mbarrier_test_wait_parity(bar, (i + 1) & 1);
  }
}

TEST(ArchMbarrier, ParityAlternatesOverManyPhases) {
  for (const Schedule& s : testing::schedules()) {
    std::mt19937 rng(static_cast<uint32_t>(s.seed) ^ 0x5eedu);
    const unsigned count = 1 + rng() % 3, phases = 5 + rng() % 20;
    std::vector<unsigned> observed(3 * phases, 0xbadu);
    launch(testing::config({1, 1, 1}, {32, 1, 1}, 64, s), &many_phases_kernel, count, phases, observed.data());
    for (unsigned i = 0; i < phases; ++i) {
      EXPECT_EQ(observed[3 * i], 0u) << "phase " << i << " complete before its last arrival (count " << count << ")";
      EXPECT_EQ(observed[3 * i + 1], 1u) << "phase " << i << " not complete after its last arrival";
      EXPECT_EQ(observed[3 * i + 2], 0u) << "phase " << i + 1 << " complete as soon as it began";
    }
    std::printf("%s: %u phases of %u arrivals\n", testing::schedule_name(s).c_str(), phases, count);
  }
}

}  // namespace
}  // namespace fp8attn::emu
