// The order in which an emulated wgmma adds its products, written once for the emulator and the
// CPU tile engine (which must be bit-equal to kernels run under the emulator).
//
// NOTE: the tensor core's internal summation order is not public. This is the emulator's
// documented order: one wgmma instruction of depth K (32 for E4M3, 16 for BF16) computes, per
// output element, chunk = Σ_k a[k]·b[k] in FP32 with k ascending from +0.0f, then adds chunk
// into the accumulator with one FP32 add (scale-d = 0 means acc = chunk, i.e. 0 + chunk).
// Products of E4M3 or BF16 values are exact in FP32 (at most 8 + 8 significant bits), so only
// the additions round, and an FMA gives the same bits as a multiply then an add.
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

/// Explicit mantissa bits of Hopper's FP8 wgmma accumulator as measured in public: FP22, i.e.
/// 1 sign + 8 exponent + 13 mantissa bits, the low 10 bits of the FP32 value truncated
/// (SageAttention2's experiment: A = B = 0, scale-d = 1, D = 0x3F8003FF comes back 0x3F800000;
/// DeepGEMM's maintainers say the same). "22" is the total width, not the mantissa.
/// NOTE: a model from public measurements. An H200 (docs/gpu_runs/gpu_run_h200.md) keeps 13 bits, but
/// per addend: it aligns the accumulator and each product of an instruction to the largest
/// one's exponent and cuts each toward zero 13 bits below it before adding, so products far
/// below the largest vanish even when the large ones cancel. This chunk-sum model gets 4-13 %
/// of random FP8 GEMM outputs bit for bit there, the aligned rule (aligned_fp8_gemm in
/// tests/emu/gemm_test_support.hpp) about 90 %; adopting it here is open work.
inline constexpr int kFp8AccumulatorMantissaBits = 13;

/// The accumulator-precision model: the tensor core's accumulator keeps `chunk_mantissa_bits`
/// explicit mantissa bits, so each instruction's result D = C + chunk is truncated toward zero
/// to that many bits. 23 (the struct's default) is full FP32, i.e. the model is off; FP8 MMAs
/// use fp8_accumulator_model() by default (the engine and the emulator alike), BF16 MMAs full
/// FP32. Two-level accumulation (adding a fresh accumulator into an FP32 sum on the CUDA cores
/// every N blocks) bounds how many truncated additions an output sees. NOTE: DeepSeek-V3 reports
/// about 14 effective bits for FP8 GEMMs on H800, consistent with 13 explicit bits.
struct MmaPrecisionModel {
  int chunk_mantissa_bits = kFp32MantissaBits;
};

/// The default model of an FP8 (E4M3/E5M2) wgmma's accumulator: 13 explicit mantissa bits.
FP8ATTN_MMA_HD constexpr MmaPrecisionModel fp8_accumulator_model() { return MmaPrecisionModel{kFp8AccumulatorMantissaBits}; }

/// Truncates x toward zero to `bits` explicit mantissa bits (0 ≤ bits ≤ 23); NaN and ±inf are
/// returned unchanged. NOTE: the NaN test is on the bits: with `x != x` before the masking,
/// GCC 12 at -O1 and above folded the whole function to `return x` once inlined.
FP8ATTN_MMA_HD inline float truncate_mantissa(float x, int bits) {
  if (bits >= kFp32MantissaBits || bits < 0) return x;
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7F800000u) == 0x7F800000u) return x;  // NaN keeps its payload; inf has none to lose
  u &= ~((1u << (kFp32MantissaBits - bits)) - 1u);
  float y;
  std::memcpy(&y, &u, sizeof y);
  return y;
}

/// chunk = Σ_{k<k_len} a(k)·b(k), k ascending from +0.0f.
template <class A, class B>
FP8ATTN_MMA_HD inline float mma_chunk(int k_len, A&& a, B&& b) {
  float chunk = 0.0f;
  for (int k = 0; k < k_len; ++k) chunk = chunk + a(k) * b(k);
  return chunk;
}

/// acc + chunk, truncated by the precision model (a no-op at 23 bits).
FP8ATTN_MMA_HD inline float mma_chunk_accumulate(float acc, float chunk, MmaPrecisionModel model = {}) {
  return truncate_mantissa(acc + chunk, model.chunk_mantissa_bits);
}

}  // namespace fp8attn::arch
