#include "lib/scale/scale_state_data.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "lib/core/error.hpp"
#include "lib/spectral/logit_bound.hpp"

namespace fp8attn {

bool representable_pair(double scale, double scale_inv) {
  const float s = static_cast<float>(scale), si = static_cast<float>(scale_inv);
  return std::isfinite(s) && std::isfinite(si) && s >= std::numeric_limits<float>::min() &&
         si >= std::numeric_limits<float>::min();
}

ScaleStateConfig resolve_scale_state_options(const fp8attn_scale_state_options& o) {
  ScaleStateConfig c;
  c.num_layers = o.num_layers == 0 ? 1 : o.num_layers;
  for (int32_t t = 0; t < kNumTensorKinds; ++t) {
    const int32_t r = o.recipe[t];
    c.recipe[t] = r != FP8ATTN_RECIPE_DEFAULT ? r
                  : t == FP8ATTN_TENSOR_LOGIT ? FP8ATTN_RECIPE_GEOMETRY
                                              : FP8ATTN_RECIPE_DELAYED;
  }
  c.amax_history_len = o.amax_history_len == 0 ? 1024 : o.amax_history_len;
  c.amax_algo = o.amax_algo;
  c.margin = o.margin;
  c.burn_in_steps = o.burn_in_steps == 0 ? 100 : o.burn_in_steps;
  c.token_norm_bound = o.token_norm_bound;
  c.alpha_margin = o.alpha_margin == 0.0f ? 0.25f : o.alpha_margin;
  c.alpha_decay = o.alpha_decay == 0.0f ? 1.0f : o.alpha_decay;
  c.grad_dtype = o.grad_dtype == 0 ? FP8ATTN_DTYPE_E5M2 : o.grad_dtype;
  check_scale_state_config(c, 0);
  return c;
}

void check_scale_state_config(const ScaleStateConfig& c, int32_t status) {
  auto check = [&](bool ok, int32_t own_status, const std::string& message) {
    require(ok, status != 0 ? status : own_status, message);
  };
  check(c.num_layers >= 1 && c.num_layers <= (1 << 20), FP8ATTN_STATUS_BAD_OPTION,
        "num_layers must be in 1..2^20, got " + std::to_string(c.num_layers));
  for (int32_t t = 0; t < kNumTensorKinds; ++t) {
    const int32_t r = c.recipe[t];
    check(r == FP8ATTN_RECIPE_DELAYED || r == FP8ATTN_RECIPE_CURRENT || r == FP8ATTN_RECIPE_GEOMETRY,
          FP8ATTN_STATUS_BAD_OPTION, "recipe[" + std::to_string(t) + "] is unknown: " + std::to_string(r));
    check(r != FP8ATTN_RECIPE_GEOMETRY || t == FP8ATTN_TENSOR_LOGIT, FP8ATTN_STATUS_BAD_OPTION,
          "recipe[" + std::to_string(t) + "]: the geometry recipe applies to FP8ATTN_TENSOR_LOGIT only");
  }
  check(c.amax_history_len >= 1 && c.amax_history_len <= FP8ATTN_MAX_AMAX_HISTORY, FP8ATTN_STATUS_BAD_OPTION,
        "amax_history_len must be in 1..65536, got " + std::to_string(c.amax_history_len));
  // NOTE: each limit alone allowed 2^20 layers × 65536 entries, 2 TiB of history.
  check(int64_t{c.num_layers} * c.amax_history_len <= FP8ATTN_MAX_SCALE_STATE_ENTRIES, FP8ATTN_STATUS_BAD_OPTION,
        "num_layers · amax_history_len is " + std::to_string(int64_t{c.num_layers} * c.amax_history_len) +
            ", above FP8ATTN_MAX_SCALE_STATE_ENTRIES = " + std::to_string(FP8ATTN_MAX_SCALE_STATE_ENTRIES));
  check(c.amax_algo == FP8ATTN_AMAX_MAX || c.amax_algo == FP8ATTN_AMAX_MOST_RECENT, FP8ATTN_STATUS_BAD_OPTION,
        "amax_algo is unknown: " + std::to_string(c.amax_algo));
  check(std::isfinite(c.margin) && c.margin >= 0.0f, FP8ATTN_STATUS_BAD_SCALE, "margin must be finite and ≥ 0");
  check(std::isfinite(c.token_norm_bound) && c.token_norm_bound >= 0.0f, FP8ATTN_STATUS_BAD_SCALE,
        "token_norm_bound must be finite and ≥ 0");
  check(std::isfinite(c.alpha_margin) && c.alpha_margin >= 0.0f, FP8ATTN_STATUS_BAD_SCALE,
        "alpha_margin must be finite and ≥ 0");
  check(c.alpha_decay > 0.0f && c.alpha_decay <= 1.0f, FP8ATTN_STATUS_BAD_SCALE, "alpha_decay must be in (0, 1]");
  check(c.grad_dtype == FP8ATTN_DTYPE_E5M2 || c.grad_dtype == FP8ATTN_DTYPE_E4M3, FP8ATTN_STATUS_BAD_OPTION,
        "grad_dtype must be E4M3 or E5M2, got " + std::to_string(c.grad_dtype));
}

ScaleStateData ScaleStateData::make(const ScaleStateConfig& config) {
  ScaleStateData d;
  d.config = config;
  d.layers.resize(static_cast<size_t>(config.num_layers));
  for (auto& layer : d.layers)
    for (auto& t : layer.tensors) t.history = AmaxHistory(config.amax_history_len);
  return d;
}

float ScaleStateData::fp8_max(int32_t tensor) const {
  const bool grad = tensor == FP8ATTN_TENSOR_DO || tensor == FP8ATTN_TENSOR_DP;
  return grad && config.grad_dtype == FP8ATTN_DTYPE_E5M2 ? kE5M2Max : kE4M3Max;
}

void ScaleStateData::set_amax_scale(TensorScaleState& t, int32_t tensor, float amax) {
  // NOTE: TransformerEngine's rule: scale = (fp8_max / amax) / 2^margin; an amax of 0 (or a
  // scale that would not be finite) keeps the previous scale.
  if (!(amax > 0.0f)) return;
  const double scale = static_cast<double>(fp8_max(tensor)) / amax / std::exp2(static_cast<double>(config.margin));
  // NOTE: both halves must be normal floats, or the state could not be restored from its own
  // blob: 3e38 with margin 20 gave scale 1e-42 and scale_inv = +inf.
  if (!representable_pair(scale, 1.0 / scale)) return;
  t.scale = static_cast<float>(scale);
  t.scale_inv = static_cast<float>(1.0 / scale);
}

void ScaleStateData::report_amax(int32_t layer, int32_t tensor, float amax) {
  TensorScaleState& t = layers[layer].tensors[tensor];
  t.history.report(amax);
  // Current scaling: the tensor is cast with its own amax, so the scale follows the report now.
  if (config.recipe[tensor] == FP8ATTN_RECIPE_CURRENT) set_amax_scale(t, tensor, t.history.current());
}

void ScaleStateData::step() {
  for (auto& layer : layers) {
    for (int32_t tensor = 0; tensor < kNumTensorKinds; ++tensor) {
      TensorScaleState& t = layer.tensors[tensor];
      if (config.recipe[tensor] == FP8ATTN_RECIPE_DELAYED) {
        set_amax_scale(t, tensor, t.history.reduce(config.amax_algo == FP8ATTN_AMAX_MOST_RECENT));
      } else if (config.recipe[tensor] == FP8ATTN_RECIPE_GEOMETRY && layer.geometry.sigma_max > 0.0f) {
        const LayerGeometry& g = layer.geometry;
        layer.geometry.auto_alpha.observe(t.history.current(), logit_bound(g.sigma_max, g.head_dim, g.token_norm_bound, 1.0),
                                          config.burn_in_steps, config.alpha_margin, config.alpha_decay);
        update_logit_scale(layer);
      }
      t.history.advance();
    }
  }
  ++step_count;
}

void ScaleStateData::set_sigma(int32_t layer_index, float sigma_max, int32_t head_dim, int64_t d_model) {
  LayerScales& layer = layers[layer_index];
  // The α = 1 bound (the largest the layer can reach) must give a representable scale pair;
  // checked before anything changes, so a refused call leaves the state as it was.
  const double bx = config.token_norm_bound > 0.0f ? config.token_norm_bound : std::sqrt(static_cast<double>(d_model));
  const double bound = logit_bound(sigma_max, head_dim, static_cast<float>(bx), 1.0);
  require(std::isfinite(static_cast<float>(bx)) &&
              representable_pair(logit_scale_from_bound(bound), bound / kE4M3Max),
          FP8ATTN_STATUS_NUMERICS,
          "σ_max = " + std::to_string(sigma_max) + " with head_dim " + std::to_string(head_dim) + " and B_X = " +
              std::to_string(bx) + " gives the logit bound " + std::to_string(bound) +
              ", whose scale pair is not representable in float");
  layer.geometry.sigma_max = sigma_max;
  layer.geometry.head_dim = head_dim;
  // NOTE: the default B_X = √d is the norm of an RMS-normalized token with unit gain.
  layer.geometry.token_norm_bound =
      config.token_norm_bound > 0.0f ? config.token_norm_bound : static_cast<float>(std::sqrt(static_cast<double>(d_model)));
  if (config.recipe[FP8ATTN_TENSOR_LOGIT] == FP8ATTN_RECIPE_GEOMETRY) update_logit_scale(layer);
}

void ScaleStateData::update_logit_scale(LayerScales& layer) {
  const LayerGeometry& g = layer.geometry;
  if (!(g.sigma_max > 0.0f)) return;
  const double bound = logit_bound(g.sigma_max, g.head_dim, g.token_norm_bound, g.auto_alpha.alpha);
  const float scale = static_cast<float>(logit_scale_from_bound(bound));
  if (!representable_pair(logit_scale_from_bound(bound), bound / kE4M3Max)) return;
  TensorScaleState& t = layer.tensors[FP8ATTN_TENSOR_LOGIT];
  t.scale = scale;
  t.scale_inv = static_cast<float>(bound / kE4M3Max);
}

}  // namespace fp8attn
