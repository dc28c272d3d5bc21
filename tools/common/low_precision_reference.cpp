#include "tools/common/low_precision_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#include "kernels/sm90/mask.hpp"

namespace fp8attn::workloads {

std::vector<float> low_precision_reference(const fp8attn_attention_desc& desc, const AttentionShape& s,
                                           const DequantizedInputs& in) {
  const int d = s.head_dim;
  const bool fp8 = desc.input_dtype == FP8ATTN_DTYPE_E4M3;
  const double p_scale = fp8 ? std::ldexp(1.0, desc.p_scale_log2) : 1.0;
  const double scale = desc.softmax_scale == 0.0f ? 1.0 / std::sqrt(static_cast<double>(d)) : desc.softmax_scale;
  const int group = s.heads_q / s.heads_kv;
  std::vector<float> out(static_cast<size_t>(s.batch * s.seqlen_q * s.heads_q * d));
  std::vector<double> logits(s.seqlen_k), acc(d);
  const sm90::MaskParams mask{desc.causal != 0, desc.window_left, desc.window_right, s.seqlen_q, s.seqlen_k};
  for (int64_t b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads_q; ++h)
      for (int64_t i = 0; i < s.seqlen_q; ++i) {
        const double* q = &in.q[((b * s.seqlen_q + i) * s.heads_q + h) * d];
        const sm90::KeyRange keys = sm90::visible_keys(mask, i);
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t j = keys.first; j <= keys.last; ++j) {
          const double* k = &in.k[((b * s.seqlen_k + j) * s.heads_kv + h / group) * d];
          double dot = 0.0;
          for (int e = 0; e < d; ++e) dot += q[e] * k[e];
          logits[j] = dot * scale;
          m = std::max(m, logits[j]);
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        double l = 0.0;
        for (int64_t j = keys.first; j <= keys.last; ++j) {
          const double pt = std::exp(logits[j] - m) * p_scale;
          l += pt;
          const double pc = fp8 ? num::e4m3_to_float(num::float_to_e4m3(static_cast<float>(pt)))
                                : num::round_to_bf16(static_cast<float>(pt));
          const double* v = &in.v[((b * s.seqlen_k + j) * s.heads_kv + h / group) * d];
          for (int e = 0; e < d; ++e) acc[e] += pc * v[e];
        }
        float* o = &out[((b * s.seqlen_q + i) * s.heads_q + h) * d];
        for (int e = 0; e < d; ++e) o[e] = num::round_to_bf16(l > 0.0 ? static_cast<float>(acc[e] / l) : 0.0f);
      }
  return out;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (!(diff <= m)) m = diff;  // NaN propagates as a failure
  }
  return m;
}

double rmse(const std::vector<float>& a, const std::vector<float>& b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double diff = static_cast<double>(a[i]) - b[i];
    sum += diff * diff;
  }
  return std::sqrt(sum / static_cast<double>(a.size()));
}

}  // namespace fp8attn::workloads
