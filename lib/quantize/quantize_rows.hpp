// The CPU quantizer's two row loops (read a row, rotate it, take its amax; read, rotate, scale
// and cast it), compiled once per vector ISA (lib/quantize/isa) and chosen at run time by the
// same CPUID dispatch as the engine, so the default build runs on any x86-64 and still uses
// AVX2 or AVX-512 where the CPU has them. Every build computes the same bits: the loops are
// element-wise or the fixed butterfly order, built with -ffp-contract=off and no fast math.
#pragma once

#include <cstdint>

#include "kernels/sm90/quantize/quantize_params.hpp"

namespace fp8attn::quant {

/// One row (b, row, h) of the input, with the rotation's folded factors (NULL when the
/// quantizer does not rotate) and a head_dim scratch vector.
struct RowRef {
  int64_t b, row, h;
  const float* signed_norm;  ///< HadamardRotation's ±fl(1/√d) per entry, or NULL
  int log2_d;
  float* scratch;  ///< head_dim floats
};

struct QuantizeRowOps {
  /// max over the row of quant::amax_term(x), x the loaded (and rotated) row.
  float (*amax)(const sm90::quant::QuantizeParams& p, const RowRef& row);
  /// Writes e4m3(x·scale) for the loaded (and rotated) row to its output row.
  void (*cast)(const sm90::quant::QuantizeParams& p, const RowRef& row, float scale);
  const char* isa;  ///< "baseline", "avx2" or "avx512"
};

/// The build for the active CPU ISA (fp8attn::active_cpu_isa(), so
/// FP8ATTN_CPU_ISA and set_active_cpu_isa steer both).
const QuantizeRowOps& quantize_row_ops();

}  // namespace fp8attn::quant
