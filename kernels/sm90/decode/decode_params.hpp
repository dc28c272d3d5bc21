// The decode launch's fields of the attention forward's arguments (FwdArguments::decode): a
// decode launch runs the forward kernel's producer, main loop and softmax over GQA-packed tiles
// (kernels/sm90/decode_schedule.hpp) and writes either the output (one split) or the splits'
// partial (O, LSE) rows, which the combine kernel then merges.
// NOTE: everything a replay may change is read from device memory (seqused_k, the block table,
// cu_seqlens); these fields are host upper bounds and sizes, fixed for a captured launch.
#pragma once

#include <cstdint>

namespace fp8attn::sm90 {

struct FwdDecode {
  int32_t group = 0;         ///< query heads per KV head; 0: not a decode launch
  int32_t num_splits = 0;    ///< desc.num_splits: fixed, or 0 for the heuristic decided on the device
  int32_t max_splits = 1;    ///< the host's bound: the launch's tiles and the partials' extent
  int32_t row_tiles = 1;     ///< row tiles of the longest q_len (max_seqlen_q): tiles per (b, KV head, split)
  int32_t want = 1;          ///< the heuristic's host half (decode_heuristic_want of the items)
  int32_t max_q = 0;         ///< max_seqlen_q: the partials' token extent
  float* part_o = nullptr;   ///< [max_splits][batch][max_q][heads_q][head_dim] F32; null: one split
  float* part_lse = nullptr; ///< [max_splits][batch][max_q][heads_q]
};

}  // namespace fp8attn::sm90
