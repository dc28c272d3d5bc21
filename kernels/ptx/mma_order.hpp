// How one wgmma instruction adds its products into the accumulator, written once for the emulator
// and the CPU tile engine (which must be bit-equal to kernels run under the emulator).
//
// Two accumulations (MmaAccumulation):
//  - TensorCore (the default): Hopper's exact addition, as measured by F. A. Khattak and
//    M. Mikaitis, "Accurate Models of NVIDIA Tensor Cores" (arXiv:2512.07004), on H100 and H200.
//    For one instruction (FP8: 32 products plus the accumulator; BF16: 16 products plus it):
//     1. E = the largest exponent among the non-zero addends. A product's exponent is ea + eb,
//        the inputs' own exponents (a subnormal input counts at its format's minimum normal
//        exponent: -6 E4M3, -14 E5M2, -126 BF16), not the exponent of the rounded product; the
//        accumulator's is its FP32 exponent (-126 for an FP32 subnormal).
//     2. Every addend is cut toward zero (on its magnitude) to a multiple of 2^(E - F): F = 13
//        for FP8, 25 for BF16.
//     3. The cut addends are added exactly.
//     4. The sum is normalised and cut toward zero to 13 (FP8) or 23 (BF16) fraction bits.
//    A GEMM chains instructions: each output is the next instruction's accumulator, so step 4
//    applies after every instruction (two-level promotion reads those mid-chain values).
//    tests/data/tensor_core_vectors holds 15,000 measured instructions this reproduces bit for bit.
//  - Fp32: the chunk sum Σ_k a[k]·b[k] in FP32 with k ascending from +0.0f, then one FP32 add into
//    the accumulator. Products of E4M3 or BF16 values are exact in FP32, so only the additions
//    round, and an FMA gives the same bits as a multiply then an add.
//
// NOTE: why FP32 sums are exact for FP8 (F = 13): after the cut every addend is a multiple of
// u = 2^(E-13) below 2^(E+2) (a product's significand is below 4), so any partial sum of 33 of
// them is a multiple of u below 2^(E+8): at most 21 significant bits, exact in FP32 in any order.
// The smallest u is 2^-41 (two E5M2 subnormals) or 2^-139 (an accumulator alone), both above
// FP32's 2^-149. For BF16 (F = 25) the sum needs 32 bits: products and sums run in double (a BF16
// product has 16 significant bits, 17 addends below 2^(E+2) in units of 2^(E-25) need 32 < 53).
// The cut itself is a mask of the value's low bits, chosen from its own exponent and E.
// NOTE: not measured, so modelled as IEEE would: NaN and ±inf addends propagate through the exact
// sum (inf - inf = NaN), a NaN result is NVIDIA's canonical NaN, a sum of exactly zero is +0, a sum
// beyond FP32's range becomes ±inf.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define FP8ATTN_MMA_HD __host__ __device__
#else
#define FP8ATTN_MMA_HD
#endif

namespace fp8attn::arch {

inline constexpr int kMmaKFp8 = 32;   ///< K of one E4M3/E5M2 wgmma (m64nNk32)
inline constexpr int kMmaKBf16 = 16;  ///< K of one BF16 wgmma (m64nNk16)
inline constexpr int kFp32MantissaBits = 23;

/// The rule's alignment width F and result fraction bits, per input family.
inline constexpr int kFp8AlignBits = 13;
inline constexpr int kBf16AlignBits = 25;
inline constexpr int kFp8ResultBits = 13;   ///< FP8 outputs keep 13 fraction bits (low 10 bits zero)
inline constexpr int kBf16ResultBits = 23;  ///< BF16 outputs are full FP32 values
/// The exponent of a zero addend: far below any real one, so it never decides E, and the sum of
/// two stays far from int32's limits.
inline constexpr int32_t kNoExponent = -(1 << 20);

enum class MmaFormat : uint8_t { E4M3, E5M2, BF16 };

enum class MmaAccumulation : uint8_t {
  Fp32 = 0,        ///< chunk sum in FP32 from +0, k ascending, then one FP32 add
  TensorCore = 1,  ///< Hopper's exact addition (the file comment)
};

/// How the emulated or CPU-computed tensor core accumulates. Value-initialised: Fp32.
struct MmaPrecisionModel {
  MmaAccumulation accumulation = MmaAccumulation::Fp32;
};

/// The default of the library, the engine and the emulator: the tensor core's addition.
FP8ATTN_MMA_HD constexpr MmaPrecisionModel tensor_core_accumulation() { return MmaPrecisionModel{MmaAccumulation::TensorCore}; }

FP8ATTN_MMA_HD constexpr int min_normal_exponent(MmaFormat f) {
  return f == MmaFormat::E4M3 ? -6 : f == MmaFormat::E5M2 ? -14 : -126;
}

/// Everything one instruction's addition needs, resolved from the model and the input formats.
struct MmaRule {
  bool tensor_core = false;
  bool wide_sum = false;  ///< BF16: products and the exact sum in double (see the file comment)
  int align_bits = kFp8AlignBits;
  int result_bits = kFp8ResultBits;
  int32_t emin_a = -6;
  int32_t emin_b = -6;
};

FP8ATTN_MMA_HD constexpr MmaRule mma_rule(MmaPrecisionModel model, MmaFormat a, MmaFormat b) {
  const bool bf16 = a == MmaFormat::BF16;
  MmaRule r{};
  r.tensor_core = model.accumulation == MmaAccumulation::TensorCore;
  r.wide_sum = bf16;
  r.align_bits = bf16 ? kBf16AlignBits : kFp8AlignBits;
  r.result_bits = bf16 ? kBf16ResultBits : kFp8ResultBits;
  r.emin_a = min_normal_exponent(a);
  r.emin_b = min_normal_exponent(b);
  return r;
}

FP8ATTN_MMA_HD inline uint32_t float_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
FP8ATTN_MMA_HD inline float bits_float(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

/// Truncates x toward zero to `bits` explicit mantissa bits (0 ≤ bits ≤ 23) at its own exponent
/// (an FP32 subnormal at -126); NaN and ±inf are returned unchanged. NOTE: the NaN test is on the
/// bits: with `x != x` before the masking, GCC 12 at -O1 and above folded the whole function to
/// `return x` once inlined.
FP8ATTN_MMA_HD inline float truncate_mantissa(float x, int bits) {
  if (bits >= kFp32MantissaBits || bits < 0) return x;
  uint32_t u = float_bits(x);
  if ((u & 0x7F800000u) == 0x7F800000u) return x;  // NaN keeps its payload; inf has none to lose
  u &= ~((1u << (kFp32MantissaBits - bits)) - 1u);
  return bits_float(u);
}

/// Step 1's exponent of one input (or, with emin = -126, of an FP32 accumulator): its own
/// exponent, at least emin; kNoExponent for ±0. Branch-free so the engine's loops vectorize.
FP8ATTN_MMA_HD inline int32_t mma_input_exponent(float x, int32_t emin) {
  const uint32_t u = float_bits(x);
  const int32_t e = static_cast<int32_t>((u >> 23) & 0xFFu) - 127;
  const int32_t clamped = e < emin ? emin : e;
  return (u & 0x7FFFFFFFu) == 0 ? kNoExponent : clamped;
}

FP8ATTN_MMA_HD inline int32_t mma_accumulator_exponent(float c) { return mma_input_exponent(c, -126); }

/// Step 2 on a float: x cut toward zero to a multiple of 2^unit_exp (NaN and ±inf unchanged).
/// NOTE: n low bits of the encoding lie below 2^unit_exp; n ≥ 24 means |x| < 2^unit_exp (±0
/// remains), and the encoding's exponent bits must then not be shifted into the mask.
FP8ATTN_MMA_HD inline float mma_cut(float x, int32_t unit_exp) {
  const uint32_t u = float_bits(x);
  const int32_t field = static_cast<int32_t>((u >> 23) & 0xFFu);
  const int32_t own = (field == 0 ? 1 : field) - 127;  // a subnormal's bits count from -126
  const int32_t n = unit_exp - own + 23;
  uint32_t mask = n <= 0 ? ~0u : (n >= 24 ? 0x80000000u : ~0u << n);
  mask = field == 0xFF ? ~0u : mask;
  return bits_float(u & mask);
}

/// Step 2 on a double (the BF16 sums): the same cut on a binary64 encoding.
FP8ATTN_MMA_HD inline double mma_cut(double x, int32_t unit_exp) {
  uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  const int32_t field = static_cast<int32_t>((u >> 52) & 0x7FFu);
  const int32_t own = (field == 0 ? 1 : field) - 1023;
  const int32_t n = unit_exp - own + 52;
  uint64_t mask = n <= 0 ? ~0ull : (n >= 53 ? (1ull << 63) : ~0ull << n);
  mask = field == 0x7FF ? ~0ull : mask;
  u &= mask;
  double y;
  std::memcpy(&y, &u, sizeof y);
  return y;
}

/// NVIDIA's canonical FP32 NaN, which a NaN result becomes. NOTE: which NaN an IEEE sum of two
/// NaNs returns depends on the operand order the compiler picks (addition commutes), so without
/// this the engine's and the emulator's NaN bits could differ; the tensor core's NaN output is
/// not measured here.
inline constexpr uint32_t kCanonicalNan = 0x7FFFFFFFu;

/// Step 4 on an exact FP32 sum: `bits` fraction bits at its own exponent; NaN → kCanonicalNan.
FP8ATTN_MMA_HD inline float mma_result(float sum, int bits) {
  const uint32_t u = float_bits(sum);
  return (u & 0x7FFFFFFFu) > 0x7F800000u ? bits_float(kCanonicalNan) : truncate_mantissa(sum, bits);
}

/// Step 4 on an exact double sum: cut toward zero to `bits` fraction bits at its own exponent
/// (at -126 when it is below FP32's normal range), then converted, which is then exact.
FP8ATTN_MMA_HD inline float mma_result(double sum, int bits) {
  uint64_t u;
  std::memcpy(&u, &sum, sizeof u);
  const int32_t field = static_cast<int32_t>((u >> 52) & 0x7FFu);
  const int32_t own = field - 1023;
  if ((u & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull) return bits_float(kCanonicalNan);
  return static_cast<float>(mma_cut(sum, (own < -126 ? -126 : own) - bits));
}

/// One instruction under the tensor core's addition: acc ⊕ Σ_{k<k_len} a(k)·b(k), Sum = float
/// for FP8, double for BF16 (see the file comment). A missing product (k_len below the
/// instruction's K) is a zero one, so a tail instruction needs no padding.
template <class Sum, class A, class B>
FP8ATTN_MMA_HD inline float mma_tensor_core_instruction(float acc, int k_len, A&& a, B&& b, const MmaRule& rule) {
  int32_t e = mma_accumulator_exponent(acc);
  for (int k = 0; k < k_len; ++k) {
    const int32_t ek = mma_input_exponent(a(k), rule.emin_a) + mma_input_exponent(b(k), rule.emin_b);
    e = ek > e ? ek : e;
  }
  const int32_t unit = e - rule.align_bits;
  Sum sum = static_cast<Sum>(0);  // +0: an exactly zero sum comes out +0 whatever the signs
  sum += mma_cut(static_cast<Sum>(acc), unit);
  for (int k = 0; k < k_len; ++k) sum += mma_cut(static_cast<Sum>(a(k)) * static_cast<Sum>(b(k)), unit);
  return mma_result(sum, rule.result_bits);
}

/// chunk = Σ_{k<k_len} a(k)·b(k), k ascending from +0.0f (the Fp32 accumulation's chunk).
template <class A, class B>
FP8ATTN_MMA_HD inline float mma_chunk(int k_len, A&& a, B&& b) {
  float chunk = 0.0f;
  for (int k = 0; k < k_len; ++k) chunk = chunk + a(k) * b(k);
  return chunk;
}

/// One instruction under `rule`: the new accumulator from the old one (+0 for scale-d = 0) and
/// the instruction's k_len products a(k)·b(k). The reference form every vectorized copy (the
/// engine's tile products) must match bit for bit.
template <class A, class B>
FP8ATTN_MMA_HD inline float mma_instruction(float acc, int k_len, A&& a, B&& b, const MmaRule& rule) {
  if (!rule.tensor_core) return acc + mma_chunk(k_len, a, b);
  return rule.wide_sum ? mma_tensor_core_instruction<double>(acc, k_len, a, b, rule)
                       : mma_tensor_core_instruction<float>(acc, k_len, a, b, rule);
}

}  // namespace fp8attn::arch
