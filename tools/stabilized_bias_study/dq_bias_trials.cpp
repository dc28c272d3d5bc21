#include "tools/stabilized_bias_study/dq_bias_trials.hpp"

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "kernels/numerics/bfloat16.hpp"
#include "kernels/sm90/tile_config.hpp"
#include "lib/attention/attention_config.hpp"
#include "lib/attention/oracle_backward.hpp"
#include "tools/common/backward_runner.hpp"
#include "tools/common/forward_runner.hpp"

namespace fp8attn::study {

using namespace fp8attn::workloads;

namespace {

/// The exact forward and backward of one draw, and each row's direction g_i = Σ_j P_ij·K_j.
struct Exact {
  std::vector<double> out, lse, dq, g;  // out, dq, g [rows][heads][d]; lse [rows][heads]
  std::vector<uint16_t> out_bf16;       // bf16(out) and float(out): the best O a backward can be
  std::vector<float> out_f32;           // given in each output dtype
  std::vector<float> lse_f32;           // the exact LSE in the engine's layout [heads][rows]
};

Exact exact_pass(const fp8attn_attention_desc& desc, const AttentionShape& s, const DequantizedInputs& in,
                 const std::vector<double>& dout) {
  const AttentionConfig config = make_attention_config(desc);
  const std::vector<int64_t> cu_q = uniform_row_offsets(1, s.seqlen_q), cu_k = uniform_row_offsets(1, s.seqlen_k);
  const int64_t d = s.head_dim, heads = s.heads_q;
  Exact x;
  x.out.resize(in.q.size()), x.lse.resize(static_cast<size_t>(s.seqlen_q * heads)), x.dq.resize(in.q.size());
  std::vector<double> dk(in.k.size()), dv(in.v.size());
  oracle_forward_dense(config, cu_q, cu_k, in.q.data(), in.k.data(), in.v.data(), x.out.data(), x.lse.data());
  oracle_backward_dense(config, cu_q, cu_k, in.q.data(), in.k.data(), in.v.data(), dout.data(), x.dq.data(),
                        dk.data(), dv.data());
  x.out_bf16.resize(x.out.size()), x.out_f32.resize(x.out.size());
  for (size_t i = 0; i < x.out.size(); ++i)
    x.out_f32[i] = static_cast<float>(x.out[i]), x.out_bf16[i] = num::float_to_bf16(x.out_f32[i]);
  x.lse_f32.resize(x.lse.size());
  x.g.assign(in.q.size(), 0.0);
  const double scale = config.softmax_scale;
  for (int64_t r = 0; r < s.seqlen_q; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      const double lse = x.lse[static_cast<size_t>(r * heads + h)];
      x.lse_f32[static_cast<size_t>(h * s.seqlen_q + r)] = static_cast<float>(lse);
      const double* q = &in.q[static_cast<size_t>((r * heads + h) * d)];
      double* g = &x.g[static_cast<size_t>((r * heads + h) * d)];
      for (int64_t j = 0; j < s.seqlen_k; ++j) {
        const double* k = &in.k[static_cast<size_t>((j * heads + h) * d)];
        double dot = 0.0;
        for (int64_t e = 0; e < d; ++e) dot += q[e] * k[e];
        const double p = std::exp(dot * scale - lse);
        for (int64_t e = 0; e < d; ++e) g[e] += p * k[e];
      }
    }
  return x;
}

void check(int32_t status, const BackwardSession& s, const char* what) {
  if (status != FP8ATTN_OK)
    throw std::runtime_error(std::string(what) + ": " + fp8attn_status_name(status) + ": " + s.error().message);
}

}  // namespace

DqBiasStudyResult run_dq_bias_trials(const BiasStudyOptions& o, int32_t out_dtype,
                                     const std::function<void(int, uint64_t, int, const DqBiasStatistics&)>& on_draw,
                                     const std::function<void(const std::string&)>& on_step) {
  const AttentionShape shape{1, o.rows, o.keys, o.heads, o.heads, o.head_dim};
  const int64_t d = o.head_dim, heads = o.heads, rows = o.rows;
  DqBiasStudyResult result;
  result.block_n = sm90::attention_tile(o.head_dim, false, sm90::PvPromotion::Off).block_n;
  for (int draw = 0; draw < o.draws; ++draw) {
    if (on_step) on_step("dQ draw " + std::to_string(draw + 1) + "/" + std::to_string(o.draws));
    // The bias study's seeds: draw k here has the inputs of the bias study's draw k.
    const uint64_t seed = o.seed * 1000003ull + static_cast<uint64_t>(draw);
    const AttentionInputs real = tied_max_inputs(shape, result.block_n, o.inputs, seed);
    const QuantizedInputs qin = quantize(real, FP8ATTN_DTYPE_BF16, ScaleGranularity::Unit);
    const DequantizedInputs deq = dequantize(real, qin);
    // dO ~ N(1, 1) rounded to BF16 (the backward's dtype): a mean of one sign, so that O's bias
    // shows in D = rowsum(dO∘O).
    std::mt19937_64 rng(seed ^ 0xd0d0);
    std::normal_distribution<double> n(1.0, 1.0);
    std::vector<uint16_t> dout_bits(deq.q.size());
    std::vector<double> dout(deq.q.size());
    for (size_t i = 0; i < dout.size(); ++i)
      dout_bits[i] = num::float_to_bf16(static_cast<float>(n(rng))), dout[i] = num::bf16_to_float(dout_bits[i]);
    auto desc = make_desc(shape, FP8ATTN_DTYPE_BF16, out_dtype);
    Exact x = exact_pass(desc, shape, deq, dout);
    const double scale = make_attention_config(desc).softmax_scale;

    BackwardOptions bo;
    bo.dq_dtype = FP8ATTN_DTYPE_F32;  // NOTE: F32 dq keeps the output's rounding out of π
    bo.out_dtype = out_dtype;
    const bool f32 = out_dtype == FP8ATTN_DTYPE_F32;
    std::vector<float> dq_c;          // run C does not depend on the variant: the backward ignores it
    for (int variant = 0; variant < 2; ++variant) {
      desc.softmax_variant = variant == kEngineStandard ? FP8ATTN_SOFTMAX_STANDARD : FP8ATTN_SOFTMAX_STABILIZED;
      BackwardSession session(desc, shape, qin, dout_bits, bo);
      session.forward();
      session.backward();
      const std::vector<float> dq_a = session.dq();
      fp8attn_attention_bwd_args args = session.args();
      args.lse.data = x.lse_f32.data();
      check(session.backward_with(args, session.workspace_bytes()), session, "backward with the exact LSE");
      const std::vector<float> dq_b = session.dq();
      if (dq_c.empty()) {
        args.out.data = f32 ? static_cast<void*>(x.out_f32.data()) : x.out_bf16.data();
        check(session.backward_with(args, session.workspace_bytes()), session, "backward with the exact forward");
        dq_c = session.dq();
      }
      const std::vector<float> out = session.out_f32();
      const std::vector<float>& lse = session.lse();

      DqBiasStatistics st;
      for (int64_t h = 0; h < heads; ++h) {
        // One cluster: the rows of this (draw, head) share K and V.
        RunningMoments total, d_err, o_part, o_pred, o_res, l_part, l_pred, l_err, own;
        double sxy = 0.0, sxx = 0.0;  // for the O part's slope on δD_i (centred below)
        for (int64_t r = 0; r < rows; ++r) {
          const size_t at = static_cast<size_t>((r * heads + h) * d);
          double gg = 0.0, pa = 0.0, pb = 0.0, pc = 0.0, c = 0.0, dd_full = 0.0, dd_stored = 0.0;
          for (int64_t e = 0; e < d; ++e) {
            const size_t i = at + static_cast<size_t>(e);
            const double g = x.g[i];
            gg += g * g;
            pa += (dq_a[i] - x.dq[i]) * g, pb += (dq_b[i] - x.dq[i]) * g, pc += (dq_c[i] - x.dq[i]) * g;
            c += x.dq[i] * g;
            const double o_eng = out[i];
            const double o_stored = f32 ? x.out_f32[i] : num::bf16_to_float(x.out_bf16[i]);
            dd_full += dout[i] * (o_eng - x.out[i]);
            dd_stored += dout[i] * (o_eng - o_stored);
          }
          const double unit = -1.0 / (scale * gg);  // π = −δdQ·g / (scale·|g|²)
          pa *= unit, pb *= unit, pc *= unit, c *= -unit;
          const double dl = static_cast<double>(lse[static_cast<size_t>(h * rows + r)]) -
                            x.lse[static_cast<size_t>(r * heads + h)];
          total.add(pa), d_err.add(dd_full), o_part.add(pb - pc), o_pred.add(dd_stored);
          o_res.add(pb - pc - dd_stored), l_part.add(pa - pb), l_pred.add(dl * c), l_err.add(dl), own.add(pc);
          sxy += dd_stored * (pb - pc), sxx += dd_stored * dd_stored;
        }
        const double nr = static_cast<double>(o_pred.count);
        st.o_slope.add((sxy - o_pred.sum * o_part.sum / nr) / (sxx - o_pred.sum * o_pred.sum / nr));
        st.total.add_cluster(total), st.d_error.add_cluster(d_err), st.o_part.add_cluster(o_part);
        st.o_predicted.add_cluster(o_pred), st.o_residual.add_cluster(o_res), st.lse_part.add_cluster(l_part);
        st.lse_predicted.add_cluster(l_pred), st.lse_error.add_cluster(l_err), st.backward_own.add_cluster(own);
      }
      result.stats[variant].merge(st);
      if (on_draw) on_draw(draw, seed, variant, st);
    }
  }
  return result;
}

}  // namespace fp8attn::study
