// libFuzzer target: fp8attn_attention_combine with fuzzed part counts, extents, strides, dtypes,
// outputs that alias inputs or each other, and partial values (NaN, infinities and −inf LSEs
// included). Invariants: a refused call leaves out and lse untouched; a successful call whose
// partial LSEs hold no NaN or +inf and whose partial outputs are finite writes finite outputs
// with |out| ≤ max|O| (a convex combination, up to BF16 rounding) and lse ≤ max lse + log(parts).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/fuzz/fuzz_input.hpp"

using namespace fp8attn::fuzz;

namespace {

constexpr int64_t kElems = 1 << 14;
constexpr int64_t kWorkBudget = int64_t{1} << 17;

float load(const fp8attn_tensor& t, int64_t at) {
  if (t.dtype == FP8ATTN_DTYPE_BF16) {
    const uint32_t wide = static_cast<uint32_t>(static_cast<const uint16_t*>(t.data)[at]) << 16;
    float f;
    std::memcpy(&f, &wide, 4);
    return f;
  }
  return static_cast<const float*>(t.data)[at];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r(data, size);
  const int32_t dtypes[] = {FP8ATTN_DTYPE_F32, FP8ATTN_DTYPE_BF16, FP8ATTN_DTYPE_E4M3};
  const int32_t o_dtype = r.pick(8) == 0 ? dtypes[2] : dtypes[r.pick(2)];
  const int32_t out_dtype = r.pick(8) == 0 ? dtypes[2] : dtypes[r.pick(2)];
  const int64_t parts = r.pick(16) == 0 ? r.extent(300) : 1 + r.pick(6);
  const int64_t lse_parts = r.pick(16) == 0 ? r.extent(8) : parts;
  const int64_t tokens = r.extent(12), heads = r.extent(3), dim = r.pick(4) == 0 ? r.extent(70) : 16;

  // Every buffer is poisoned: partials hold fuzzed values where the dense layout puts them.
  std::vector<float> po32(kElems), pl(kElems), out32(kElems, -777.0f), lse(kElems, -555.0f);
  for (float& x : po32) x = r.number();
  for (float& x : pl) x = r.pick(4) == 0 ? -INFINITY : r.number() * 8.0f;
  std::vector<uint16_t> po16(kElems), out16(kElems, 0xA5A5);
  for (size_t i = 0; i < po16.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &po32[i], 4);
    po16[i] = static_cast<uint16_t>(bits >> 16);
  }
  const bool po_wide = o_dtype != FP8ATTN_DTYPE_BF16, out_wide = out_dtype != FP8ATTN_DTYPE_BF16;
  fp8attn_tensor tpo = tensor(po_wide ? static_cast<void*>(po32.data()) : po16.data(), o_dtype, 4);
  fp8attn_tensor tpl = tensor(pl.data(), FP8ATTN_DTYPE_F32, 3);
  fp8attn_tensor tout = tensor(out_wide ? static_cast<void*>(out32.data()) : out16.data(), out_dtype, 3);
  fp8attn_tensor tlse = tensor(lse.data(), r.pick(10) == 0 ? FP8ATTN_DTYPE_BF16 : FP8ATTN_DTYPE_F32, 2);
  const int64_t po_shape[] = {parts, tokens, heads, dim}, pl_shape[] = {lse_parts, tokens, heads};
  const int64_t out_shape[] = {tokens, heads, r.pick(16) == 0 ? r.extent(70) : dim}, lse_shape[] = {tokens, heads};
  std::memcpy(tpo.shape, po_shape, sizeof po_shape);
  std::memcpy(tpl.shape, pl_shape, sizeof pl_shape);
  std::memcpy(tout.shape, out_shape, sizeof out_shape);
  std::memcpy(tlse.shape, lse_shape, sizeof lse_shape);
  for (fp8attn_tensor* t : {&tpo, &tpl, &tout, &tlse}) {
    int64_t stride = 1;
    for (int i = t->rank - 1; i >= 0; --i) {
      t->stride[i] = stride;
      stride = next_dense_stride(stride, t->shape[i]);
    }
    if (r.pick(3) == 0) t->stride[r.pick(t->rank)] = r.extent(64);
  }
  const uint32_t alias = r.pick(12);
  if (alias == 1) tout.data = tpo.data;
  if (alias == 2) tlse.data = tpl.data;
  if (alias == 3) tlse.data = tout.data;
  if (alias == 4) tlse.data = nullptr;  // no LSE output

  bool must_refuse = false;
  for (const fp8attn_tensor* t : {&tpo, &tpl, &tout, &tlse}) {
    const int64_t reach = reach_of(*t);
    if (reach < 0) must_refuse = true;
    if (reach > kElems) return 0;  // memory the harness does not own
  }
  // NOTE: each factor is multiplied in with an overflow check of its own: extents can be near
  // INT64_MAX, so even heads·dim alone can overflow.
  int64_t work = 1;
  bool too_much = false;
  for (const int64_t extent : {parts, tokens, heads, dim})
    too_much = too_much || __builtin_mul_overflow(work, std::max<int64_t>(extent, 1), &work) || work > kWorkBudget;
  if (too_much && !must_refuse) return 0;

  fp8attn_combine_args a{};
  a.struct_size = r.pick(32) == 0 ? r.extent(800) : sizeof a;
  a.partial_out = tpo, a.partial_lse = tpl, a.out = tout, a.lse = tlse;
  const std::vector<float> out32_before = out32, lse_before = lse;
  const std::vector<uint16_t> out16_before = out16;
  fp8attn_error err = fresh_error();
  size_t bytes = 99;
  const int32_t q = fp8attn_attention_combine_workspace_size(shared_context(), &a, &bytes, &err);
  if (q == FP8ATTN_OK && bytes != 0) broken("the combine workspace query asked for a workspace", err);
  const int32_t s = fp8attn_attention_combine(shared_context(), &a, nullptr, 0, nullptr, &err);
  if (must_refuse && s == FP8ATTN_OK) broken("a tensor whose reach overflows int64 was accepted", err);
  if (s != FP8ATTN_OK) {
    if (out32 != out32_before || out16 != out16_before || lse != lse_before) broken("a refused combine wrote outputs", err);
    return 0;
  }
  if (alias >= 1 && alias <= 3 && tokens * heads > 0 && dim > 0) broken("a combine with aliased outputs was accepted", err);
  if (q != FP8ATTN_OK) broken("the workspace query refused a call that ran", err);
  // The convexity invariant, on clean inputs.
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      bool clean = true;
      float max_o = 0.0f, max_lse = -INFINITY;
      for (int64_t p = 0; p < parts; ++p) {
        const float l = pl[p * tpl.stride[0] + t * tpl.stride[1] + h * tpl.stride[2]];
        if (std::isnan(l) || l == INFINITY) clean = false;
        if (l == -INFINITY) continue;
        max_lse = std::max(max_lse, l);
        for (int64_t e = 0; e < dim; ++e) {
          const float o = load(tpo, p * tpo.stride[0] + t * tpo.stride[1] + h * tpo.stride[2] + e * tpo.stride[3]);
          if (!std::isfinite(o)) clean = false;
          max_o = std::max(max_o, std::fabs(o));
        }
      }
      if (!clean) continue;
      for (int64_t e = 0; e < dim; ++e) {
        const float o = load(tout, t * tout.stride[0] + h * tout.stride[1] + e * tout.stride[2]);
        if (!(std::fabs(o) <= max_o * 1.01f + 1e-30f)) broken("combined out outside the parts' range", err);
      }
      if (tlse.data != nullptr) {
        // NOTE: through tlse.data, which may be out's buffer: an output with no elements (dim 0)
        // overlaps nothing, so LSE aliased onto it is a valid call.
        const float l = load(tlse, t * tlse.stride[0] + h * tlse.stride[1]);
        if (max_lse == -INFINITY ? l != -INFINITY : !(l >= max_lse && l <= max_lse + std::log(float(parts)) + 1e-3f * (1 + std::fabs(max_lse))))
          broken("combined lse outside [max lse, max lse + log parts]", err);
      }
    }
  return 0;
}
