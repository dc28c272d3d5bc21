#include "lib/backend/emulated_device_ops.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/sm90/gemm/gemm_emulated.hpp"
#include "lib/core/error.hpp"

namespace fp8attn::emulated {
namespace {

/// Column-major D (m × n, ldd) = Aᵀ·B with A k × m (lda) and B k × n (ldb) column-major is, read
/// row-major, C[j][i] = Σ_k B_j[k]·A_i[k]: the project's TN GEMM with its A = cuBLASLt's B.
void fp8_tn_gemm(const gpu::BatchedGemmDesc& g, int32_t batch_index, const emu::LaunchConfig& schedule) {
  sm90::GemmProblem p;
  p.type = sm90::GemmInput::E4M3;
  p.a = static_cast<const uint8_t*>(g.b) + batch_index * g.stride_b;
  p.lda = g.ldb;
  p.b = static_cast<const uint8_t*>(g.a) + batch_index * g.stride_a;
  p.ldb = g.lda;
  p.c = g.d + batch_index * g.stride_d;
  p.ldc = g.ldd;
  p.m = static_cast<int>(g.n);
  p.n = static_cast<int>(g.m);
  p.k = static_cast<int>(g.k);
  try {
    sm90::run_gemm_emulated(p, schedule);
  } catch (const std::invalid_argument& e) {
    throw Error(FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND, std::string("FP8 GEMM refused: ") + e.what());
  } catch (const emu::KernelError& e) {
    throw Error(FP8ATTN_STATUS_DEVICE_ERROR, std::string("emulated FP8 GEMM kernel failed: ") + e.what());
  }
  // NOTE: cuBLASLt applies alpha to the FP32 accumulator; so does this, after the kernel.
  if (g.alpha != 1.0f)
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) p.c[j * g.ldd + i] *= g.alpha;
}

void f32_gemm(const gpu::BatchedGemmDesc& g, int32_t batch_index) {
  const float* a = static_cast<const float*>(g.a) + batch_index * g.stride_a;
  const float* b = static_cast<const float*>(g.b) + batch_index * g.stride_b;
  float* d = g.d + batch_index * g.stride_d;
  for (int64_t j = 0; j < g.n; ++j)
    for (int64_t i = 0; i < g.m; ++i) {
      float acc = 0.0f;
      for (int64_t k = 0; k < g.k; ++k) {
        const float x = g.trans_a ? a[i * g.lda + k] : a[k * g.lda + i];
        const float y = g.trans_b ? b[k * g.ldb + j] : b[j * g.ldb + k];
        acc = std::fma(x, y, acc);
      }
      d[j * g.ldd + i] = g.alpha * acc;
    }
}

float hashed_uniform(uint64_t seed, int head, int i) {
  // The CUDA kernel's start vector (libfp8attn_cuda's power-iteration kernel), bit for bit.
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(head + 1) * 1000003ull + static_cast<uint64_t>(i));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * 0x1.0p-23f - 1.0f;
}

float dot(const float* x, const float* y, int n) {
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) acc += x[i] * y[i];
  return acc;
}

void mat_vec(const float* m, int n, const float* x, float* y) {
  for (int i = 0; i < n; ++i) y[i] = dot(m + static_cast<int64_t>(i) * n, x, n);
}

}  // namespace

void gemm(const gpu::BatchedGemmDesc& g, const emu::LaunchConfig& schedule) {
  if (g.operand == gpu::GemmOperand::E4M3) {
    require(g.trans_a && !g.trans_b, FP8ATTN_STATUS_UNSUPPORTED_ON_BACKEND, "FP8 GEMMs must be TN (cuBLASLt's rule)");
    for (int32_t i = 0; i < g.batch; ++i) fp8_tn_gemm(g, i, schedule);
  } else {
    for (int32_t i = 0; i < g.batch; ++i) f32_gemm(g, i);
  }
}

void rescale_blocks(const gpu::RescaleDesc& r) {
  for (int32_t h = 0; h < r.count; ++h) {
    float* m = r.blocks + h * r.block_elems;
    float peak = 0.0f;
    for (int64_t i = 0; i < r.block_elems; ++i) peak = std::fmax(peak, std::fabs(m[i]));
    if (peak == 0.0f || !std::isfinite(peak)) continue;
    const float inv = 1.0f / peak;
    for (int64_t i = 0; i < r.block_elems; ++i) m[i] *= inv;
  }
}

void power_iteration(const gpu::PowerIterationDesc& d) {
  const int n = d.n;
  const int64_t square = static_cast<int64_t>(n) * n;
  std::vector<float> v(n), w(n), z(n), pv(n), r(n), gr(n);
  for (int h = 0; h < d.heads; ++h) {
    const float* p = d.power + h * square;
    const float* gq = d.grams_q + h * square;
    const float* gk = d.grams_k + (h / d.group) * square;
    for (int i = 0; i < n; ++i) v[i] = d.warm_start != nullptr ? d.warm_start[h * n + i] : 0.0f;
    if (dot(v.data(), v.data(), n) == 0.0f)
      for (int i = 0; i < n; ++i) v[i] = hashed_uniform(d.seed, h, i);
    const float inv_norm = 1.0f / std::sqrt(dot(v.data(), v.data(), n));
    for (float& x : v) x *= inv_norm;
    auto rayleigh = [&] {
      mat_vec(gk, n, v.data(), w.data());
      mat_vec(gq, n, w.data(), z.data());
      const float vw = dot(v.data(), w.data(), n), wz = dot(w.data(), z.data(), n);
      return vw > 0.0f ? wz / vw : 0.0f;
    };
    float lambda = rayleigh();
    int iterations = 0;
    for (int it = 0; it < d.max_iterations; ++it) {
      mat_vec(p, n, v.data(), pv.data());
      const float norm2 = dot(pv.data(), pv.data(), n);
      iterations = it + 1;
      if (norm2 == 0.0f || !std::isfinite(norm2)) break;
      const float inv = 1.0f / std::sqrt(norm2);
      for (int i = 0; i < n; ++i) v[i] = pv[i] * inv;
      const float previous = lambda;
      lambda = rayleigh();
      if (std::fabs(lambda - previous) <= d.tolerance * lambda) break;
    }
    lambda = std::fmax(lambda, 0.0f);
    // Residual in the symmetric frame: ‖S·y − λ·y‖² = rᵀ·G_K·r, r = G_Q·G_K·v − λ·v; ‖y‖² = vᵀ·w.
    const float vw = dot(v.data(), w.data(), n);
    for (int i = 0; i < n; ++i) r[i] = z[i] - lambda * v[i];
    mat_vec(gk, n, r.data(), gr.data());
    const float res2 = dot(r.data(), gr.data(), n);
    if (d.warm_start != nullptr) std::copy(v.begin(), v.end(), d.warm_start + h * n);
    d.sigma_out[h] = std::sqrt(lambda);
    if (d.iterations_out != nullptr) d.iterations_out[h] = iterations;
    if (d.residual_out != nullptr)
      d.residual_out[h] = (lambda > 0.0f && vw > 0.0f) ? std::sqrt(std::fmax(res2, 0.0f)) / (lambda * std::sqrt(vw)) : 0.0f;
  }
}

}  // namespace fp8attn::emulated
