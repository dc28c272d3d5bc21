// One CTA of the emulator: its threads as fibers on one host thread, the scheduler that switches
// between them, the CTA's shared memory, and the state of its synchronization primitives. The
// primitives' semantics live in their own files (named_barrier.cpp, mbarrier.cpp,
// collective.cpp, shared_memory.cpp); this class gives them blocking, waking and error reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/emu/collective_table.hpp"
#include "kernels/emu/fiber.hpp"
#include "kernels/emu/ready_set.hpp"
#include "kernels/emu/mbarrier_table.hpp"
#include "kernels/emu/named_barrier_table.hpp"
#include "kernels/emu/race_check.hpp"
#include "kernels/emu/runtime.hpp"
#include "kernels/emu/smem_traffic.hpp"

namespace fp8attn::emu {

// What a suspended thread waits for; the deadlock report reads the live state it points at.
struct WaitInfo {
  enum class Kind { None, NamedBarrier, Mbarrier, Collective, RegisterPool };
  Kind kind = Kind::None;
  unsigned barrier_id = 0;
  uint32_t registers = 0;  ///< RegisterPool: the registers per thread asked for
  size_t mbarrier_offset = 0;
  uint32_t parity = 0;
  CollectiveKey collective;
};

class Cta {
 public:
  explicit Cta(const LaunchConfig& config);
  ~Cta();
  Cta(const Cta&) = delete;
  Cta& operator=(const Cta&) = delete;

  // Runs body() on every thread of CTA `block_idx`; throws KernelError on any failure.
  void run(Dim3 block_idx, const std::function<void()>& body);

  // ---- services for the primitives, called on the running fiber ----
  const LaunchConfig& config() const { return config_; }
  unsigned thread_count() const { return threads_; }
  unsigned current_thread() const { return current_; }
  ThreadContext& context(unsigned tid) { return slots_[tid].context; }
  std::byte* smem() { return smem_; }
  size_t smem_size() const { return config_.dynamic_smem_bytes; }
  // Offset of [addr, addr + bytes) in shared memory; KernelError naming `what` if outside.
  size_t smem_offset(const void* addr, size_t bytes, const char* what);
  RaceCheck* race() { return config_.race_check ? &race_ : nullptr; }
  void report_race(const RaceConflict& conflict);
  // The wavefront recorder (smem_traffic.hpp), or null when the launch counts none.
  SmemTrafficRecorder* traffic() { return config_.smem_traffic != nullptr ? &traffic_ : nullptr; }
  NamedBarrierTable& named_barriers() { return named_barriers_; }
  MbarrierTable& mbarriers() { return mbarriers_; }
  CollectiveTable& collectives() { return collectives_; }
  // State of the CTA's pending wgmma groups (wgmma_async.cpp), dropped at each CTA start.
  std::shared_ptr<void>& wgmma_state() { return wgmma_state_; }
  // The setmaxnreg register pool (register_pool.cpp): registers released by setmaxnreg.dec and
  // not yet taken by .inc, and each thread's current count (launch_registers() at CTA start).
  uint64_t& free_registers() { return free_registers_; }
  uint32_t& thread_registers(unsigned tid) { return slots_[tid].registers; }
  uint32_t launch_registers() const { return launch_registers_; }

  // Something other threads may be waiting on changed (spin loops are judged against this).
  void note_progress() { ++progress_; }
  // Suspends the running thread until wake(); a waiting thread shows `wait` in deadlock reports.
  void block(const WaitInfo& wait);
  void wake(unsigned tid);
  // Gives up the host thread; the thread stays runnable. `spinning`: the caller polls for a
  // condition (a failed try_wait / test_wait, emu::yield): if all runnable threads keep polling
  // while nothing changes, that is a deadlock. `spin_wait` describes what it polls.
  void yield_now(bool spinning, const WaitInfo& spin_wait = {});
  // In shuffle mode, gives up the host thread at random (seeded) so other orders get tried.
  void maybe_yield();
  // A random draw from the CTA's seeded generator.
  uint64_t random() { return rng_(); }

  // "thread (x,y,z) [tid T, warp W, lane L]"
  std::string describe_thread(unsigned tid) const;
  // Raises KernelError(prefix naming the CTA + message).
  [[noreturn]] void fail(const std::string& message) const;
  std::string cta_name() const;

 private:
  enum class State { Runnable, Blocked, Done };
  struct Slot {
    std::unique_ptr<Fiber> fiber;
    ThreadContext context;
    State state = State::Runnable;
    bool started = false;
    bool aborting = false;
    bool spinning = false;
    uint64_t spin_stamp = 0;
    unsigned spin_count = 0;
    uint32_t registers = 0;
    WaitInfo wait;
  };
  static void fiber_main(void* slot);
  void switch_to_scheduler();
  // Next thread to run, or -1 when none can (deadlock).
  int pick_next();
  std::string deadlock_report() const;
  std::string describe_wait(const WaitInfo& wait) const;
  void abort_all();

  LaunchConfig config_;
  unsigned threads_ = 0;
  size_t stack_bytes_ = 0;
  std::vector<Slot> slots_;
  std::vector<unsigned> candidates_;  // pick_next's scratch, kept to avoid an allocation per switch
  ReadySet ready_;  // Runnable and not polling: bit t == (state == Runnable && !spinning)
  HostContext host_;
  const std::function<void()>* body_ = nullptr;
  unsigned current_ = 0;
  unsigned last_run_ = 0;
  unsigned live_ = 0;
  uint64_t progress_ = 0;
  std::mt19937_64 rng_;
  std::string failure_;  // first failure inside a fiber
  bool failed_ = false;
  Dim3 block_idx_;
  unsigned linear_cta_ = 0;

  std::byte* smem_ = nullptr;
  RaceCheck race_;
  SmemTrafficRecorder traffic_;
  NamedBarrierTable named_barriers_;
  MbarrierTable mbarriers_;
  CollectiveTable collectives_;
  std::shared_ptr<void> wgmma_state_;
  uint64_t free_registers_ = 0;
  uint32_t launch_registers_ = 0;

  friend void record_fiber_failure(Cta& cta, const std::string& message);
};

// The CTA of the calling fiber (KernelError outside a kernel).
Cta& current_cta();

}  // namespace fp8attn::emu
