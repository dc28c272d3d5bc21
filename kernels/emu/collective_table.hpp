// Collectives in flight in one CTA: one entry per (group, member mask) with members arrived.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace fp8attn::emu {

struct CollectiveKey {
  int kind = 0;        // 0 = warp, 1 = warpgroup, 2 = lanes of a warp (*_sync operations)
  unsigned index = 0;  // warp or warpgroup index in the CTA
  uint32_t mask = 0;   // warp: member lanes; warpgroup: 0
  auto operator<=>(const CollectiveKey&) const = default;
};

struct CollectiveState {
  unsigned expected = 0;
  unsigned arrived = 0;
  std::vector<void*> data;        // by member position
  std::vector<unsigned> waiters;  // threads suspended until the last member arrives
};

struct CollectiveTable {
  std::map<CollectiveKey, CollectiveState> in_flight;
  void reset() { in_flight.clear(); }
  std::string describe(const CollectiveKey& key) const;
};

}  // namespace fp8attn::emu
