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
  if (cell.readers != kManyReaders) {
    for (int r = 0; r < cell.readers; ++r) {
      if (cell.reader_slot[r] == slot && cell.reader_clock[r] == now) return std::nullopt;  // same epoch
    }
  }
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
  if (cell.readers == kManyReaders) {
    auto& readers = shared_reads_[offset];
    auto it = std::find_if(readers.begin(), readers.end(),
                           [&](const auto& r) { return r.first == slot; });
    if (it != readers.end()) it->second = now;
    else readers.emplace_back(static_cast<uint16_t>(slot), now);
    return std::nullopt;
  }
  // Keep the earlier readers this read is not ordered after (a reader ordered before it is
  // covered: whatever is ordered after this read is ordered after that one too), then add it.
  int kept = 0;
  for (int r = 0; r < cell.readers; ++r) {
    const uint16_t other = cell.reader_slot[r];
    if (other == slot || cell.reader_clock[r] <= mine[other]) continue;
    cell.reader_slot[kept] = other;
    cell.reader_clock[kept] = cell.reader_clock[r];
    ++kept;
  }
  if (kept < kInlineReaders) {
    cell.reader_slot[kept] = static_cast<uint16_t>(slot);
    cell.reader_clock[kept] = now;
    cell.readers = static_cast<uint16_t>(kept + 1);
    return std::nullopt;
  }
  auto& readers = shared_reads_[offset];
  readers.clear();
  for (int r = 0; r < kept; ++r) readers.emplace_back(cell.reader_slot[r], cell.reader_clock[r]);
  readers.emplace_back(static_cast<uint16_t>(slot), now);
  cell.readers = kManyReaders;
  return std::nullopt;
}

std::optional<RaceConflict> RaceCheck::write_byte(unsigned slot, size_t offset) {
  Shadow& cell = shadow_[offset];
  const uint32_t* mine = row(slot);
  const uint32_t now = mine[slot];
  if (cell.write_slot == slot && cell.write_clock == now && cell.readers == 0) {
    return std::nullopt;  // same epoch, nobody read it since
  }
  if (cell.write_clock > mine[cell.write_slot]) {
    return RaceConflict{RaceConflict::Kind::Race, offset, cell.write_slot, true, slot, true};
  }
  if (cell.readers == kManyReaders) {
    auto it = shared_reads_.find(offset);
    for (const auto& [reader, clock] : it->second) {
      if (clock > mine[reader]) return RaceConflict{RaceConflict::Kind::Race, offset, reader, false, slot, true};
    }
    shared_reads_.erase(it);
  } else {
    for (int r = 0; r < cell.readers; ++r) {
      if (cell.reader_clock[r] > mine[cell.reader_slot[r]]) {
        return RaceConflict{RaceConflict::Kind::Race, offset, cell.reader_slot[r], false, slot, true};
      }
    }
  }
  cell = Shadow{};
  cell.write_clock = now;
  cell.write_slot = static_cast<uint16_t>(slot);
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
