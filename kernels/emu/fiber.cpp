#include "kernels/emu/fiber.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <new>

#include "kernels/emu/stack_switch.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define FP8ATTN_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FP8ATTN_EMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define FP8ATTN_EMU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FP8ATTN_EMU_TSAN 1
#endif
#endif

#if defined(FP8ATTN_EMU_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(FP8ATTN_EMU_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace fp8attn::emu {
namespace {

// NOTE: ASan must be told before and after every stack switch, or it takes the fiber's frames
// for a stack overflow / use-after-return of the host stack (the protocol of
// sanitizer/common_interface_defs.h: start_switch before switch_stack, finish_switch after).
void start_switch(void** fake_stack_save, const void* bottom, size_t size) {
#if defined(FP8ATTN_EMU_ASAN)
  __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
#else
  (void)fake_stack_save, (void)bottom, (void)size;
#endif
}
void finish_switch(void* fake_stack_save, const void** bottom_old, size_t* size_old) {
#if defined(FP8ATTN_EMU_ASAN)
  __sanitizer_finish_switch_fiber(fake_stack_save, bottom_old, size_old);
#else
  (void)fake_stack_save, (void)bottom_old, (void)size_old;
#endif
}
// NOTE: TSan tracks each fiber as its own thread of execution; flags 0 (not
// __tsan_switch_to_fiber_no_sync) makes each switch a happens-before edge, which is exactly the
// ordering the scheduler provides: one fiber runs at a time on a host thread.
// NOTE: a fiber's stack is a fresh mapping, often at the address of one unmapped before, and a
// reset stack is laid out anew, while ASan may keep the shadow of the frames last there (their
// redzones). Once in CI it took a frame's own variable (the wgmma validation's message string)
// for a redzone, a stack-buffer-overflow with ASan's hint of a false positive under stack
// switching, and the run did not repeat. So the stack's shadow is cleared whenever a fiber's
// stack is laid out or unmapped (for large ranges ASan releases the shadow pages: cheap).
void clear_stack_shadow(void* base, size_t bytes) {
#if defined(FP8ATTN_EMU_ASAN)
  __asan_unpoison_memory_region(base, bytes);
#else
  (void)base, (void)bytes;
#endif
}

void tsan_switch(void* to) {
#if defined(FP8ATTN_EMU_TSAN)
  __tsan_switch_to_fiber(to, 0);
#else
  (void)to;
#endif
}

void fiber_trampoline(void* self) { static_cast<Fiber*>(self)->on_start(); }

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

}  // namespace

size_t default_fiber_stack_bytes() {
#if defined(FP8ATTN_EMU_ASAN) || defined(FP8ATTN_EMU_TSAN)
  // NOTE: 1 MiB, not 256 KiB: under AddressSanitizer the head_dim-256 forward consumer's frames
  // with their redzones plus the bank-conflict recorder's calls were measured past 128 KiB (a
  // 128 KiB stack fails inside ASan's own stack-frame check), and 256 KiB failed once in CI.
  // The mapping is MAP_NORESERVE, so untouched pages cost nothing.
  return 1024 * 1024;
#else
  return 64 * 1024;
#endif
}

Fiber::Fiber(size_t stack_bytes) {
  const size_t page = page_size();
  stack_bytes_ = (stack_bytes + page - 1) / page * page;
  mapping_bytes_ = stack_bytes_ + page;
  stack_mapping_ = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (stack_mapping_ == MAP_FAILED) throw std::bad_alloc();
  // NOTE: the lowest page is a guard: a kernel frame that overflows its 64 KiB faults at once
  // instead of silently overwriting the neighbouring fiber's stack.
  if (mprotect(stack_mapping_, page, PROT_NONE) != 0) {
    munmap(stack_mapping_, mapping_bytes_);
    throw std::bad_alloc();
  }
  stack_base_ = static_cast<char*>(stack_mapping_) + page;
#if defined(FP8ATTN_EMU_TSAN)
  tsan_fiber_ = __tsan_create_fiber(0);
#endif
}

Fiber::~Fiber() {
#if defined(FP8ATTN_EMU_TSAN)
  if (tsan_fiber_ != nullptr) __tsan_destroy_fiber(tsan_fiber_);
#endif
  clear_stack_shadow(stack_base_, stack_bytes_);
  munmap(stack_mapping_, mapping_bytes_);
}

void Fiber::reset(Entry entry, void* arg) {
  entry_ = entry;
  arg_ = arg;
  clear_stack_shadow(stack_base_, stack_bytes_);
  stack_pointer_ = prepare_stack(stack_base_, stack_bytes_, &fiber_trampoline, this);
}

void Fiber::resume(HostContext& host) {
  host_ = &host;
  start_switch(&host.fake_stack, stack_base_, stack_bytes_);
  tsan_switch(tsan_fiber_);
  switch_stack(&host.stack_pointer, stack_pointer_);
  finish_switch(host.fake_stack, nullptr, nullptr);
}

void Fiber::on_start() {
  finish_switch(nullptr, &host_->stack_bottom, &host_->stack_size);
  entry_(arg_);
  finish();
}

void Fiber::suspend() {
  start_switch(&fake_stack_, host_->stack_bottom, host_->stack_size);
  tsan_switch(host_->tsan_fiber);
  switch_stack(&stack_pointer_, host_->stack_pointer);
  finish_switch(fake_stack_, &host_->stack_bottom, &host_->stack_size);
}

void Fiber::finish() {
  // A null fake-stack slot tells ASan this fiber's frames are gone for good.
  start_switch(nullptr, host_->stack_bottom, host_->stack_size);
  tsan_switch(host_->tsan_fiber);
  void* abandoned = nullptr;  // this stack is never resumed: reset() lays out a fresh frame
  switch_stack(&abandoned, host_->stack_pointer);
  std::abort();  // never resumed
}

void host_context_init(HostContext& host) {
#if defined(FP8ATTN_EMU_TSAN)
  host.tsan_fiber = __tsan_get_current_fiber();
#else
  (void)host;
#endif
}

}  // namespace fp8attn::emu
