// Shared-memory race check of one CTA: FastTrack-style epochs (Flanagan & Freund, PLDI 2009)
// over vector clocks. A conflict is a write and another access to the same byte by different
// threads (or async agents) with no happens-before edge between them; edges come only from the
// synchronization primitives: barrier arrive -> barrier completion -> waiters, and mbarrier
// arrive / complete_tx -> phase completion -> successful try_wait.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fp8attn::emu {

// Vector clocks are indexed by "slot": slot t < threads is thread t; slot threads + t is the async
// agent of thread t (the TMA / wgmma accesses it issued).
using VectorClock = std::vector<uint32_t>;

struct RaceConflict {
  // Race: two unordered accesses. MissingProxyFence: an async-proxy read of a byte whose last
  // write came through the generic proxy, with no fence.proxy.async by the writer after it.
  enum class Kind { Race, MissingProxyFence };
  Kind kind = Kind::Race;
  size_t offset = 0;        // byte offset in shared memory
  unsigned earlier_slot = 0;
  bool earlier_is_write = false;
  unsigned later_slot = 0;
  bool later_is_write = false;
};

class RaceCheck {
 public:
  // Forgets all history; every slot starts at clock 1 with no knowledge of the others.
  // check_proxy_fence: report MissingProxyFence conflicts.
  void reset(size_t smem_bytes, unsigned threads, bool check_proxy_fence);

  unsigned threads() const { return threads_; }
  unsigned slots() const { return 2 * threads_; }
  unsigned agent_slot(unsigned thread) const { return threads_ + thread; }
  uint32_t clock_of(unsigned slot, unsigned about) const { return row(slot)[about]; }

  // Checks and records an access of [offset, offset + bytes) by `slot`; the first conflicting byte
  // is returned (and the history left as it was for that byte).
  std::optional<RaceConflict> access(unsigned slot, size_t offset, size_t bytes, bool is_write);

  // Release: into |= clock(slot), then slot's clock advances (its later accesses are new epochs).
  void release(unsigned slot, VectorClock& into);
  // Acquire: clock(slot) |= from.
  void acquire(unsigned slot, const VectorClock& from);
  // The async agent of `thread` is ordered after everything the thread did so far, and starts a
  // new epoch for the access it is about to record (so earlier acquires do not cover it).
  void order_agent_after_thread(unsigned thread);
  // slot learns the async agent of `thread` up to its latest access: every access that agent
  // recorded so far happens-before slot's later accesses. O(1), unlike acquire().
  void acquire_agent(unsigned slot, unsigned thread);
  VectorClock empty_clock() const { return VectorClock(slots(), 0); }
  // fence.proxy.async by `thread`: its generic writes so far may be read by the async proxy.
  void proxy_fence(unsigned thread);

 private:
  // NOTE: up to kInlineReaders unordered readers per byte live in its shadow cell: the two or
  // three consumer warpgroups' wgmma agents read every K and V byte, and keeping those readers in
  // a map (a heap vector per byte, freed by the next TMA write) was a fifth of an emulated
  // kernel's time. More readers than that move to shared_reads_. 28 bytes per shared-memory byte:
  // 6.4 MB of shadow for 227 KB, reset per CTA; a full vector clock per byte would need 100x more.
  static constexpr int kInlineReaders = 3;
  static constexpr uint16_t kManyReaders = 0xffff;  // readers > kInlineReaders: see shared_reads_
  struct Shadow {
    uint32_t write_clock = 0;  // 0 = never written
    uint16_t write_slot = 0;
    uint16_t readers = 0;      // reads since the last write with no order among them, or kManyReaders
    uint16_t reader_slot[kInlineReaders] = {};
    uint32_t reader_clock[kInlineReaders] = {};
  };
  uint32_t* row(unsigned slot) { return clocks_.data() + size_t{slot} * slots(); }
  const uint32_t* row(unsigned slot) const { return clocks_.data() + size_t{slot} * slots(); }
  std::optional<RaceConflict> read_byte(unsigned slot, size_t offset);
  std::optional<RaceConflict> write_byte(unsigned slot, size_t offset);

  unsigned threads_ = 0;
  bool check_proxy_fence_ = false;
  std::vector<uint32_t> clocks_;  // slots() x slots(), row = one slot's vector clock
  std::vector<Shadow> shadow_;
  // fence_epoch_[t]: thread t's clock at its latest fence.proxy.async (0 = none yet).
  std::vector<uint32_t> fence_epoch_;
  // Bytes read by more than kInlineReaders slots with no order among the reads: (slot, clock) of each.
  std::unordered_map<size_t, std::vector<std::pair<uint16_t, uint32_t>>> shared_reads_;
};

}  // namespace fp8attn::emu
