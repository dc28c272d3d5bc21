// Where the forward's bias goes in the backward: whether the same bias enters D = rowsum(dO∘O)
// and dQ. On the bias study's tied-maximum inputs, the engine's BF16 forward
// gives O and the LSE, and the engine's backward (fp8attn_attention_backward, dq stored in F32)
// gives dQ, compared with the FP64 oracle's dQ from the exact forward.
//
// dQ_i = scale·Σ_j P_ij·(dP_ij − D_i)·K_j, so an error δD_i of D moves dQ_i by −scale·δD_i·g_i
// along g_i = Σ_j P_ij·K_j (P exact). Per row the projected error, in D's units,
//   π_i = −(dQ_i − dQ_i,FP64)·g_i / (scale·|g_i|²),
// equals δD_i when D's error is all there is. The other inputs the forward hands over move it
// too: an LSE error δL_i scales every P_ij by e^−δL_i, hence dQ_i by about (1 − δL_i), which
// moves π_i by δL_i·c_i with c_i = dQ_i·g_i / (scale·|g_i|²). Three backward calls per row
// separate the parts:
//   A: the engine's O and LSE (the real pipeline);
//   B: the engine's O with the exact LSE (FP64, stored in F32);
//   C: the exact O, rounded to the output dtype, with the exact LSE (the backward's own error).
// π_A − π_B is the LSE's part, π_B − π_C the O's part (through D alone: P is the same), π_C the
// backward's own rounding (P and dS cast to BF16). Each part is compared with its prediction:
// δD_i = rowsum(dO∘(O − O_FP64 rounded to the output dtype)) for the O part, δL_i·c_i for the
// LSE part. The forward's output dtype matters: a BF16 O carries its storage rounding (≈ 1e-3 of
// O per element, unbiased) into D, 100× the engine's O error on these inputs; an F32 O does not.
//
// NOTE: the rows of a (draw, head) share one K and V, so their errors are correlated (the tied
// keys' V row enters every row's O). Row z-scores (mean / (sd/√rows)) then overstate the
// evidence; each statistic here also keeps the means of its (draw, head) clusters, which are
// independent, and clustered_z() is the z-score over those.
//
// NOTE: the mean of the O part is buried in the backward's own noise (dS is cast to BF16, and the
// shift P_ij·δD_i flips its rounding; measured sd of π_B − π_C ≈ 6× that of δD). The slope of the
// O part on δD_i across rows (o_slope) is the sharp test that D's error goes into dQ, and the
// residual's mean tests that the rounding adds no bias of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tools/stabilized_bias_study/bias_statistics.hpp"
#include "tools/stabilized_bias_study/bias_trials.hpp"

namespace fp8attn::study {

/// Moments over rows and over the means of independent clusters of rows.
struct ClusteredMoments {
  RunningMoments rows, clusters;
  void add_cluster(const RunningMoments& r) { rows.merge(r), clusters.add(r.mean()); }
  void merge(const ClusteredMoments& m) { rows.merge(m.rows), clusters.merge(m.clusters); }
  double mean() const { return rows.mean(); }
  /// z over the cluster means: about N(0, 1) (Student's t with clusters − 1 degrees of freedom)
  /// when the quantity has mean zero.
  double clustered_z() const { return clusters.z(); }
};

/// Projected dQ errors π (in D's units) of one softmax variant and their predictions.
struct DqBiasStatistics {
  ClusteredMoments total;         ///< π_A: the engine's O and LSE
  ClusteredMoments d_error;       ///< δD_i = rowsum(dO∘(O − O_FP64)), as in the bias study
  ClusteredMoments o_part;        ///< π_B − π_C: O's part, through D
  ClusteredMoments o_predicted;   ///< δD_i against O_FP64 in the output dtype: what the O part should be
  ClusteredMoments o_residual;    ///< (π_B − π_C) − δD_i
  ClusteredMoments lse_part;      ///< π_A − π_B
  ClusteredMoments lse_predicted; ///< δL_i·c_i
  ClusteredMoments lse_error;     ///< δL_i = LSE − LSE_FP64 itself
  ClusteredMoments backward_own;  ///< π_C: the backward's own rounding, exact forward
  /// Per (draw, head) cluster, the least-squares slope of the O part on δD_i: 1 when D's error,
  /// its bias included, moves dQ by exactly −scale·δD_i·g_i. A slope per cluster keeps the
  /// estimate's spread honest under the rows' correlation.
  RunningMoments o_slope;
  void merge(const DqBiasStatistics& s) {
    o_slope.merge(s.o_slope);
    total.merge(s.total), d_error.merge(s.d_error), o_part.merge(s.o_part), o_predicted.merge(s.o_predicted);
    o_residual.merge(s.o_residual), lse_part.merge(s.lse_part), lse_predicted.merge(s.lse_predicted);
    lse_error.merge(s.lse_error), backward_own.merge(s.backward_own);
  }
};

struct DqBiasStudyResult {
  DqBiasStatistics stats[2];  ///< kEngineStandard, kEngineStabilized
  int block_n = 0;
};

/// Runs o.draws draws of the bias study's inputs (o.bf16_reference is ignored) with dO ~ N(1, 1)
/// rounded to BF16; the forward writes O in `out_dtype` (FP8ATTN_DTYPE_BF16 or _F32), which the
/// backward reads. `on_draw(draw, seed, variant, stats)` sees each draw's statistics; `on_step`
/// names the step now running. Throws std::runtime_error when a call fails.
DqBiasStudyResult run_dq_bias_trials(const BiasStudyOptions& o, int32_t out_dtype,
                                     const std::function<void(int, uint64_t, int, const DqBiasStatistics&)>& on_draw = {},
                                     const std::function<void(const std::string&)>& on_step = {});

}  // namespace fp8attn::study
