// Launch geometry of the combine kernel, shared by the emulator and CUDA launchers and the
// backend's host code (which includes no kernel).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/sm90/combine/combine_params.hpp"

namespace fp8attn::sm90::combine {

inline constexpr unsigned kCombineWarps = 4;
inline constexpr unsigned kCombineThreads = kCombineWarps * 32;
/// One weight per part for each warp's row.
inline constexpr unsigned kCombineSmemBytes = kCombineWarps * kMaxParts * sizeof(float);

/// Most CTAs of one launch; the kernel loops over the rows beyond them.
inline constexpr int64_t kMaxCombineCtas = int64_t{1} << 16;

/// CTAs of the launch for p: one per kCombineWarps rows, at most kMaxCombineCtas.
inline unsigned combine_ctas(const CombineParams& p) {
  const int64_t ctas = (row_count(p) + kCombineWarps - 1) / kCombineWarps;
  return static_cast<unsigned>(ctas < kMaxCombineCtas ? ctas : kMaxCombineCtas);
}

/// Why the kernel cannot run p ("" when it can).
inline std::string kernel_refusal(const CombineParams& p) {
  if (p.num_parts < 1 || p.num_parts > kMaxParts)
    return "the combine kernel merges 1 to " + std::to_string(kMaxParts) + " parts, not " + std::to_string(p.num_parts);
  if ((p.partial_out == nullptr || p.out == nullptr) && p.head_dim > 0) return "partial_out or out is null";
  if (p.partial_lse == nullptr) return "partial_lse is null";
  return "";
}

}  // namespace fp8attn::sm90::combine
