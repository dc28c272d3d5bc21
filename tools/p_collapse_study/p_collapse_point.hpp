// One point of the P-collapse study: sink-structured E4M3 inputs (DESIGN §3's sink model), the
// engine's measured P underflow and output error against the FP64 oracle, and the closed-form
// predictions. Shared by the study tool and its tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "tools/common/attention_inputs.hpp"

namespace fp8attn::study {

/// The inputs of one (k_sink, Δ) cell, quantized with unit descales, and the oracle's output on
/// exactly those quantized inputs (so the error measures the kernel's P cast and accumulation,
/// not the input quantization).
struct SinkCase {
  workloads::AttentionShape shape;
  int k_sink = 0;
  double delta = 0.0;           ///< requested Δ
  double realized_delta = 0.0;  ///< Δ after Q and K are rounded to E4M3
  uint64_t seed = 0;
  float softmax_scale = 0.0f;
  workloads::AttentionInputs real;
  workloads::QuantizedInputs quantized;
  std::vector<float> oracle_out;  ///< FP64 oracle (REFERENCE backend), [rows][dim]
};

/// Builds the inputs and, when `with_oracle`, runs the oracle (otherwise oracle_out is empty and
/// the error fields of the results are NaN). Padded layout, batch 1, one head.
SinkCase make_sink_case(int64_t rows, int64_t seqlen_k, int head_dim, int k_sink, double delta, uint64_t seed,
                        bool with_oracle = true);

/// What varies at one point, for fixed inputs.
struct PointConfig {
  int p_scale_log2 = 8;  ///< S_p = 2^p_scale_log2 (the engine supports 0..8)
  int32_t kv_order = 0;  ///< an fp8attn_kv_order
  bool sink_isolation = false;  ///< sink_tokens = k_sink
};

/// Underflow counts over non-sink keys, split by where the key was cast: in the KV block that
/// holds key 0 (the sink's block), or in any other block.
struct UnderflowSplit {
  uint64_t non_sink_positive = 0;  ///< non-sink P̃ > 0 (telemetry p_positive − k_sink·rows)
  uint64_t underflow = 0;          ///< telemetry p_underflow minus the sinks' (hook)
  uint64_t in_sink_block = 0;      ///< hook: non-sink keys in the sink's block cast to 0
  uint64_t outside_sink_block = 0; ///< hook: non-sink keys elsewhere cast to 0
  uint64_t in_sink_block_keys = 0; ///< hook: non-sink (row, key) pairs cast in the sink's block

  double fraction() const { return non_sink_positive ? double(underflow) / double(non_sink_positive) : 0.0; }
};

struct PointResult {
  UnderflowSplit underflow;
  double row_fraction_stddev = 0.0;  ///< spread of the per-row underflow fraction (for standard errors)
  double predicted_leading = 0.0;    ///< fp8attn_predict_p_underflow, leading order
  double predicted_expected = 0.0;   ///< fp8attn_predict_p_underflow, exact expectation
  double mse = 0.0;                  ///< mean (O − O_oracle)² over all outputs
  double max_abs_err = 0.0;
};

/// Runs the CPU tile engine (with telemetry and a P-cast hook) at one configuration.
/// Throws std::runtime_error if the hook's underflow count disagrees with the telemetry.
PointResult run_engine_point(const SinkCase& c, const PointConfig& config, int threads = 0);

/// fp8attn_predict_p_underflow with the realized Δ, for any S_p > 0. With sink isolation in
/// reverse order the sink's block holds no non-sink key, so both predictions are 0; in forward
/// order isolation changes nothing the model sees (every non-sink key is still cast after the
/// sinks), so the forward prediction stands.
void predict(const SinkCase& c, double p_scale, int32_t kv_order, bool sink_isolation, double* leading,
             double* expected);

/// The KV block size of the engine's tile for this head dim (E4M3).
int kv_block_size(int head_dim);

}  // namespace fp8attn::study
