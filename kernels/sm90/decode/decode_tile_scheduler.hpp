// The decode launch's work tiles (kernels/sm90/decode_schedule.hpp, shared with the CPU engine's
// decode path): tile `index` is (sequence, KV head, split, row tile), row tile fastest. A tile's
// packed rows are r = token · group + head_in_group; as a BasicFwdTile for the forward's producer
// it starts at token row0 = r0 / group and query head head_kv · group + r0 % group, which is where
// the decode Q box ({dim, heads, tokens}, attention_fwd_plan.cpp) begins.
// NOTE: the split count is decided on the device (decode_splits, once per CTA by the kernel's
// first thread, into shared memory), from the real lengths (seqused_k, cu_seqlens_k), with the
// host's max_splits bounding it: a captured launch replays with other lengths and gets the
// splits the CPU engine would pick for them. Splits at or past that count
// (and past a sequence's blocks) visit no block: their partial rows are O = 0, LSE = −inf.
#pragma once

#include <cstdint>

#include "kernels/arch/platform.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/sm90/attention/fwd_config.hpp"
#include "kernels/sm90/attention/fwd_params.hpp"
#include "kernels/sm90/attention/fwd_tile_scheduler.hpp"
#include "kernels/sm90/decode_schedule.hpp"
#include "kernels/sm90/kv_schedule.hpp"
#include "kernels/sm90/mask.hpp"

namespace fp8attn::sm90 {

struct DecodeCoord {
  int32_t batch, head_kv, split, row_tile;
};

FP8ATTN_HOST_DEVICE DecodeCoord decode_coord(const AttentionFwdParams& p, int64_t index) {
  const int32_t i = static_cast<int32_t>(index);  // NOTE: the plan refuses more than INT32_MAX tiles
  DecodeCoord c;
  c.row_tile = i % p.decode.row_tiles;
  const int32_t rest = i / p.decode.row_tiles;
  c.split = rest % p.decode.max_splits;
  const int32_t head_batch = rest / p.decode.max_splits;
  c.head_kv = head_batch % p.heads_kv;
  c.batch = head_batch / p.heads_kv;
  return c;
}

/// Keys of sequence b, as fwd_tile reads them (cu_seqlens_k, a paged cache's clamped seqused_k,
/// or the padded length); I as the tile's index type.
template <class I = int64_t>
FP8ATTN_HOST_DEVICE I decode_seqlen_k(const AttentionFwdParams& p, int32_t b) {
  if (p.cu_seqlens_k != nullptr) return static_cast<I>(p.cu_seqlens_k[b + 1] - p.cu_seqlens_k[b]);
  if (p.paged.seqused_k != nullptr) return static_cast<I>(paged_seqlen_k(p, b));
  return static_cast<I>(p.seqlen_k);
}

/// The launch's split count: desc.num_splits, or decode_heuristic_splits over the longest real
/// sequence (the CPU engine's decode_num_splits), at most the host's bound.
/// NOTE: a loop over the batch, once per CTA (attention_fwd_kernel.hpp).
template <class I = int64_t>
FP8ATTN_HOST_DEVICE int32_t decode_splits(const AttentionFwdParams& p, int block_n) {
  int32_t n = p.decode.num_splits;
  if (n <= 0) {
    I longest = 0;
    for (int32_t b = 0; b < p.batch; ++b) {
      const I keys = decode_seqlen_k<I>(p, b);
      longest = keys > longest ? keys : longest;
    }
    n = decode_heuristic_from_want<I>(p.decode.want,
                                      kv_descale_slots<I>(longest, static_cast<I>(p.sink_tokens), block_n));
  }
  return n < p.decode.max_splits ? n : p.decode.max_splits;
}

/// Tile `index` of a decode launch as the forward's tile: rows = packed rows in the tile (0 past
/// the sequence's q_len · group), row0 its first token, head its first query head, mask over
/// tokens, and the split's part of the tokens' KV schedule.
/// `splits`: decode_splits of the launch (the CTA's shared copy).
template <class I = int64_t>
FP8ATTN_HOST_DEVICE BasicFwdTile<I> decode_fwd_tile(const AttentionFwdParams& p, int64_t index, int block_m,
                                                    int block_n, int32_t splits) {
  const DecodeCoord at = decode_coord(p, index);
  const int32_t group = p.decode.group;
  BasicFwdTile<I> t;
  t.batch = at.batch;
  t.head_kv = at.head_kv;
  t.m_block = at.row_tile;
  // NOTE: 32-bit rows (q_len ≤ 8 tokens of at most heads_q rows each) and one division per
  // quotient: the producer resolves tiles in 24 registers.
  int32_t seqlen_q = static_cast<int32_t>(p.seqlen_q);
  if (p.cu_seqlens_q != nullptr) {
    t.q_offset = p.cu_seqlens_q[at.batch];
    seqlen_q = p.cu_seqlens_q[at.batch + 1] - t.q_offset;
  }
  if (p.cu_seqlens_k != nullptr) t.k_offset = p.cu_seqlens_k[at.batch];
  const I seqlen_k = decode_seqlen_k<I>(p, at.batch);
  const int32_t row_begin = at.row_tile * block_m;
  const int32_t left = seqlen_q * group - row_begin;
  t.rows = left <= 0 ? 0 : (left < block_m ? left : block_m);
  t.row0 = row_begin / group;
  t.head = at.head_kv * group + (row_begin - t.row0 * group);
  t.mask = MaskParams{p.causal, p.window_left, p.window_right, seqlen_q, seqlen_k};
  if (t.rows > 0) {
    const int32_t n = splits;
    if (at.split < n) {
      const int32_t token_end = (row_begin + t.rows - 1) / group + 1;
      const BasicKvSchedule<I> all = make_kv_schedule<I>(t.mask, t.row0, token_end, block_n, p.sink_tokens, p.reverse_kv);
      t.kv = decode_split_schedule(all, kv_descale_slots<I>(seqlen_k, static_cast<I>(p.sink_tokens), block_n), n,
                                   at.split);
    }
  }
  return t;
}

/// The tile of `index` for a kernel config: the decode launch's (with the CTA's split count) or
/// the forward's.
template <class Cfg, class I = int64_t>
FP8ATTN_ARCH_FN BasicFwdTile<I> cfg_tile(const AttentionFwdParams& p, int64_t index, const FwdSharedStorage<Cfg>& smem) {
  if constexpr (Cfg::kDecode)
    return decode_fwd_tile<I>(p, index, Cfg::kBlockM, Cfg::kBlockN, arch::smem_load(&smem.decode_splits));
  else return fwd_tile<I>(p, index, Cfg::kBlockM, Cfg::kBlockN);
}

}  // namespace fp8attn::sm90
