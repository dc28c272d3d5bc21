// Warp and warpgroup collectives: every member calls in with its own data; the last to arrive
// performs the operation for all (kernels/emu/README.md; docs/design.md §4, "Emulator vs engine").
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <string>

#include "kernels/emu/cta.hpp"

namespace fp8attn::emu {
namespace {

std::string mask_hex(uint32_t mask) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08" PRIx32, mask);
  return buf;
}

// Lanes of warp `warp` that exist in the CTA (a CTA whose size is not a multiple of 32 has a
// partial last warp).
uint32_t existing_lanes(const Cta& cta, unsigned warp) {
  const unsigned lanes = std::min(32u, cta.thread_count() - warp * 32);
  return lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1);
}

void run_collective(Cta& cta, const CollectiveKey& key, unsigned members, unsigned position,
                    size_t data_slots, void* my_data,
                    const std::function<void(std::span<void* const>)>& op) {
  CollectiveState& state = cta.collectives().in_flight[key];
  if (state.arrived == 0) {
    state.expected = members;
    state.data.assign(data_slots, nullptr);
  }
  state.data[position] = my_data;
  ++state.arrived;
  cta.note_progress();
  if (state.arrived < state.expected) {
    state.waiters.push_back(cta.current_thread());
    WaitInfo wait;
    wait.kind = WaitInfo::Kind::Collective;
    wait.collective = key;
    cta.block(wait);
    return;
  }
  // Last to arrive: take the state out of the table first, so op may start other collectives.
  CollectiveState done = std::move(state);
  cta.collectives().in_flight.erase(key);
  op(std::span<void* const>(done.data));
  for (unsigned w : done.waiters) cta.wake(w);
  cta.maybe_yield();
}

}  // namespace

std::string CollectiveTable::describe(const CollectiveKey& key) const {
  std::string text = key.kind != 1 ? "a warp collective of warp " + std::to_string(key.index) +
                                         " (member mask " + mask_hex(key.mask) + ")"
                                   : "a warpgroup collective of warpgroup " + std::to_string(key.index);
  auto it = in_flight.find(key);
  if (it != in_flight.end()) {
    text += ", " + std::to_string(it->second.arrived) + " of " +
            std::to_string(it->second.expected) + " members arrived";
  }
  return text;
}

void collective(Group group, void* my_data, const std::function<void(std::span<void* const>)>& op) {
  Cta& cta = current_cta();
  const ThreadContext& me = cta.context(cta.current_thread());
  if (group == Group::Warp) {
    const uint32_t lanes = existing_lanes(cta, me.warp);
    run_collective(cta, CollectiveKey{0, me.warp, lanes}, std::popcount(lanes), me.lane,
                   std::popcount(lanes), my_data, op);
    return;
  }
  const unsigned first = me.warpgroup * 128;
  const unsigned members = std::min(128u, cta.thread_count() - first);
  run_collective(cta, CollectiveKey{1, me.warpgroup, 0}, members, me.linear_tid - first, members,
                 my_data, op);
}

void warp_collective(uint32_t member_mask, void* my_data,
                     const std::function<void(std::span<void* const>)>& op) {
  Cta& cta = current_cta();
  const ThreadContext& me = cta.context(cta.current_thread());
  if ((member_mask >> me.lane & 1) == 0) {
    cta.fail(cta.describe_thread(me.linear_tid) + ": warp operation with member mask " +
             mask_hex(member_mask) + " that does not name the calling lane (undefined: PTX ISA 9.0 "
             "§9.7.9.6 shfl.sync)");
  }
  const uint32_t lanes = existing_lanes(cta, me.warp);
  if ((member_mask & ~lanes) != 0) {
    cta.fail(cta.describe_thread(me.linear_tid) + ": warp operation with member mask " +
             mask_hex(member_mask) + " naming lanes that do not exist in warp " +
             std::to_string(me.warp) + " (lanes " + mask_hex(lanes) + ")");
  }
  run_collective(cta, CollectiveKey{2, me.warp, member_mask}, std::popcount(member_mask), me.lane,
                 32, my_data, op);
}

}  // namespace fp8attn::emu
