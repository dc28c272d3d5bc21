#include "lib/spectral/rope_norms.hpp"

#include <algorithm>
#include <cmath>

#include "lib/core/error.hpp"
#include "lib/core/thread_pool.hpp"
#include "lib/spectral/gram_power_iteration.hpp"
#include "lib/spectral/head_grams.hpp"

namespace fp8attn {
namespace {

/// λ_max of the 2 × 2 symmetric [[a, b], [b, c]].
double eig_max_2x2(double a, double b, double c) {
  const double mean = 0.5 * (a + c);
  const double half_diff = 0.5 * (a - c);
  return mean + std::sqrt(half_diff * half_diff + b * b);
}

/// ‖W_h‖₂ = √λ_max(G_h), by the same power iteration with B = I.
double spectral_norm_from_gram(const float* g, const float* identity, int32_t n, const RopeSpec& rope, uint64_t seed) {
  std::vector<double> v(n + power_iteration_scratch_doubles(n));
  seeded_unit_vector(seed, n, v.data());
  const PowerIterationResult r =
      power_iterate_gram_product(g, identity, n, v.data(), v.data() + n, rope.max_iterations, rope.tolerance);
  return std::sqrt(r.lambda);
}

}  // namespace

void rope_pair(int32_t head_dim, bool interleaved, int32_t p, int32_t* first, int32_t* second) {
  if (interleaved) {
    *first = 2 * p;
    *second = 2 * p + 1;
  } else {
    *first = p;
    *second = p + head_dim / 2;
  }
}

void rotate_gram(const float* g, int32_t n, const RopeSpec& rope, int64_t offset, float* a) {
  // T = G·R, then A = Rᵀ·T; R turns pair (i1, i2) by φ: x'_{i1} = c·x_{i1} − s·x_{i2},
  // x'_{i2} = s·x_{i1} + c·x_{i2}.
  std::vector<double> t(static_cast<size_t>(n) * n);
  for (int64_t i = 0; i < static_cast<int64_t>(n) * n; ++i) t[i] = g[i];
  for (int32_t p = 0; p < n / 2; ++p) {
    int32_t i1 = 0, i2 = 0;
    rope_pair(n, rope.interleaved, p, &i1, &i2);
    // NOTE: the angle is formed in double: Δ·θ_p reaches ~10⁵ rad at long offsets, where a float
    // angle has lost its low bits.
    const double phi = static_cast<double>(offset) * std::pow(rope.theta_base, -2.0 * p / n);
    const double c = std::cos(phi), s = std::sin(phi);
    for (int32_t i = 0; i < n; ++i) {  // columns i1, i2 of G·R
      const double x1 = t[static_cast<size_t>(i) * n + i1], x2 = t[static_cast<size_t>(i) * n + i2];
      t[static_cast<size_t>(i) * n + i1] = c * x1 + s * x2;
      t[static_cast<size_t>(i) * n + i2] = -s * x1 + c * x2;
    }
    for (int32_t j = 0; j < n; ++j) {  // rows i1, i2 of Rᵀ·T
      const double y1 = t[static_cast<size_t>(i1) * n + j], y2 = t[static_cast<size_t>(i2) * n + j];
      t[static_cast<size_t>(i1) * n + j] = c * y1 + s * y2;
      t[static_cast<size_t>(i2) * n + j] = -s * y1 + c * y2;
    }
  }
  for (int64_t i = 0; i < static_cast<int64_t>(n) * n; ++i) a[i] = static_cast<float>(t[i]);
}

RopeNorms cpu_qk_rope_norms(const WeightMatrix& wq, const WeightMatrix& wk, const QkShape& shape,
                            const RopeSpec& rope, ThreadPool& pool) {
  const int32_t n = shape.head_dim;
  const size_t nn = static_cast<size_t>(n) * n;
  std::vector<float> block(static_cast<size_t>(n) * shape.d_model);
  std::vector<float> grams_q(nn * shape.num_heads_q), grams_k(nn * shape.num_heads_kv);
  compute_head_grams(wq, shape.num_heads_q, n, block.data(), grams_q.data(), pool);
  compute_head_grams(wk, shape.num_heads_kv, n, block.data(), grams_k.data(), pool);
  for (const std::vector<float>* g : {&grams_q, &grams_k})
    for (float x : *g)
      FP8ATTN_REQUIRE(std::isfinite(x), FP8ATTN_STATUS_NUMERICS,
                      "a Gram matrix holds a NaN or an infinity (a weight is not finite or overflows)");
  std::vector<float> identity(nn, 0.0f);
  for (int32_t i = 0; i < n; ++i) identity[static_cast<size_t>(i) * n + i] = 1.0f;

  RopeNorms out;
  out.naive.resize(shape.num_heads_q);
  out.pair_sum.resize(shape.num_heads_q);
  out.safe.resize(shape.num_heads_q);
  out.exact.resize(shape.num_heads_q);
  const int32_t group = shape.group_size();
  pool.parallel_for(shape.num_heads_q, [&](int64_t h, int) {
    const float* gq = grams_q.data() + h * nn;
    const float* gk = grams_k.data() + (h / group) * nn;
    const uint64_t seed = rope.seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(h + 1));
    const double naive = spectral_norm_from_gram(gq, identity.data(), n, rope, seed) *
                         spectral_norm_from_gram(gk, identity.data(), n, rope, seed + 1);
    // ‖W_p‖₂ of a pair's 2 × d rows is √λ_max of its 2 × 2 Gram, read off the head's Gram.
    double pair_sum = 0.0;
    for (int32_t p = 0; p < n / 2; ++p) {
      int32_t a = 0, b = 0;
      rope_pair(n, rope.interleaved, p, &a, &b);
      const double q2 = eig_max_2x2(gq[a * n + a], gq[a * n + b], gq[b * n + b]);
      const double k2 = eig_max_2x2(gk[a * n + a], gk[a * n + b], gk[b * n + b]);
      pair_sum += std::sqrt(std::max(q2, 0.0)) * std::sqrt(std::max(k2, 0.0));
    }
    std::vector<float> rotated(nn);
    std::vector<double> v(n + power_iteration_scratch_doubles(n));
    seeded_unit_vector(seed + 2, n, v.data());
    double best = 0.0;
    std::vector<double> fresh(static_cast<size_t>(n));
    // NOTE: counted by the offset's index, not by ++delta, which overflowed at INT64_MAX and
    // never ended; the API bounds the count.
    for (int64_t index = 0; index <= rope.max_offset - rope.min_offset; ++index) {
      const int64_t delta = rope.min_offset + index;
      rotate_gram(gq, n, rope, delta, rotated.data());
      if (delta > rope.min_offset) {
        // NOTE: a 10% seeded random component guards against a warm start that is nearly
        // orthogonal to the new dominant vector, where the iteration would creep and the
        // relative-change test could stop it early.
        seeded_unit_vector(seed + 3 + static_cast<uint64_t>(delta - rope.min_offset), n, fresh.data());
        for (int32_t i = 0; i < n; ++i) v[i] += 0.1 * fresh[i];
      }
      // NOTE: warm start from the previous offset: neighbouring offsets turn each pair by at most
      // θ_0 = 1 rad, and most pairs (the low frequencies) barely move, so the dominant vector
      // changes little and few iterations are needed.
      const PowerIterationResult r = power_iterate_gram_product(rotated.data(), gk, n, v.data(), v.data() + n,
                                                                rope.max_iterations, rope.tolerance);
      best = std::max(best, r.lambda);
    }
    out.naive[h] = static_cast<float>(naive);
    out.pair_sum[h] = static_cast<float>(pair_sum);
    out.safe[h] = static_cast<float>(std::min(naive, pair_sum));
    out.exact[h] = static_cast<float>(std::sqrt(best));
  });
  for (int32_t h = 0; h < shape.num_heads_q; ++h)
    require(std::isfinite(out.safe[h]) && std::isfinite(out.exact[h]), FP8ATTN_STATUS_NUMERICS,
            "the RoPE norms of head " + std::to_string(h) + " are not finite floats");
  return out;
}

}  // namespace fp8attn
