#include "tools/fa3_table3/exact_attention.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

namespace fp8attn::table3 {

std::vector<float> exact_attention(const workloads::AttentionInputs& in, int threads) {
  const workloads::AttentionShape& s = in.shape;
  const int d = s.head_dim, group = s.heads_q / s.heads_kv;
  std::vector<float> out(static_cast<size_t>(s.batch * s.seqlen_q * s.heads_q * d));
  const int64_t rows = s.batch * s.heads_q * s.seqlen_q;
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    std::vector<double> q(d), logits(static_cast<size_t>(s.seqlen_k)), acc(d);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    for (int64_t r; (r = next.fetch_add(1)) < rows;) {
      const int64_t i = r % s.seqlen_q, h = (r / s.seqlen_q) % s.heads_q, b = r / (s.seqlen_q * s.heads_q);
      const int64_t g = h / group;
      const float* qrow = &in.q[static_cast<size_t>(((b * s.seqlen_q + i) * s.heads_q + h) * d)];
      for (int e = 0; e < d; ++e) q[e] = qrow[e];
      double m = -INFINITY;
      for (int64_t j = 0; j < s.seqlen_k; ++j) {
        const float* k = &in.k[static_cast<size_t>(((b * s.seqlen_k + j) * s.heads_kv + g) * d)];
        double dot = 0.0;
        for (int e = 0; e < d; ++e) dot += q[e] * k[e];
        logits[j] = dot * scale;
        m = std::max(m, logits[j]);
      }
      double l = 0.0;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = 0; j < s.seqlen_k; ++j) {
        const double p = std::exp(logits[j] - m);
        l += p;
        const float* v = &in.v[static_cast<size_t>(((b * s.seqlen_k + j) * s.heads_kv + g) * d)];
        for (int e = 0; e < d; ++e) acc[e] += p * v[e];
      }
      float* o = &out[static_cast<size_t>(((b * s.seqlen_q + i) * s.heads_q + h) * d)];
      for (int e = 0; e < d; ++e) o[e] = static_cast<float>(acc[e] / l);
    }
  };
  const int n = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  return out;
}

}  // namespace fp8attn::table3
