#include "tools/stabilized_bias_study/tied_max_inputs.hpp"

#include <cmath>
#include <random>
#include <vector>

namespace fp8attn::study {

workloads::AttentionInputs tied_max_inputs(const workloads::AttentionShape& shape, int block_n,
                                           const TiedMaxOptions& o, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  workloads::AttentionInputs in;
  in.shape = shape;
  const int64_t d = shape.head_dim;
  in.q.resize(static_cast<size_t>(shape.batch * shape.seqlen_q * shape.heads_q * d));
  in.k.resize(static_cast<size_t>(shape.batch * shape.seqlen_k * shape.heads_kv * d));
  in.v.resize(in.k.size());
  // NOTE: one direction per KV head, shared by its query heads, so that GQA groups tie too.
  std::vector<std::vector<float>> u(static_cast<size_t>(shape.heads_kv), std::vector<float>(static_cast<size_t>(d)));
  std::vector<float> alpha(u.size());
  for (size_t g = 0; g < u.size(); ++g) {
    float norm2 = 0.0f;
    for (float& x : u[g]) x = n(rng), norm2 += x * x;
    // q·(α·u) ≈ α·|u|² and the softmax scale is 1/√d: the tied logit is α·|u|²/√d.
    alpha[g] = o.tied_logit * std::sqrt(static_cast<float>(d)) / norm2;
  }
  const int group = shape.heads_q / shape.heads_kv;
  for (int64_t b = 0; b < shape.batch; ++b)
    for (int64_t s = 0; s < shape.seqlen_q; ++s)
      for (int h = 0; h < shape.heads_q; ++h) {
        float* row = &in.q[static_cast<size_t>(((b * shape.seqlen_q + s) * shape.heads_q + h) * d)];
        for (int64_t e = 0; e < d; ++e) row[e] = u[static_cast<size_t>(h / group)][static_cast<size_t>(e)] + 0.1f * n(rng);
      }
  // The tied keys sit at spread positions of each block: slot j·(block_n / ties) + 1.
  const int stride = block_n / o.ties;
  for (int64_t b = 0; b < shape.batch; ++b)
    for (int64_t j = 0; j < shape.seqlen_k; ++j)
      for (int g = 0; g < shape.heads_kv; ++g) {
        const size_t at = static_cast<size_t>(((b * shape.seqlen_k + j) * shape.heads_kv + g) * d);
        const int slot = static_cast<int>(j % block_n);
        const bool tied = slot % stride == 1 && slot / stride < o.ties;
        // The block's first tied key draws V; the later ones copy it when the ties share V.
        const bool copy_v = tied && o.tied_share_v && slot / stride > 0;
        const int64_t first_tie = j - slot + 1;  // slot 1 of this block
        const size_t from = copy_v ? static_cast<size_t>(((b * shape.seqlen_k + first_tie) * shape.heads_kv + g) * d) : 0;
        for (int64_t e = 0; e < d; ++e) {
          in.k[at + static_cast<size_t>(e)] = tied ? alpha[static_cast<size_t>(g)] * u[static_cast<size_t>(g)][static_cast<size_t>(e)]
                                                   : 0.3f * n(rng);
          in.v[at + static_cast<size_t>(e)] = copy_v ? in.v[from + static_cast<size_t>(e)] : o.v_mean + n(rng);
        }
      }
  return in;
}

}  // namespace fp8attn::study
