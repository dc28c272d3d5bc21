#include "kernels/emu/race_check.hpp"

#include <algorithm>

namespace fp8attn::emu {

void RaceCheck::reset(size_t smem_bytes, unsigned threads, bool check_proxy_fence) {
  threads_ = threads;
  check_proxy_fence_ = check_proxy_fence;
  clocks_.assign(size_t{slots()} * slots(), 0);
  for (unsigned s = 0; s < slots(); ++s) row(s)[s] = 1;
  shadow_.assign(smem_bytes, Shadow{});
  fence_epoch_.assign(threads, 0);
  shared_reads_.clear();
}

std::optional<RaceConflict> RaceCheck::access(unsigned slot, size_t offset, size_t bytes,
                                              bool is_write) {
  for (size_t i = 0; i < bytes; ++i) {
    auto conflict = is_write ? write_byte(slot, offset + i) : read_byte(slot, offset + i);
    if (conflict) return conflict;
  }
  return std::nullopt;
}

std::optional<RaceConflict> RaceCheck::read_byte(unsigned slot, size_t offset) {
  Shadow& cell = shadow_[offset];
  const uint32_t* mine = row(slot);
  const uint32_t now = mine[slot];
  if (cell.read_slot == slot && cell.read_clock == now) return std::nullopt;  // same epoch
  if (cell.write_clock > mine[cell.write_slot]) {
    return RaceConflict{RaceConflict::Kind::Race, offset, cell.write_slot, true, slot, false};
  }
  // NOTE: generic-proxy writes become visible to the async proxy (wgmma operands, TMA stores) only
  // through fence.proxy.async (PTX ISA 9.0 §9.7.15.4, PTX_FACTS.md §7); CUTLASS and DeepGEMM
  // have the writing threads fence before the barrier that precedes the async read.
  if (check_proxy_fence_ && slot >= threads_ && cell.write_clock != 0 && cell.write_slot < threads_ &&
      fence_epoch_[cell.write_slot] < cell.write_clock) {
    return RaceConflict{RaceConflict::Kind::MissingProxyFence, offset, cell.write_slot, true, slot, false};
  }
  if (cell.read_slot == kSharedReads) {
    auto& readers = shared_reads_[offset];
    auto it = std::find_if(readers.begin(), readers.end(),
                           [&](const auto& r) { return r.first == slot; });
    if (it != readers.end()) it->second = now;
    else readers.emplace_back(static_cast<uint16_t>(slot), now);
  } else if (cell.read_clock == 0 || cell.read_slot == slot ||
             cell.read_clock <= mine[cell.read_slot]) {
    cell.read_slot = static_cast<uint16_t>(slot);  // the earlier read is ordered before this one
    cell.read_clock = now;
  } else {
    shared_reads_[offset] = {{cell.read_slot, cell.read_clock}, {static_cast<uint16_t>(slot), now}};
    cell.read_slot = kSharedReads;
  }
  return std::nullopt;
}

std::optional<RaceConflict> RaceCheck::write_byte(unsigned slot, size_t offset) {
  Shadow& cell = shadow_[offset];
  const uint32_t* mine = row(slot);
  const uint32_t now = mine[slot];
  if (cell.write_slot == slot && cell.write_clock == now && cell.read_clock == 0) {
    return std::nullopt;  // same epoch, nobody read it since
  }
  if (cell.write_clock > mine[cell.write_slot]) {
    return RaceConflict{RaceConflict::Kind::Race, offset, cell.write_slot, true, slot, true};
  }
  if (cell.read_slot == kSharedReads) {
    auto it = shared_reads_.find(offset);
    for (const auto& [reader, clock] : it->second) {
      if (clock > mine[reader]) return RaceConflict{RaceConflict::Kind::Race, offset, reader, false, slot, true};
    }
    shared_reads_.erase(it);
  } else if (cell.read_clock > mine[cell.read_slot]) {
    return RaceConflict{RaceConflict::Kind::Race, offset, cell.read_slot, false, slot, true};
  }
  cell = Shadow{now, static_cast<uint16_t>(slot), 0, 0};
  return std::nullopt;
}

void RaceCheck::release(unsigned slot, VectorClock& into) {
  const uint32_t* mine = row(slot);
  for (unsigned s = 0; s < slots(); ++s) into[s] = std::max(into[s], mine[s]);
  ++row(slot)[slot];
}

void RaceCheck::proxy_fence(unsigned thread) {
  // The fence orders the writes of the current epoch; later writes get a new one.
  fence_epoch_[thread] = row(thread)[thread];
  ++row(thread)[thread];
}

void RaceCheck::acquire(unsigned slot, const VectorClock& from) {
  uint32_t* mine = row(slot);
  for (unsigned s = 0; s < slots(); ++s) mine[s] = std::max(mine[s], from[s]);
}

void RaceCheck::order_agent_after_thread(unsigned thread) {
  const unsigned self = agent_slot(thread);
  uint32_t* agent = row(self);
  const uint32_t* issuer = row(thread);
  for (unsigned s = 0; s < slots(); ++s) {
    if (s != self) agent[s] = std::max(agent[s], issuer[s]);
  }
  ++agent[self];
}

void RaceCheck::acquire_agent(unsigned slot, unsigned thread) {
  const unsigned agent = agent_slot(thread);
  uint32_t& known = row(slot)[agent];
  known = std::max(known, row(agent)[agent]);
}

}  // namespace fp8attn::emu
