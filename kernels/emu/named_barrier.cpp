// bar.sync / bar.arrive on the emulator (PTX ISA 9.0 §9.7.13.1; PTX_FACTS.md §10).
#include <string>

#include "kernels/emu/cta.hpp"
#include "kernels/emu/primitives.hpp"

namespace fp8attn::emu {
namespace {

// NOTE: the ISA counts arrivals per warp ("marks warps' arrival", all non-exited threads of the
// warp); the emulator counts threads, which agrees whenever whole warps execute the barrier, as
// .aligned bar.sync requires. A warp arriving with some lanes missing deadlocks here instead.
void arrive(Cta& cta, unsigned id, unsigned thread_count, bool waits) {
  const char* op = waits ? "bar.sync" : "bar.arrive";
  const unsigned me = cta.current_thread();
  if (id >= kNamedBarrierCount) {
    cta.fail(cta.describe_thread(me) + ": " + op + " with barrier id " + std::to_string(id) +
             "; a CTA has 16 barriers, ids 0..15 (PTX ISA 9.0 §9.7.13.1)");
  }
  if (thread_count == 0) {
    if (!waits) {
      cta.fail(cta.describe_thread(me) +
               ": bar.arrive needs a non-zero thread count (PTX ISA 9.0 §9.7.13.1)");
    }
    thread_count = cta.thread_count();
  } else if (thread_count % 32 != 0 || thread_count > cta.thread_count()) {
    cta.fail(cta.describe_thread(me) + ": " + op + " " + std::to_string(id) + " with thread count " +
             std::to_string(thread_count) + ": it must be a multiple of 32 (PTX ISA 9.0 "
             "§9.7.13.1) and at most the CTA's " + std::to_string(cta.thread_count()) + " threads");
  }
  NamedBarrierTable& table = cta.named_barriers();
  NamedBarrier& bar = table.barriers[id];
  if (bar.arrived == 0) {
    bar.expected = thread_count;
  } else if (bar.expected != thread_count) {
    cta.fail(cta.describe_thread(me) + ": " + op + " " + std::to_string(id) + " with thread count " +
             std::to_string(thread_count) + " while the barrier's current use expects " +
             std::to_string(bar.expected) + " (" + std::to_string(bar.arrived) + " arrived)");
  }
  uint64_t& last = table.last_arrival[size_t{id} * cta.thread_count() + me];
  if (last == bar.generation + 1) {
    cta.fail(cta.describe_thread(me) + ": " + op + " " + std::to_string(id) +
             " again before the barrier completed its current use (PTX ISA 9.0 §9.7.13.1: a warp "
             "must not arrive twice on a barrier before it resets)");
  }
  last = bar.generation + 1;
  if (RaceCheck* race = cta.race()) race->release(me, bar.released);
  ++bar.arrived;
  cta.note_progress();
  if (bar.arrived < bar.expected) {
    if (waits) {
      bar.waiters.push_back(me);
      WaitInfo wait;
      wait.kind = WaitInfo::Kind::NamedBarrier;
      wait.barrier_id = id;
      cta.block(wait);  // the thread completing the barrier made our acquire
    } else {
      cta.maybe_yield();
    }
    return;
  }
  // Completion: every participant's earlier accesses are performed for all waiters, and the
  // barrier resets at once for its next use.
  if (RaceCheck* race = cta.race()) {
    for (unsigned w : bar.waiters) race->acquire(w, bar.released);
    if (waits) race->acquire(me, bar.released);
    bar.released.assign(bar.released.size(), 0);
  }
  for (unsigned w : bar.waiters) cta.wake(w);
  bar.waiters.clear();
  bar.arrived = 0;
  bar.expected = 0;
  ++bar.generation;
  cta.maybe_yield();
}

}  // namespace

void NamedBarrierTable::reset(unsigned threads, const VectorClock& empty) {
  for (NamedBarrier& bar : barriers) bar = NamedBarrier{0, 0, 0, {}, empty};
  last_arrival.assign(size_t{kNamedBarrierCount} * threads, 0);
}

std::string NamedBarrierTable::describe(unsigned id) const {
  const NamedBarrier& bar = barriers[id];
  return "bar.sync id " + std::to_string(id) + " (expects " + std::to_string(bar.expected) +
         " threads, " + std::to_string(bar.arrived) + " arrived)";
}

void barrier_sync(unsigned id, unsigned thread_count) {
  arrive(current_cta(), id, thread_count, /*waits=*/true);
}

void barrier_arrive(unsigned id, unsigned thread_count) {
  arrive(current_cta(), id, thread_count, /*waits=*/false);
}

}  // namespace fp8attn::emu
