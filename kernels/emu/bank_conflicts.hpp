// Shared-memory wavefronts of an emulated launch: how many shared-memory cycles (wavefronts) each
// warp's accesses would take on the device, against the conflict-free minimum of the same bytes.
// Off unless LaunchConfig::smem_traffic points at a SmemTraffic; then every CTA adds its counts.
//
// NOTE: the model, from the CUDA C++ Programming Guide (compute capability 5.x and later, which
// Hopper keeps: "Shared Memory" of the compute-capability appendix) and the Nsight Compute
// profiling guide's shared-memory "wavefronts":
// - shared memory is 32 banks of 4 bytes; word w (byte offset / 4) lives in bank w % 32 and in the
//   128-byte line w / 32. One wavefront serves at most one line per bank.
// - a warp's access is served per phase: 32 lanes for accesses of at most 4 bytes, half-warps
//   (lanes 0-15, 16-31) for 8-byte and quarter-warps for 16-byte accesses, so a warp's 128-bit
//   access takes at least 4 wavefronts.
// - in a phase, lanes that touch the same word share it (broadcast on loads; one of them wins on
//   stores): the phase takes as many wavefronts as the most distinct lines any one bank is asked
//   for (1 when conflict-free).
// - ldmatrix / stmatrix (.m8n8.b16): each 8x16-byte matrix is one phase over the 8 lanes that give
//   its row addresses (PTX ISA 9.0 §9.7.14.5.15-16; CUTLASS/CuTe's "conflict-free" ldmatrix
//   layouts are those whose 8 rows fall in 8 different 16-byte bank groups): one wavefront when
//   conflict-free, so .x4 takes at least 4.
// - wgmma operand reads (a model, not from a document): the tensor core reads an operand in core
//   matrices of 8 rows x 16 bytes (the canonical layouts of PTX ISA 9.0 §9.7.15.5.1), each one
//   phase like an ldmatrix matrix; B is counted once per wgmma, not per warp of the warpgroup.
// - TMA copies: whole 128-byte lines, box bytes / 128 wavefronts (the swizzle never conflicts).
// The minimum of an access is the number of phases that have a lane, times nothing more than
// ceil(distinct words / 32) each: the bytes it moves at one line per wavefront.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace fp8attn::emu {

/// Wavefronts of some shared-memory instructions and their conflict-free minimum.
struct SmemWavefronts {
  uint64_t instructions = 0;
  uint64_t wavefronts = 0;
  uint64_t minimum = 0;
  SmemWavefronts& operator+=(const SmemWavefronts& o) {
    instructions += o.instructions, wavefronts += o.wavefronts, minimum += o.minimum;
    return *this;
  }
};

/// How shared memory was reached.
enum class SmemPath : int {
  Generic = 0,  ///< ld.shared / st.shared (arch::smem_load / smem_store)
  Matrix,       ///< ldmatrix / stmatrix
  Tensor,       ///< wgmma operand reads (counted on the warpgroup's first warp)
  AsyncCopy,    ///< TMA loads and stores (counted on the issuing thread's warp)
  kCount
};
inline constexpr int kSmemPaths = static_cast<int>(SmemPath::kCount);

/// What a launch adds up, over all its CTAs. Give one to LaunchConfig::smem_traffic.
struct SmemTraffic {
  /// [warp of the CTA][path]: summed over the launch's CTAs.
  std::vector<std::array<SmemWavefronts, kSmemPaths>> per_warp;
  /// Generic accesses per call site ("file:line"), summed over warps and CTAs.
  std::map<std::string, SmemWavefronts> per_site;
  uint64_t ctas = 0;
  std::mutex mutex;  ///< CTAs on different host threads add their counts under it

  /// The sum over warps [first, last) of one path.
  SmemWavefronts warps(unsigned first, unsigned last, SmemPath path) const {
    SmemWavefronts s;
    for (unsigned w = first; w < last && w < per_warp.size(); ++w) s += per_warp[w][static_cast<int>(path)];
    return s;
  }
};

/// One warp-wide access of `bytes` per lane (1, 2, 4, 8 or 16; the same for every lane) by the
/// lanes in active_mask, lane l at shared-memory byte offset offsets[l]: its wavefronts under the
/// model above (instructions = 1).
SmemWavefronts warp_access_wavefronts(const uint32_t (&offsets)[32], uint32_t active_mask, uint32_t bytes);

/// An ldmatrix / stmatrix of `count` matrices (1, 2, 4) whose row addresses lanes 0..8·count−1 give.
SmemWavefronts matrix_access_wavefronts(const uint32_t (&row_offsets)[32], int count);

}  // namespace fp8attn::emu
