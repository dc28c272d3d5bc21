// The CPU combine's merge of a run of rows, compiled once per vector ISA (lib/combine/isa) and
// chosen at run time by the same CPUID dispatch as the engine, the quantizer and the KV append, so
// the default build runs on any x86-64 and still uses AVX2 or AVX-512 where the CPU has them.
// Every build computes the same bits: each element's operations are combine_math.hpp's, one at a
// time in part order, built with -ffp-contract=off and no fast math.
#pragma once

#include <cstdint>

#include "kernels/sm90/combine/combine_params.hpp"

namespace fp8attn::combine {

/// Rows per call of a build's merge: its weights run across the rows in vector lanes (four AVX-512
/// vectors of floats), so their dependent steps (max, ex2, the sum, 1/s, log) overlap.
/// NOTE: 64 rows ran a two-part merge 1.05 to 1.3 times as fast as 16 on a Zen 4, and no shape
/// slower; the pool's work items are runs of these blocks (lib/combine/cpu_combine.cpp).
inline constexpr int64_t kRowsPerItem = 64;

/// One build's merge of rows [r0, r0 + rows), rows ≤ kRowsPerItem, and its ISA's name; stream_out
/// writes contiguous rows of out through streaming stores (for calls larger than the cache).
struct CombineRowOps {
  void (*combine_rows)(const sm90::combine::CombineParams& p, int64_t r0, int64_t rows, bool stream_out);
  const char* isa;
};

/// The build active_cpu_isa() names (lib/combine/isa/combine_rows_dispatch.cpp).
const CombineRowOps& combine_row_ops();

}  // namespace fp8attn::combine
