// One tile of the decode path (desc.decode): up to BlockM packed rows (token, head in group) of
// one (sequence, KV group), over the KV blocks of one split (kernels/sm90/decode_schedule.hpp).
// The arithmetic per row is the forward's (query_tile.cpp): the same blocks in the same order,
// the same online softmax and casts, so one split gives the forward's bits.
// NOTE: decode_tile.cpp is compiled only inside the per-ISA builds of query_tile.cpp
// (isa/query_tile_in_isa.cpp), whose K/V gather and decode (decode_block_panels) it calls; these
// declarations are the dispatcher's (isa/query_tile_dispatch.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/attention/attention_config.hpp"
#include "lib/attention/attention_problem.hpp"
#include "lib/attention/engine/query_tile.hpp"

namespace fp8attn::engine {

/// Where a split's partial results go: O (already divided by its row sum and times v_descale)
/// in F32 and the LSE, row (split, sequence, token, query head); NULL o when the tile writes the
/// final output itself (one split).
struct DecodePartials {
  float* o = nullptr;    ///< [splits][batch][max_q][heads_q][head_dim_v]
  float* lse = nullptr;  ///< [splits][batch][max_q][heads_q]
  int64_t batch = 0, max_q = 0;
  int heads_q = 0, head_dim_v = 0;
  int64_t row(int split, int64_t b, int64_t token, int head) const {
    return ((split * batch + b) * max_q + token) * heads_q + head;
  }
};

struct DecodeTileCoord {
  int64_t batch = 0;
  int head_kv = 0;
  int64_t row_begin = 0;  ///< first packed row, a multiple of BlockM
  int split = 0, num_splits = 1;
};

size_t decode_tile_scratch_bytes(const AttentionConfig& config);

/// Computes one tile over one split: with one split it writes out and lse as the forward does;
/// otherwise the split's partial rows.
void run_decode_tile(const AttentionConfig& config, const AttentionProblem& problem, const DecodeTileCoord& at,
                     void* scratch, KvBlockCache& kv, TileTelemetry& telemetry, const DecodePartials& partials);

/// Writes one final output element as the forward's epilogue does (E4M3 with out_scale), and
/// counts it in telemetry (non-finite values, max |O|).
void store_output(const AttentionProblem& p, int64_t b, int64_t row, int head, int e, float o,
                  TileTelemetry& telemetry);

}  // namespace fp8attn::engine
