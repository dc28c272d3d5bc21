// The shared-memory race check: within one barrier interval, a write by one thread and an access
// by another to the same byte, with no barrier or mbarrier ordering them, is reported with both
// threads and the address; correctly synchronized kernels pass under every schedule.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "emu_test_support.hpp"
#include "kernels/arch/barrier.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/thread_index.hpp"

namespace fp8attn::emu {
namespace {

using testing::Schedule;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Thread 3 writes a word at offset 40; thread 70 reads it. `with_barrier` puts a __syncthreads
// between them.
void write_then_read_kernel(bool with_barrier, uint32_t* out) {
  uint32_t* smem = arch::dynamic_smem<uint32_t>();
  if (arch::thread_rank() == 3) arch::smem_store(&smem[10], 0xc0ffeeu);
  if (with_barrier) arch::syncthreads();
  if (arch::thread_rank() == 70) *out = arch::smem_load(&smem[10]);
}

TEST(EmuRace, UnsynchronizedWriteAndReadAreReportedWithBothThreadsAndTheAddress) {
  for (const Schedule& s : testing::schedules()) {
    uint32_t out = 0;
    const std::string message = testing::kernel_error_of([&] {
      launch(testing::config({1, 1, 1}, {96, 1, 1}, 256, s), &write_then_read_kernel, false, &out);
    });
    std::printf("%s: %s\n", testing::schedule_name(s).c_str(), message.c_str());
    EXPECT_TRUE(contains(message, "race on the byte at offset 40")) << message;
    EXPECT_TRUE(contains(message, "thread (3,0,0) [tid 3, warp 0, lane 3]")) << message;
    EXPECT_TRUE(contains(message, "thread (70,0,0) [tid 70, warp 2, lane 6]")) << message;
  }
}

TEST(EmuRace, BarrierOrdersTheWriteBeforeTheRead) {
  for (const Schedule& s : testing::schedules()) {
    uint32_t out = 0;
    launch(testing::config({1, 1, 1}, {96, 1, 1}, 256, s), &write_then_read_kernel, true, &out);
    std::printf("%s: read 0x%x\n", testing::schedule_name(s).c_str(), out);
    EXPECT_EQ(out, 0xc0ffeeu);
  }
}

// Two threads write the same byte with no barrier between: a write-write race, reported even
// though both wrote the same value.
void write_write_kernel() {
  unsigned char* smem = arch::dynamic_smem();
  const unsigned t = arch::thread_rank();
  if (t == 1 || t == 33) arch::smem_store(&smem[7], static_cast<unsigned char>(1));
}

TEST(EmuRace, WriteWriteIsReported) {
  for (const Schedule& s : testing::schedules()) {
    const std::string message =
        testing::kernel_error_of([&] { launch(testing::config({1, 1, 1}, {64, 1, 1}, 64, s), &write_write_kernel); });
    std::printf("%s: %s\n", testing::schedule_name(s).c_str(), message.c_str());
    EXPECT_TRUE(contains(message, "write by")) << message;
    EXPECT_TRUE(contains(message, "and write by")) << message;
    EXPECT_TRUE(contains(message, "offset 7")) << message;
    EXPECT_TRUE(contains(message, "[tid 1,") && contains(message, "[tid 33,")) << message;
  }
}

// Every thread reads a shared word; then thread 0 overwrites it, with or without a barrier in
// between: the many unordered reads must all be remembered.
void many_readers_then_write_kernel(bool with_barrier, uint32_t* out) {
  uint32_t* smem = arch::dynamic_smem<uint32_t>();
  if (arch::thread_rank() == 0) arch::smem_store(&smem[0], 5u);
  arch::syncthreads();
  out[arch::thread_rank()] = arch::smem_load(&smem[0]);
  if (with_barrier) arch::syncthreads();
  if (arch::thread_rank() == 0) arch::smem_store(&smem[0], 6u);
}

TEST(EmuRace, OverwritingWhatOthersReadNeedsABarrier) {
  for (const Schedule& s : testing::schedules()) {
    uint32_t out[128];
    std::memset(out, 0xff, sizeof out);
    launch(testing::config({1, 1, 1}, {128, 1, 1}, 64, s), &many_readers_then_write_kernel, true, out);
    unsigned wrong = 0;
    for (uint32_t v : out) wrong += v != 5u;
    EXPECT_EQ(wrong, 0u);
    const std::string message = testing::kernel_error_of([&] {
      launch(testing::config({1, 1, 1}, {128, 1, 1}, 64, s), &many_readers_then_write_kernel, false, out);
    });
    std::printf("%s: with barrier %u wrong reads; without: %s\n", testing::schedule_name(s).c_str(), wrong,
                message.c_str());
    EXPECT_TRUE(contains(message, "race on the byte at offset")) << message;
    EXPECT_TRUE(contains(message, "write by thread (0,0,0)") || contains(message, "and write by thread (0,0,0)"))
        << message;
  }
}

// Several unordered reads of one byte must all be remembered, not just the latest: thread 1 reads,
// then (told through a host flag, which orders nothing for the checker) thread 2 reads and
// releases to thread 3 through an mbarrier; thread 3 then overwrites the byte. Thread 2's read is
// ordered before the write, thread 1's is not: a race between threads 1 and 3.
void earlier_reader_kernel(std::atomic<int>* first_read_done, uint32_t* out) {
  unsigned char* smem = arch::dynamic_smem();
  auto* bar = reinterpret_cast<uint64_t*>(smem);
  auto* word = reinterpret_cast<uint32_t*>(smem + 64);
  const unsigned t = arch::thread_rank();
  if (t == 0) {
    arch::mbarrier_init(bar, 1);
    arch::smem_store(word, 41u);
  }
  arch::syncthreads();
  if (t == 1) {
    out[0] = arch::smem_load(word);
    first_read_done->store(1);
  } else if (t == 2) {
    while (first_read_done->load() == 0) yield();
    out[1] = arch::smem_load(word);
    arch::mbarrier_arrive(bar);
  } else if (t == 3) {
    arch::mbarrier_wait_parity(bar, 0);
    arch::smem_store(word, 42u);
  }
}

TEST(EmuRace, RaceWithAnEarlierOfSeveralReadersIsFound) {
  for (const Schedule& s : testing::schedules()) {
    std::atomic<int> first_read_done{0};
    uint32_t out[2] = {0, 0};
    const std::string message = testing::kernel_error_of([&] {
      launch(testing::config({1, 1, 1}, {32, 1, 1}, 128, s), &earlier_reader_kernel, &first_read_done, out);
    });
    std::printf("%s: %s\n", testing::schedule_name(s).c_str(), message.c_str());
    EXPECT_TRUE(contains(message, "read by thread (1,0,0)")) << message;
    EXPECT_TRUE(contains(message, "write by thread (3,0,0)")) << message;
  }
}

// An mbarrier orders: the producer writes, then arrives; the consumer waits on the phase's parity,
// then reads. With `skip_wait` the consumer reads at once: a race.
void mbarrier_handoff_kernel(bool skip_wait, uint32_t* out) {
  unsigned char* smem = arch::dynamic_smem();
  auto* bar = reinterpret_cast<uint64_t*>(smem);
  auto* data = reinterpret_cast<uint32_t*>(smem + 64);
  if (arch::thread_rank() == 0) arch::mbarrier_init(bar, 32);
  arch::syncthreads();
  if (arch::warp_idx() == 0) {
    arch::smem_store(&data[arch::lane_idx()], 100 + arch::lane_idx());
    arch::mbarrier_arrive(bar);
  } else {
    if (!skip_wait) arch::mbarrier_wait_parity(bar, 0);
    out[arch::lane_idx()] = arch::smem_load(&data[31 - arch::lane_idx()]);
  }
}

TEST(EmuRace, MbarrierPhaseCompletionOrdersProducerAndConsumer) {
  for (const Schedule& s : testing::schedules()) {
    uint32_t out[32];
    std::memset(out, 0, sizeof out);
    launch(testing::config({1, 1, 1}, {64, 1, 1}, 256, s), &mbarrier_handoff_kernel, false, out);
    unsigned wrong = 0;
    for (unsigned l = 0; l < 32; ++l) wrong += out[l] != 100 + (31 - l);
    EXPECT_EQ(wrong, 0u);
    const std::string message = testing::kernel_error_of(
        [&] { launch(testing::config({1, 1, 1}, {64, 1, 1}, 256, s), &mbarrier_handoff_kernel, true, out); });
    std::printf("%s: with the wait %u wrong; without: %s\n", testing::schedule_name(s).c_str(), wrong,
                message.c_str());
    EXPECT_TRUE(contains(message, "race")) << message;
    EXPECT_TRUE(contains(message, "warp 0") && contains(message, "warp 1")) << message;
  }
}

// Async-proxy writes (what TMA does) become visible through the mbarrier they complete on, not
// to the issuing thread's program order: reading the destination before waiting is a race even
// for the thread that issued the copy.
void async_write_kernel(bool issuer_reads_early, uint32_t* out) {
  unsigned char* smem = arch::dynamic_smem();
  auto* bar = reinterpret_cast<uint64_t*>(smem);
  auto* data = reinterpret_cast<uint32_t*>(smem + 128);
  if (arch::thread_rank() == 0) arch::mbarrier_init(bar, 1);
  arch::syncthreads();
  if (arch::thread_rank() == 0) {
    arch::mbarrier_arrive_expect_tx(bar, 64);
    record_async_smem_access(data, 64, /*is_write=*/true, bar);
    for (uint32_t i = 0; i < 16; ++i) data[i] = 7 * i;
    arch::mbarrier_complete_tx(bar, 64);
    if (issuer_reads_early) out[0] = arch::smem_load(&data[0]);
  }
  arch::mbarrier_wait_parity(bar, 0);
  if (arch::thread_rank() < 16) out[arch::thread_rank()] = arch::smem_load(&data[arch::thread_rank()]);
}

TEST(EmuRace, AsyncWritesAreVisibleOnlyThroughTheirMbarrier) {
  for (const Schedule& s : testing::schedules()) {
    uint32_t out[16];
    std::memset(out, 0xff, sizeof out);
    launch(testing::config({1, 1, 1}, {32, 1, 1}, 256, s), &async_write_kernel, false, out);
    unsigned wrong = 0;
    for (uint32_t i = 0; i < 16; ++i) wrong += out[i] != 7 * i;
    EXPECT_EQ(wrong, 0u);
    const std::string message = testing::kernel_error_of(
        [&] { launch(testing::config({1, 1, 1}, {32, 1, 1}, 256, s), &async_write_kernel, true, out); });
    std::printf("%s: after the wait %u wrong; issuer reading early: %s\n", testing::schedule_name(s).c_str(),
                wrong, message.c_str());
    EXPECT_TRUE(contains(message, "write by the async proxy (TMA/wgmma) on behalf of thread (0,0,0)")) << message;
    EXPECT_TRUE(contains(message, "read by thread (0,0,0)")) << message;
  }
}

// Async-proxy reads (what wgmma does with its shared-memory operands) are ordered for other
// threads only after the issuing warpgroup acquires them (wgmma.wait_group) and then releases
// through a barrier. Here warpgroup 0 "issues" a read of a tile; after a __syncthreads,
// warpgroup 1 overwrites the tile. Without the acquire that is a race with the async read.
void async_read_kernel(bool wait_group) {
  uint32_t* tile = arch::dynamic_smem<uint32_t>();
  if (arch::warpgroup_idx() == 0 && arch::thread_idx_in_warpgroup() == 0) {
    record_async_smem_access(tile, 256, /*is_write=*/false, nullptr);
  }
  if (arch::warpgroup_idx() == 0 && wait_group) acquire_async_accesses(Group::Warpgroup);
  arch::syncthreads();
  if (arch::warpgroup_idx() == 1 && arch::thread_idx_in_warpgroup() < 64) {
    arch::smem_store(&tile[arch::thread_idx_in_warpgroup()], 1u);
  }
}

TEST(EmuRace, AsyncReadsAreReleasedOnlyAfterTheGroupAcquiresThem) {
  for (const Schedule& s : testing::schedules()) {
    const LaunchConfig c = testing::config({1, 1, 1}, {256, 1, 1}, 256, s);
    launch(c, &async_read_kernel, true);
    const std::string message = testing::kernel_error_of([&] { launch(c, &async_read_kernel, false); });
    std::printf("%s: without the acquire: %s\n", testing::schedule_name(s).c_str(), message.c_str());
    EXPECT_TRUE(contains(message, "read by the async proxy (TMA/wgmma) on behalf of thread (0,0,0)")) << message;
    EXPECT_TRUE(contains(message, "write by thread")) << message;
  }
}

// A per-thread acquire covers only the caller's own async accesses: lanes 0 and 1 each issue an
// async read of their own word; only lane 0 acquires its own before the barrier, so warp 1's
// overwrite of lane 1's word races with lane 1's async read (a warp-wide acquire would hide it).
void own_acquire_kernel(bool lane1_acquires) {
  uint32_t* words = arch::dynamic_smem<uint32_t>();
  const unsigned t = arch::thread_rank();
  if (t < 2) {
    record_async_smem_access(&words[t], 4, /*is_write=*/false, nullptr);
    if (t == 0 || lane1_acquires) acquire_own_async_accesses();
  }
  arch::syncthreads();
  if (t == 32 || t == 33) arch::smem_store(&words[t - 32], 9u);
}

TEST(EmuRace, OwnAcquireCoversOnlyTheCallersAsyncAccesses) {
  for (const Schedule& s : testing::schedules()) {
    const LaunchConfig c = testing::config({1, 1, 1}, {64, 1, 1}, 64, s);
    launch(c, &own_acquire_kernel, true);
    const std::string message = testing::kernel_error_of([&] { launch(c, &own_acquire_kernel, false); });
    std::printf("%s: lane 1 without its acquire: %s\n", testing::schedule_name(s).c_str(), message.c_str());
    EXPECT_TRUE(contains(message, "offset 4 ")) << message;
    EXPECT_TRUE(contains(message, "on behalf of thread (1,0,0)")) << message;
    EXPECT_TRUE(contains(message, "write by thread (33,0,0)")) << message;
  }
}

// Generic-proxy writes read by the async proxy (a TMA store or a wgmma operand) need a
// fence.proxy.async by the writing thread after its writes (PTX ISA 9.0 §9.7.15.4): warp 0 writes
// a tile, fences (after, before, or not at all), a __syncthreads follows, and thread 32 issues an
// async read of the tile.
enum class FencePlacement { AfterWrites, BeforeWrites, None };

void proxy_fence_kernel(FencePlacement placement) {
  uint32_t* tile = arch::dynamic_smem<uint32_t>();
  if (arch::warp_idx() == 0) {
    if (placement == FencePlacement::BeforeWrites) arch::fence_proxy_async_shared_cta();
    arch::smem_store(&tile[arch::lane_idx()], 3 * arch::lane_idx());
    if (placement == FencePlacement::AfterWrites) arch::fence_proxy_async_shared_cta();
  }
  arch::syncthreads();
  if (arch::thread_rank() == 32) record_async_smem_access(tile, 128, /*is_write=*/false, nullptr);
}

TEST(EmuRace, AsyncReadOfGenericWritesNeedsAProxyFence) {
  for (const Schedule& s : testing::schedules()) {
    LaunchConfig c = testing::config({1, 1, 1}, {64, 1, 1}, 128, s);
    c.proxy_fence_check = true;
    launch(c, &proxy_fence_kernel, FencePlacement::AfterWrites);
    const std::string none = testing::kernel_error_of([&] { launch(c, &proxy_fence_kernel, FencePlacement::None); });
    const std::string early =
        testing::kernel_error_of([&] { launch(c, &proxy_fence_kernel, FencePlacement::BeforeWrites); });
    std::printf("%s:\n  no fence: %s\n  fence before the writes: %s\n", testing::schedule_name(s).c_str(),
                none.c_str(), early.c_str());
    for (const std::string& message : {none, early}) {
      EXPECT_TRUE(contains(message, "no fence.proxy.async")) << message;
      EXPECT_TRUE(contains(message, "async proxy (TMA/wgmma) on behalf of thread (32,0,0)")) << message;
      EXPECT_TRUE(contains(message, "offset 0 ")) << message;  // lane 0's word is read first
    }
    c.proxy_fence_check = false;  // the default: not checked
    launch(c, &proxy_fence_kernel, FencePlacement::None);
  }
}

// ---- out-of-bounds shared memory ----

void oob_write_kernel(long offset, unsigned bytes) {
  unsigned char* smem = arch::dynamic_smem();
  if (arch::thread_rank() == 17) {
    unsigned char value[16] = {};
    check_smem_access(smem + offset, bytes, /*is_write=*/true);
    std::memcpy(smem + offset, value, bytes);  // not reached when the check fails
  }
}

void oob_store_kernel() {
  uint32_t* smem = arch::dynamic_smem<uint32_t>();
  arch::smem_store(&smem[arch::thread_rank()], arch::thread_rank());  // 64 threads, 128 bytes
}

TEST(EmuSharedMemory, OutOfBoundsAccessesAreReported) {
  for (const Schedule& s : testing::schedules()) {
    const LaunchConfig c = testing::config({1, 1, 1}, {32, 1, 1}, 1000, s);
    const std::string past_end = testing::kernel_error_of([&] { launch(c, &oob_write_kernel, 1000L, 4u); });
    const std::string straddling = testing::kernel_error_of([&] { launch(c, &oob_write_kernel, 996L, 8u); });
    const std::string before = testing::kernel_error_of([&] { launch(c, &oob_write_kernel, -16L, 4u); });
    const std::string store = testing::kernel_error_of(
        [&] { launch(testing::config({1, 1, 1}, {64, 1, 1}, 128, s), &oob_store_kernel); });
    std::printf("%s:\n  %s\n  %s\n  %s\n  %s\n", testing::schedule_name(s).c_str(), past_end.c_str(),
                straddling.c_str(), before.c_str(), store.c_str());
    EXPECT_TRUE(contains(past_end, "[tid 17, warp 0, lane 17]: shared memory write of 4 bytes")) << past_end;
    EXPECT_TRUE(contains(past_end, "shared memory offset 1000) is outside the CTA's 1000 bytes")) << past_end;
    EXPECT_TRUE(contains(straddling, "write of 8 bytes") && contains(straddling, "offset 996)")) << straddling;
    EXPECT_TRUE(contains(before, "offset -16)")) << before;
    // The first thread past the end to run is reported: which one depends on the schedule, but
    // its offset must be its own word's.
    unsigned tid = 0, offset = 0;
    const size_t at_tid = store.find("[tid "), at_offset = store.find("shared memory offset ");
    ASSERT_TRUE(at_tid != std::string::npos && at_offset != std::string::npos) << store;
    std::sscanf(store.c_str() + at_tid, "[tid %u", &tid);
    std::sscanf(store.c_str() + at_offset, "shared memory offset %u", &offset);
    EXPECT_GE(tid, 32u) << store;
    EXPECT_EQ(offset, 4 * tid) << store;
    EXPECT_TRUE(contains(store, "shared memory write of 4 bytes")) << store;
  }
}

// 227 KB of dynamic shared memory in a 384-thread CTA: every thread fills its share, then after a
// barrier every thread copies out another thread's share; both passes are checked for races.
constexpr size_t kBigSmem = 227 * 1024;

void big_smem_kernel(const unsigned char* in, unsigned char* out_all) {
  unsigned char* smem = arch::dynamic_smem();
  unsigned char* out = out_all + arch::block_idx().x * kBigSmem;  // each CTA its own copy
  const unsigned t = arch::thread_rank(), n = 384;
  const size_t share = kBigSmem / n;  // 605 bytes; the 112-byte tail is thread 0's
  for (size_t i = 0; i < share; ++i) arch::smem_store(&smem[t * share + i], in[t * share + i]);
  if (t == 0) {
    for (size_t i = n * share; i < kBigSmem; ++i) arch::smem_store(&smem[i], in[i]);
  }
  arch::syncthreads();
  const unsigned other = (t + 97) % n;
  for (size_t i = 0; i < share; ++i) out[other * share + i] = arch::smem_load(&smem[other * share + i]);
  if (t == 1) {
    for (size_t i = n * share; i < kBigSmem; ++i) out[i] = arch::smem_load(&smem[i]);
  }
}

TEST(EmuSharedMemory, Full227KBWithA384ThreadCta) {
  for (const Schedule& s : {testing::schedules()[0], testing::schedules()[1]}) {
    constexpr unsigned kCtas = 2;
    std::vector<unsigned char> in(kBigSmem), out(kCtas * kBigSmem);
    uint64_t x = s.seed + 1;
    for (auto& b : in) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      b = static_cast<unsigned char>(x >> 56);
    }
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<unsigned char>(~in[i % kBigSmem]);
    LaunchConfig c = testing::config({kCtas, 1, 1}, {128, 3, 1}, kBigSmem, s);
    c.host_threads = 2;
    launch(c, &big_smem_kernel, static_cast<const unsigned char*>(in.data()), out.data());
    size_t wrong = 0;
    for (size_t i = 0; i < out.size(); ++i) wrong += out[i] != in[i % kBigSmem];
    std::printf("%s: %zu of %zu bytes wrong (%u CTAs)\n", testing::schedule_name(s).c_str(), wrong, out.size(), kCtas);
    EXPECT_EQ(wrong, 0u);
  }
}

}  // namespace
}  // namespace fp8attn::emu
