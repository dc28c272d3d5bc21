// TMA tiled copies (PTX ISA 9.0 §9.7.9.25.5 cp.async.bulk.tensor), the kernel-facing API. One
// thread issues each copy. Loads complete on an mbarrier with complete_tx of the box's bytes;
// stores are tracked by bulk groups (commit, then wait until their shared-memory reads finished).
// Semantics of the emulated copies: kernels/emu/tma.hpp.
#pragma once

#include <cstdint>

#include "kernels/arch/platform.hpp"
#include "kernels/arch/shared_memory.hpp"
#include "kernels/ptx/tma_tensor_map.hpp"
#include "kernels/ptx/wgmma_descriptor.hpp"

#if !FP8ATTN_DEVICE_BUILD
#include "kernels/emu/tma.hpp"
#endif

namespace fp8attn::arch {

/// The L2 eviction priority a TMA load asks for (.L2::cache_hint with a cache-policy operand,
/// PTX ISA 9.0 §9.7.9.25.5; createpolicy §9.7.9.18 describes the policies): Normal issues the plain
/// form. A hint changes where the bytes stay in L2, never which bytes arrive, so the emulator
/// ignores it.
/// NOTE: FlashAttention-3 loads K and V with EVICT_LAST (every query tile of a head reads them
/// again) and Q with EVICT_FIRST (read by one tile).
enum class L2Evict { Normal, First, Last };

/// The 64-bit cache-policy operand of .L2::cache_hint for a whole-access eviction priority: the
/// values CUTLASS's CacheHintSm90 passes (cute/arch/copy_sm90_desc.hpp), which are what
/// createpolicy.fractional.L2::evict_{first,last}.b64 with fraction 1.0 yields. As immediates they
/// cost the producer no register (a createpolicy's result spilled its 24 registers at head_dim
/// 128: ptxas -warn-spills).
FP8ATTN_HOST_DEVICE constexpr uint64_t l2_cache_policy(L2Evict evict) {
  return evict == L2Evict::Last ? 0x14F0000000000000ull : evict == L2Evict::First ? 0x12F0000000000000ull
                                                                                : 0x1000000000000000ull;
}

/// cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes: loads the
/// box at `coords` (innermost first; may be negative or past the end: such elements read as 0).
/// kEvict other than Normal adds .L2::cache_hint with l2_cache_policy(kEvict).
template <int kRank, L2Evict kEvict = L2Evict::Normal>
FP8ATTN_ARCH_FN void tma_load(void* smem_dst, const TensorMap& map, uint64_t* mbar, const int32_t (&coords)[kRank]) {
  static_assert(kRank >= 2 && kRank <= 5, "tiled TMA copies are 2D..5D here");
#if FP8ATTN_DEVICE_BUILD
  const uint32_t dst = smem_address(smem_dst), bar = smem_address(mbar);
  const uint64_t map_ptr = reinterpret_cast<uint64_t>(&map);
  if constexpr (kEvict != L2Evict::Normal) {
    static_assert(kRank == 4, "the hinted form is written for the 4D maps of the attention kernels");
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
                 " [%0], [%1, {%3, %4, %5, %6}], [%2], %7;"
                 ::"r"(dst), "l"(map_ptr), "r"(bar), "r"(coords[0]), "r"(coords[1]), "r"(coords[2]), "r"(coords[3]),
                   "l"(l2_cache_policy(kEvict)) : "memory");
  } else if constexpr (kRank == 2)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
                 ::"r"(dst), "l"(map_ptr), "r"(bar), "r"(coords[0]), "r"(coords[1]) : "memory");
  else if constexpr (kRank == 3)
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];"
                 ::"r"(dst), "l"(map_ptr), "r"(bar), "r"(coords[0]), "r"(coords[1]), "r"(coords[2]) : "memory");
  else if constexpr (kRank == 4)
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];"
                 ::"r"(dst), "l"(map_ptr), "r"(bar), "r"(coords[0]), "r"(coords[1]), "r"(coords[2]), "r"(coords[3]) : "memory");
  else
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, %7}], [%2];"
                 ::"r"(dst), "l"(map_ptr), "r"(bar), "r"(coords[0]), "r"(coords[1]), "r"(coords[2]), "r"(coords[3]), "r"(coords[4])
                 : "memory");
#else
  emu::tma_load_tile(smem_dst, map.spec, mbar, coords, kRank);
#endif
}

/// cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group: stores the box at `coords`
/// (non-negative; elements past the end are not written). Make the box's generic-proxy writes
/// visible first with fence.proxy.async.shared::cta.
template <int kRank>
FP8ATTN_ARCH_FN void tma_store(const TensorMap& map, const void* smem_src, const int32_t (&coords)[kRank]) {
  static_assert(kRank >= 2 && kRank <= 5, "tiled TMA copies are 2D..5D here");
#if FP8ATTN_DEVICE_BUILD
  const uint32_t src = smem_address(smem_src);
  const uint64_t map_ptr = reinterpret_cast<uint64_t>(&map);
  if constexpr (kRank == 2)
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];"
                 ::"l"(map_ptr), "r"(src), "r"(coords[0]), "r"(coords[1]) : "memory");
  else if constexpr (kRank == 3)
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];"
                 ::"l"(map_ptr), "r"(src), "r"(coords[0]), "r"(coords[1]), "r"(coords[2]) : "memory");
  else if constexpr (kRank == 4)
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];"
                 ::"l"(map_ptr), "r"(src), "r"(coords[0]), "r"(coords[1]), "r"(coords[2]), "r"(coords[3]) : "memory");
  else
    asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];"
                 ::"l"(map_ptr), "r"(src), "r"(coords[0]), "r"(coords[1]), "r"(coords[2]), "r"(coords[3]), "r"(coords[4])
                 : "memory");
#else
  emu::tma_store_tile(map.spec, smem_src, coords, kRank);
#endif
}

/// cp.async.bulk.commit_group (PTX ISA 9.0 §9.7.9.25.6.1): closes this thread's pending stores.
FP8ATTN_ARCH_FN void tma_store_commit_group() {
#if FP8ATTN_DEVICE_BUILD
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#endif
}

/// cp.async.bulk.wait_group.read N (§9.7.9.25.6.2): waits until at most kPending groups still
/// read shared memory, so their source buffers may be reused. The emulator's stores complete at
/// issue; the wait is where the caller acquires their shared-memory reads, so that a barrier it
/// reaches later orders them before other threads' writes to the buffer.
/// NOTE: the emulator acquires the async accesses of the caller's whole warp (the finest group
/// the runtime offers), which may hide a race against another lane's store.
template <int kPending>
FP8ATTN_ARCH_FN void tma_store_wait_read() {
#if FP8ATTN_DEVICE_BUILD
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(kPending) : "memory");
#else
  emu::acquire_async_accesses(emu::Group::Warp);
#endif
}

/// prefetch.tensormap (§9.7.9.26): a performance hint; nothing on the host.
FP8ATTN_ARCH_FN void tma_prefetch_descriptor(const TensorMap& map) {
#if FP8ATTN_DEVICE_BUILD
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&map)) : "memory");
#else
  (void)map;
#endif
}

}  // namespace fp8attn::arch
