// The quantizer's row loops for one vector ISA, in namespace
// fp8attn::FP8ATTN_QUANTIZE_ISA_NAMESPACE (for example fp8attn::quantize_avx2).
//
// NOTE: every function here is either in that namespace or has internal linkage, and the shared
// headers' inline helpers are all inlined (walsh_hadamard_butterflies is always_inline): an
// out-of-line copy under a shared name would be a weak symbol that the linker could keep from
// the AVX-512 object for every caller. tests/portability/check_isa_symbols.sh checks the object.
// CMake compiles this file once per ISA, FP8ATTN_CPU_ISA_BUILD naming it (lib/cpu_isa).
#include "lib/cpu_isa/isa_build.hpp"
#define FP8ATTN_QUANTIZE_ISA_NAMESPACE FP8ATTN_CPU_ISA_PASTE(quantize_, FP8ATTN_CPU_ISA_BUILD)
#define FP8ATTN_QUANTIZE_ISA_NAME FP8ATTN_CPU_ISA_STRING(FP8ATTN_CPU_ISA_BUILD)

#include <algorithm>
#include <cstring>

#include "kernels/numerics/bfloat16.hpp"
#include "kernels/numerics/float8.hpp"
#include "kernels/sm90/quantize/quantize_math.hpp"
#include "lib/quantize/hadamard_rotation.hpp"
#include "lib/quantize/quantize_rows.hpp"

namespace fp8attn::FP8ATTN_QUANTIZE_ISA_NAMESPACE {
namespace {

using sm90::quant::QuantizeParams;

/// Loads row (b, row, h) as floats into r.scratch and rotates it when asked, in
/// HadamardRotation::apply's order: butterflies, then one multiply per entry.
void load_transformed_row(const QuantizeParams& p, const quant::RowRef& r) {
  float* x = r.scratch;
  const int64_t base = sm90::quant::input_offset(p, r.b, r.row, r.h, 0), step = p.in_stride[3];
  if (p.input_is_bf16) {
    const auto* in = static_cast<const uint16_t*>(p.input) + base;
    for (int64_t e = 0; e < p.head_dim; ++e) x[e] = num::bf16_to_float(in[e * step]);
  } else if (step == 1) {
    std::memcpy(x, static_cast<const float*>(p.input) + base, static_cast<size_t>(p.head_dim) * sizeof(float));
  } else {
    const auto* in = static_cast<const float*>(p.input) + base;
    for (int64_t e = 0; e < p.head_dim; ++e) x[e] = in[e * step];
  }
  if (r.signed_norm == nullptr) return;
  quant::walsh_hadamard_butterflies(x, r.log2_d);
  for (int64_t e = 0; e < p.head_dim; ++e) x[e] *= r.signed_norm[e];
}

float row_amax(const QuantizeParams& p, const quant::RowRef& r) {
  load_transformed_row(p, r);
  float amax = 0.0f;
  for (int64_t e = 0; e < p.head_dim; ++e) amax = std::max(amax, sm90::quant::amax_term(r.scratch[e]));
  return amax;
}

void row_cast(const QuantizeParams& p, const quant::RowRef& r, float scale) {
  load_transformed_row(p, r);
  uint8_t* out = p.output + sm90::quant::output_offset(p, r.b, r.row, r.h, 0);
  const float* x = r.scratch;
  if (p.out_stride[3] == 1) {
    for (int64_t e = 0; e < p.head_dim; ++e) out[e] = num::float_to_e4m3(x[e] * scale);
  } else {
    for (int64_t e = 0; e < p.head_dim; ++e) out[e * p.out_stride[3]] = num::float_to_e4m3(x[e] * scale);
  }
}

}  // namespace

/// This build's row loops (lib/quantize/isa/quantize_rows_dispatch.cpp picks one).
const quant::QuantizeRowOps& quantize_row_ops() {
  static const quant::QuantizeRowOps ops{&row_amax, &row_cast, FP8ATTN_QUANTIZE_ISA_NAME};
  return ops;
}

}  // namespace fp8attn::FP8ATTN_QUANTIZE_ISA_NAMESPACE
