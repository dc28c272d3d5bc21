// Where the forward's bias goes, through the engine's real backward (tools/stabilized_bias_study,
// dq_bias_trials.hpp), on fresh seeds: the bias study's tied-maximum BF16 inputs (three tied
// maxima per KV block sharing one V row, V ~ N(−0.5, 1)), dO ~ N(1, 1) in BF16, the forward's O
// stored in F32, dq in F32; 8 draws of 1024 rows × 4 heads = 32 independent (draw, head) clusters.
// π_i is dQ_i's error projected on g_i = Σ_j P_ij·K_j in D's units (docs/numerics.md, "The stabilized
// softmax's bias"). Checked, per softmax variant:
// - O's part of π (engine O against the exact O, same exact LSE) follows D's error with slope 1:
//   measured 0.987 ± 0.043 (standard; its δD is small, 2.6e-4 sd per row) and 1.001 ± 0.001
//   (stabilized) over 40 clusters. Bounds |β − 1| < 0.35 (standard, about 7 standard errors at
//   32 clusters) and < 0.05 (stabilized, about 40): a backward that dropped D gives 0, one that
//   doubled it 2, one that scaled it by 1.25 fails both variants' checks (seen).
// - What the rounding adds has no mean: the residual (O part − δD), the LSE's part and the
//   backward's own error (exact forward) have |z| < 5 over the clusters (Student's t with 31
//   degrees of freedom: a 2e-5 chance of a false alarm each).
// - The LSE's bias (measured −9e-8, z ≈ −27) moves π by δL·c, under 1 % of D's bias.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "fp8attn/fp8attn.h"
#include "tools/common/fresh_seed.hpp"
#include "tools/stabilized_bias_study/dq_bias_trials.hpp"

namespace fp8attn::testing {
namespace {

TEST(StabilizedBiasStudy, ForwardErrorEntersDqThroughDWithSlopeOne) {
  study::BiasStudyOptions o;
  o.draws = 8;
  o.seed = workloads::fresh_seed();
  const study::DqBiasStudyResult r = study::run_dq_bias_trials(o, FP8ATTN_DTYPE_F32);
  for (int variant = 0; variant < 2; ++variant) {
    const study::DqBiasStatistics& s = r.stats[variant];
    const double slope_se = s.o_slope.sd() / std::sqrt(static_cast<double>(s.o_slope.count));
    std::printf("%s: D error %.3e (z %.1f); O part %.3e, slope on D error %.3f +- %.3f, residual z %.1f; LSE part "
                "z %.1f (predicted %.2e); backward's own z %.1f; seed %llu\n",
                study::kBiasVariantNames[variant], s.d_error.mean(), s.d_error.clustered_z(), s.o_part.mean(),
                s.o_slope.mean(), slope_se, s.o_residual.clustered_z(), s.lse_part.clustered_z(),
                s.lse_predicted.mean(), s.backward_own.clustered_z(), static_cast<unsigned long long>(o.seed));
    ASSERT_EQ(s.o_slope.count, 32);
    const double slope_bound = variant == study::kEngineStandard ? 0.35 : 0.05;
    EXPECT_LT(std::fabs(s.o_slope.mean() - 1.0), slope_bound) << study::kBiasVariantNames[variant] << ", seed " << o.seed;
    EXPECT_LT(std::fabs(s.o_residual.clustered_z()), 5.0) << study::kBiasVariantNames[variant] << ", seed " << o.seed;
    EXPECT_LT(std::fabs(s.lse_part.clustered_z()), 5.0) << study::kBiasVariantNames[variant] << ", seed " << o.seed;
    EXPECT_LT(std::fabs(s.backward_own.clustered_z()), 5.0) << study::kBiasVariantNames[variant] << ", seed " << o.seed;
  }
  const study::DqBiasStatistics& standard = r.stats[study::kEngineStandard];
  EXPECT_LT(std::fabs(standard.lse_predicted.mean()), 0.01 * std::fabs(standard.d_error.mean())) << "seed " << o.seed;
}

}  // namespace
}  // namespace fp8attn::testing
