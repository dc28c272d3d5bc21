// wgmma.mma_async and its synchronization (PTX ISA 9.0 §9.7.15): the kernel-facing API. Under
// nvcc the calls are inline PTX (wgmma_ptx.hpp); under the host compiler they go to the
// emulator (kernels/emu/wgmma.hpp), which runs each instruction at the wait_group that covers it.
//
// Usage, per warpgroup (all 128 threads make every call):
//   wgmma_fence();                              // before the first mma and after touching acc
//   wgmma_fp8<N>(acc, desc_a, desc_b, scale_d); // one or more, same accumulator
//   wgmma_commit_group();
//   wgmma_wait_group<0>();                      // before reading acc
//   wgmma_fence_operand(acc);                   // keep the compiler from reading acc early
#pragma once

#include <cstdint>

#include "kernels/arch/platform.hpp"
#include "kernels/ptx/wgmma_descriptor.hpp"
#include "kernels/ptx/wgmma_fragment.hpp"

#if FP8ATTN_DEVICE_BUILD
#include "kernels/arch/wgmma_ptx.hpp"
#else
#include "kernels/emu/wgmma.hpp"
#endif

namespace fp8attn::arch {

/// FP8 input format of a wgmma (both operands share it).
enum class Fp8Format : uint8_t { E4M3, E5M2 };
/// Storage order of a BF16 shared-memory operand: the transpose immediate (0 = K-major).
enum class WgmmaMajor : int { K = 0, MN = 1 };

/// The F32 accumulator fragment of an m64nN wgmma: N/2 registers per thread, laid out as in
/// wgmma_fragment.hpp (wgmma_d_coord).
template <int N>
struct WgmmaAccF32 {
  static_assert(N >= 16 && N <= 256 && N % 16 == 0, "wgmma N must be 16..256 in steps of 16");
  static constexpr int kRegisters = N / 2;
  float reg[kRegisters];
  FP8ATTN_HOST_DEVICE float& operator[](int i) { return reg[i]; }
  FP8ATTN_HOST_DEVICE const float& operator[](int i) const { return reg[i]; }
};

/// An A operand held in registers (RS form): four .b32 registers, packed 2 x BF16 or 4 x FP8
/// per register, lowest element in the lowest bits (wgmma_a_bf16_coord / wgmma_a_fp8_coord).
struct WgmmaAFragment {
  uint32_t reg[4];
};

/// D = A·B (+ D when accumulate): m64nNk32, FP8 x FP8 -> F32, A and B from shared memory.
/// FP8 operands are K-major only (PTX ISA 9.0 §9.7.15.5.2: no transpose for FP8).
template <int N, Fp8Format kFormat = Fp8Format::E4M3>
FP8ATTN_ARCH_FN void wgmma_fp8(WgmmaAccF32<N>& acc, uint64_t desc_a, uint64_t desc_b, bool accumulate) {
#if FP8ATTN_DEVICE_BUILD
  ptx::Wgmma<N>::template fp8_ss<kFormat == Fp8Format::E5M2>(acc.reg, desc_a, desc_b, accumulate ? 1u : 0u);
#else
  emu::WgmmaIssue issue;
  issue.n = N;
  issue.type = kFormat == Fp8Format::E5M2 ? emu::MmaInputType::E5M2 : emu::MmaInputType::E4M3;
  issue.desc_a = desc_a;
  issue.desc_b = desc_b;
  issue.scale_d = accumulate;
  issue.accumulators = acc.reg;
  emu::wgmma_mma_async(issue);
#endif
}

/// As above with A from registers (RS form).
template <int N, Fp8Format kFormat = Fp8Format::E4M3>
FP8ATTN_ARCH_FN void wgmma_fp8(WgmmaAccF32<N>& acc, const WgmmaAFragment& a, uint64_t desc_b, bool accumulate) {
#if FP8ATTN_DEVICE_BUILD
  ptx::Wgmma<N>::template fp8_rs<kFormat == Fp8Format::E5M2>(acc.reg, a.reg, desc_b, accumulate ? 1u : 0u);
#else
  emu::WgmmaIssue issue;
  issue.n = N;
  issue.type = kFormat == Fp8Format::E5M2 ? emu::MmaInputType::E5M2 : emu::MmaInputType::E4M3;
  issue.a_from_registers = true;
  issue.a_registers = a.reg;
  issue.desc_b = desc_b;
  issue.scale_d = accumulate;
  issue.accumulators = acc.reg;
  emu::wgmma_mma_async(issue);
#endif
}

/// D = A·B (+ D): m64nNk16, BF16 x BF16 -> F32, A and B from shared memory, each K- or MN-major.
template <int N, WgmmaMajor kMajorA = WgmmaMajor::K, WgmmaMajor kMajorB = WgmmaMajor::K>
FP8ATTN_ARCH_FN void wgmma_bf16(WgmmaAccF32<N>& acc, uint64_t desc_a, uint64_t desc_b, bool accumulate) {
#if FP8ATTN_DEVICE_BUILD
  ptx::Wgmma<N>::template bf16_ss<static_cast<int>(kMajorA), static_cast<int>(kMajorB)>(acc.reg, desc_a, desc_b,
                                                                                        accumulate ? 1u : 0u);
#else
  emu::WgmmaIssue issue;
  issue.n = N;
  issue.type = emu::MmaInputType::BF16;
  issue.major_a = static_cast<emu::OperandMajor>(kMajorA);
  issue.major_b = static_cast<emu::OperandMajor>(kMajorB);
  issue.desc_a = desc_a;
  issue.desc_b = desc_b;
  issue.scale_d = accumulate;
  issue.accumulators = acc.reg;
  emu::wgmma_mma_async(issue);
#endif
}

/// As above with A from registers (K-major by construction).
template <int N, WgmmaMajor kMajorB = WgmmaMajor::K>
FP8ATTN_ARCH_FN void wgmma_bf16(WgmmaAccF32<N>& acc, const WgmmaAFragment& a, uint64_t desc_b, bool accumulate) {
#if FP8ATTN_DEVICE_BUILD
  ptx::Wgmma<N>::template bf16_rs<static_cast<int>(kMajorB)>(acc.reg, a.reg, desc_b, accumulate ? 1u : 0u);
#else
  emu::WgmmaIssue issue;
  issue.n = N;
  issue.type = emu::MmaInputType::BF16;
  issue.a_from_registers = true;
  issue.a_registers = a.reg;
  issue.major_b = static_cast<emu::OperandMajor>(kMajorB);
  issue.desc_b = desc_b;
  issue.scale_d = accumulate;
  issue.accumulators = acc.reg;
  emu::wgmma_mma_async(issue);
#endif
}

/// wgmma.fence.sync.aligned (PTX ISA 9.0 §9.7.15.7.1): orders earlier register accesses before
/// the next wgmma.mma_async. Required before the first mma and after any access to its
/// accumulator or A registers.
FP8ATTN_ARCH_FN void wgmma_fence() {
#if FP8ATTN_DEVICE_BUILD
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#else
  emu::wgmma_fence();
#endif
}

/// wgmma.commit_group.sync.aligned (§9.7.15.7.2): closes the pending mmas into one group.
FP8ATTN_ARCH_FN void wgmma_commit_group() {
#if FP8ATTN_DEVICE_BUILD
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#else
  emu::wgmma_commit_group();
#endif
}

/// wgmma.wait_group.sync.aligned N (§9.7.15.7.3): returns when at most kPending of the most
/// recent groups are still pending and every earlier group is complete.
template <int kPending>
FP8ATTN_ARCH_FN void wgmma_wait_group() {
  static_assert(kPending >= 0 && kPending <= 7, "wait_group N is kept in 0..7 (CuTe's range)");
#if FP8ATTN_DEVICE_BUILD
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#else
  emu::wgmma_wait_group(kPending);
#endif
}

/// A compiler-only barrier on the accumulator registers: without it nvcc may read an
/// accumulator before the wait_group that makes it valid, since the asm of the mma already
/// "produced" it. No instruction is emitted (CuTe warpgroup_fence_operand does the same).
template <int N>
FP8ATTN_ARCH_FN void wgmma_fence_operand(WgmmaAccF32<N>& acc) {
#if FP8ATTN_DEVICE_BUILD
#pragma unroll
  for (int i = 0; i < WgmmaAccF32<N>::kRegisters; ++i) asm volatile("" : "+f"(acc.reg[i])::"memory");
#else
  (void)acc;
#endif
}

}  // namespace fp8attn::arch
