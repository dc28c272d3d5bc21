#include "kernels/emu/stack_switch.hpp"

#include <cstdint>
#include <cstring>

#if !defined(__x86_64__)
#error "kernels/emu/stack_switch.cpp is written for x86-64 (the project's host architecture)"
#endif

// switch_stack(from = rdi, to = rsi). The frame it leaves on the suspended stack, from the stack
// pointer up: the control words (MXCSR at +0, x87 at +4), r15, r14, r13, r12, rbx, rbp, and the
// return address. prepare_stack builds the same frame by hand.
// fiber_start is where a prepared stack's first switch "returns" to: r12 holds the argument and
// r13 the entry; .cfi_undefined rip ends every unwind and backtrace there.
asm(R"(
  .pushsection .text
  .p2align 4
  .type fp8attn_emu_switch_stack, @function
fp8attn_emu_switch_stack:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size fp8attn_emu_switch_stack, .-fp8attn_emu_switch_stack

  .p2align 4
  .type fp8attn_emu_fiber_start, @function
fp8attn_emu_fiber_start:
  .cfi_startproc
  .cfi_undefined rip
  movq %r12, %rdi
  callq *%r13
  ud2
  .cfi_endproc
  .size fp8attn_emu_fiber_start, .-fp8attn_emu_fiber_start
  .popsection
)");

extern "C" void fp8attn_emu_switch_stack(void** from, void* to);
extern "C" void fp8attn_emu_fiber_start();

namespace fp8attn::emu {

void switch_stack(void** from, void* to) { fp8attn_emu_switch_stack(from, to); }

void* prepare_stack(void* base, size_t bytes, void (*entry)(void*), void* arg) {
  // The return address sits at an address ≡ 8 (mod 16): once `ret` pops it, fiber_start runs
  // with the stack pointer ≡ 0 (mod 16), as a call instruction needs it, and its call gives
  // entry the ABI's alignment.
  auto top = (reinterpret_cast<uintptr_t>(base) + bytes) & ~uintptr_t{15};
  auto* frame = reinterpret_cast<uint64_t*>(top - 16 - 8 * 8);
  uint32_t control[2] = {0, 0};
  asm volatile("stmxcsr %0\n\tfnstcw %1" : "+m"(control[0]), "+m"(control[1]));
  std::memcpy(&frame[0], control, sizeof control);
  frame[1] = 0;                                          // r15
  frame[2] = 0;                                          // r14
  frame[3] = reinterpret_cast<uint64_t>(entry);          // r13
  frame[4] = reinterpret_cast<uint64_t>(arg);            // r12
  frame[5] = 0;                                          // rbx
  frame[6] = 0;                                          // rbp
  frame[7] = reinterpret_cast<uint64_t>(&fp8attn_emu_fiber_start);  // return address
  return frame;
}

}  // namespace fp8attn::emu
