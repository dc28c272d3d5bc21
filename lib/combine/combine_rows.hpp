// The CPU combine's merge of a run of rows, compiled once per vector ISA (lib/combine/isa) and
// chosen at run time by the same CPUID dispatch as the engine, the quantizer and the KV append, so
// the default build runs on any x86-64 and still uses AVX2 or AVX-512 where the CPU has them.
// Every build computes the same bits: each element's operations are combine_math.hpp's, one at a
// time in part order, built with -ffp-contract=off and no fast math.
#pragma once

#include <cstdint>

#include "kernels/sm90/combine/combine_params.hpp"

namespace fp8attn::combine {

/// Rows per work item: enough to amortize the pool's hand-out, few enough to balance 2..64
/// workers on a few thousand rows.
inline constexpr int64_t kRowsPerItem = 16;

/// One build's merge of rows [r0, r0 + rows), rows ≤ kRowsPerItem, and its ISA's name; stream_out
/// writes contiguous rows of out through streaming stores (for calls larger than the cache).
struct CombineRowOps {
  void (*combine_rows)(const sm90::combine::CombineParams& p, int64_t r0, int64_t rows, bool stream_out);
  const char* isa;
};

/// The build active_cpu_isa() names (lib/combine/isa/combine_rows_dispatch.cpp).
const CombineRowOps& combine_row_ops();

}  // namespace fp8attn::combine
