// The tensor core's addition written out a second time for tests, independently of
// kernels/ptx/mma_order.hpp: in double with std::ilogb, std::trunc and std::ldexp instead of bit
// masks. For one instruction (the accumulator and k_len products):
//  1. E = the largest exponent of the non-zero addends (a product's ea + eb, an input at least
//     its format's minimum normal exponent `emin`; the accumulator's at least -126);
//  2. every addend cut toward zero to a multiple of 2^(E - F), F = 13 (FP8) or 25 (BF16);
//  3. the cut addends summed exactly (double: at most 32 significant bits here);
//  4. the sum cut toward zero to 13 (FP8) or 23 (BF16) fraction bits at its own exponent.
// Finite inputs only.
#pragma once

#include <algorithm>
#include <climits>
#include <cmath>
#include <vector>

namespace fp8attn::test {

struct TensorCoreWidths {
  int align_bits;   ///< F
  int result_bits;  ///< fraction bits kept by step 4
  int emin;         ///< the inputs' minimum normal exponent
};
inline constexpr TensorCoreWidths kE4m3Widths{13, 13, -6};
inline constexpr TensorCoreWidths kE5m2Widths{13, 13, -14};
inline constexpr TensorCoreWidths kBf16Widths{25, 23, -126};

/// The largest 2^(ea + eb) of one instruction's non-zero products (0 when there is none).
inline double reference_top_product(const float* a, const float* b, int k_len, int emin) {
  int e = INT_MIN;
  for (int k = 0; k < k_len; ++k)
    if (a[k] != 0.0f && b[k] != 0.0f) e = std::max(e, std::max(std::ilogb(a[k]), emin) + std::max(std::ilogb(b[k]), emin));
  return e == INT_MIN ? 0.0 : std::ldexp(1.0, e);
}

inline float reference_tensor_core_instruction(float acc, const float* a, const float* b, int k_len,
                                               const TensorCoreWidths& w) {
  int e = acc != 0.0f ? std::max(std::ilogb(acc), -126) : INT_MIN;
  for (int k = 0; k < k_len; ++k)
    if (a[k] != 0.0f && b[k] != 0.0f) e = std::max(e, std::max(std::ilogb(a[k]), w.emin) + std::max(std::ilogb(b[k]), w.emin));
  if (e == INT_MIN) return 0.0f;  // every addend is zero
  const double step = std::ldexp(1.0, e - w.align_bits);
  double sum = std::trunc(static_cast<double>(acc) / step) * step;
  for (int k = 0; k < k_len; ++k) sum += std::trunc(static_cast<double>(a[k]) * b[k] / step) * step;
  if (sum == 0.0) return 0.0f;
  const double unit = std::ldexp(1.0, std::max(std::ilogb(sum), -126) - w.result_bits);
  return static_cast<float>(std::trunc(sum / unit) * unit);
}

/// Per instruction of one output: Σ|a·b| and reference_top_product, for the error bound below.
struct InstructionMagnitude {
  double sum_abs;
  double top;
};

/// A bound on |C − Σ_k a·b| (the exact sum) for one output of a chain of instructions under the
/// rule. Per instruction with E its largest exponent: its K + 1 addends each lose less than
/// 2^(E − F) to the cut, 2^E being at most max(top, |acc|) and |acc| at most the prefix Σ|a·b|
/// plus the error so far; step 4 loses less than 2^-R of the result. NOTE: the cuts all go
/// toward zero, so the errors add up rather than cancel: about K/32 · 2^-13 of Σ|a·b| for FP8.
inline double tensor_core_error_bound(const std::vector<InstructionMagnitude>& chunks, int k_instr,
                                      const TensorCoreWidths& w) {
  double prefix = 0.0, bound = 0.0;
  for (const InstructionMagnitude& m : chunks) {
    const double acc = prefix + bound;
    prefix += m.sum_abs;
    const double cut = (k_instr + 1) * std::ldexp(std::max(m.top, acc), -w.align_bits);
    bound += cut + std::ldexp(prefix + bound + cut, -w.result_bits);
  }
  return bound;
}

}  // namespace fp8attn::test
