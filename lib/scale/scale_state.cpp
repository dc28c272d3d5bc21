#include "lib/scale/scale_state.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "lib/core/error.hpp"
#include "lib/core/thread_pool.hpp"
#include "lib/scale/scale_state_blob.hpp"
#include "lib/spectral/qk_spectral_norms.hpp"

namespace fp8attn {
namespace {

void check_tensor_kind(int32_t tensor) {
  require(tensor >= 0 && tensor < kNumTensorKinds, FP8ATTN_STATUS_INVALID_ARGUMENT,
          "tensor kind " + std::to_string(tensor) + " is out of range 0..7");
}

void check_amax(float amax, const std::string& what) {
  require(std::isfinite(amax) && amax >= 0.0f, FP8ATTN_STATUS_BAD_SCALE, what + " must be finite and ≥ 0");
}

}  // namespace

ScaleState::ScaleState(ThreadPool& pool, const ScaleStateConfig& config)
    : pool_(pool), data_(ScaleStateData::make(config)), warm_start_(static_cast<size_t>(config.num_layers)) {}

int32_t ScaleState::num_layers() const {
  std::shared_lock lock(mutex_);
  return data_.config.num_layers;
}

void ScaleState::check_layer(int32_t layer) const {
  require(layer >= 0 && layer < data_.config.num_layers, FP8ATTN_STATUS_INVALID_ARGUMENT,
          "layer " + std::to_string(layer) + " is out of range 0.." + std::to_string(data_.config.num_layers - 1));
}

void ScaleState::report_amax(int32_t layer, int32_t tensor, float amax) {
  check_tensor_kind(tensor);
  check_amax(amax, "amax");
  std::unique_lock lock(mutex_);
  check_layer(layer);
  data_.report_amax(layer, tensor, amax);
}

void ScaleState::report_amax_batch(const float* amax, size_t count) {
  require(amax != nullptr, FP8ATTN_STATUS_NULL_POINTER, "amax is NULL");
  std::unique_lock lock(mutex_);
  const size_t expected = static_cast<size_t>(data_.config.num_layers) * kNumTensorKinds;
  require(count == expected, FP8ATTN_STATUS_BAD_SHAPE,
          "count is " + std::to_string(count) + ", expected num_layers·8 = " + std::to_string(expected));
  for (size_t i = 0; i < count; ++i)
    require(std::isfinite(amax[i]), FP8ATTN_STATUS_BAD_SCALE, "amax[" + std::to_string(i) + "] is not finite");
  for (size_t i = 0; i < count; ++i)
    if (amax[i] >= 0.0f)
      data_.report_amax(static_cast<int32_t>(i / kNumTensorKinds), static_cast<int32_t>(i % kNumTensorKinds), amax[i]);
}

void ScaleState::report_amax_layer(int32_t layer, const float* amax) {
  require(amax != nullptr, FP8ATTN_STATUS_NULL_POINTER, "amax is NULL");
  for (int32_t t = 0; t < kNumTensorKinds; ++t)
    require(std::isfinite(amax[t]), FP8ATTN_STATUS_BAD_SCALE,
            "amax[" + std::to_string(t) + "] (tensor kind " + std::to_string(t) + ") is not finite");
  std::unique_lock lock(mutex_);
  check_layer(layer);
  for (int32_t t = 0; t < kNumTensorKinds; ++t)
    if (amax[t] >= 0.0f) data_.report_amax(layer, t, amax[t]);
}

ScaleState::ForwardScales ScaleState::forward_scales(int32_t layer) const {
  std::shared_lock lock(mutex_);
  check_layer(layer);
  const auto& t = data_.layers[layer].tensors;
  return {t[FP8ATTN_TENSOR_Q].scale_inv, t[FP8ATTN_TENSOR_K].scale_inv, t[FP8ATTN_TENSOR_V].scale_inv,
          t[FP8ATTN_TENSOR_O].scale, t[FP8ATTN_TENSOR_LOGIT].scale};
}

void ScaleState::step() {
  std::unique_lock lock(mutex_);
  data_.step();
}

void ScaleState::get_scale(int32_t layer, int32_t tensor, float* scale, float* scale_inv) const {
  check_tensor_kind(tensor);
  std::shared_lock lock(mutex_);
  check_layer(layer);
  const TensorScaleState& t = data_.layers[layer].tensors[tensor];
  if (scale) *scale = t.scale;
  if (scale_inv) *scale_inv = t.scale_inv;
}

void ScaleState::set_sigma(int32_t layer, const float* sigma, int32_t num_heads, int32_t head_dim, int64_t d_model) {
  require(sigma != nullptr, FP8ATTN_STATUS_NULL_POINTER, "sigma is NULL");
  require(num_heads >= 1 && head_dim >= 1 && d_model >= 1, FP8ATTN_STATUS_BAD_SHAPE,
          "num_heads, head_dim and d_model must be ≥ 1");
  float sigma_max = 0.0f;
  for (int32_t h = 0; h < num_heads; ++h) {
    require(std::isfinite(sigma[h]) && sigma[h] >= 0.0f, FP8ATTN_STATUS_BAD_SCALE,
            "sigma[" + std::to_string(h) + "] must be finite and ≥ 0");
    sigma_max = std::max(sigma_max, sigma[h]);
  }
  require(sigma_max > 0.0f, FP8ATTN_STATUS_BAD_SCALE, "every sigma is 0: no logit bound");
  std::unique_lock lock(mutex_);
  check_layer(layer);
  data_.set_sigma(layer, sigma_max, head_dim, d_model);
}

void ScaleState::set_qk_weights(int32_t layer, const fp8attn_tensor* wq, const fp8attn_tensor* wk, int32_t num_heads_q,
                                int32_t num_heads_kv, int32_t head_dim) {
  {
    std::shared_lock lock(mutex_);
    check_layer(layer);
  }
  require(wq != nullptr && wk != nullptr, FP8ATTN_STATUS_NULL_POINTER, "wq or wk is NULL");
  require(wq->rank == 2, FP8ATTN_STATUS_BAD_SHAPE, "wq.rank must be 2, got " + std::to_string(wq->rank));
  const QkShape shape{num_heads_q, num_heads_kv, head_dim, wq->shape[1]};
  check_qk_shape(shape);
  const WeightMatrix q = make_weight_matrix(wq, "wq", int64_t{num_heads_q} * head_dim, shape.d_model, FP8ATTN_DEVICE_HOST, 1.0f);
  const WeightMatrix k = make_weight_matrix(wk, "wk", int64_t{num_heads_kv} * head_dim, shape.d_model, FP8ATTN_DEVICE_HOST, 1.0f);
  std::vector<float> sigma(static_cast<size_t>(num_heads_q));
  {
    // The warm start of a layer is only touched here; its own mutex keeps the state's lock free
    // for readers during the (long) spectral computation.
    std::lock_guard warm_lock(warm_mutex_);
    if (warm_start_.size() <= static_cast<size_t>(layer)) warm_start_.resize(static_cast<size_t>(layer) + 1);
    std::vector<float>& warm = warm_start_[layer];
    if (warm.size() != static_cast<size_t>(num_heads_q) * head_dim) warm.assign(static_cast<size_t>(num_heads_q) * head_dim, 0.0f);
    PowerIterationSettings settings;
    settings.warm_start = warm.data();
    settings.seed = static_cast<uint64_t>(layer);
    cpu_qk_spectral_norms_owned(q, k, shape, settings, sigma.data(), pool_);
  }
  set_sigma(layer, sigma.data(), num_heads_q, head_dim, shape.d_model);
}

size_t ScaleState::serialize(void* out, size_t capacity) const {
  std::shared_lock lock(mutex_);
  const size_t size = scale_state_blob_size(data_);
  if (out != nullptr) {
    require(capacity >= size, FP8ATTN_STATUS_BUFFER_TOO_SMALL,
            "buffer has " + std::to_string(capacity) + " bytes, the blob needs " + std::to_string(size));
    write_scale_state_blob(data_, static_cast<uint8_t*>(out));
  }
  return size;
}

void ScaleState::deserialize(const void* blob, size_t len) {
  require(blob != nullptr, FP8ATTN_STATUS_NULL_POINTER, "buf is NULL");
  ScaleStateData parsed = read_scale_state_blob(static_cast<const uint8_t*>(blob), len);
  std::unique_lock lock(mutex_);
  data_ = std::move(parsed);
}

}  // namespace fp8attn
