// Inputs and the plain CPU reference of the GEMM tests (emulated and on a GPU): random FP8/BF16
// operands with garbage in the row padding, and a GEMM that adds in the
// kernels/arch/mma_order.hpp order (per 32 bytes of K a chunk Σ a·b, k ascending from +0, then
// acc += chunk).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/sm90/gemm/gemm_config.hpp"
#include "lib/numerics/bfloat16.hpp"
#include "lib/numerics/float8.hpp"

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

/// The plain CPU GEMM in the documented order.
inline std::vector<float> reference_gemm(GemmInput type, const Operands& o, int m, int n, int k) {
  const int chunk_k = type == GemmInput::BF16 ? 16 : 32;  // 32 bytes of K per wgmma
  std::vector<float> c(static_cast<size_t>(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int k0 = 0; k0 < k; k0 += chunk_k) {
        float chunk = 0.0f;
        for (int kk = k0; kk < std::min(k, k0 + chunk_k); ++kk)
          chunk += element(type, o.a, static_cast<size_t>(i) * o.lda + kk) * element(type, o.b, static_cast<size_t>(j) * o.ldb + kk);
        acc += chunk;
      }
      c[static_cast<size_t>(i) * n + j] = acc;
    }
  return c;
}

}  // namespace fp8attn::test
