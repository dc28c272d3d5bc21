#include "tools/fa3_table3/exact_attention.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "lib/numerics/exact_logits.hpp"

namespace fp8attn::table3 {

std::vector<float> exact_attention(const workloads::AttentionInputs& in, int threads) {
  const workloads::AttentionShape& s = in.shape;
  const int d = s.head_dim, group = s.heads_q / s.heads_kv;
  std::vector<float> out(static_cast<size_t>(s.batch * s.seqlen_q * s.heads_q * d));
  // NOTE: work items of kRowsPerItem query rows of one (batch, head); each worker first copies
  // the items' K and V of one (batch, KV head) into contiguous rows. In the padded layout one
  // key's row is heads_kv · d floats from the next, a new page per key at FlashAttention-3's
  // size, and streaming K and V that way for every query row left this loop waiting on memory.
  // The arithmetic, and so every bit of the output, is what it was row by row.
  constexpr int64_t kRowsPerItem = 256;
  const int64_t row_blocks = (s.seqlen_q + kRowsPerItem - 1) / kRowsPerItem;
  const int64_t items = s.batch * s.heads_q * row_blocks;
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    std::vector<double> q(d), logits(static_cast<size_t>(s.seqlen_k)), acc(d);
    std::vector<float> k(static_cast<size_t>(s.seqlen_k) * d), v(k.size());
    int64_t gathered = -1;  // the (batch, KV head) whose K and V are in k and v
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    for (int64_t item; (item = next.fetch_add(1)) < items;) {
      const int64_t b = item / (s.heads_q * row_blocks), h = (item / row_blocks) % s.heads_q;
      const int64_t g = h / group;
      if (gathered != b * s.heads_kv + g) {
        gathered = b * s.heads_kv + g;
        for (int64_t j = 0; j < s.seqlen_k; ++j) {
          const size_t from = static_cast<size_t>(((b * s.seqlen_k + j) * s.heads_kv + g) * d);
          std::copy_n(&in.k[from], d, &k[static_cast<size_t>(j * d)]);
          std::copy_n(&in.v[from], d, &v[static_cast<size_t>(j * d)]);
        }
      }
      const int64_t i0 = (item % row_blocks) * kRowsPerItem, i1 = std::min(s.seqlen_q, i0 + kRowsPerItem);
      for (int64_t i = i0; i < i1; ++i) {
        const float* qrow = &in.q[static_cast<size_t>(((b * s.seqlen_q + i) * s.heads_q + h) * d)];
        for (int e = 0; e < d; ++e) q[e] = qrow[e];
        num::exact_logits(q.data(), d, 0, s.seqlen_k - 1, scale, [&](int64_t j) { return &k[static_cast<size_t>(j * d)]; },
                          logits.data());
        const double m = s.seqlen_k > 0 ? *std::max_element(logits.begin(), logits.end()) : -INFINITY;
        double l = 0.0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < s.seqlen_k; ++j) {
          const double p = std::exp(logits[j] - m);
          l += p;
          const float* vj = &v[static_cast<size_t>(j * d)];
          for (int e = 0; e < d; ++e) acc[e] += p * vj[e];
        }
        float* o = &out[static_cast<size_t>(((b * s.seqlen_q + i) * s.heads_q + h) * d)];
        for (int e = 0; e < d; ++e) o[e] = static_cast<float>(acc[e] / l);
      }
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
