// libFuzzer target: QK spectral norms, RoPE norms and the logit bound with fuzzed head counts,
// shapes, strides, dtypes, weights (non-finite included), warm starts and options. Invariants:
// a refused call leaves σ, the warm start and the RoPE outputs untouched; a successful call
// returns finite, non-negative numbers.
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/fuzz/fuzz_input.hpp"

using namespace fp8attn::fuzz;

namespace {

constexpr int64_t kElems = 1 << 14;
constexpr int64_t kWorkBudget = int64_t{1} << 16;

bool finite_nonnegative(const float* x, int n) {
  for (int i = 0; i < n; ++i)
    if (!(std::isfinite(x[i]) && x[i] >= 0.0f)) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r(data, size);
  fp8attn_context ctx = shared_context();
  const uint8_t which = r.take<uint8_t>() % 3;
  if (which == 2) {  // the logit bound
    float sigma[4];
    for (float& s : sigma) s = r.number();
    const int32_t heads = 1 + static_cast<int32_t>(r.pick(4)), head_dim = static_cast<int32_t>(r.extent(300));
    float bound = -5.0f, scale = -5.0f;
    fp8attn_error err = fresh_error();
    const int32_t s = fp8attn_logit_bound(sigma, heads, head_dim, r.number(), r.number(), &bound, &scale, &err);
    if (s != FP8ATTN_OK && (bound != -5.0f || scale != -5.0f)) broken("a refused logit bound wrote outputs", err);
    if (s == FP8ATTN_OK && !(std::isfinite(bound) && bound > 0 && std::isfinite(scale) && scale > 0))
      broken("the logit bound returned OK with a non-finite or zero result", err);
    return 0;
  }
  const int32_t hkv = 1 + static_cast<int32_t>(r.pick(3));
  const int32_t hq = r.pick(8) == 0 ? static_cast<int32_t>(r.extent(8)) : hkv * (1 + static_cast<int32_t>(r.pick(3)));
  const int32_t head_dim =
      r.pick(8) == 0 ? static_cast<int32_t>(r.extent(20)) : 2 * (1 + static_cast<int32_t>(r.pick(8)));
  const int64_t d_model = r.extent(40);
  const int32_t dtypes[] = {FP8ATTN_DTYPE_F32, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F16};
  std::vector<float> wq(kElems), wk(kElems);
  for (float& x : wq) x = r.pick(64) == 0 ? r.number() : static_cast<float>(r.take<int8_t>()) / 64.0f;
  for (float& x : wk) x = static_cast<float>(r.take<int8_t>()) / 64.0f;
  fp8attn_tensor tq = tensor(wq.data(), dtypes[r.pick(4)], 2), tk = tensor(wk.data(), tq.dtype, 2);
  tq.shape[0] = int64_t{hq} * head_dim, tq.shape[1] = d_model;
  tk.shape[0] = int64_t{hkv} * head_dim, tk.shape[1] = d_model;
  for (fp8attn_tensor* t : {&tq, &tk}) {
    t->stride[0] = r.pick(4) == 0 ? r.extent(64) : d_model;
    t->stride[1] = r.pick(6) == 0 ? r.extent(4) : 1;
  }
  bool must_refuse = false;
  for (const fp8attn_tensor* t : {&tq, &tk}) {
    const int64_t reach = reach_of(*t);
    if (reach < 0) must_refuse = true;
    if (reach > kElems / 4) return 0;  // also for the narrower dtypes: the buffer is in floats
  }
  int64_t work = 0;
  if (!must_refuse && (__builtin_mul_overflow(int64_t{hq} * head_dim, head_dim, &work) ||
                       __builtin_mul_overflow(work, std::max<int64_t>(d_model, 1), &work) || work > kWorkBudget))
    return 0;

  fp8attn_error err = fresh_error();
  if (which == 0) {
    fp8attn_power_iteration_options o{};
    o.struct_size = sizeof o;
    o.max_iterations = static_cast<int32_t>(r.extent(8) - (r.pick(16) == 0 ? 2 : 0));
    o.tolerance = r.pick(2) ? 0.0f : r.number();
    o.seed = r.take<uint64_t>();
    o.wq_descale = r.pick(3) == 0 ? r.number() : 0.0f;
    std::vector<float> warm(256);
    for (float& x : warm) x = r.pick(32) == 0 ? r.number() : static_cast<float>(r.take<int8_t>()) / 64.0f;
    int32_t iterations[8] = {};
    if (r.pick(2)) o.warm_start = warm.data();
    o.iterations_out = iterations;
    if (hq > 8 || int64_t{hq} * head_dim > 256) return 0;  // the harness's output buffers
    size_t bytes = 0;
    std::vector<uint8_t> workspace;
    if (fp8attn_qk_spectral_norms_workspace_size(ctx, hq, hkv, head_dim, d_model, &bytes, nullptr) == FP8ATTN_OK)
      workspace.resize(bytes);
    float sigma[8];
    std::fill(sigma, sigma + 8, -5.0f);
    const std::vector<float> warm_before = warm;
    const int32_t s = fp8attn_qk_spectral_norms(ctx, &tq, &tk, hq, hkv, head_dim, &o, sigma, workspace.data(),
                                                workspace.size(), nullptr, &err);
    if (must_refuse && s == FP8ATTN_OK) broken("a weight whose reach overflows int64 was accepted", err);
    if (s != FP8ATTN_OK && (warm != warm_before || sigma[0] != -5.0f))
      broken("refused spectral norms wrote outputs", err);
    if (s == FP8ATTN_OK && !finite_nonnegative(sigma, hq)) broken("spectral norms returned a non-finite σ", err);
    return 0;
  }
  fp8attn_rope_options o{};
  o.struct_size = sizeof o;
  o.theta_base = r.pick(2) ? 0.0f : r.number();
  o.layout = static_cast<int32_t>(r.pick(3));
  o.min_offset = r.pick(4) == 0 ? r.extent(8) - 4 : 0;
  if (__builtin_add_overflow(o.min_offset, r.extent(6), &o.max_offset)) o.max_offset = INT64_MAX;
  if (r.pick(16) == 0) o.min_offset = r.extent(0), o.max_offset = r.extent(0);
  o.max_iterations = static_cast<int32_t>(r.extent(6));
  o.seed = r.take<uint64_t>();
  if (hq > 8) return 0;
  float safe[8], exact[8];
  std::fill(safe, safe + 8, -5.0f);
  std::fill(exact, exact + 8, -5.0f);
  const int32_t s = fp8attn_qk_rope_norms(ctx, &tq, &tk, hq, hkv, head_dim, &o, safe, exact, &err);
  if (must_refuse && s == FP8ATTN_OK) broken("a weight whose reach overflows int64 was accepted", err);
  if (s != FP8ATTN_OK && (safe[0] != -5.0f || exact[0] != -5.0f)) broken("refused RoPE norms wrote outputs", err);
  if (s == FP8ATTN_OK && !(finite_nonnegative(safe, hq) && finite_nonnegative(exact, hq)))
    broken("RoPE norms returned a non-finite result", err);
  return 0;
}
