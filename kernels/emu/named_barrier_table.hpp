// State of the 16 named barriers of one CTA (PTX ISA 9.0 §9.7.13.1 bar / barrier).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/emu/primitives.hpp"
#include "kernels/emu/race_check.hpp"

namespace fp8attn::emu {

struct NamedBarrier {
  unsigned expected = 0;  // thread count of the current generation; 0 while nobody arrived
  unsigned arrived = 0;
  uint64_t generation = 0;      // completed generations
  std::vector<unsigned> waiters;  // threads in bar.sync, to wake at completion
  VectorClock released;           // join of this generation's arrivals (race check)
};

struct NamedBarrierTable {
  std::array<NamedBarrier, kNamedBarrierCount> barriers;
  // last_arrival[id * threads + t]: generation in which thread t last arrived on barrier id, + 1.
  std::vector<uint64_t> last_arrival;

  void reset(unsigned threads, const VectorClock& empty);
  std::string describe(unsigned id) const;
};

}  // namespace fp8attn::emu
