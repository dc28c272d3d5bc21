// The scale-state handle: ScaleStateData behind a reader-writer lock.
//
// NOTE: std::shared_mutex rather than a seqlock: a reader copies two floats, and a writer
// (step, deserialize) touches every history, so readers must never see a half-written state;
// a shared lock gives that without torn reads, and ThreadSanitizer understands it.
#pragma once

#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "lib/scale/scale_state_data.hpp"

namespace fp8attn {

class Context;
class ThreadPool;

class ScaleState {
 public:
  /// `pool` (the owning context's workers) runs the CPU spectral norms; it outlives the state.
  ScaleState(ThreadPool& pool, const ScaleStateConfig& config);

  int32_t num_layers() const;

  void report_amax(int32_t layer, int32_t tensor, float amax);
  /// `amax` has num_layers·8 entries (negative = not reported); all are checked first.
  void report_amax_batch(const float* amax, size_t count);
  /// Records one layer's amaxes: `amax` holds kNumTensorKinds floats in fp8attn_tensor_kind
  /// order, negative = not reported. All are checked (finite) before any is recorded.
  void report_amax_layer(int32_t layer, const float* amax);
  void step();

  /// What a forward call reads from one layer, under one shared lock.
  struct ForwardScales {
    float q_descale, k_descale, v_descale;  ///< scale_inv of Q, K and V
    float o_scale;                          ///< scale of O
    float logit_scale;                      ///< scale of the logit (1 when none is in use)
  };
  ForwardScales forward_scales(int32_t layer) const;
  void get_scale(int32_t layer, int32_t tensor, float* scale, float* scale_inv) const;
  /// Installs max σ (all σ checked: finite, ≥ 0, not all zero).
  void set_sigma(int32_t layer, const float* sigma, int32_t num_heads, int32_t head_dim, int64_t d_model);
  /// Runs the CPU spectral norms (outside the lock, warm-started per layer) and installs them.
  void set_qk_weights(int32_t layer, const fp8attn_tensor* wq, const fp8attn_tensor* wk, int32_t num_heads_q,
                      int32_t num_heads_kv, int32_t head_dim);

  /// Blob size; writes it when `out` is non-NULL and `capacity` suffices (else BUFFER_TOO_SMALL).
  size_t serialize(void* out, size_t capacity) const;
  /// Replaces the state with a blob's contents, or throws and changes nothing.
  void deserialize(const void* blob, size_t len);

 private:
  void check_layer(int32_t layer) const;

  ThreadPool& pool_;
  mutable std::shared_mutex mutex_;
  ScaleStateData data_;
  // Warm-start vectors of set_qk_weights, per layer; not part of the serialized state.
  std::mutex warm_mutex_;
  std::vector<std::vector<float>> warm_start_;
};

}  // namespace fp8attn

/// The ABI's opaque handle type.
struct fp8attn_scale_state_t {
  fp8attn::Context& context;  ///< the context the state was created on (its backend, its amax pickup)
  fp8attn::ScaleState impl;
  fp8attn_scale_state_t(fp8attn::Context& context, fp8attn::ThreadPool& pool, const fp8attn::ScaleStateConfig& config)
      : context(context), impl(pool, config) {}
};
