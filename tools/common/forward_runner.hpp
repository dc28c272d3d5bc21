// Runs fp8attn_attention_forward through the C API on quantized host inputs, the way a host
// program would: context, plan, workspace query, poisoned outputs, forward.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "lib/attention/engine/tile_engine.hpp"
#include "tools/common/attention_inputs.hpp"

namespace fp8attn::workloads {

struct ForwardResult {
  int32_t status = 0;
  std::vector<float> out;  ///< [rows_q][heads_q][head_dim], F32 (BF16 outputs widened)
  std::vector<float> lse;  ///< padded: [batch][heads_q][seqlen_q]; varlen: [heads_q][total_q]
  fp8attn_telemetry telemetry{};
};

struct ForwardOptions {
  int32_t backend = FP8ATTN_BACKEND_CPU;
  int32_t num_threads = 0;
  /// Packed layout: the inputs' batch must be 1 and its seqlens the totals; descales of
  /// batch 0 are broadcast to every sequence (stride 0).
  const std::vector<int32_t>* cu_seqlens_q = nullptr;
  const std::vector<int32_t>* cu_seqlens_k = nullptr;
  /// Padded layout only: pass V with its keys contiguous ([batch, heads, dim, keys] in memory,
  /// each row padded to 16 keys), as a caller that keeps V transposed would.
  bool v_keys_contiguous = false;
};

/// A context, plan, workspace and caller buffers, created once so that forward calls can be
/// repeated (benchmarks). Throws std::runtime_error naming the failing call and its status.
class ForwardSession {
 public:
  ForwardSession(const fp8attn_attention_desc& desc, const AttentionShape& shape, const QuantizedInputs& inputs,
                 const ForwardOptions& options = {});
  ~ForwardSession();
  void run();
  /// The last run's outputs (moves them out).
  ForwardResult result();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// `desc` must match the inputs (heads, head_dim, input dtype). Aborts the test on any
/// unexpected status via the returned status (callers assert it).
ForwardResult run_forward(const fp8attn_attention_desc& desc, const AttentionShape& shape,
                          const QuantizedInputs& inputs, const ForwardOptions& options = {});

/// One forward on an existing plan (which may be shared with other threads), with its own
/// buffers and workspace.
ForwardResult run_forward_on_plan(fp8attn_plan plan, const fp8attn_attention_desc& desc, const AttentionShape& shape,
                                  const QuantizedInputs& inputs);

/// Runs the CPU tile engine directly (below the C API) with test hooks, on `num_threads`
/// workers; same argument handling as run_forward.
ForwardResult run_engine_with_hooks(const fp8attn_attention_desc& desc, const AttentionShape& shape,
                                    const QuantizedInputs& inputs, const engine::EngineHooks& hooks,
                                    int num_threads);

/// A desc with the given dtype and shape, other fields default.
fp8attn_attention_desc make_desc(const AttentionShape& shape, int32_t input_dtype, int32_t output_dtype);

}  // namespace fp8attn::workloads
