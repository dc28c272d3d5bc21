// The scratch panel_gemm (panel_gemm.hpp) may use: the operands the tensor core's FP8 addition on
// AVX-512 prepares once per call (panel_gemm_tensor_core_fp8_avx512.hpp), or the FP32
// accumulation on AVX512-BF16 (panel_gemm_fp32_bf16_avx512.hpp). The size is the same in
// every ISA build, so a workspace sized by one build serves any.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fp8attn::engine {

/// The rows kept per panel and per row of A: depth_total rounded up to a 32-deep instruction, plus
/// one more (an odd depth's last pair writes the row after it).
inline constexpr long panel_scratch_stride(int depth_total) { return (depth_total + 31) / 32 * 32 + 32; }

inline constexpr size_t round_up_64(size_t bytes) { return (bytes + 63) / 64 * 64; }

/// The deepest product whose FP32 accumulation runs on vdpbf16ps (panel_gemm_fp32_bf16_avx512.hpp).
inline constexpr int kBf16PairsMaxDepth = 256;
/// The deepest product the tensor core's FP8 addition takes in integers
/// (panel_gemm_tensor_core_fp8_avx512.hpp).
inline constexpr int kTensorCoreFp8MaxDepth = 256;

/// Bytes of the regions, without the 64 bytes that align the base; the larger of two layouts,
/// one per form that prepares operands:
///  - the tensor core's FP8 addition: B's exponent bytes [panel][stride][16] and words
///    [panel][stride / 2][3][32]; one row block's A exponent bytes [8][stride] and pairs
///    [3][8][kTensorCoreFp8MaxDepth / 2], 4 bytes each;
///  - the FP32 accumulation on vdpbf16ps: B's pairs [panel][depth / 2][16] and one row block's
///    A pairs [8][kBf16PairsMaxDepth / 2], 4 bytes each.
inline constexpr size_t panel_scratch_regions_bytes(int panels_count, int depth_total) {
  const size_t stride = static_cast<size_t>(panel_scratch_stride(depth_total)), panels = static_cast<size_t>(panels_count);
  const size_t tensor_core = round_up_64(panels * stride * 16) + round_up_64(panels * (stride / 2) * 3 * 64) +
                             round_up_64(8 * stride) + round_up_64(3 * 8 * (kTensorCoreFp8MaxDepth / 2) * 4);
  const size_t pairs = static_cast<size_t>(depth_total + 1) / 2;
  const size_t bf16 = round_up_64(panels * pairs * 16 * 4) + round_up_64(8 * (kBf16PairsMaxDepth / 2) * 4);
  return tensor_core > bf16 ? tensor_core : bf16;
}

/// The 64-byte aligned start of the regions in a caller's scratch of `bytes`, or null when the
/// scratch is null or too small for panels_count panels of depth_total rows.
inline void* panel_scratch_regions(void* scratch, size_t bytes, int panels_count, int depth_total) {
  if (scratch == nullptr) return nullptr;
  const auto at = reinterpret_cast<uintptr_t>(scratch);
  const uintptr_t aligned = (at + 63) / 64 * 64;
  if (bytes < aligned - at + panel_scratch_regions_bytes(panels_count, depth_total)) return nullptr;
  return reinterpret_cast<void*>(aligned);
}

/// What a caller passes to panel_gemm for up to `panels_count` panels of up to `depth_total` rows.
inline constexpr size_t panel_gemm_scratch_bytes(int panels_count, int depth_total) {
  return 64 + panel_scratch_regions_bytes(panels_count, depth_total);
}

/// A query or decode tile's two products: Q·Kᵀ over block_n / 16 panels of head_dim rows, P·V
/// over head_dim_v / 16 panels of block_n rows; one scratch serves both, one after the other.
inline constexpr size_t tile_products_scratch_bytes(int block_n, int head_dim, int head_dim_v) {
  const size_t qk = panel_gemm_scratch_bytes(block_n / 16, head_dim), pv = panel_gemm_scratch_bytes(head_dim_v / 16, block_n);
  return qk > pv ? qk : pv;
}

}  // namespace fp8attn::engine
