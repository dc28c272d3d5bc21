// The FP32 decode tile's requests for the cache's next bytes (decode_fp32.cpp): Ahead walks the
// order in which a work item reads the cache (per KV block of its split, K in key chunks, then V
// in key chunks; each chunk every KV head's rows of its keys) and requests a chunk's lines a fixed
// number of chunks before the tile uses them. Included by decode_fp32.cpp only, after
// decode_fp32_keys.hpp, inside its per-ISA namespace (isa/decode_fp32_in_isa.cpp).
//
// NOTE: why requested a few lines at a time from inside the products. A paged cache's rows lie
// in scattered pages, where the hardware prefetcher (which stops at 4 KiB pages) leaves each first
// read waiting on memory, so the tile requests every line itself. A core keeps only about a dozen
// misses in flight (its line fill buffers): a burst of requests, such as a whole chunk's 256 lines
// (32 keys × 4 KV heads × 128 bytes) or a quarter of them between two heads' products, stalls the
// core on the first request that finds no free buffer until lines arrive, and a profile put a
// sixth of the decode's time on such stalled requests. The kernels call step() every few of their
// iterations (kStepsPerHead per KV head and chunk), each requesting a few lines, so the requests
// spread evenly over the work that covers their latency.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/sm90/kv_schedule.hpp"
#include "lib/attention/attention_problem.hpp"

namespace fp8attn::engine {

/// Element offsets of `keys` consecutive keys (from `key`, span.k_offset included) of KV head h in
/// x: kv_element_offset's, with one block-table read per page instead of a division per row.
inline void row_offsets(const AttentionProblem& p, const SeqTensor& x, int64_t b, int h, int64_t key, int keys,
                        int64_t* out) {
  if (!p.paged.present) {
    for (int j = 0; j < keys; ++j) out[j] = p.kv_element_offset(x, b, key + j, h, 0);
    return;
  }
  const PagedKv& kv = p.paged;
  int64_t page = key / kv.page_size, token = key % kv.page_size;
  int64_t page_at = kv.block_table[b * kv.table_batch_stride + page * kv.table_page_stride] * x.batch_stride;
  for (int j = 0; j < keys; ++j) {
    out[j] = page_at + token * x.seq_stride + h * x.head_stride;
    if (++token == kv.page_size && j + 1 < keys) {
      token = 0;
      ++page;
      page_at = kv.block_table[b * kv.table_batch_stride + page * kv.table_page_stride] * x.batch_stride;
    }
  }
}

/// The calls of step() one KV head's products of one chunk make (decode_fp32_vec.hpp's and
/// decode_fp32_keys.hpp's kernels): each chunk's lines are requested over about this many calls
/// per head, the rest at chunk_done().
constexpr int kStepsPerHead = 16;

template <class NextHeld>
class Ahead {
 public:
  /// The work item's order from schedule step `first_step`, for KV heads [head0, head0 + heads)
  /// of sequence `batch` (span.k_offset `k_offset`); `offsets` holds decode_fp32_vec::kKeyChunk entries.
  Ahead(const AttentionProblem& p, const sm90::KvSchedule& schedule, int64_t batch, int64_t k_offset, int head0,
        int heads, int d, int dv, int64_t* offsets, int64_t first_step, NextHeld next_held)
      : p_(p), schedule_(schedule), batch_(batch), k_offset_(k_offset), head0_(head0), heads_(heads), d_(d), dv_(dv),
        at_(offsets), step_(first_step), next_held_(next_held) {
    begin_chunk();
  }

  /// Requests the chunk in hand whole and moves to the next: the chunks the tile reads first,
  /// before it has work to spread their requests over.
  void prime() {
    issue(lines_);
    next_chunk();
  }

  /// Requests the next few lines of the chunk in hand (none once it is all requested).
  void step() { issue(per_step_); }

  /// The tile finished one chunk: the rest of the chunk in hand is requested, and the next chunk
  /// of the order becomes the one in hand.
  void chunk_done() {
    issue(lines_);
    next_chunk();
  }

 private:
  void begin_chunk() {
    lines_ = 0;
    key_ = head_ = line_ = 0;
    if (step_ >= schedule_.count()) return;
    const sm90::KeyBlock block = schedule_.at(step_);
    const int64_t key = block.key_begin + chunk_ * decode_fp32_vec::kKeyChunk;
    keys_ = static_cast<int>(std::min<int64_t>(decode_fp32_vec::kKeyChunk, block.key_end - key));
    x_ = v_phase_ ? &p_.v : &p_.k;
    row_offsets(p_, *x_, batch_, head0_, k_offset_ + key, keys_, at_);
    elem_ = x_->dtype == FP8ATTN_DTYPE_BF16 ? 2 : 1;
    lines_per_row_ = static_cast<int>((elem_ * (v_phase_ ? dv_ : d_) + 63) / 64);
    lines_ = keys_ * heads_ * lines_per_row_;
    per_step_ = (lines_ + heads_ * kStepsPerHead - 1) / (heads_ * kStepsPerHead);
  }

  /// Requests up to `count` more lines of the chunk in hand: key by key, each KV head's row of
  /// the key, each row's lines.
  void issue(int count) {
    const char* base = static_cast<const char*>(x_ ? x_->data : nullptr);
    for (; count > 0 && key_ < keys_; --count) {
      __builtin_prefetch(base + (at_[key_] + head_ * x_->head_stride) * elem_ + line_ * 64);
      if (++line_ < lines_per_row_) continue;
      line_ = 0;
      if (++head_ < heads_) continue;
      head_ = 0;
      ++key_;
    }
  }

  void next_chunk() {
    if (step_ >= schedule_.count()) return;
    const sm90::KeyBlock block = schedule_.at(step_);
    if (block.key_begin + (chunk_ + 1) * decode_fp32_vec::kKeyChunk < block.key_end) {
      ++chunk_;
    } else if (!v_phase_) {
      v_phase_ = true;
      chunk_ = 0;
    } else {
      v_phase_ = false;
      chunk_ = 0;
      step_ = next_held_(step_ + 1);
    }
    begin_chunk();
  }

  const AttentionProblem& p_;
  const sm90::KvSchedule& schedule_;
  int64_t batch_, k_offset_;
  int head0_, heads_, d_, dv_;
  int64_t* at_;
  int64_t step_;
  NextHeld next_held_;
  bool v_phase_ = false;
  int chunk_ = 0;
  // The chunk in hand: its tensor, keys and lines, and the next line to request.
  const SeqTensor* x_ = nullptr;
  int64_t elem_ = 1;
  int keys_ = 0, lines_per_row_ = 0, lines_ = 0, per_step_ = 0;
  int key_ = 0, head_ = 0, line_ = 0;
};

}  // namespace fp8attn::engine
