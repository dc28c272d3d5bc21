// Host semantics of wgmma.mma_async, fence, commit_group and wait_group (PTX ISA 9.0 §9.7.15),
// called by kernels/arch/wgmma.hpp on the emulator build.
//
// The asynchronous model (PTX ISA 9.0 §9.7.15.7): an mma is only *recorded* at issue; it runs
// when a wgmma.wait_group retires the group that holds it. A kernel that reads its accumulators
// before the covering wait therefore reads the old values and fails visibly, and a kernel that
// releases a shared-memory stage before the wait sees the stage's next contents in its result,
// as it could on the hardware. Besides, the emulator reports (KernelError):
//   - an accumulator register written between issue and the covering wait (compared bit for bit
//     against a snapshot taken at issue);
//   - an RS-form A register rewritten between issue and the covering wait (PTX ISA 9.0
//     §9.7.15.7.3: undefined behaviour; on the hardware the mma may read the new value). The
//     thread's four registers are copied at issue and compared with the kernel's fragment when
//     the wait retires the mma; the mma runs on the issue-time copy. The fragment must therefore
//     stay alive until that wait, as its registers must on the hardware;
//   - an mma issued without a wgmma.fence since the warpgroup's last wait_group (stricter than the
//     ISA, which asks for the fence only after the registers were touched; every kernel of this
//     project touches them after each wait);
//   - operands that differ between the threads of the warpgroup (descriptors, N, types, scale-d);
//   - FP8 operands that are not K-major, a non-zero descriptor base offset, an operand outside the
//     CTA's shared memory.
// All four calls are collective over the warpgroup: its 128 threads must each make them.
// A-from-register fragments are read at issue (each thread's four registers are copied then).
// Accumulation: every mma adds by LaunchConfig::mma_model when the launch sets it, else by the
// process-wide model below (default arch::tensor_core_accumulation(): Hopper's exact addition,
// for FP8 and BF16 inputs alike, kernels/ptx/mma_order.hpp).
#pragma once

#include <cstdint>

#include "kernels/emu/wgmma_compute.hpp"
#include "kernels/ptx/mma_order.hpp"

namespace fp8attn::emu {

/// One thread's operands of one wgmma.mma_async.
struct WgmmaIssue {
  int n = 0;
  MmaInputType type = MmaInputType::E4M3;  // A and B share the input type
  bool a_from_registers = false;
  const uint32_t* a_registers = nullptr;  // the kernel's 4 registers, RS form only; read at issue and
                                          // again at the covering wait (must stay alive until then)
  OperandMajor major_a = OperandMajor::K;
  OperandMajor major_b = OperandMajor::K;
  uint64_t desc_a = 0;
  uint64_t desc_b = 0;
  bool scale_d = true;
  float* accumulators = nullptr;  // n/2 registers
};

void wgmma_mma_async(const WgmmaIssue& issue);
void wgmma_fence();
void wgmma_commit_group();
void wgmma_wait_group(int pending);

/// The accumulation of every emulated mma from now on, in launches whose LaunchConfig::mma_model
/// is empty (process-wide; default arch::tensor_core_accumulation()). The CPU engine must use the same model for bit-equality; prefer
/// the per-launch LaunchConfig::mma_model, which concurrent launches do not share.
void set_wgmma_precision_model(arch::MmaPrecisionModel model);
arch::MmaPrecisionModel wgmma_precision_model();

}  // namespace fp8attn::emu
