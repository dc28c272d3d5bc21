#include "kernels/emu/cta.hpp"

#include <algorithm>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

namespace fp8attn::emu {
namespace {

thread_local Cta* t_cta = nullptr;             // the CTA this host thread is running
thread_local ThreadContext* t_thread = nullptr;  // the fiber it is running right now

// Unwinds a fiber's stack when its CTA is abandoned; not a std::exception, so kernel code that
// catches std::exception cannot swallow it.
struct FiberAborted {};

// A thread that polls this many times in a row while nothing changes in the CTA is stuck.
constexpr unsigned kSpinLimit = 4;

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

}  // namespace

void record_fiber_failure(Cta& cta, const std::string& message) {
  if (!cta.failed_) {
    cta.failed_ = true;
    cta.failure_ = message;
  }
}

Cta& current_cta() {
  if (t_cta == nullptr || t_thread == nullptr) {
    throw KernelError("emulator primitive called outside a kernel run by emu::launch");
  }
  return *t_cta;
}

ThreadContext& this_thread() {
  current_cta();
  return *t_thread;
}

void fail_in_kernel(const std::string& message) {
  Cta& cta = current_cta();
  cta.fail(cta.describe_thread(cta.current_thread()) + ": " + message);
}

Cta::Cta(const LaunchConfig& config) : config_(config) {
  threads_ = config.block.volume();
  stack_bytes_ = config.fiber_stack_bytes ? config.fiber_stack_bytes : default_fiber_stack_bytes();
  slots_.resize(threads_);
  for (Slot& slot : slots_) slot.fiber = std::make_unique<Fiber>(stack_bytes_);
  // NOTE: 1024-byte alignment = the period of the 128-byte swizzle (PTX ISA 9.0 §5.5.7), so
  // swizzled TMA/wgmma tiles at 1024-aligned offsets have base offset 0, as on the device.
  const size_t bytes = (config.dynamic_smem_bytes + 1023) / 1024 * 1024 + 1024;
  smem_ = static_cast<std::byte*>(std::aligned_alloc(1024, bytes));
  if (smem_ == nullptr) throw std::bad_alloc();
}

Cta::~Cta() { std::free(smem_); }

void Cta::run(Dim3 block_idx, const std::function<void()>& body) {
  block_idx_ = block_idx;
  linear_cta_ = block_idx.x + config_.grid.x * (block_idx.y + config_.grid.y * block_idx.z);
  body_ = &body;
  rng_.seed(splitmix64(config_.seed ^ splitmix64(linear_cta_)));
  // Fresh shared memory holds garbage on the device; a seeded pattern makes reads of bytes
  // nobody wrote show up as changed results across seeds.
  for (size_t i = 0; i < config_.dynamic_smem_bytes; i += 8) {
    const uint64_t word = rng_();
    for (size_t b = 0; b < 8 && i + b < config_.dynamic_smem_bytes; ++b) {
      smem_[i + b] = static_cast<std::byte>(word >> (8 * b));
    }
  }
  if (config_.smem_traffic != nullptr) traffic_.reset(threads_);
  if (config_.race_check) race_.reset(config_.dynamic_smem_bytes, threads_, config_.proxy_fence_check);
  named_barriers_.reset(threads_, config_.race_check ? race_.empty_clock() : VectorClock{});
  mbarriers_.reset();
  collectives_.reset();
  wgmma_state_.reset();
  // NOTE: the registers a CTA holds from its launch: what ptxas gives each thread of a kernel
  // with __launch_bounds__(threads, 1) at most, 65536 / threads rounded down to 8 (168 at 384
  // threads); setmaxnreg moves registers between threads within that pool (register_pool.cpp).
  launch_registers_ = std::min(255u, 65536u / threads_) / 8 * 8;
  free_registers_ = 0;
  for (unsigned t = 0; t < threads_; ++t) {
    Slot& slot = slots_[t];
    ThreadContext& c = slot.context;
    c.block_dim = config_.block;
    c.grid_dim = config_.grid;
    c.block_idx = block_idx;
    c.thread_idx = Dim3{t % config_.block.x, (t / config_.block.x) % config_.block.y,
                        t / (config_.block.x * config_.block.y)};
    c.linear_tid = t;
    c.warp = t / 32;
    c.lane = t % 32;
    c.warpgroup = t / 128;
    c.linear_cta = linear_cta_;
    c.cta = this;
    slot.state = State::Runnable;
    slot.started = slot.aborting = slot.spinning = false;
    slot.spin_count = 0;
    slot.registers = launch_registers_;
    slot.wait = {};
    slot.fiber->reset(&Cta::fiber_main, &slot);
  }
  ready_.reset(threads_, true);
  live_ = threads_;
  progress_ = 0;
  failed_ = false;
  failure_.clear();
  last_run_ = threads_ - 1;
  host_context_init(host_);

  t_cta = this;
  while (live_ > 0 && !failed_) {
    const int next = pick_next();
    if (next < 0) {
      record_fiber_failure(*this, cta_name() + ": " + deadlock_report());
      break;
    }
    current_ = last_run_ = static_cast<unsigned>(next);
    slots_[current_].started = true;
    t_thread = &slots_[current_].context;
    slots_[current_].fiber->resume(host_);
    t_thread = nullptr;
  }
  if (failed_) abort_all();
  if (!failed_ && config_.smem_traffic != nullptr) traffic_.flush_into(*config_.smem_traffic);
  t_cta = nullptr;
  if (failed_) throw KernelError(failure_);
}

void Cta::fiber_main(void* slot_ptr) {
  auto* slot = static_cast<Slot*>(slot_ptr);
  Cta& cta = *slot->context.cta;
  try {
    (*cta.body_)();
  } catch (const FiberAborted&) {
  } catch (const KernelError& e) {
    record_fiber_failure(cta, e.what());
  } catch (const std::exception& e) {
    record_fiber_failure(cta, cta.cta_name() + ": " + cta.describe_thread(slot->context.linear_tid) +
                                  " threw: " + e.what());
  } catch (...) {
    record_fiber_failure(cta, cta.cta_name() + ": " + cta.describe_thread(slot->context.linear_tid) +
                                  " threw a non-standard exception");
  }
  slot->state = State::Done;
  cta.ready_.set(slot->context.linear_tid, false);
  --cta.live_;
  ++cta.progress_;
}

void Cta::switch_to_scheduler() {
  Slot& slot = slots_[current_];
  slot.fiber->suspend();
  if (slot.aborting && std::uncaught_exceptions() == 0) throw FiberAborted{};
}

void Cta::block(const WaitInfo& wait) {
  Slot& slot = slots_[current_];
  if (slot.aborting) {
    if (std::uncaught_exceptions() != 0) return;  // a destructor during the unwind: let it finish
    throw FiberAborted{};
  }
  slot.state = State::Blocked;
  slot.wait = wait;
  slot.spinning = false;
  ready_.set(current_, false);
  switch_to_scheduler();
}

void Cta::wake(unsigned tid) {
  if (slots_[tid].state == State::Blocked) {
    slots_[tid].state = State::Runnable;
    ready_.set(tid, true);  // block() cleared spinning
  }
  slots_[tid].wait = {};
}

void Cta::yield_now(bool spinning, const WaitInfo& spin_wait) {
  Slot& slot = slots_[current_];
  if (slot.aborting) {
    if (std::uncaught_exceptions() != 0) return;
    throw FiberAborted{};
  }
  if (spinning) {
    if (slot.spinning && slot.spin_stamp == progress_) {
      ++slot.spin_count;
    } else {
      slot.spinning = true;
      slot.spin_stamp = progress_;
      slot.spin_count = 1;
    }
    slot.wait = spin_wait;
  } else {
    slot.spinning = false;
  }
  slot.state = State::Runnable;
  ready_.set(current_, !spinning);
  switch_to_scheduler();
}

void Cta::maybe_yield() {
  if (config_.shuffle && (rng_() & 1)) yield_now(false);
}

int Cta::pick_next() {
  // Threads with work to do first, round robin from the thread after the last one run (or a
  // seeded random one of them when shuffling).
  const unsigned start = last_run_ + 1 == threads_ ? 0 : last_run_ + 1;
  if (ready_.count() > 0) {
    const unsigned k = config_.shuffle ? static_cast<unsigned>(rng_() % ready_.count()) : 0;
    return static_cast<int>(ready_.nth_from(start, k));
  }
  // Then pollers that may still see a change.
  std::vector<unsigned>& candidates = candidates_;
  candidates.clear();
  for (unsigned i = 0, t = start; i < threads_; ++i, t = t + 1 == threads_ ? 0 : t + 1) {
    const Slot& s = slots_[t];
    const bool stuck = s.spin_stamp == progress_ && s.spin_count >= kSpinLimit;
    if (s.state == State::Runnable && !stuck) candidates.push_back(t);
  }
  if (candidates.empty()) return -1;
  if (!config_.shuffle) return static_cast<int>(candidates.front());
  return static_cast<int>(candidates[rng_() % candidates.size()]);
}

void Cta::abort_all() {
  for (unsigned t = 0; t < threads_; ++t) {
    Slot& slot = slots_[t];
    if (slot.state == State::Done) continue;
    if (!slot.started) {
      slot.state = State::Done;
      continue;
    }
    slot.aborting = true;
    // Resumed, the fiber throws FiberAborted from its suspension point and unwinds to fiber_main.
    for (int attempt = 0; attempt < 3 && slot.state != State::Done; ++attempt) {
      current_ = t;
      t_thread = &slot.context;
      slot.fiber->resume(host_);
      t_thread = nullptr;
    }
    slot.state = State::Done;
  }
}

std::string Cta::cta_name() const {
  return "CTA (" + std::to_string(block_idx_.x) + "," + std::to_string(block_idx_.y) + "," +
         std::to_string(block_idx_.z) + ")";
}

std::string Cta::describe_thread(unsigned tid) const {
  const ThreadContext& c = slots_[tid].context;
  return "thread (" + std::to_string(c.thread_idx.x) + "," + std::to_string(c.thread_idx.y) + "," +
         std::to_string(c.thread_idx.z) + ") [tid " + std::to_string(tid) + ", warp " +
         std::to_string(c.warp) + ", lane " + std::to_string(c.lane) + "]";
}

void Cta::fail(const std::string& message) const { throw KernelError(cta_name() + ": " + message); }

size_t Cta::smem_offset(const void* addr, size_t bytes, const char* what) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  const auto base = reinterpret_cast<uintptr_t>(smem_);
  const size_t size = config_.dynamic_smem_bytes;
  if (a < base || a - base > size || bytes > size - (a - base)) {
    const long long offset = static_cast<long long>(a - base);
    fail(describe_thread(current_) + ": " + what + " of " + std::to_string(bytes) +
         " bytes at address " + hex(a) + " (shared memory offset " + std::to_string(offset) +
         ") is outside the CTA's " + std::to_string(size) + " bytes of dynamic shared memory");
  }
  return a - base;
}

void Cta::report_race(const RaceConflict& c) {
  auto who = [&](unsigned slot) {
    if (slot < threads_) return describe_thread(slot);
    return "the async proxy (TMA/wgmma) on behalf of " + describe_thread(slot - threads_);
  };
  if (c.kind == RaceConflict::Kind::MissingProxyFence) {
    fail("async-proxy read by " + who(c.later_slot) + " of the shared memory byte at offset " +
         std::to_string(c.offset) + " (address " + hex(reinterpret_cast<uintptr_t>(smem_ + c.offset)) +
         "), last written through the generic proxy by " + who(c.earlier_slot) +
         " with no fence.proxy.async by that thread after the write (PTX ISA 9.0 §9.7.15.4)");
  }
  fail("shared memory race on the byte at offset " + std::to_string(c.offset) + " (address " +
       hex(reinterpret_cast<uintptr_t>(smem_ + c.offset)) + "): " +
       (c.earlier_is_write ? "write" : "read") + " by " + who(c.earlier_slot) + " and " +
       (c.later_is_write ? "write" : "read") + " by " + who(c.later_slot) +
       ", with no barrier or mbarrier ordering them");
}

std::string Cta::describe_wait(const WaitInfo& wait) const {
  switch (wait.kind) {
    case WaitInfo::Kind::NamedBarrier:
      return named_barriers_.describe(wait.barrier_id);
    case WaitInfo::Kind::Mbarrier:
      return mbarriers_.describe(wait.mbarrier_offset, wait.parity);
    case WaitInfo::Kind::Collective:
      return collectives_.describe(wait.collective);
    case WaitInfo::Kind::RegisterPool:
      return "setmaxnreg.inc to " + std::to_string(wait.registers) + " registers per thread: the CTA's pool has " +
             std::to_string(free_registers_) + " free (launched with " + std::to_string(launch_registers_) +
             " per thread)";
    case WaitInfo::Kind::None:
      break;
  }
  return "emu::yield() in a loop, with nothing changing in the CTA";
}

std::string Cta::deadlock_report() const {
  std::string report = "deadlock: no thread can make progress.";
  auto coords = [&](unsigned tid) {
    const Dim3& t = slots_[tid].context.thread_idx;
    char buf[48];
    std::snprintf(buf, sizeof buf, "(%u,%u,%u)", t.x, t.y, t.z);
    return std::string(buf);
  };
  auto range_name = [&](unsigned first, unsigned last) {
    if (first == last) return describe_thread(first);
    return "threads " + coords(first) + ".." + coords(last) + " [tid " + std::to_string(first) +
           "-" + std::to_string(last) + ", warps " + std::to_string(first / 32) + "-" +
           std::to_string(last / 32) + "]";
  };
  // Consecutive threads waiting on the same thing are listed as one range.
  unsigned t = 0;
  while (t < threads_) {
    const Slot& s = slots_[t];
    std::string what;
    if (s.state == State::Done) {
      what = "exited";
    } else if (s.state == State::Blocked) {
      what = "waits in " + describe_wait(s.wait);
    } else {
      what = "polls " + describe_wait(s.wait) + " without success";
    }
    unsigned last = t;
    while (last + 1 < threads_) {
      const Slot& n = slots_[last + 1];
      const bool same_state = n.state == s.state;
      std::string next_what;
      if (n.state == State::Done) next_what = "exited";
      else if (n.state == State::Blocked) next_what = "waits in " + describe_wait(n.wait);
      else next_what = "polls " + describe_wait(n.wait) + " without success";
      if (!same_state || next_what != what) break;
      ++last;
    }
    report += "\n  " + range_name(t, last) + ": " + what;
    t = last + 1;
  }
  return report;
}

}  // namespace fp8attn::emu
