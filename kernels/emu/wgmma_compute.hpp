// The arithmetic of one emulated wgmma.mma_async: operand gathering through the fragment and
// descriptor layouts, then the instruction's addition of kernels/ptx/mma_order.hpp.
// Independent of the scheduler, so tests can drive it directly.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "kernels/emu/wgmma_operand.hpp"
#include "kernels/ptx/mma_order.hpp"
#include "kernels/ptx/wgmma_fragment.hpp"

namespace fp8attn::emu {

/// Input element type of a wgmma operand: the formats the addition rule knows.
using MmaInputType = arch::MmaFormat;

constexpr uint32_t mma_input_bytes(MmaInputType t) { return t == MmaInputType::BF16 ? 2u : 1u; }
/// K of one instruction: 32 bytes of K.
constexpr int mma_instruction_k(MmaInputType t) { return t == MmaInputType::BF16 ? arch::kMmaKBf16 : arch::kMmaKFp8; }

/// Everything one wgmma.mma_async needs, gathered from the 128 threads of a warpgroup.
struct WgmmaOperation {
  int n = 0;  // N of m64nNk*
  MmaInputType type_a = MmaInputType::E4M3;
  MmaInputType type_b = MmaInputType::E4M3;
  bool a_from_registers = false;
  OperandMajor major_a = OperandMajor::K;
  OperandMajor major_b = OperandMajor::K;
  bool scale_d = true;  // false: D = A·B; true: D = A·B + D
  uint64_t desc_a = 0;  // unused when a_from_registers
  uint64_t desc_b = 0;
  std::array<std::array<uint32_t, 4>, arch::kWarpgroupThreads> a_registers{};  // RS form, per thread
  std::array<float*, arch::kWarpgroupThreads> accumulators{};                  // N/2 floats per thread
};

/// Reads `bytes` bytes at .shared address `address` of the issuing CTA (bounds-checked by the
/// implementation; throws on an out-of-range operand).
using SmemReader = std::function<const uint8_t*(uint32_t address, uint32_t bytes)>;

/// Checks the operation against the ISA's rules (shape, types, majors, descriptor fields) and
/// throws std::invalid_argument naming the rule broken.
void validate_wgmma_operation(const WgmmaOperation& op);

/// Executes the operation: D(m, n) = [D(m, n) ⊕] Σ_k A(m, k)·B(k, n), each element by
/// arch::mma_instruction under the model's rule for the operation's input formats.
void execute_wgmma(const WgmmaOperation& op, const SmemReader& read_smem, arch::MmaPrecisionModel model);

}  // namespace fp8attn::emu
