#include "tools/stabilized_bias_study/bf16_flash_reference.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/sm90/softmax_math.hpp"

namespace fp8attn::study {
namespace {

float bf16(double x) { return num::round_to_bf16(static_cast<float>(x)); }

}  // namespace

std::vector<float> bf16_flash_forward(const workloads::AttentionShape& shape, const workloads::DequantizedInputs& in,
                                      int block_n, bool stabilized) {
  const int64_t d = shape.head_dim, heads = shape.heads_q;
  const float scale = bf16(1.0 / std::sqrt(static_cast<double>(d)));
  std::vector<float> out(static_cast<size_t>(shape.seqlen_q * heads * d));
  std::vector<float> s(static_cast<size_t>(block_n)), p(s.size()), o(static_cast<size_t>(d)), pv(o.size());
  for (int64_t row = 0; row < shape.seqlen_q; ++row)
    for (int64_t h = 0; h < heads; ++h) {
      const double* q = &in.q[static_cast<size_t>((row * heads + h) * d)];
      float m = -INFINITY, l = 0.0f;
      std::fill(o.begin(), o.end(), 0.0f);
      for (int64_t j0 = 0; j0 < shape.seqlen_k; j0 += block_n) {
        const int n = static_cast<int>(std::min<int64_t>(block_n, shape.seqlen_k - j0));
        float block_max = -INFINITY;
        for (int j = 0; j < n; ++j) {  // S = bf16(bf16(q·k) · scale), the einsum then the scaling
          const double* k = &in.k[static_cast<size_t>(((j0 + j) * heads + h) * d)];
          float dot = 0.0f;
          for (int64_t e = 0; e < d; ++e) dot += static_cast<float>(q[e] * k[e]);
          s[static_cast<size_t>(j)] = bf16(bf16(dot) * scale);
          block_max = std::max(block_max, s[static_cast<size_t>(j)]);
        }
        if (stabilized) {  // the shared rule, in the already-scaled units (scale_log2 of 1·log2 e)
          int ties = 0;
          for (int j = 0; j < n; ++j) ties += s[static_cast<size_t>(j)] >= block_max - 1e-3f;
          block_max = sm90::stabilized_block_max(block_max, ties, 2.0f, 16.0f, static_cast<float>(M_LOG2E));
        }
        const float m_new = std::max(m, block_max);
        float block_sum = 0.0f;
        for (int j = 0; j < n; ++j) {
          p[static_cast<size_t>(j)] = bf16(std::exp(static_cast<double>(bf16(s[static_cast<size_t>(j)] - m_new))));
          block_sum += p[static_cast<size_t>(j)];
        }
        std::fill(pv.begin(), pv.end(), 0.0f);
        for (int j = 0; j < n; ++j) {
          const double* v = &in.v[static_cast<size_t>(((j0 + j) * heads + h) * d)];
          for (int64_t e = 0; e < d; ++e) pv[static_cast<size_t>(e)] += p[static_cast<size_t>(j)] * static_cast<float>(v[e]);
        }
        const float alpha = bf16(std::exp(static_cast<double>(bf16(m - m_new))));
        l = bf16(bf16(alpha * l) + bf16(block_sum));
        for (int64_t e = 0; e < d; ++e)
          o[static_cast<size_t>(e)] = bf16(bf16(o[static_cast<size_t>(e)] * alpha) + bf16(pv[static_cast<size_t>(e)]));
        m = m_new;
      }
      float* dst = &out[static_cast<size_t>((row * heads + h) * d)];
      for (int64_t e = 0; e < d; ++e) dst[e] = bf16(o[static_cast<size_t>(e)] / l);
    }
  return out;
}

}  // namespace fp8attn::study
