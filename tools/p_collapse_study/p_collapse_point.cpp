#include "tools/p_collapse_study/p_collapse_point.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "kernels/sm90/tile_config.hpp"
#include "tools/common/forward_runner.hpp"
#include "tools/common/low_precision_reference.hpp"

namespace fp8attn::study {

int kv_block_size(int head_dim) { return sm90::attention_tile(head_dim, true, sm90::PvPromotion::Off).block_n; }

SinkCase make_sink_case(int64_t rows, int64_t seqlen_k, int head_dim, int k_sink, double delta, uint64_t seed,
                        bool with_oracle) {
  SinkCase c;
  c.shape = workloads::AttentionShape{1, rows, seqlen_k, 1, 1, head_dim};
  c.k_sink = k_sink;
  c.delta = delta;
  c.seed = seed;
  c.softmax_scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  auto sink = workloads::sink_inputs(c.shape, seed, k_sink, delta, c.softmax_scale);
  c.realized_delta = sink.realized_delta;
  c.real = std::move(sink.inputs);
  // NOTE: unit descales, as in the P-cast paper's experiment: Q's and K's dimension 0 carry Δ as
  // E4M3 values (sink_inputs reports the realized Δ), and P's cast point is the only scale left.
  c.quantized = workloads::quantize(c.real, FP8ATTN_DTYPE_E4M3, workloads::ScaleGranularity::Unit);
  if (!with_oracle) return c;
  workloads::ForwardOptions oracle;
  oracle.backend = FP8ATTN_BACKEND_REFERENCE;
  const auto desc = workloads::make_desc(c.shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
  auto r = workloads::run_forward(desc, c.shape, c.quantized, oracle);
  if (r.status != FP8ATTN_OK) throw std::runtime_error("oracle forward failed: status " + std::to_string(r.status));
  c.oracle_out = std::move(r.out);
  return c;
}

PointResult run_engine_point(const SinkCase& c, const PointConfig& config, int threads) {
  auto desc = workloads::make_desc(c.shape, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32);
  desc.p_scale_log2 = config.p_scale_log2;
  desc.kv_order = config.kv_order;
  desc.telemetry = 1;
  desc.sink_tokens = config.sink_isolation ? c.k_sink : 0;
  // NOTE: the study isolates P's cast point, so the accumulator is full FP32 (model off): the
  // FP64 cast-point emulation replays FP32 logits, and the 13-bit accumulator model (on by
  // default) would move logits near the cast's underflow edge. docs/accumulator_study.md covers it.
  desc.accumulator_model = 0;

  // The hook runs on the engine's worker threads; each row belongs to one query tile, so the
  // per-row counters are written by one thread at a time, but the totals are shared.
  const int64_t rows = c.shape.seqlen_q;
  auto row_zeros = std::make_unique<std::atomic<uint32_t>[]>(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) row_zeros[r] = 0;
  std::atomic<uint64_t> in_block{0}, outside{0}, in_block_keys{0}, sink_zeros{0};
  const int k_sink = c.k_sink;
  engine::EngineHooks hooks;
  hooks.on_p_cast = [&](int64_t, int, int64_t row, int64_t key_begin, const float* p_cast, int count) {
    // The sink's block is the one that starts at key 0: with isolation it holds only sinks.
    const bool sink_block = key_begin == 0;
    uint32_t zeros = 0, keys = 0, sinks = 0;
    for (int j = 0; j < count; ++j) {
      if (key_begin + j < k_sink) {
        sinks += p_cast[j] == 0.0f ? 1u : 0u;
        continue;
      }
      ++keys;
      zeros += p_cast[j] == 0.0f ? 1u : 0u;
    }
    row_zeros[row] += zeros;
    (sink_block ? in_block : outside) += zeros;
    if (sink_block) in_block_keys += keys;
    sink_zeros += sinks;
  };
  const workloads::ForwardResult r = workloads::run_engine_with_hooks(desc, c.shape, c.quantized, hooks, threads);
  if (r.status != FP8ATTN_OK) throw std::runtime_error("engine forward failed: status " + std::to_string(r.status));

  // NOTE: every visible logit here is within ~30 natural-log units of its row max, so P̃ > 0
  // for every key and a zero after the cast is exactly an underflow: the hook's zeros must add
  // up to the telemetry's count. A sink far below the other sinks can underflow too (rarely, for
  // k_sink = 16 at S_p = 1); the hook removes those from the non-sink count.
  if (in_block + outside + sink_zeros != r.telemetry.p_underflow)
    throw std::runtime_error("hook underflow count " + std::to_string(in_block + outside + sink_zeros) +
                             " != telemetry " + std::to_string(r.telemetry.p_underflow));
  PointResult p;
  p.underflow.non_sink_positive = r.telemetry.p_positive - static_cast<uint64_t>(k_sink) * static_cast<uint64_t>(rows);
  p.underflow.underflow = r.telemetry.p_underflow - sink_zeros;
  p.underflow.in_sink_block = in_block;
  p.underflow.outside_sink_block = outside;
  p.underflow.in_sink_block_keys = in_block_keys;

  const double keys_per_row = static_cast<double>(c.shape.seqlen_k - k_sink);
  double sum = 0.0, sum2 = 0.0;
  for (int64_t row = 0; row < rows; ++row) {
    const double f = row_zeros[row] / keys_per_row;
    sum += f;
    sum2 += f * f;
  }
  const double mean = sum / rows;
  p.row_fraction_stddev = std::sqrt(std::max(0.0, sum2 / rows - mean * mean));

  p.mse = p.max_abs_err = std::numeric_limits<double>::quiet_NaN();
  if (!c.oracle_out.empty()) {
    double se = 0.0;
    for (size_t i = 0; i < r.out.size(); ++i) {
      const double e = static_cast<double>(r.out[i]) - c.oracle_out[i];
      se += e * e;
    }
    p.mse = se / static_cast<double>(r.out.size());
    p.max_abs_err = workloads::max_abs_diff(r.out, c.oracle_out);
  }
  predict(c, std::ldexp(1.0, config.p_scale_log2), config.kv_order, config.sink_isolation, &p.predicted_leading,
          &p.predicted_expected);
  return p;
}

void predict(const SinkCase& c, double p_scale, int32_t kv_order, bool sink_isolation, double* leading,
             double* expected) {
  if (sink_isolation && kv_order == FP8ATTN_KV_ORDER_REVERSE) {
    *leading = *expected = 0.0;
    return;
  }
  fp8attn_sink_model model{};
  model.struct_size = sizeof model;
  model.sink_strength = c.realized_delta;
  model.k_sink = c.k_sink;
  model.p_scale = p_scale;
  model.kv_order = kv_order;
  model.block_n = kv_block_size(c.shape.head_dim);
  model.seqlen_k = c.shape.seqlen_k;
  fp8attn_error err{sizeof err, 0, {0}};
  if (fp8attn_predict_p_underflow(&model, leading, expected, &err) != FP8ATTN_OK)
    throw std::runtime_error(std::string("fp8attn_predict_p_underflow failed: ") + err.message);
}

}  // namespace fp8attn::study
