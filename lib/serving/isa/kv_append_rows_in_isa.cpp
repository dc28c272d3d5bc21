// The KV append's row loop for one vector ISA, in namespace fp8attn::kv_append_<isa>.
//
// NOTE: every function here is either in that namespace or has internal linkage, and the shared
// headers' helpers are small inline functions that are inlined (walsh_hadamard_butterflies is
// always_inline): an out-of-line copy under a shared name would be a weak symbol that the linker
// could keep from the AVX-512 object for every caller (tests/portability/check_isa_symbols.sh).
// CMake compiles this file once per ISA, FP8ATTN_CPU_ISA_BUILD naming it (lib/cpu_isa).
#include "lib/cpu_isa/isa_build.hpp"
#define FP8ATTN_KV_APPEND_ISA_NAMESPACE FP8ATTN_CPU_ISA_PASTE(kv_append_, FP8ATTN_CPU_ISA_BUILD)
#define FP8ATTN_KV_APPEND_ISA_NAME FP8ATTN_CPU_ISA_STRING(FP8ATTN_CPU_ISA_BUILD)

#include <cstring>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#include "lib/quantize/hadamard_rotation.hpp"
#include "lib/serving/kv_append_rows.hpp"

namespace fp8attn::FP8ATTN_KV_APPEND_ISA_NAMESPACE {
namespace {

using namespace sm90::kv;

/// Row (t, h) widened to float into x, rotated when asked (HadamardRotation::apply's order:
/// butterflies, then one multiply per entry). NOTE: the dtype and strides are resolved once per
/// row, so the loops are plain strided copies.
void load_row(const KvAppendParams& p, const KvSide& s, const serving::KvRow& r) {
  float* x = r.scratch;
  const int64_t n = s.dim, base = input_offset(s, r.t, r.h, 0), step = s.in_stride[2];
  if (p.input_type == InputType::BF16) {
    const auto* in = static_cast<const uint16_t*>(s.input) + base;
    for (int64_t e = 0; e < n; ++e) x[e] = num::bf16_to_float(in[e * step]);
  } else if (step == 1) {
    std::memcpy(x, static_cast<const float*>(s.input) + base, static_cast<size_t>(n) * sizeof(float));
  } else {
    const auto* in = static_cast<const float*>(s.input) + base;
    for (int64_t e = 0; e < n; ++e) x[e] = in[e * step];
  }
  if (r.signed_norm == nullptr) return;
  quant::walsh_hadamard_butterflies(x, r.log2_d);
  for (int64_t e = 0; e < n; ++e) x[e] *= r.signed_norm[e];
}

/// max of quant::amax_term over the row, on the bits: |x|'s bits clamped to +inf's (NaN and ±inf
/// become +inf, as amax_term maps them), then an unsigned maximum. Non-negative floats order as
/// their bits, so this is the kernel's float maximum exactly; an integer maximum is associative,
/// so the compiler vectorizes the reduction (a float one it must keep in order).
float row_amax(const float* x, int64_t n) {
  uint32_t m = 0;
  for (int64_t e = 0; e < n; ++e) {
    uint32_t bits;
    std::memcpy(&bits, &x[e], sizeof bits);
    bits &= 0x7FFFFFFFu;
    bits = bits < 0x7F800000u ? bits : 0x7F800000u;
    m = m > bits ? m : bits;
  }
  float amax;
  std::memcpy(&amax, &m, sizeof amax);
  return amax;
}

void append_row(const KvAppendParams& p, const KvSide& s, const serving::KvRow& r) {
  // NOTE: the extent in a local: a byte store may alias any memory, s.dim included, and a bound
  // read again after every store leaves the compiler no trip count to vectorize with.
  const int64_t n = s.dim;
  const int64_t out_base = cache_offset(s, p.page_size, r.slot, r.h, 0), out_step = s.cache_stride[3];
  if (p.input_type == InputType::E4M3) {  // copied as it is
    const auto* in = static_cast<const uint8_t*>(s.input) + input_offset(s, r.t, r.h, 0);
    auto* out = static_cast<uint8_t*>(s.cache) + out_base;
    for (int64_t e = 0; e < n; ++e) out[e * out_step] = in[e * s.in_stride[2]];
    return;
  }
  load_row(p, s, r);
  float* x = r.scratch;
  if (p.cache_type == CacheType::BF16) {
    auto* out = static_cast<uint16_t*>(s.cache) + out_base;
    for (int64_t e = 0; e < n; ++e) out[e * out_step] = num::float_to_bf16(x[e]);
    return;
  }
  if (p.scale == Scale::PerTokenHead) {
    const float scale = token_scale(row_amax(x, n));
    s.descale[token_descale_offset(s, p.page_size, r.slot, r.h)] = sm90::quant::descale_from_scale(scale);
    for (int64_t e = 0; e < n; ++e) x[e] = x[e] * scale;
  } else if (p.scale == Scale::PerHead) {
    const float descale = s.descale[r.h * s.descale_stride[2]];
    for (int64_t e = 0; e < n; ++e) x[e] = x[e] / descale;
  }
  // NOTE: scaled in place first, then cast: branch-free loops the compiler vectorizes.
  auto* out = static_cast<uint8_t*>(s.cache) + out_base;
  if (out_step == 1)
    for (int64_t e = 0; e < n; ++e) out[e] = num::float_to_e4m3(x[e]);
  else
    for (int64_t e = 0; e < n; ++e) out[e * out_step] = num::float_to_e4m3(x[e]);
}

}  // namespace

/// This build's row loop (lib/serving/isa/kv_append_rows_dispatch.cpp picks one).
const serving::KvAppendRowOps& kv_append_row_ops() {
  static const serving::KvAppendRowOps ops{&append_row, FP8ATTN_KV_APPEND_ISA_NAME};
  return ops;
}

}  // namespace fp8attn::FP8ATTN_KV_APPEND_ISA_NAMESPACE
