#include "tools/p_collapse_study/cast_point_emulation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>

#include "kernels/numerics/float8.hpp"
#include "kernels/sm90/kv_schedule.hpp"
#include "kernels/sm90/mask.hpp"
#include "tools/common/low_precision_reference.hpp"

namespace fp8attn::study {
namespace {

struct RowCounts {
  uint64_t in_block = 0, outside = 0, in_block_keys = 0;
  double fraction = 0.0;
};

}  // namespace

CastPointEmulation::CastPointEmulation(const SinkCase& c) : case_(c) {
  const auto deq = workloads::dequantize(c.real, c.quantized);
  const int64_t rows = c.shape.seqlen_q, keys = c.shape.seqlen_k;
  const int d = c.shape.head_dim;
  logits_.assign(static_cast<size_t>(rows * keys), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < keys; ++j) {
      double s = 0.0;
      for (int e = 0; e < d; ++e) s += deq.q[i * d + e] * deq.k[j * d + e];
      logits_[i * keys + j] = s;
    }
  v_ = deq.v;
}

PointResult CastPointEmulation::run(double p_scale, int32_t kv_order, bool sink_isolation, int threads) const {
  if (!(p_scale > 0.0) || !std::isfinite(p_scale)) throw std::invalid_argument("p_scale must be finite and > 0");
  const SinkCase& c = case_;
  const int64_t rows = c.shape.seqlen_q, keys = c.shape.seqlen_k;
  const int dv = c.shape.head_dim;
  const int block_n = kv_block_size(c.shape.head_dim);
  const double scale_log2 = static_cast<double>(c.softmax_scale) * 1.4426950408889634;
  const double p_scale_log2 = std::log2(p_scale);
  const sm90::MaskParams mask{false, -1, -1, rows, keys};
  // Non-causal: every row visits the same blocks, so one schedule serves all rows.
  const sm90::KvSchedule schedule = sm90::make_kv_schedule(mask, 0, rows, block_n, sink_isolation ? c.k_sink : 0,
                                                           kv_order == FP8ATTN_KV_ORDER_REVERSE);

  std::vector<RowCounts> counts(static_cast<size_t>(rows));
  std::vector<double> out(static_cast<size_t>(rows * dv));
  auto run_rows = [&](int64_t row_begin, int64_t row_end) {
    std::vector<double> o(dv);
    for (int64_t r = row_begin; r < row_end; ++r) {
      const double* s = &logits_[r * keys];
      double m = -std::numeric_limits<double>::infinity(), l = 0.0;
      std::fill(o.begin(), o.end(), 0.0);
      RowCounts& rc = counts[r];
      uint64_t zeros = 0;
      for (int64_t step = 0; step < schedule.count(); ++step) {
        const sm90::KeyBlock block = schedule.at(step);
        double block_max = -std::numeric_limits<double>::infinity();
        for (int64_t j = block.key_begin; j < block.key_end; ++j) block_max = std::max(block_max, s[j]);
        const double m_new = std::max(m, block_max);
        const double rescale = std::isinf(m) ? 0.0 : std::exp2((m - m_new) * scale_log2);
        l *= rescale;
        for (double& x : o) x *= rescale;
        m = m_new;
        const bool sink_block = block.key_begin == 0;
        for (int64_t j = block.key_begin; j < block.key_end; ++j) {
          const double pt = std::exp2((s[j] - m) * scale_log2 + p_scale_log2);
          // NOTE: the engine computes P̃ in FP32 and casts it with round-to-nearest-even,
          // saturating (DESIGN §3); the FP64 value is rounded to FP32 first for the same cast.
          const float pc = num::round_to_e4m3(static_cast<float>(pt));
          l += pt;
          if (j >= c.k_sink) {
            const bool zero = pc == 0.0f;
            zeros += zero;
            if (sink_block) {
              rc.in_block += zero;
              ++rc.in_block_keys;
            } else {
              rc.outside += zero;
            }
          }
          if (pc != 0.0f)
            for (int e = 0; e < dv; ++e) o[e] += static_cast<double>(pc) * v_[j * dv + e];
        }
      }
      for (int e = 0; e < dv; ++e) out[r * dv + e] = o[e] / l;
      rc.fraction = static_cast<double>(zeros) / static_cast<double>(keys - c.k_sink);
    }
  };
  const int workers = std::max(1, threads);
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w)
    pool.emplace_back(run_rows, rows * w / workers, rows * (w + 1) / workers);
  for (auto& t : pool) t.join();

  PointResult p;
  double sum = 0.0, sum2 = 0.0;
  for (const RowCounts& rc : counts) {
    p.underflow.in_sink_block += rc.in_block;
    p.underflow.outside_sink_block += rc.outside;
    p.underflow.in_sink_block_keys += rc.in_block_keys;
    sum += rc.fraction;
    sum2 += rc.fraction * rc.fraction;
  }
  p.underflow.underflow = p.underflow.in_sink_block + p.underflow.outside_sink_block;
  p.underflow.non_sink_positive = static_cast<uint64_t>(rows * (keys - c.k_sink));
  p.row_fraction_stddev = std::sqrt(std::max(0.0, sum2 / rows - (sum / rows) * (sum / rows)));
  double se = 0.0, max_abs = 0.0;
  if (c.oracle_out.empty()) {
    se = max_abs = std::numeric_limits<double>::quiet_NaN();
  } else {
    for (size_t i = 0; i < out.size(); ++i) {
      const double e = out[i] - c.oracle_out[i];
      se += e * e;
      max_abs = std::max(max_abs, std::fabs(e));
    }
  }
  p.mse = se / static_cast<double>(out.size());
  p.max_abs_err = max_abs;
  predict(c, p_scale, kv_order, sink_isolation, &p.predicted_leading, &p.predicted_expected);
  return p;
}

}  // namespace fp8attn::study
