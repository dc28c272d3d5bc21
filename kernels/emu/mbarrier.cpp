// mbarrier on the emulator: the state machine of PTX ISA 9.0 §9.7.13.15 (PTX_FACTS.md §5).
#include <cinttypes>
#include <cstdio>
#include <string>

#include "kernels/emu/cta.hpp"
#include "kernels/emu/primitives.hpp"

namespace fp8attn::emu {
namespace {

std::string where(size_t offset) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "mbarrier at shared memory offset %zu", offset);
  return buf;
}

std::string state_of(const Mbarrier& m) {
  return "current phase " + std::to_string(m.phase) + " (parity " + std::to_string(m.phase & 1) +
         "), pending arrivals " + std::to_string(m.pending) + " of " + std::to_string(m.expected) +
         ", tx-count " + std::to_string(m.tx_count);
}

// The mbarrier at `mbar`, checked: in shared memory, 8-byte aligned (§9.7.13.15.1), initialized,
// and its initialization visible to the caller (ordered before by a barrier, as the ISA requires
// of any object initialized by another thread).
Mbarrier& resolve(Cta& cta, const uint64_t* mbar, const char* op, size_t* offset_out) {
  const unsigned me = cta.current_thread();
  const size_t offset = cta.smem_offset(mbar, 8, op);
  if (offset % 8 != 0) {
    cta.fail(cta.describe_thread(me) + ": " + op + " on a " + where(offset) +
             " that is not 8-byte aligned (PTX ISA 9.0 §9.7.13.15.1)");
  }
  auto it = cta.mbarriers().by_offset.find(offset);
  if (it == cta.mbarriers().by_offset.end() || !it->second.live) {
    cta.fail(cta.describe_thread(me) + ": " + op + " on a " + where(offset) +
             " that is not initialized (mbarrier.init, PTX ISA 9.0 §9.7.13.15.9)");
  }
  Mbarrier& m = it->second;
  if (RaceCheck* race = cta.race()) {
    if (m.init_clock > race->clock_of(me, m.init_thread)) {
      cta.fail(cta.describe_thread(me) + ": " + op + " on a " + where(offset) +
               " whose mbarrier.init by " + cta.describe_thread(m.init_thread) +
               " is not ordered before it (no barrier between the init and this use)");
    }
  }
  *offset_out = offset;
  return m;
}

void check_tx_range(Cta& cta, const Mbarrier& m, size_t offset, const char* op) {
  if (m.tx_count > kMbarrierCountMax || m.tx_count < -kMbarrierCountMax) {
    cta.fail(cta.describe_thread(cta.current_thread()) + ": " + op + " takes the tx-count of the " +
             where(offset) + " to " + std::to_string(m.tx_count) +
             ", outside [-(2^20-1), 2^20-1] (PTX ISA 9.0 §9.7.13.15.2)");
  }
}

// Phase completion (§9.7.13.15.6): pending arrivals and tx-count both zero -> the phase
// advances, pending is reloaded with the expected count, and the waiters on it are released.
void complete_if_done(Cta& cta, Mbarrier& m) {
  if (m.pending != 0 || m.tx_count != 0) return;
  ++m.phase;
  m.pending = m.expected;
  m.completion_observed = !m.waiters.empty();  // each sleeping waiter will return True
  if (cta.race() != nullptr) {
    m.completed = m.released;
    m.released.assign(m.released.size(), 0);
  }
  auto& waiters = m.waiters;
  for (size_t i = 0; i < waiters.size();) {
    if ((m.phase & 1) != waiters[i].parity) {
      if (RaceCheck* race = cta.race()) race->acquire(waiters[i].thread, m.completed);
      cta.wake(waiters[i].thread);
      waiters[i] = waiters.back();
      waiters.pop_back();
    } else {
      ++i;
    }
  }
}

uint64_t arrive(Cta& cta, uint64_t* mbar, uint32_t count, const char* op) {
  size_t offset = 0;
  Mbarrier& m = resolve(cta, mbar, op, &offset);
  const unsigned me = cta.current_thread();
  if (count == 0 || count > m.pending) {
    cta.fail(cta.describe_thread(me) + ": " + op + " with count " + std::to_string(count) +
             " on a " + where(offset) + " (" + state_of(m) +
             "): the count must be at least 1 and at most the pending arrivals "
             "(PTX ISA 9.0 §9.7.13.15.2, §9.7.13.15.13)");
  }
  if (!m.completion_observed) {
    cta.fail(cta.describe_thread(me) + ": " + op + " on the " + where(offset) + " (" +
             state_of(m) + ") races ahead of the waiters: it arrives in phase " +
             std::to_string(m.phase) + " before any test_wait / try_wait returned True for phase " +
             std::to_string(m.phase - 1) + " (PTX ISA 9.0 §9.7.13.15.4)");
  }
  const uint64_t state = m.phase;
  if (RaceCheck* race = cta.race()) race->release(me, m.released);
  m.pending -= count;
  cta.note_progress();
  complete_if_done(cta, m);
  cta.maybe_yield();
  return state;
}

bool test_parity(Cta& cta, uint64_t* mbar, uint32_t parity, const char* op, size_t* offset) {
  Mbarrier& m = resolve(cta, mbar, op, offset);
  if (parity > 1) {
    cta.fail(cta.describe_thread(cta.current_thread()) + ": " + op + " with parity " +
             std::to_string(parity) + "; the parity operand is 0 or 1 (PTX ISA 9.0 §9.7.13.15.16)");
  }
  // waitComplete = (current phase parity != P): the phase of parity P is the immediately
  // preceding one, and it has completed (§9.7.13.15.16).
  if ((m.phase & 1) == parity) return false;
  if (RaceCheck* race = cta.race()) race->acquire(cta.current_thread(), m.completed);
  if (m.phase >= 1) m.completion_observed = true;  // True for the phase just completed
  return true;
}

WaitInfo mbarrier_wait(size_t offset, uint32_t parity) {
  WaitInfo wait;
  wait.kind = WaitInfo::Kind::Mbarrier;
  wait.mbarrier_offset = offset;
  wait.parity = parity;
  return wait;
}

}  // namespace

std::string MbarrierTable::describe(size_t offset, uint32_t parity) const {
  auto it = by_offset.find(offset);
  std::string text = "mbarrier.try_wait.parity " + std::to_string(parity) +
                     " on the mbarrier at shared memory offset " + std::to_string(offset);
  if (it == by_offset.end()) return text;
  return text + " (" + state_of(it->second) + ")";
}

void mbarrier_init(uint64_t* mbar, uint32_t count) {
  Cta& cta = current_cta();
  const unsigned me = cta.current_thread();
  const size_t offset = cta.smem_offset(mbar, 8, "mbarrier.init");
  if (offset % 8 != 0) {
    cta.fail(cta.describe_thread(me) + ": mbarrier.init on a " + where(offset) +
             " that is not 8-byte aligned (PTX ISA 9.0 §9.7.13.15.1)");
  }
  if (count == 0 || count > kMbarrierCountMax) {
    cta.fail(cta.describe_thread(me) + ": mbarrier.init with count " + std::to_string(count) +
             "; it must be in [1, 2^20-1] (PTX ISA 9.0 §9.7.13.15.9)");
  }
  Mbarrier& m = cta.mbarriers().by_offset[offset];
  if (m.live) {
    cta.fail(cta.describe_thread(me) + ": mbarrier.init on the live " + where(offset) +
             " (" + state_of(m) + "); invalidate it first (PTX ISA 9.0 §9.7.13.15.9)");
  }
  m = Mbarrier{};
  m.live = true;
  m.expected = m.pending = count;
  m.init_thread = me;
  if (RaceCheck* race = cta.race()) {
    m.init_clock = race->clock_of(me, me);
    m.released = m.completed = race->empty_clock();
  }
  cta.note_progress();
}

void mbarrier_inval(uint64_t* mbar) {
  Cta& cta = current_cta();
  size_t offset = 0;
  Mbarrier& m = resolve(cta, mbar, "mbarrier.inval", &offset);
  if (!m.waiters.empty()) {
    cta.fail(cta.describe_thread(cta.current_thread()) + ": mbarrier.inval on the " +
             where(offset) + " while " + std::to_string(m.waiters.size()) +
             " threads wait on it");
  }
  m.live = false;
  cta.note_progress();
}

void mbarrier_expect_tx(uint64_t* mbar, uint32_t bytes) {
  Cta& cta = current_cta();
  size_t offset = 0;
  Mbarrier& m = resolve(cta, mbar, "mbarrier.expect_tx", &offset);
  m.tx_count += bytes;
  check_tx_range(cta, m, offset, "mbarrier.expect_tx");
  cta.note_progress();
}

uint64_t mbarrier_arrive(uint64_t* mbar, uint32_t count) {
  return arrive(current_cta(), mbar, count, "mbarrier.arrive");
}

uint64_t mbarrier_arrive_expect_tx(uint64_t* mbar, uint32_t bytes) {
  Cta& cta = current_cta();
  size_t offset = 0;
  Mbarrier& m = resolve(cta, mbar, "mbarrier.arrive.expect_tx", &offset);
  m.tx_count += bytes;  // expect-tx first, then the arrive (§9.7.13.15.13)
  check_tx_range(cta, m, offset, "mbarrier.arrive.expect_tx");
  return arrive(cta, mbar, 1, "mbarrier.arrive.expect_tx");
}

void mbarrier_complete_tx(uint64_t* mbar, uint32_t bytes) {
  Cta& cta = current_cta();
  size_t offset = 0;
  Mbarrier& m = resolve(cta, mbar, "mbarrier complete-tx", &offset);
  m.tx_count -= bytes;  // may go negative: complete-tx can precede its expect-tx
  check_tx_range(cta, m, offset, "mbarrier complete-tx");
  if (RaceCheck* race = cta.race()) {
    // The async agent of the issuing thread releases the data it wrote (§9.7.9.25.5.2).
    const unsigned agent = race->agent_slot(cta.current_thread());
    race->release(agent, m.released);
  }
  cta.note_progress();
  complete_if_done(cta, m);
}

bool mbarrier_try_wait_parity(uint64_t* mbar, uint32_t parity) {
  Cta& cta = current_cta();
  size_t offset = 0;
  if (test_parity(cta, mbar, parity, "mbarrier.try_wait.parity", &offset)) return true;
  // NOTE: try_wait may give up after a system-dependent time (§9.7.13.15.16). In shuffle mode a
  // quarter of the failing calls return false after letting others run, so callers' retry loops
  // get exercised; otherwise the thread sleeps until the phase completes, and returns true.
  if (cta.config().shuffle && cta.random() % 4 == 0) {
    cta.yield_now(/*spinning=*/true, mbarrier_wait(offset, parity));
    return false;
  }
  Mbarrier& m = cta.mbarriers().by_offset.at(offset);
  m.waiters.push_back({cta.current_thread(), parity});
  cta.block(mbarrier_wait(offset, parity));  // complete_if_done made our acquire
  return true;
}

bool mbarrier_test_wait_parity(uint64_t* mbar, uint32_t parity) {
  Cta& cta = current_cta();
  size_t offset = 0;
  if (test_parity(cta, mbar, parity, "mbarrier.test_wait.parity", &offset)) return true;
  cta.yield_now(/*spinning=*/true, mbarrier_wait(offset, parity));
  return false;
}

}  // namespace fp8attn::emu
