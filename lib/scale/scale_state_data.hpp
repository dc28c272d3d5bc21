// The contents of a scale state, without locking: resolved options, and per layer the scales,
// amax histories and geometry (σ, auto-α) of every tensor kind. The recipes' formulas live
// here (DESIGN §3, "Delayed and current scaling" and "Geometry-aware logit scales").
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "fp8attn/fp8attn.h"
#include "lib/scale/amax_history.hpp"
#include "lib/scale/auto_alpha.hpp"

namespace fp8attn {

/// True when scale and scale_inv are both normal positive floats: the only pairs a scale state
/// holds, so that its own blob always loads back.
bool representable_pair(double scale, double scale_inv);

inline constexpr int32_t kNumTensorKinds = FP8ATTN_NUM_TENSOR_KINDS;

/// Options with every default resolved and every range checked.
struct ScaleStateConfig {
  int32_t num_layers = 1;
  std::array<int32_t, kNumTensorKinds> recipe{};  ///< never FP8ATTN_RECIPE_DEFAULT
  int32_t amax_history_len = 1024;
  int32_t amax_algo = FP8ATTN_AMAX_MAX;
  float margin = 0.0f;
  int32_t burn_in_steps = 100;  ///< < 0: auto-α off
  float token_norm_bound = 0.0f;  ///< 0: √d_model of the layer's weights
  float alpha_margin = 0.25f;
  float alpha_decay = 1.0f;
  int32_t grad_dtype = FP8ATTN_DTYPE_E5M2;
};

/// Resolves and checks caller options (a full-size copy). Throws BAD_OPTION / BAD_SCALE.
ScaleStateConfig resolve_scale_state_options(const fp8attn_scale_state_options& options);
/// Throws if `config` is out of range; `status` is the status to throw (the blob reader uses a
/// numerics status).
void check_scale_state_config(const ScaleStateConfig& config, int32_t status);

/// One tensor's scale.
struct TensorScaleState {
  float scale = 1.0f;
  float scale_inv = 1.0f;
  AmaxHistory history;
};

/// The geometry-aware logit scale of one layer.
struct LayerGeometry {
  float sigma_max = 0.0f;        ///< max_h σ_h; 0 until the weights are set
  int32_t head_dim = 0;
  float token_norm_bound = 0.0f; ///< B_X in use
  AutoAlpha auto_alpha;
};

struct LayerScales {
  std::array<TensorScaleState, kNumTensorKinds> tensors;
  LayerGeometry geometry;
};

struct ScaleStateData {
  ScaleStateConfig config;
  uint64_t step_count = 0;
  std::vector<LayerScales> layers;

  /// Fresh state: every scale 1, histories zero.
  static ScaleStateData make(const ScaleStateConfig& config);

  /// Records an amax (checked by the caller: finite, ≥ 0; layer and tensor in range).
  void report_amax(int32_t layer, int32_t tensor, float amax);
  /// Ends the step (see fp8attn_scale_state_step()).
  void step();
  /// Installs a layer's σ_max (> 0, finite) and recomputes its logit scale.
  void set_sigma(int32_t layer, float sigma_max, int32_t head_dim, int64_t d_model);

  /// E4M3's 448, or E5M2's 57344 for dO and dP when the config says so.
  float fp8_max(int32_t tensor) const;

 private:
  void set_amax_scale(TensorScaleState& t, int32_t tensor, float amax);
  void update_logit_scale(LayerScales& layer);
};

}  // namespace fp8attn
