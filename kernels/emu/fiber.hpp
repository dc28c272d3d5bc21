// One fiber of the emulator: its own mmap'd stack under a guard page, entered by switch_stack. The CTA
// scheduler (cta.cpp) switches between fibers and its own host-thread context; the sanitizer
// hooks tell ASan and TSan about every switch so they track the right stack.
#pragma once

#include <cstddef>

namespace fp8attn::emu {

// The scheduler's side of the switches: the host thread's own context and stack.
struct HostContext {
  void* stack_pointer = nullptr;      // where the scheduler's context is saved while a fiber runs
  void* fake_stack = nullptr;         // ASan fake-stack handle of the scheduler while away
  const void* stack_bottom = nullptr;  // the host thread's stack, learned on the first switch
  size_t stack_size = 0;
  void* tsan_fiber = nullptr;         // TSan's handle of the host thread
};

// Fills in the host thread's handles; call once on the host thread before the first resume().
void host_context_init(HostContext& host);

class Fiber {
 public:
  // entry(arg) runs on the fiber's stack on the first resume(); it must end with finish().
  using Entry = void (*)(void* arg);
  explicit Fiber(size_t stack_bytes);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Prepares a fresh run of entry(arg) from the top of the stack (the stack is reused).
  void reset(Entry entry, void* arg);
  // Scheduler side: runs the fiber until it suspends or finishes.
  void resume(HostContext& host);
  // Fiber side: returns control to the scheduler; returns when resumed again.
  void suspend();
  // Fiber side: returns control to the scheduler for good.
  [[noreturn]] void finish();

  // Called first thing on the fiber's stack (completes the sanitizer switch).
  void on_start();

 private:
  void* stack_mapping_ = nullptr;  // guard page + stack
  size_t mapping_bytes_ = 0;
  void* stack_base_ = nullptr;  // lowest usable byte
  size_t stack_bytes_ = 0;
  void* stack_pointer_ = nullptr;  // saved while suspended; a prepared frame before the first run
  HostContext* host_ = nullptr;
  Entry entry_ = nullptr;
  void* arg_ = nullptr;
  void* fake_stack_ = nullptr;  // ASan fake-stack handle of this fiber while suspended
  void* tsan_fiber_ = nullptr;
};

// Default fiber stack: 64 KiB, or 1 MiB in sanitizer builds (instrumented frames are larger).
size_t default_fiber_stack_bytes();

}  // namespace fp8attn::emu
