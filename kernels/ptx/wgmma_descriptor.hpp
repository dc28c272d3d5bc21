// The 64-bit shared-memory matrix descriptor of wgmma.mma_async on sm_90a
// (PTX ISA 9.0 §9.7.15.5.1.2.2 "Matrix Descriptor Format"; CuTe mma_sm90_desc.hpp agrees).
//
//   bits 13-0   start address >> 4 (the .shared window address, 18-bit range)
//   bits 29-16  leading dimension byte offset (LBO) >> 4
//   bits 45-32  stride dimension byte offset (SBO) >> 4
//   bits 51-49  matrix base offset (this project requires 0: how the hardware uses a non-zero
//               base offset is not documented, so swizzled buffers start on their pattern period)
//   bits 63-62  layout: 0 = no swizzle (interleave), 1 = 128B, 2 = 64B, 3 = 32B
//
// NOTE: the layout codes differ from the TMA swizzle enum (32B = 1 ... 128B = 3); keep the two
// apart through the typed enums below.
#pragma once

#include <cstdint>

#include "kernels/ptx/build_switch.hpp"

namespace fp8attn::arch {

/// Shared-memory swizzle mode, shared by wgmma descriptors and TMA (each encodes it its own way).
enum class Swizzle : uint8_t { None = 0, B32 = 1, B64 = 2, B128 = 3 };

/// Width in bytes of one swizzle row (the span whose 16-byte chunks are permuted); 16 for none.
FP8ATTN_HOST_DEVICE constexpr uint32_t swizzle_span_bytes(Swizzle s) {
  return s == Swizzle::B128 ? 128u : s == Swizzle::B64 ? 64u : s == Swizzle::B32 ? 32u : 16u;
}

/// Alignment of a swizzled buffer so that its base offset is 0: 1024 / 512 / 256 bytes
/// (PTX ISA 9.0 §9.7.15.5.1.2.2 and §5.5.7; CUTLASS alignment_for_swizzle).
FP8ATTN_HOST_DEVICE constexpr uint32_t swizzle_period_bytes(Swizzle s) {
  return s == Swizzle::None ? 16u : swizzle_span_bytes(s) * 8u;
}

/// Physical .shared address (or offset from a buffer on the pattern's period) of the logical one
/// under swizzle mode `s` (PTX ISA 9.0 §5.5.7; CuTe Swizzle<B,4,3>): bits [4, 4+B) ^= bits
/// [7, 7+B), the 16-byte chunk inside a 128-byte line XORed with the line index modulo 2 / 4 / 8.
FP8ATTN_HOST_DEVICE constexpr uint32_t swizzle_address(uint32_t address, Swizzle s) {
  return s == Swizzle::B128  ? address ^ ((address >> 3) & 0x70u)
         : s == Swizzle::B64 ? address ^ ((address >> 3) & 0x30u)
         : s == Swizzle::B32 ? address ^ ((address >> 3) & 0x10u)
                             : address;
}

/// GMMA descriptor layout code of a swizzle mode (bits 63-62).
FP8ATTN_HOST_DEVICE constexpr uint64_t wgmma_layout_code(Swizzle s) {
  return s == Swizzle::B128 ? 1u : s == Swizzle::B64 ? 2u : s == Swizzle::B32 ? 3u : 0u;
}

/// Inverse of wgmma_layout_code.
FP8ATTN_HOST_DEVICE constexpr Swizzle swizzle_from_wgmma_layout_code(uint64_t code) {
  return code == 1u ? Swizzle::B128 : code == 2u ? Swizzle::B64 : code == 3u ? Swizzle::B32 : Swizzle::None;
}

/// The fields of a descriptor, in bytes (the encoding keeps 16-byte granularity).
struct WgmmaDescriptorFields {
  uint32_t start_address = 0;  // .shared window address
  uint32_t leading_byte_offset = 0;
  uint32_t stride_byte_offset = 0;
  uint32_t base_offset = 0;
  Swizzle swizzle = Swizzle::None;
};

/// The 14-bit encoding of an address or offset: (x & 0x3FFFF) >> 4.
FP8ATTN_HOST_DEVICE constexpr uint64_t wgmma_desc_encode14(uint32_t bytes) {
  return static_cast<uint64_t>((bytes & 0x3FFFFu) >> 4);
}

/// Builds a descriptor. Start address, LBO and SBO must be multiples of 16 bytes
/// (PTX ISA 9.0 §9.7.15.5.1: "aligned to 16 bytes").
FP8ATTN_HOST_DEVICE constexpr uint64_t make_wgmma_descriptor(uint32_t smem_address, uint32_t leading_byte_offset,
                                                            uint32_t stride_byte_offset, Swizzle swizzle) {
  return wgmma_desc_encode14(smem_address) | (wgmma_desc_encode14(leading_byte_offset) << 16) |
         (wgmma_desc_encode14(stride_byte_offset) << 32) | (wgmma_layout_code(swizzle) << 62);
}

/// Decodes a descriptor into byte quantities.
FP8ATTN_HOST_DEVICE constexpr WgmmaDescriptorFields decode_wgmma_descriptor(uint64_t desc) {
  WgmmaDescriptorFields f;
  f.start_address = static_cast<uint32_t>(desc & 0x3FFFu) << 4;
  f.leading_byte_offset = static_cast<uint32_t>((desc >> 16) & 0x3FFFu) << 4;
  f.stride_byte_offset = static_cast<uint32_t>((desc >> 32) & 0x3FFFu) << 4;
  f.base_offset = static_cast<uint32_t>((desc >> 49) & 0x7u);
  f.swizzle = swizzle_from_wgmma_layout_code((desc >> 62) & 0x3u);
  return f;
}

/// Moves the start address by `bytes` (a multiple of 16) with the other fields unchanged. This
/// is how a kernel steps K inside a swizzle atom: the offset added is the *unswizzled* one,
/// and the swizzle, a function of the absolute address, does the rest (CuTe
/// DescriptorIterator::operator+ adds to the low bits the same way).
FP8ATTN_HOST_DEVICE constexpr uint64_t wgmma_descriptor_advance(uint64_t desc, uint32_t bytes) {
  return desc + wgmma_desc_encode14(bytes);
}

}  // namespace fp8attn::arch
