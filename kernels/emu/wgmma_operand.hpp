// Where element (r, k) of a wgmma shared-memory operand lives, given its matrix descriptor
// (PTX ISA 9.0 §9.7.15.5.1.2.1 canonical layouts; the closed forms reproduce the strides of
// the PTX worked examples and CuTe make_gmma_desc). r is m for operand A and n for operand B;
// k is in [0, K) of one instruction, which always spans 32 bytes of K (two 16-byte chunks).
#pragma once

#include <cstdint>

#include "kernels/emu/swizzle.hpp"
#include "kernels/ptx/wgmma_descriptor.hpp"

namespace fp8attn::emu {

/// Storage order of a shared-memory operand: K-major (transpose immediate 0) or M/N-major (1).
enum class OperandMajor : uint8_t { K = 0, MN = 1 };

/// Unswizzled byte offset of element (r, k) from the descriptor's start address.
/// `element_bytes` is 1 (FP8) or 2 (BF16).
constexpr uint32_t wgmma_operand_offset(const arch::WgmmaDescriptorFields& d, OperandMajor major,
                                        uint32_t element_bytes, uint32_t r, uint32_t k) {
  const uint32_t per_chunk = 16u / element_bytes;  // elements per 16-byte chunk ("T")
  const uint32_t e = element_bytes;
  if (major == OperandMajor::K) {
    if (d.swizzle == arch::Swizzle::None)
      return (r >> 3) * d.stride_byte_offset + (r & 7u) * 16u + (k / per_chunk) * d.leading_byte_offset +
             (k % per_chunk) * e;
    const uint32_t span = arch::swizzle_span_bytes(d.swizzle);
    // NOTE: LBO is "not used, assumed to be 1" for swizzled K-major layouts (PTX 9.7.15.5.1.2.1).
    return (r >> 3) * d.stride_byte_offset + (r & 7u) * span + (k / per_chunk) * 16u + (k % per_chunk) * e;
  }
  if (d.swizzle == arch::Swizzle::None)
    return (r / per_chunk) * d.stride_byte_offset + (r % per_chunk) * e + (k & 7u) * 16u +
           (k >> 3) * d.leading_byte_offset;
  const uint32_t span = arch::swizzle_span_bytes(d.swizzle);
  const uint32_t per_row = span / e;  // elements of r in one swizzle row
  return (r / per_row) * d.leading_byte_offset + (r % per_row) * e + (k & 7u) * span + (k >> 3) * d.stride_byte_offset;
}

/// Physical .shared address of element (r, k): the swizzle applies to the absolute address.
constexpr uint32_t wgmma_operand_address(const arch::WgmmaDescriptorFields& d, OperandMajor major,
                                         uint32_t element_bytes, uint32_t r, uint32_t k) {
  return swizzle_address(d.start_address + wgmma_operand_offset(d, major, element_bytes, r, k), d.swizzle);
}

}  // namespace fp8attn::emu
