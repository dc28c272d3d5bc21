#include "lib/attention/oracle_backward.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/sm90/mask.hpp"
#include "lib/numerics/exact_logits.hpp"

namespace fp8attn {
namespace {

/// Softmax of one row over its visible keys: fills p[j] for j in [keys.first, keys.last] and
/// returns the LSE (−inf when no key is visible).
double row_softmax(const AttentionConfig& c, const double* qi, const double* k, int64_t k_row_stride,
                   const sm90::KeyRange& keys, std::vector<double>& p) {
  if (keys.empty()) return -std::numeric_limits<double>::infinity();
  const int d = c.head_dim;
  num::exact_logits(qi, d, keys.first, keys.last, static_cast<double>(c.softmax_scale),
                    [&](int64_t j) { return &k[j * k_row_stride]; }, p.data());
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = keys.first; j <= keys.last; ++j) m = std::max(m, p[j]);
  double l = 0.0;
  for (int64_t j = keys.first; j <= keys.last; ++j) l += (p[j] = std::exp(p[j] - m));
  for (int64_t j = keys.first; j <= keys.last; ++j) p[j] /= l;
  return m + std::log(l);
}

/// Calls row(b, i, h, hk, mask row keys, seq offsets) for every (sequence, query head, row).
template <class Row>
void for_each_row(const AttentionConfig& c, const std::vector<int64_t>& cu_q, const std::vector<int64_t>& cu_k,
                  Row&& row) {
  for (size_t b = 0; b + 1 < cu_q.size(); ++b) {
    const int64_t sq = cu_q[b + 1] - cu_q[b], sk = cu_k[b + 1] - cu_k[b];
    const sm90::MaskParams mask{c.causal, c.window_left, c.window_right, sq, sk};
    for (int h = 0; h < c.num_heads_q; ++h)
      for (int64_t i = 0; i < sq; ++i) row(cu_q[b] + i, cu_k[b], sk, h, h / c.heads_per_kv(), sm90::visible_keys(mask, i));
  }
}

}  // namespace

std::vector<int64_t> uniform_row_offsets(int64_t batch, int64_t len) {
  std::vector<int64_t> cu(static_cast<size_t>(batch) + 1);
  for (int64_t b = 0; b <= batch; ++b) cu[b] = b * len;
  return cu;
}

void oracle_forward_dense(const AttentionConfig& c, const std::vector<int64_t>& cu_q, const std::vector<int64_t>& cu_k,
                          const double* q, const double* k, const double* v, double* out, double* lse) {
  const int d = c.head_dim, dv = c.head_dim_v, hq = c.num_heads_q, hkv = c.num_heads_kv;
  std::vector<double> p;
  for_each_row(c, cu_q, cu_k, [&](int64_t qrow, int64_t k0, int64_t sk, int h, int g, const sm90::KeyRange& keys) {
    p.assign(static_cast<size_t>(sk), 0.0);
    const double* qi = q + (qrow * hq + h) * d;
    const double row_lse = row_softmax(c, qi, k + (k0 * hkv + g) * d, int64_t{hkv} * d, keys, p);
    double* o = out + (qrow * hq + h) * dv;
    std::fill(o, o + dv, 0.0);
    for (int64_t j = keys.first; j <= keys.last; ++j)
      for (int e = 0; e < dv; ++e) o[e] += p[j] * v[((k0 + j) * hkv + g) * dv + e];
    if (lse) lse[qrow * hq + h] = row_lse;
  });
}

void oracle_backward_dense(const AttentionConfig& c, const std::vector<int64_t>& cu_q, const std::vector<int64_t>& cu_k,
                           const double* q, const double* k, const double* v, const double* dout, double* dq,
                           double* dk, double* dv) {
  const int d = c.head_dim, hd_v = c.head_dim_v, hq = c.num_heads_q, hkv = c.num_heads_kv;
  const double scale = c.softmax_scale;
  std::fill(dq, dq + cu_q.back() * hq * d, 0.0);
  std::fill(dk, dk + cu_k.back() * hkv * d, 0.0);
  std::fill(dv, dv + cu_k.back() * hkv * hd_v, 0.0);
  std::vector<double> p, o(static_cast<size_t>(hd_v));
  for_each_row(c, cu_q, cu_k, [&](int64_t qrow, int64_t k0, int64_t sk, int h, int g, const sm90::KeyRange& keys) {
    if (keys.empty()) return;
    p.assign(static_cast<size_t>(sk), 0.0);
    const double* qi = q + (qrow * hq + h) * d;
    const double* gi = dout + (qrow * hq + h) * hd_v;
    auto k_row = [&](int64_t j) { return ((k0 + j) * hkv + g) * d; };
    auto v_row = [&](int64_t j) { return ((k0 + j) * hkv + g) * hd_v; };
    row_softmax(c, qi, k + k0 * hkv * d + g * d, int64_t{hkv} * d, keys, p);
    // o = Σ p_j v_j, D = dout·o = Σ_j p_j dP_j.
    std::fill(o.begin(), o.end(), 0.0);
    for (int64_t j = keys.first; j <= keys.last; ++j)
      for (int e = 0; e < hd_v; ++e) o[e] += p[j] * v[v_row(j) + e];
    double delta = 0.0;
    for (int e = 0; e < hd_v; ++e) delta += gi[e] * o[e];
    double* dqi = dq + (qrow * hq + h) * d;
    for (int64_t j = keys.first; j <= keys.last; ++j) {
      double dp = 0.0;
      for (int e = 0; e < hd_v; ++e) dp += gi[e] * v[v_row(j) + e];
      const double ds = p[j] * (dp - delta);  // dL/dS_ij, S the scaled logit
      for (int e = 0; e < d; ++e) {
        dqi[e] += scale * ds * k[k_row(j) + e];
        dk[k_row(j) + e] += scale * ds * qi[e];
      }
      for (int e = 0; e < hd_v; ++e) dv[v_row(j) + e] += p[j] * gi[e];
    }
  });
}

}  // namespace fp8attn
