// The emulator's stack switch: from one fiber (or the host thread) to another, in user space.
//
// NOTE: why not swapcontext: glibc's swapcontext also saves and restores the signal mask, a
// system call at every switch, and the emulator switches at every barrier, mbarrier wait and
// shared-memory access of 384 threads per CTA: the switches were a sixth of an emulated kernel's
// time. Only what the x86-64 System V ABI has the callee keep is saved here: rbx, rbp, r12–r15,
// the stack pointer, and the SSE and x87 control words.
#pragma once

#include <cstddef>

namespace fp8attn::emu {

/// Saves the current context on the current stack, stores its stack pointer in *from, and resumes
/// the context whose stack pointer is `to` (saved by an earlier switch_stack, or made by
/// prepare_stack). Returns when some later switch_stack resumes *from.
void switch_stack(void** from, void* to);

/// Lays out a fresh stack [base, base + bytes) so that the first switch_stack to the returned
/// stack pointer calls entry(arg) on it. entry must never return (it switches away for good).
void* prepare_stack(void* base, size_t bytes, void (*entry)(void*), void* arg);

}  // namespace fp8attn::emu
