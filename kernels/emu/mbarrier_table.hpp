// State of the mbarrier objects of one CTA (PTX ISA 9.0 §9.7.13.15.2 "contents of the mbarrier
// object": phase, pending arrival count, expected arrival count, tx-count), keyed by shared
// memory offset. The 8 bytes in shared memory are not interpreted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/emu/race_check.hpp"

namespace fp8attn::emu {

// Ranges of §9.7.13.15.2: counts in [0, 2^20 - 1], tx-count in [-(2^20 - 1), 2^20 - 1].
inline constexpr int64_t kMbarrierCountMax = (int64_t{1} << 20) - 1;

struct Mbarrier {
  bool live = false;
  uint64_t phase = 0;  // number of completed phases; the current phase's parity is phase & 1
  uint32_t expected = 0;
  uint32_t pending = 0;
  int64_t tx_count = 0;
  // Whether a test_wait / try_wait returned True for the last completed phase; an arrive-on in
  // the following phase requires it (§9.7.13.15.4). True while no phase has completed yet.
  bool completion_observed = true;
  unsigned init_thread = 0;  // who initialized it, at which clock (its init must be visible)
  uint32_t init_clock = 0;
  VectorClock released;         // join of the current phase's arrivals and complete_tx
  VectorClock completed;        // `released` of the last completed phase: what a waiter acquires
  struct Waiter {
    unsigned thread;
    uint32_t parity;
  };
  std::vector<Waiter> waiters;  // threads suspended in try_wait.parity
};

struct MbarrierTable {
  std::unordered_map<size_t, Mbarrier> by_offset;
  void reset() { by_offset.clear(); }
  std::string describe(size_t offset, uint32_t parity) const;
};

}  // namespace fp8attn::emu
