// K and V of the attention forward from a paged KV cache (FwdPagedKv, fwd_params.hpp), for the
// producer warpgroup; the consumers see the same shared-memory tiles as from contiguous K and V.
// The producer's thread 0 loads Q and posts each KV block (post_paged_block); warps 1-3 load it:
//   - TMA path (box_rows > 0): a block of BlockN keys is BlockN / box_rows TMA boxes, each
//     box_rows tokens of one page (box_rows divides page_size, BlockN and sink_tokens, so no box
//     straddles a page), issued by one thread. One box when page_size is a multiple of BlockN.
//   - Gather path (box_rows = 0: page sizes whose box would not be a multiple of 8 rows, the
//     swizzle period of a K tile, and E4M3 caches under BF16 Q): warps 1-3 copy 8-byte words of
//     each row with plain loads into the tile's (swizzled) layout (decoding E4M3 codes to BF16
//     for a BF16 kernel), fence them for the async proxy and arrive on k_full.
// TMA boxes also read the slots past seqused_k that share a box with the last key: an
// uninitialized cache holds NaN codes there, and 0 · NaN in P·V would reach O, so warps 1-3 zero
// those V rows once V lands (E4M3: in the transpose; BF16: zero_paged_v_tail). K needs nothing:
// the softmax selects −inf over logits past the sequence.
// Device-side inputs are clamped, never trusted: a block-table entry outside [0, num_pages) reads
// page 0 and sets FwdPagedFaults::page_out_of_range; keys at or past the sequence's seqused_k read
// no table entry and no cache row (TMA: a box past the map's last page, zero-filled; gather:
// zeros), so a table may end at the sequence's last page.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/arch/atomic.hpp"
#include "kernels/arch/barrier.hpp"
#include "kernels/arch/mbarrier.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/arch/tma.hpp"
#include "kernels/sm90/attention/fwd_config.hpp"
#include "kernels/sm90/attention/fwd_params.hpp"
#include "kernels/sm90/attention/fwd_tile_scheduler.hpp"

namespace fp8attn::sm90 {

/// One KV block of a paged cache, as the loading thread posts it for warps 1-3.
struct PagedBlock {
  int32_t b, head_kv, key, seqlen_k = 0;  ///< sequence, KV head, first key, keys of the sequence
};

/// The loading thread: the block into the stage's slot, then one arrival on its request barrier
/// (whose release orders the slot's writes before warps 1-3 read it).
/// NOTE: seqlen_k is not posted: warps 1-3 read it again (paged_seqlen_k), a register fewer in
/// the loading thread's tile walk.
FP8ATTN_ARCH_FN void post_paged_block(int32_t (&slot)[4], uint64_t* request, const PagedBlock& block) {
  arch::smem_store(&slot[0], block.b);
  arch::smem_store(&slot[1], block.head_kv);
  arch::smem_store(&slot[2], block.key);
  arch::mbarrier_arrive(request);
}

FP8ATTN_ARCH_FN PagedBlock read_paged_block(const AttentionFwdParams& p, const int32_t (&slot)[4]) {
  const int32_t b = arch::smem_load(&slot[0]);
  return {b, arch::smem_load(&slot[1]), arch::smem_load(&slot[2]), paged_seqlen_k(p, b)};
}

/// K and V's L2 priority (arch::L2Evict): evict-last in the forward, where every query tile of a
/// head reads them again (FlashAttention-3 loads them so), evict-first in decode, where each split
/// reads its keys once.
template <class Cfg>
inline constexpr arch::L2Evict kKvEvict = Cfg::kDecode ? arch::L2Evict::First : arch::L2Evict::Last;

/// The page holding key `key` (< the sequence's length) of sequence b; an entry outside
/// [0, num_pages) is flagged and read as page 0.
FP8ATTN_ARCH_FN int32_t paged_kv_page(const FwdPagedKv& kv, int32_t b, int32_t key) {
  const int32_t page = kv.block_table[b * kv.table_batch_stride + (key / kv.page_size) * kv.table_page_stride];
  if (static_cast<uint32_t>(page) < static_cast<uint32_t>(kv.num_pages)) return page;
  arch::atomic_max_u32(&kv.faults->page_out_of_range, 1u);
  return 0;
}

/// TMA path: the BlockN rows of one block from key `key` of sequence b into `dst`, box by box;
/// `box_stride` is the bytes of one row in `dst` (a swizzled chunk row or a raw V row) and
/// `dim0` the box's first element along the head dim. The boxes complete_tx on `bar` with
/// BlockN rows' bytes in all, as one contiguous box would.
template <class Cfg>
FP8ATTN_ARCH_FN void load_paged_rows(const FwdPagedKv& kv, const arch::TensorMap& map, uint8_t* dst, uint32_t row_bytes,
                                     int32_t dim0, uint64_t* bar, int32_t b, int32_t head_kv, int32_t key,
                                     int32_t seqlen_k) {
  // NOTE: the page index and token advance box by box (boxes never straddle a page): one division
  // per block, not per box, in the producer's 24 registers.
  int32_t index = key / kv.page_size;
  int32_t token = key - index * kv.page_size;
  FP8ATTN_NO_UNROLL
  for (int32_t row = 0; row < Cfg::kBlockN; row += kv.box_rows) {
    // NOTE: past the sequence's end the box lies past the map's last page: TMA zero-fills it
    // (PTX ISA 9.0 §5.5.3.3) and reads neither the table nor the cache.
    int32_t page = kv.num_pages;
    if (key + row < seqlen_k) {
      page = kv.block_table[b * kv.table_batch_stride + index * kv.table_page_stride];
      if (static_cast<uint32_t>(page) >= static_cast<uint32_t>(kv.num_pages)) {
        arch::atomic_max_u32(&kv.faults->page_out_of_range, 1u);
        page = 0;
      }
    }
    arch::tma_load<4, kKvEvict<Cfg>>(dst + row * row_bytes, map, bar, {dim0, head_kv, token, page});
    token += kv.box_rows;
    if (token == kv.page_size) token = 0, ++index;
  }
}

/// 16 bytes, copied as one vector load and one vector store.
struct alignas(16) Bytes16 {
  uint32_t w[4];
};

/// BF16 V of the TMA path as loaded (K's swizzled chunks): rows [keys, the end of the box that
/// holds key `keys`) came from a page's slots past the sequence; the transposing threads
/// (`thread` in [0, 96)) write them as zeros. Rows of later boxes were zero-filled by TMA.
template <class Cfg>
FP8ATTN_ARCH_FN void zero_paged_v_tail(uint32_t thread, uint8_t* v, uint32_t keys, uint32_t box_rows) {
  const uint32_t box_end = (keys + box_rows - 1) / box_rows * box_rows;
  constexpr uint32_t kBlockN = Cfg::kBlockN;  // NOTE: a prvalue (nvcc: no static member in device code)
  const uint32_t end = box_end < kBlockN ? box_end : kBlockN;
  constexpr uint32_t kChunkPieces = Cfg::kChunkBytes / 16, kPieces = Cfg::kRowBytes / 16;
  FP8ATTN_NO_UNROLL
  for (uint32_t item = keys * kPieces + thread; item < end * kPieces; item += 96) {
    const uint32_t row = item / kPieces, piece = item % kPieces;
    const uint32_t offset = arch::swizzle_address(row * Cfg::kChunkBytes + (piece % kChunkPieces) * 16u, Cfg::kSwizzle);
    arch::smem_store(reinterpret_cast<Bytes16*>(v + (piece / kChunkPieces) * Cfg::kKChunkBytes + offset),
                     Bytes16{{0u, 0u, 0u, 0u}});
  }
}


/// One E4M3 code (the low 8 bits) as BF16 bits, exactly: every E4M3 value is a BF16 value (4
/// exponent bits inside BF16's 8, 3 fraction bits inside its 7); the CPU engine decodes the same
/// codes to the same values (decode_row). The NaN codes 0x7F / 0xFF become BF16 quiet NaNs.
/// NOTE: the 7 bits below the sign go to FP32's bits 20..26 (the exponent field's low 4 bits and
/// the fraction's top 3), which makes an FP32 of the code's magnitude times 2^-120, an FP32
/// denormal for E4M3's subnormals; times 2^120 is exact (no flush to zero: neither build uses
/// fast math). Straight-line code: the branchy decode spilled the producer's 24 registers.
FP8ATTN_HOST_DEVICE uint32_t e4m3_to_bf16_bits(uint32_t code) {
  const uint32_t magnitude = code & 0x7Fu, sign = (code & 0x80u) << 8;
  const uint32_t placed = magnitude << 20;
  float scaled;
  memcpy(&scaled, &placed, sizeof scaled);
  scaled *= 0x1p120f;
  uint32_t bits;
  memcpy(&bits, &scaled, sizeof bits);
  return sign | (magnitude == 0x7Fu ? 0x7FC0u : bits >> 16);
}

FP8ATTN_HOST_DEVICE uint64_t e4m3x4_to_bf16x4(uint32_t codes) {
  uint64_t out = 0;
  for (uint32_t i = 0; i < 4; ++i)
    out |= static_cast<uint64_t>(e4m3_to_bf16_bits((codes >> (8 * i)) & 0xFFu)) << (16 * i);
  return out;
}

/// Gather path: rows [0, BlockN) of K (kV false) or V of one block from key `key` of sequence b,
/// KV head `head_kv`, one row per thread at a time (`thread` in [0, 96)), in 8-byte words: word j
/// of row r lands at byte 8j of row r of chunk 8j / kChunkBytes, each chunk a
/// [BlockN][kChunkBytes] tile with kSwizzle (raw V: one chunk of whole rows, no swizzle). Rows past
/// seqlen_k are zeros.
/// NOTE: a row per thread (one lookup and one division per row), 8-byte words and the cache's
/// pointers and strides read from the parameters where used: the producer has 24 registers.
template <class Cfg, bool kV, uint32_t kChunkBytes, arch::Swizzle kSwizzle>
FP8ATTN_ARCH_FN void gather_paged_rows(const FwdPagedKv& kv, uint8_t* dst, uint32_t thread, int32_t b, int32_t head_kv,
                                       int32_t key, int32_t seqlen_k) {
  constexpr uint32_t kWords = Cfg::kRowBytes / 8;
  FP8ATTN_NO_UNROLL
  for (uint32_t row = thread; row < Cfg::kBlockN; row += 96) {
    const int32_t k = key + static_cast<int32_t>(row);
    const uint8_t* src = nullptr;
    if (k < seqlen_k) {
      const int32_t page = paged_kv_page(kv, b, k);
      src = (kV ? kv.v_cache : kv.k_cache) + static_cast<int64_t>(page) * (kV ? kv.v_page_bytes : kv.k_page_bytes) +
            (k % kv.page_size) * (kV ? kv.v_token_bytes : kv.k_token_bytes) +
            head_kv * (kV ? kv.v_head_bytes : kv.k_head_bytes);
    }
    FP8ATTN_NO_UNROLL
    for (uint32_t word = 0; word < kWords; ++word) {
      uint64_t value = 0;
      if (src != nullptr) {
        // NOTE: an E4M3 cache under a BF16 kernel: the destination word's four BF16 values are
        // four codes of the source row, decoded here (kv.e4m3_cache is uniform across the block).
        if (Cfg::kBf16 && kv.e4m3_cache) value = e4m3x4_to_bf16x4(*reinterpret_cast<const uint32_t*>(src + word * 4u));
        else value = *reinterpret_cast<const uint64_t*>(src + word * 8u);
      }
      const uint32_t chunk = word * 8u / kChunkBytes, in_chunk = word * 8u % kChunkBytes;
      const uint32_t offset = arch::swizzle_address(row * kChunkBytes + in_chunk, kSwizzle);
      arch::smem_store(reinterpret_cast<uint64_t*>(dst + chunk * (Cfg::kBlockN * kChunkBytes) + offset), value);
    }
  }
}

/// TMA path, one thread of warps 1-3: K and V of one block, box by box, each after its barrier's
/// expect_tx of the whole block; V in K's chunks (BF16) or as raw rows (E4M3), both on v_full.
template <class Cfg>
FP8ATTN_ARCH_FN void load_paged_block(const AttentionFwdParams& p, FwdSharedStorage<Cfg>& smem, uint32_t stage,
                                      const PagedBlock& at) {
  arch::mbarrier_arrive_expect_tx(&smem.k_full[stage], Cfg::kChunks * Cfg::kKChunkBytes);
  for (int c = 0; c < Cfg::kChunks; ++c)
    load_paged_rows<Cfg>(p.paged, p.tma_k, smem.k[stage][c], Cfg::kChunkBytes, c * Cfg::kChunkElements,
                         &smem.k_full[stage], at.b, at.head_kv, at.key, at.seqlen_k);
  arch::mbarrier_arrive_expect_tx(&smem.v_full[stage], Cfg::kVBytes);
  if constexpr (Cfg::kBf16) {
    for (int c = 0; c < Cfg::kChunks; ++c)
      load_paged_rows<Cfg>(p.paged, p.tma_v, smem.v_rows(stage) + c * Cfg::kKChunkBytes, Cfg::kChunkBytes,
                           c * Cfg::kChunkElements, &smem.v_full[stage], at.b, at.head_kv, at.key, at.seqlen_k);
  } else {
    load_paged_rows<Cfg>(p.paged, p.tma_v, smem.v_rows(stage), Cfg::kRowBytes, 0, &smem.v_full[stage], at.b, at.head_kv,
                         at.key, at.seqlen_k);
  }
}

/// Gather path, warps 1-3 of the producer warpgroup (`thread` in [0, 96)): K and V of one stage,
/// then (once every gatherer's generic writes are fenced for the consumers' wgmma) one arrival
/// on k_full, and for BF16 on vt_full (V is then ready as loaded); E4M3 V is transposed next.
template <class Cfg>
FP8ATTN_ARCH_FN void gather_paged_block(const AttentionFwdParams& p, uint32_t thread, FwdSharedStorage<Cfg>& smem,
                                        uint32_t stage, const PagedBlock& at) {
  const FwdPagedKv& kv = p.paged;
  constexpr uint32_t kThreads = 96;
  gather_paged_rows<Cfg, false, Cfg::kChunkBytes, Cfg::kSwizzle>(kv, &smem.k[stage][0][0], thread, at.b, at.head_kv,
                                                                 at.key, at.seqlen_k);
  // V: BF16 in K's chunks (read N-major by the wgmma), E4M3 as raw rows for the transpose.
  constexpr uint32_t kVChunk = Cfg::kBf16 ? Cfg::kChunkBytes : Cfg::kRowBytes;
  constexpr arch::Swizzle kVSwizzle = Cfg::kBf16 ? Cfg::kSwizzle : arch::Swizzle::None;
  gather_paged_rows<Cfg, true, kVChunk, kVSwizzle>(kv, smem.v_rows(stage), thread, at.b, at.head_kv, at.key, at.seqlen_k);
  arch::fence_proxy_async_shared_cta();
  arch::named_barrier_sync(barrier_id(FwdBarrier::kProducerVt), kThreads);
  if (thread == 0) {
    arch::mbarrier_arrive(&smem.k_full[stage]);
    if constexpr (Cfg::kBf16) arch::mbarrier_arrive(&smem.vt_full[stage]);
  }
}

}  // namespace fp8attn::sm90
