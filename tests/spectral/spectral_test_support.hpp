// Shared by the spectral tests: seeded random weights, ABI tensor views, a context, and an
// independent double-precision reference (cyclic Jacobi on the formed MᵀM) for σ.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "fp8attn/fp8attn.h"

namespace fp8attn::test {

/// A row-major F32 matrix [rows, cols].
struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<float> data;
  float& at(int64_t r, int64_t c) { return data[r * cols + c]; }
  float at(int64_t r, int64_t c) const { return data[r * cols + c]; }
};

/// Random weights with a decaying spectrum: W = A·diag(s)·B + noise, s_i = exp(−i/decay).
inline Matrix random_weights(int64_t rows, int64_t cols, uint64_t seed, double decay = 8.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01(0.0, 1.0);
  const int64_t rank = std::min<int64_t>(std::min(rows, cols), 32);
  std::vector<double> a(rows * rank), b(rank * cols);
  for (auto& x : a) x = n01(rng) / std::sqrt(static_cast<double>(rows));
  for (auto& x : b) x = n01(rng) / std::sqrt(static_cast<double>(cols));
  Matrix w{rows, cols, std::vector<float>(rows * cols)};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double acc = 0.02 * n01(rng) / std::sqrt(static_cast<double>(cols));
      for (int64_t k = 0; k < rank; ++k) acc += a[r * rank + k] * std::exp(-k / decay) * b[k * cols + c];
      w.at(r, c) = static_cast<float>(acc);
    }
  return w;
}

/// A host tensor view [rows, cols] of `data` with the given strides (elements).
inline fp8attn_tensor tensor_view(void* data, int32_t dtype, int64_t rows, int64_t cols, int64_t row_stride,
                                  int64_t col_stride) {
  fp8attn_tensor t{};
  t.struct_size = sizeof t;
  t.data = data;
  t.dtype = dtype;
  t.device = FP8ATTN_DEVICE_HOST;
  t.rank = 2;
  t.shape[0] = rows;
  t.shape[1] = cols;
  t.stride[0] = row_stride;
  t.stride[1] = col_stride;
  return t;
}

inline fp8attn_tensor tensor_view(Matrix& m) {
  return tensor_view(m.data.data(), FP8ATTN_DTYPE_F32, m.rows, m.cols, m.cols, 1);
}

/// A CPU context, destroyed at scope end.
struct CpuContext {
  fp8attn_context ctx = nullptr;
  explicit CpuContext(int32_t threads = 0) {
    fp8attn_context_options o{};
    o.struct_size = sizeof o;
    o.backend = FP8ATTN_BACKEND_CPU;
    o.num_threads = threads;
    o.log_level = FP8ATTN_LOG_ERROR;
    EXPECT_EQ(fp8attn_context_create(&o, &ctx, nullptr), FP8ATTN_OK);
  }
  ~CpuContext() { fp8attn_context_destroy(ctx); }
};

/// Largest eigenvalue of a symmetric n × n double matrix by cyclic Jacobi rotations (converges
/// to machine precision; independent of the power iteration under test).
inline double jacobi_max_eigenvalue(std::vector<double> a, int n) {
  for (int sweep = 0; sweep < 60; ++sweep) {
    double off = 0.0;
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j) off += a[i * n + j] * a[i * n + j];
    if (off < 1e-30) break;
    for (int p = 0; p < n; ++p)
      for (int q = p + 1; q < n; ++q) {
        const double apq = a[p * n + q];
        if (std::fabs(apq) < 1e-300) continue;
        const double theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0), s = t * c;
        for (int k = 0; k < n; ++k) {
          const double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (int k = 0; k < n; ++k) {
          const double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
      }
  }
  double best = a[0];
  for (int i = 1; i < n; ++i) best = std::max(best, a[i * n + i]);
  return best;
}

/// ‖W_Q,hᵀ·R·W_K,g‖₂ from the formed d × d product in double, where `rotate` (may be empty)
/// is a d_h × d_h matrix applied between the projections. `wq`, `wk` hold the head's rows as
/// floats read through the dtype (`q_rows`, `k_rows`: d_h × d).
inline double reference_sigma(const std::vector<double>& q_rows, const std::vector<double>& k_rows, int dh, int d,
                              const std::vector<double>& rotate = {}) {
  std::vector<double> rk(k_rows);
  if (!rotate.empty()) {
    for (int i = 0; i < dh; ++i)
      for (int c = 0; c < d; ++c) {
        double acc = 0.0;
        for (int j = 0; j < dh; ++j) acc += rotate[i * dh + j] * k_rows[j * d + c];
        rk[i * d + c] = acc;
      }
  }
  std::vector<double> m(static_cast<size_t>(d) * d, 0.0);  // M = W_Qᵀ·(R·W_K)
  for (int i = 0; i < dh; ++i)
    for (int r = 0; r < d; ++r)
      for (int c = 0; c < d; ++c) m[r * d + c] += q_rows[i * d + r] * rk[i * d + c];
  std::vector<double> mtm(static_cast<size_t>(d) * d, 0.0);
  for (int r = 0; r < d; ++r)
    for (int k = 0; k < d; ++k)
      for (int c = 0; c < d; ++c) mtm[r * d + c] += m[k * d + r] * m[k * d + c];
  return std::sqrt(std::max(0.0, jacobi_max_eigenvalue(mtm, d)));
}

/// Rows [head·dh, head·dh + dh) of an F32 matrix, as doubles.
inline std::vector<double> head_rows(const Matrix& w, int head, int dh) {
  std::vector<double> out(static_cast<size_t>(dh) * w.cols);
  for (int i = 0; i < dh; ++i)
    for (int64_t c = 0; c < w.cols; ++c) out[i * w.cols + c] = w.at(head * dh + i, c);
  return out;
}

}  // namespace fp8attn::test
