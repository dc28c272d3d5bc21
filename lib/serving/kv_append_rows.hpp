// The CPU KV append's row loop (load a row, rotate it, scale and cast it into its slot), compiled
// once per vector ISA (lib/serving/isa) and chosen at run time by the same CPUID dispatch as the
// engine and the quantizer, so the default build runs on any x86-64 and still uses AVX2 or
// AVX-512 where the CPU has them. Every build computes the same bits: the loops are element-wise
// or the fixed butterfly order, built with -ffp-contract=off and no fast math.
#pragma once

#include <cstdint>

#include "kernels/sm90/kv_append/kv_append_params.hpp"

namespace fp8attn::serving {

/// Row (t, h) of one side of the append, its slot, the rotation's folded factors (HadamardRotation's
/// ±fl(1/√d) per entry, NULL when the row is not rotated) and a scratch vector of the row's dim.
struct KvRow {
  int64_t t, slot, h;
  const float* signed_norm;
  int log2_d;
  float* scratch;
};

struct KvAppendRowOps {
  /// Writes the row into its slot with the kernel's arithmetic (kv_append_kernel.hpp), and its
  /// descale for PerTokenHead.
  void (*append_row)(const sm90::kv::KvAppendParams& p, const sm90::kv::KvSide& s, const KvRow& row);
  const char* isa;  ///< "baseline", "avx2" or "avx512"
};

/// The build for the active CPU ISA (fp8attn::active_cpu_isa()).
const KvAppendRowOps& kv_append_row_ops();

}  // namespace fp8attn::serving
