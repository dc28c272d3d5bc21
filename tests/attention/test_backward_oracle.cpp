// The FP64 backward oracle against central finite differences of its own loss: for
// L(q, k, v) = Σ dout∘out(q, k, v), with out the FP64 forward (oracle_forward_dense), every entry of
// dq, dk and dv must match (L(x + h) − L(x − h)) / 2h with relative L2 error < 1e-6 per tensor
// (h = 1e-4 on N(0,1) inputs: truncation ~h² ≈ 1e-8 relative, rounding ~1e-16·|L|/h ≈ 1e-11).
// Shapes are small and cover what changes the math: the softmax scale, causal rows that see no
// key (Sq > Sk), a sliding window, GQA (dk, dv summed over the group) and packed sequences.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "lib/attention/attention_config.hpp"
#include "lib/attention/oracle_backward.hpp"
#include "tools/common/fresh_seed.hpp"

namespace fp8attn::testing {
namespace {

struct Case {
  const char* name;
  std::vector<int64_t> cu_q, cu_k;
  int heads_q, heads_kv;
  bool causal;
  int window_left, window_right;
  float softmax_scale;  // 0: 1/√d
};

double loss(const AttentionConfig& c, const Case& k, const std::vector<double>& q, const std::vector<double>& kk,
            const std::vector<double>& v, const std::vector<double>& dout) {
  std::vector<double> out(dout.size());
  oracle_forward_dense(c, k.cu_q, k.cu_k, q.data(), kk.data(), v.data(), out.data(), nullptr);
  double l = 0.0;
  for (size_t i = 0; i < out.size(); ++i) l += dout[i] * out[i];
  return l;
}

/// Relative L2 error of the finite-difference gradient of L in `x` against `analytic`.
template <class Loss>
double fd_error(std::vector<double>& x, const std::vector<double>& analytic, Loss&& l) {
  constexpr double h = 1e-4;
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    const double up = l();
    x[i] = keep - h;
    const double down = l();
    x[i] = keep;
    const double fd = (up - down) / (2 * h);
    num += (fd - analytic[i]) * (fd - analytic[i]);
    den += analytic[i] * analytic[i];
  }
  EXPECT_GT(den, 0.0) << "a gradient that is all zeros tests nothing";
  return std::sqrt(num / den);
}

TEST(AttentionBackwardOracle, MatchesFiniteDifferencesOfItsLoss) {
  const std::vector<Case> cases = {
      {"dense, scale 0.3", {0, 5}, {0, 7}, 2, 2, false, -1, -1, 0.3f},
      {"causal, Sq > Sk (2 rows see no key)", {0, 7}, {0, 5}, 2, 1, true, -1, -1, 0.0f},
      {"window (2, 1), GQA 4:2", {0, 6}, {0, 9}, 4, 2, false, 2, 1, 0.0f},
      {"packed, causal, GQA 2:1", {0, 3, 8}, {0, 6, 10}, 2, 1, true, -1, -1, 0.0f},
  };
  const int d = 64;
  for (const Case& k : cases) {
    fp8attn_attention_desc desc{};
    fp8attn_attention_desc_init(&desc);
    desc.input_dtype = FP8ATTN_DTYPE_BF16;
    desc.head_dim = d;
    desc.num_heads_q = k.heads_q;
    desc.num_heads_kv = k.heads_kv;
    desc.causal = k.causal;
    desc.window_left = k.window_left;
    desc.window_right = k.window_right;
    desc.softmax_scale = k.softmax_scale;
    const AttentionConfig c = make_attention_config(desc);

    const uint64_t seed = workloads::fresh_seed();
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> n(0.0, 1.0);
    auto draw = [&](size_t count) {
      std::vector<double> x(count);
      for (double& e : x) e = n(rng);
      return x;
    };
    const size_t rows_q = static_cast<size_t>(k.cu_q.back()), rows_k = static_cast<size_t>(k.cu_k.back());
    std::vector<double> q = draw(rows_q * k.heads_q * d), kk = draw(rows_k * k.heads_kv * d),
                        v = draw(rows_k * k.heads_kv * d);
    const std::vector<double> dout = draw(rows_q * k.heads_q * d);
    std::vector<double> dq(q.size()), dk(kk.size()), dv(v.size());
    oracle_backward_dense(c, k.cu_q, k.cu_k, q.data(), kk.data(), v.data(), dout.data(), dq.data(), dk.data(),
                          dv.data());
    auto l = [&] { return loss(c, k, q, kk, v, dout); };
    const double eq = fd_error(q, dq, l), ek = fd_error(kk, dk, l), ev = fd_error(v, dv, l);
    std::printf("[oracle FD, %s] seed %llu: rel L2 error dq %.2e dk %.2e dv %.2e (bound 1e-6)\n", k.name,
                static_cast<unsigned long long>(seed), eq, ek, ev);
    EXPECT_LT(eq, 1e-6) << k.name << ", seed " << seed;
    EXPECT_LT(ek, 1e-6) << k.name << ", seed " << seed;
    EXPECT_LT(ev, 1e-6) << k.name << ", seed " << seed;
  }
}

}  // namespace
}  // namespace fp8attn::testing
