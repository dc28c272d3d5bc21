// Host semantics of the tiled bulk tensor copies (PTX ISA 9.0 §9.7.9.25.5, cp.async.bulk.tensor),
// called by kernels/arch/tma.hpp on the emulator build.
//
//   - Load: the box at coordinates c (innermost first) is written to shared memory as a dense
//     array, dimension 0 fastest (PTX ISA 9.0 §5.5: shared memory is "linear"), each byte at
//     swizzle(dst + offset) (§5.5.7). Box elements outside the tensor in any dimension are
//     written as zero (§5.5.3.3, OOB fill NONE). The copy then performs complete_tx on the
//     mbarrier with the full box byte count, zero-filled elements included.
//   - Store: the box is read from shared memory the same way and written to global memory;
//     elements outside the tensor are not written; coordinates must be non-negative
//     (PTX ISA 9.0 §9.7.9.25.5.1).
// Both run at issue; the race check sees the shared-memory side as an async-proxy access of the
// issuing thread, released to other threads by the load's mbarrier.
// The shared-memory box must be 128-byte aligned (the PTX ISA's 16 bytes, §5.5.3.1, or the CUDA
// Programming Guide's 128, which could not be confirmed: the stricter one is enforced), and
// aligned to the swizzle period when swizzled, so that the pattern's base offset is 0 (the only
// case documented).
#pragma once

#include <cstdint>

#include "kernels/ptx/tma_tensor_map.hpp"

namespace fp8attn::emu {

/// A box copy of `rank` coordinates (the tensor map's rank).
void tma_load_tile(void* smem_dst, const arch::TensorMapSpec& map, uint64_t* mbar, const int32_t* coords, int rank);
void tma_store_tile(const arch::TensorMapSpec& map, const void* smem_src, const int32_t* coords, int rank);

}  // namespace fp8attn::emu
