// The work item of the CPU engine's attention backward (FlashAttention-2's algorithm): a key
// block, block_n keys of one KV head. It computes dK and dV of its keys, summed over every query
// head of the group and every query block that sees the keys, and adds its share of dQ, dS·K, into
// an F32 dQ accumulator.
// NOTE: the dQ adds follow FlashAttention-3's deterministic mode: for each (sequence, query head,
// query block) a turn counter lets the key blocks add in ascending order, so dQ is summed in one
// fixed order whatever the thread count. Items are handed out in ascending order and a block waits
// only for the block before it, which was handed out earlier: no deadlock on any worker count.
#pragma once

#include <atomic>
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

/// The F32 dQ accumulator, before the softmax scale, and its turn counters.
struct DqAccumulator {
  float* data = nullptr;                 ///< [rows][heads_q][head_dim], rows as dq_row() numbers them
  std::atomic<int64_t>* turns = nullptr;  ///< [batch][heads_q][q_blocks]: the next key block to add
  int64_t q_blocks = 0;                  ///< ceil(max_seqlen_q / block_m)

  /// Row of (sequence b, row) in `data`: packed rows as they are, padded rows b·seqlen_q + row.
  static int64_t row(const AttentionBackwardProblem& p, int64_t b, int64_t row) {
    return p.fwd.varlen ? p.span(b).q_offset + row : b * p.fwd.padded_seqlen_q + row;
  }
};

/// Scratch bytes one worker needs.
size_t backward_tile_scratch_bytes(const AttentionConfig& config);

/// Writes dk and dv of the block's keys and adds its dQ shares into `dq` (the first key block
/// of a sequence stores instead of adding); returns how many of the values written are not finite.
uint64_t run_key_block_backward(const AttentionConfig& config, const AttentionBackwardProblem& problem,
                                const KeyBlockCoord& at, const DqAccumulator& dq, void* scratch);

}  // namespace fp8attn::engine
