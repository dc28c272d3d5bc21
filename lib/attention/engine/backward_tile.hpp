// The two work items of the CPU engine's attention backward (FlashAttention-2's algorithm, with
// its "dQ in a separate pass" schedule):
// - a key block: dK and dV of block_n keys of one KV head, summed over every query head of its
//   group and every query block that sees the keys;
// - a query block: dQ of block_m rows of one query head, summed over the key blocks it sees.
// Each output element is summed by one item in a fixed order, so the result does not depend on
// the thread count or the schedule (no atomics, unlike the GPU kernel's dQ).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/attention/attention_backward_problem.hpp"
#include "lib/attention/attention_config.hpp"

namespace fp8attn::engine {

struct KeyBlockCoord {
  int64_t batch = 0;
  int head_kv = 0;
  int64_t key_begin = 0;  ///< a multiple of block_n
};

struct QueryBlockCoord {
  int64_t batch = 0;
  int head = 0;
  int64_t row_begin = 0;  ///< a multiple of block_m
};

/// Scratch bytes one worker needs for either item.
size_t backward_tile_scratch_bytes(const AttentionConfig& config);

/// Writes dk and dv of the block's keys; returns how many of the values written are not finite.
uint64_t run_key_block_backward(const AttentionConfig& config, const AttentionBackwardProblem& problem,
                                const KeyBlockCoord& at, void* scratch);

/// Writes dq of the block's rows; returns how many of the values written are not finite.
uint64_t run_query_block_backward(const AttentionConfig& config, const AttentionBackwardProblem& problem,
                                  const QueryBlockCoord& at, void* scratch);

}  // namespace fp8attn::engine
