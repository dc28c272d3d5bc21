// Inputs and the plain CPU reference of the GEMM tests (emulated and on a GPU): random FP8/BF16
// operands with garbage in the row padding, and a GEMM that chains instructions of 32 bytes of K
// under the tensor core's addition (tests/common/tensor_core_reference.hpp, written
// independently of kernels/ptx/mma_order.hpp).
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
#include "tests/common/tensor_core_reference.hpp"
#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"

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

/// The rule's widths for the GEMM's input type.
inline const TensorCoreWidths& gemm_widths(GemmInput type) { return type == GemmInput::BF16 ? kBf16Widths : kE4m3Widths; }
inline int gemm_instruction_k(GemmInput type) { return type == GemmInput::BF16 ? 16 : 32; }  // 32 bytes of K

/// Row i of A and row j of B (B is stored N x K) as floats, K wide.
inline void gemm_rows(GemmInput type, const Operands& o, int i, int j, int k, std::vector<float>& a, std::vector<float>& b) {
  a.resize(k);
  b.resize(k);
  for (int kk = 0; kk < k; ++kk) {
    a[kk] = element(type, o.a, static_cast<size_t>(i) * o.lda + kk);
    b[kk] = element(type, o.b, static_cast<size_t>(j) * o.ldb + kk);
  }
}

/// The plain CPU GEMM: per output, instructions over K chained from +0 (a short last one holds
/// the remaining products), each by reference_tensor_core_instruction.
inline std::vector<float> reference_gemm(GemmInput type, const Operands& o, int m, int n, int k) {
  const int chunk_k = gemm_instruction_k(type);
  std::vector<float> c(static_cast<size_t>(m) * n), a, b;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      gemm_rows(type, o, i, j, k, a, b);
      float acc = 0.0f;
      for (int k0 = 0; k0 < k; k0 += chunk_k)
        acc = reference_tensor_core_instruction(acc, &a[k0], &b[k0], std::min(chunk_k, k - k0), gemm_widths(type));
      c[static_cast<size_t>(i) * n + j] = acc;
    }
  return c;
}

/// Σ|a·b| and the largest 2^(ea + eb) of each instruction of output (i, j), for
/// tensor_core_error_bound.
inline std::vector<InstructionMagnitude> chunk_magnitudes(GemmInput type, const Operands& o, int i, int j, int k) {
  const int chunk_k = gemm_instruction_k(type);
  std::vector<float> a, b;
  gemm_rows(type, o, i, j, k, a, b);
  std::vector<InstructionMagnitude> m;
  for (int k0 = 0; k0 < k; k0 += chunk_k) {
    const int len = std::min(chunk_k, k - k0);
    double s = 0.0;
    for (int kk = k0; kk < k0 + len; ++kk) s += std::fabs(static_cast<double>(a[kk]) * b[kk]);
    m.push_back({s, reference_top_product(&a[k0], &b[k0], len, gemm_widths(type).emin)});
  }
  return m;
}

/// Probe rows (B = ones, K = 64: two instructions, the second all zeros) whose exact sum needs
/// more than 13 fraction bits at its own exponent: the first instruction's final cut (step 4)
/// removes the 2^-5, and without that cut the second instruction's alignment would remove it
/// again (its grid is 2^(9 - 13) from the accumulator alone), so the chain's output is the same
/// either way; the rows pin the value and the cut's direction on negative sums. `predicted` is
/// the rule's output, worked by hand: 256 + 256 + 2^-5 = 512 + 2^-5 → 512.
struct ProbeRow {
  const char* name;
  std::vector<float> a;
  float predicted;
};
inline std::vector<ProbeRow> step4_probe_rows() {
  auto row = [](float x, float y, float z) {
    std::vector<float> r(64, 0.0f);
    r[0] = x, r[1] = y, r[2] = z;
    return r;
  };
  const float t5 = 1.0f / 32;
  return {{"256, 256, 2^-5", row(256.0f, 256.0f, t5), 512.0f},
          {"448, 448, 2^-5", row(448.0f, 448.0f, t5), 896.0f},
          {"-256, -256, -2^-5", row(-256.0f, -256.0f, -t5), -512.0f},
          {"-448, -448, -2^-5", row(-448.0f, -448.0f, -t5), -896.0f}};
}

/// Σ_k a·b of output (i, j) in double: exact for E4M3 at these K (products span 2^-18..2^18 and
/// K ≤ 2^10 adds 10 bits: 46 < 53); for BF16 its rounding, at most K·2^-53 of Σ|a·b|, is far
/// below tensor_core_error_bound.
inline double exact_dot(GemmInput type, const Operands& o, int i, int j, int k) {
  double s = 0.0;
  for (int kk = 0; kk < k; ++kk)
    s += static_cast<double>(element(type, o.a, static_cast<size_t>(i) * o.lda + kk)) *
         element(type, o.b, static_cast<size_t>(j) * o.ldb + kk);
  return s;
}

}  // namespace fp8attn::test
