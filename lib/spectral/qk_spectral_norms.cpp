#include "lib/spectral/qk_spectral_norms.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "lib/core/checked_math.hpp"
#include "lib/core/error.hpp"
#include "lib/core/thread_pool.hpp"
#include "lib/spectral/gram_power_iteration.hpp"
#include "lib/spectral/head_grams.hpp"

namespace fp8attn {
namespace {

constexpr size_t kAlign = 64;
size_t align_up(size_t n) { return checked_add(n, kAlign - 1, "spectral workspace") / kAlign * kAlign; }

/// count · element bytes, checked (the extents are already within the documented limits).
size_t bytes_of(size_t element, int64_t a, int64_t b = 1, int64_t c = 1) {
  const int64_t count = checked_mul(checked_mul(a, b, "spectral workspace"), c, "spectral workspace");
  return checked_mul(element, static_cast<size_t>(count), "spectral workspace");
}

/// NUMERICS naming `what` when any of x[0 .. n) is NaN or infinite.
void require_finite(const float* x, int64_t n, const char* what) {
  for (int64_t i = 0; i < n; ++i)
    FP8ATTN_REQUIRE(std::isfinite(x[i]), FP8ATTN_STATUS_NUMERICS,
                    std::string(what) + " holds a NaN or an infinity at index " + std::to_string(i));
}

int64_t per_head_doubles(const QkShape& s) { return s.head_dim + power_iteration_scratch_doubles(s.head_dim); }

/// Where each piece lives in the caller's workspace.
struct WorkspaceLayout {
  size_t grams_q = 0, grams_k = 0, block = 0, vectors = 0, results = 0, total = 0;
  explicit WorkspaceLayout(const QkShape& s) {
    // NOTE: every product is checked: a size above 2^64 once wrapped to
    // a small workspace that the call then overran.
    const int64_t dh = s.head_dim;
    size_t at = 0;
    grams_q = at;
    at = checked_add(at, align_up(bytes_of(sizeof(float), s.num_heads_q, dh, dh)), "spectral workspace");
    grams_k = at;
    at = checked_add(at, align_up(bytes_of(sizeof(float), s.num_heads_kv, dh, dh)), "spectral workspace");
    block = at;
    at = checked_add(at, align_up(bytes_of(sizeof(float), dh, s.d_model)), "spectral workspace");
    vectors = at;  // per query head: v, then the iteration's scratch
    at = checked_add(at, align_up(bytes_of(sizeof(double), s.num_heads_q, per_head_doubles(s))), "spectral workspace");
    results = at;
    at = checked_add(at, align_up(bytes_of(sizeof(PowerIterationResult), s.num_heads_q)), "spectral workspace");
    total = at;
  }
};

bool all_zero(const float* x, int32_t n) {
  for (int32_t i = 0; i < n; ++i)
    if (x[i] != 0.0f) return false;
  return true;
}

}  // namespace

size_t cpu_qk_spectral_workspace_size(const QkShape& shape) {
  return checked_add(WorkspaceLayout(shape).total, kAlign, "spectral workspace");
}

void cpu_qk_spectral_norms(const WeightMatrix& wq, const WeightMatrix& wk, const QkShape& shape,
                           const PowerIterationSettings& settings, float* sigma_out, void* workspace,
                           size_t workspace_bytes, ThreadPool& pool) {
  const WorkspaceLayout layout(shape);
  require(workspace != nullptr || layout.total == 0, FP8ATTN_STATUS_NULL_POINTER, "workspace is NULL");
  // Align the base: the caller's pointer may be arbitrary.
  auto base = reinterpret_cast<uintptr_t>(workspace);
  const size_t skew = (kAlign - base % kAlign) % kAlign;
  // The advertised size covers any alignment skew; hold callers to it exactly.
  require(workspace_bytes >= cpu_qk_spectral_workspace_size(shape), FP8ATTN_STATUS_WORKSPACE_TOO_SMALL,
          "workspace has " + std::to_string(workspace_bytes) + " bytes, needs " +
              std::to_string(cpu_qk_spectral_workspace_size(shape)));
  char* ws = reinterpret_cast<char*>(base + skew);
  float* grams_q = reinterpret_cast<float*>(ws + layout.grams_q);
  float* grams_k = reinterpret_cast<float*>(ws + layout.grams_k);
  float* block = reinterpret_cast<float*>(ws + layout.block);
  double* vectors = reinterpret_cast<double*>(ws + layout.vectors);
  auto* results = reinterpret_cast<PowerIterationResult*>(ws + layout.results);

  const int32_t dh = shape.head_dim;
  // NOTE: std::max drops NaN, so a NaN that reached the iteration came out as σ = 0 with OK;
  // the inputs and the Grams are checked for finiteness instead.
  if (settings.warm_start) require_finite(settings.warm_start, int64_t{shape.num_heads_q} * dh, "the warm start");
  compute_head_grams(wq, shape.num_heads_q, dh, block, grams_q, pool);
  // NOTE: one Gram per key group, read by all of the group's query heads: W_K,g is touched once.
  compute_head_grams(wk, shape.num_heads_kv, dh, block, grams_k, pool);
  require_finite(grams_q, int64_t{shape.num_heads_q} * dh * dh,
                 "the Gram matrix of wq (a weight is NaN, infinite or overflows)");
  require_finite(grams_k, int64_t{shape.num_heads_kv} * dh * dh,
                 "the Gram matrix of wk (a weight is NaN, infinite or overflows)");

  const int32_t group = shape.group_size();
  pool.parallel_for(shape.num_heads_q, [&](int64_t h, int) {
    double* v = vectors + h * per_head_doubles(shape);
    const float* warm = settings.warm_start ? settings.warm_start + h * dh : nullptr;
    if (warm != nullptr && !all_zero(warm, dh)) {
      for (int32_t i = 0; i < dh; ++i) v[i] = warm[i];
    } else {
      seeded_unit_vector(settings.seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(h + 1)), dh, v);
    }
    const float* gq = grams_q + h * dh * dh;
    const float* gk = grams_k + (h / group) * dh * dh;
    results[h] = power_iterate_gram_product(gq, gk, dh, v, v + dh, settings.max_iterations, settings.tolerance);
  });

  for (int32_t h = 0; h < shape.num_heads_q; ++h)
    FP8ATTN_REQUIRE(std::isfinite(results[h].lambda) && std::isfinite(static_cast<float>(std::sqrt(results[h].lambda))),
                    FP8ATTN_STATUS_NUMERICS, "σ of head " + std::to_string(h) + " is not a finite float");
  // Every head finished: publish the outputs.
  for (int32_t h = 0; h < shape.num_heads_q; ++h) {
    sigma_out[h] = static_cast<float>(std::sqrt(results[h].lambda));
    if (settings.iterations_out) settings.iterations_out[h] = results[h].iterations;
    if (settings.residual_out) settings.residual_out[h] = static_cast<float>(results[h].residual);
    if (settings.warm_start)
      for (int32_t i = 0; i < dh; ++i) settings.warm_start[h * dh + i] = static_cast<float>(vectors[h * per_head_doubles(shape) + i]);
  }
}

}  // namespace fp8attn

namespace fp8attn {

void cpu_qk_spectral_norms_owned(const WeightMatrix& wq, const WeightMatrix& wk, const QkShape& shape,
                                 const PowerIterationSettings& settings, float* sigma_out, ThreadPool& pool) {
  std::vector<char> workspace(cpu_qk_spectral_workspace_size(shape));
  cpu_qk_spectral_norms(wq, wk, shape, settings, sigma_out, workspace.data(), workspace.size(), pool);
}

}  // namespace fp8attn
