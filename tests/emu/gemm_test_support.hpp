// Inputs and the plain CPU reference of the GEMM tests (emulated and on a GPU): random FP8/BF16
// operands with garbage in the row padding, and a GEMM that adds in the
// kernels/ptx/mma_order.hpp order (per 32 bytes of K a chunk Σ a·b, k ascending from +0, then
// acc += chunk, the sum keeping the accumulator's mantissa bits: 13 for FP8, 23 for BF16).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#include "kernels/sm90/gemm/gemm_config.hpp"

namespace fp8attn::test {

using sm90::GemmInput;

struct Operands {
  std::vector<uint8_t> a, b;  // raw elements, rows padded to a multiple of 16 bytes
  int64_t lda = 0, ldb = 0;
};

inline int64_t padded_ld(int k, int e) { return ((static_cast<int64_t>(k) * e + 15) / 16 * 16) / e + 16 / e; }

/// Random inputs; the row padding holds non-zero garbage that a correct kernel never reads.
inline Operands make_operands(GemmInput type, int m, int n, int k, std::mt19937_64& rng) {
  const int e = type == GemmInput::BF16 ? 2 : 1;
  Operands o;
  o.lda = padded_ld(k, e);
  o.ldb = padded_ld(k, e);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  auto fill = [&](std::vector<uint8_t>& v, int rows, int64_t ld) {
    v.resize(static_cast<size_t>(rows) * ld * e);
    for (int r = 0; r < rows; ++r)
      for (int64_t c = 0; c < ld; ++c) {
        const float x = c < k ? nd(rng) : 100.0f;  // garbage past K
        uint8_t* p = &v[(static_cast<size_t>(r) * ld + c) * e];
        if (e == 1) {
          *p = num::float_to_e4m3(x);
        } else {
          const uint16_t h = num::float_to_bf16(x);
          std::memcpy(p, &h, 2);
        }
      }
  };
  fill(o.a, m, o.lda);
  fill(o.b, n, o.ldb);
  return o;
}

inline float element(GemmInput type, const std::vector<uint8_t>& v, size_t index) {
  if (type == GemmInput::E4M3) return num::e4m3_to_float(v[index]);
  uint16_t h;
  std::memcpy(&h, &v[2 * index], 2);
  return num::bf16_to_float(h);
}

/// Mantissa bits the emulated accumulator keeps by default: the FP22 accumulator of Hopper's FP8
/// wgmma (13 explicit bits), full FP32 for BF16.
inline int reference_accumulator_bits(GemmInput type) { return type == GemmInput::BF16 ? 23 : 13; }

/// The plain CPU GEMM in the documented order; each instruction's sum is truncated toward zero to
/// reference_accumulator_bits (the low bits masked here, independently of mma_order.hpp).
inline std::vector<float> reference_gemm(GemmInput type, const Operands& o, int m, int n, int k) {
  const int chunk_k = type == GemmInput::BF16 ? 16 : 32;  // 32 bytes of K per wgmma
  const uint32_t keep = ~((1u << (23 - reference_accumulator_bits(type))) - 1u);
  std::vector<float> c(static_cast<size_t>(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int k0 = 0; k0 < k; k0 += chunk_k) {
        float chunk = 0.0f;
        for (int kk = k0; kk < std::min(k, k0 + chunk_k); ++kk)
          chunk += element(type, o.a, static_cast<size_t>(i) * o.lda + kk) * element(type, o.b, static_cast<size_t>(j) * o.ldb + kk);
        acc += chunk;
        uint32_t u;
        std::memcpy(&u, &acc, 4);
        u &= keep;
        std::memcpy(&acc, &u, 4);
      }
      c[static_cast<size_t>(i) * n + j] = acc;
    }
  return c;
}

/// The FP8 tensor core's addition as an H200 showed it (GemmCuda.Fp8AccumulationProbe,
/// docs/gpu_runs/gpu_run_h200.md): per instruction, every addend (the accumulator and each of the 32
/// products) is cut toward zero to a multiple of 2^(e − 13), e the largest addend's exponent (a
/// product's from its inputs' exponents, ea + eb, E4M3 subnormals at −6), and the cut addends
/// are summed exactly. A hypothesis: about 90 % of the H200's random GEMM outputs bit for bit
/// (GemmCuda.MatchesTheReferenceOnRaggedShapes prints the count); the variants measured there
/// (the product's own exponent 82 %, 12 or 14 bits 4-10 %, the accumulator added after the
/// aligned products 0.3-5 %) fit worse. Not the engine's model (reference_gemm, mma_order.hpp).
inline std::vector<float> aligned_fp8_gemm(const Operands& o, int m, int n, int k) {
  constexpr int kChunk = 32, kBits = 13;
  auto exponent = [](float x) { return std::max(std::ilogb(x), -6); };
  std::vector<float> c(static_cast<size_t>(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int k0 = 0; k0 < k; k0 += kChunk) {
        double addends[kChunk];
        int count = 0, e = acc != 0.0f ? std::ilogb(acc) : INT32_MIN;
        for (int kk = k0; kk < std::min(k, k0 + kChunk); ++kk) {
          const float a = element(GemmInput::E4M3, o.a, static_cast<size_t>(i) * o.lda + kk);
          const float b = element(GemmInput::E4M3, o.b, static_cast<size_t>(j) * o.ldb + kk);
          if (a == 0.0f || b == 0.0f) continue;
          addends[count++] = static_cast<double>(a) * b;
          e = std::max(e, exponent(a) + exponent(b));
        }
        if (e == INT32_MIN) continue;
        const double step = std::ldexp(1.0, e - kBits);
        double sum = std::trunc(acc / step) * step;
        for (int t = 0; t < count; ++t) sum += std::trunc(addends[t] / step) * step;
        acc = static_cast<float>(sum);
      }
      c[static_cast<size_t>(i) * n + j] = acc;
    }
  return c;
}

/// A bound on |C − Σ_k a·b| (the exact sum) for one output of a GEMM that accumulates like a
/// wgmma under the accumulator model of kernels/ptx/mma_order.hpp, whatever order each
/// instruction sums its products in. `chunk_magnitudes[c]` = Σ |a·b| over instruction c's
/// `chunk_k` products (exact in FP32: E4M3 and BF16 products have at most 16 significant bits).
///  - The chunk: chunk_k products summed in FP32, chunk_k − 1 roundings of at most 2^-24 of a
///    partial sum each, so at most (chunk_k − 1)·2^-24·magnitude.
///  - The accumulation: acc + chunk rounded to FP32 (2^-24 relative) and truncated toward zero to
///    `mantissa_bits` explicit bits (less than 2^-mantissa_bits relative; none at 23 bits), of a
///    value no larger than the prefix Σ|a·b| so far plus the error already made.
/// At K = 1024 under the 13-bit FP8 model this is about K/32 · 2^-13 of Σ|a·b| in the worst case:
/// the truncations all round toward zero, so their errors add up instead of cancelling.
inline double accumulation_error_bound(const std::vector<double>& chunk_magnitudes, int chunk_k, int mantissa_bits) {
  const double u = 0x1.0p-24;
  const double truncation = mantissa_bits >= 23 ? 0.0 : std::ldexp(1.0, -mantissa_bits);
  double prefix = 0.0, bound = 0.0;
  for (double m : chunk_magnitudes) {
    prefix += m;
    bound += (chunk_k - 1) * u * m + (truncation + u) * (prefix + bound);
  }
  return bound;
}

/// Σ|a·b| of each instruction (chunk) of output (i, j), in the reference's chunking.
inline std::vector<double> chunk_magnitudes(GemmInput type, const Operands& o, int i, int j, int k) {
  const int chunk_k = type == GemmInput::BF16 ? 16 : 32;
  std::vector<double> m;
  for (int k0 = 0; k0 < k; k0 += chunk_k) {
    double s = 0.0;
    for (int kk = k0; kk < std::min(k, k0 + chunk_k); ++kk)
      s += std::fabs(static_cast<double>(element(type, o.a, static_cast<size_t>(i) * o.lda + kk)) *
                     element(type, o.b, static_cast<size_t>(j) * o.ldb + kk));
    m.push_back(s);
  }
  return m;
}

/// Σ_k a·b of output (i, j) in double: exact for E4M3 at these K (products span 2^-18..2^18 and
/// K ≤ 2^10 adds 10 bits: 46 < 53); for BF16 its rounding, at most K·2^-53 of Σ|a·b|, is far
/// below accumulation_error_bound.
inline double exact_dot(GemmInput type, const Operands& o, int i, int j, int k) {
  double s = 0.0;
  for (int kk = 0; kk < k; ++kk)
    s += static_cast<double>(element(type, o.a, static_cast<size_t>(i) * o.lda + kk)) *
         element(type, o.b, static_cast<size_t>(j) * o.ldb + kk);
  return s;
}

}  // namespace fp8attn::test
