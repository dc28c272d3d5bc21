//! The paged KV cache's append: `KvAppendArgs` and `kv_append` (fp8attn_kv_append_async).
use crate::context::Context;
use crate::error::{check, Result};
use crate::tensor::{absent, TensorMut, TensorRef};
use fp8attn_sys as sys;

/// How an E4M3 cache's values are scaled back (fp8attn_kv_scale_granularity), with its tensors.
pub enum KvDescales<'a> {
    /// Descale 1 (and the only choice for a BF16 cache or E4M3 input copied as it is).
    None,
    /// F32 [heads_kv] per tensor, read: code = round(x / descale).
    PerHead { k: TensorRef<'a>, v: TensorRef<'a> },
    /// F32 [num_pages, page_size, heads_kv] per tensor, written at the slots: amax / 448.
    PerTokenHead { k: TensorMut<'a>, v: TensorMut<'a> },
}

/// Arguments of one append; tensors are borrowed for `'a`. `k` [tokens, heads_kv, head_dim] and
/// `v` [tokens, heads_kv, head_dim_v] are BF16, F32 or E4M3 (copied as it is); the caches
/// [num_pages, page_size, heads_kv, dim] E4M3 or BF16; `slot_mapping` I64 [tokens], a negative
/// slot skipping its token. `rotate` multiplies K's rows by H·D (`seed` picks D) first.
pub struct KvAppendArgs<'a> {
    pub k: TensorRef<'a>,
    pub v: TensorRef<'a>,
    pub k_cache: TensorMut<'a>,
    pub v_cache: TensorMut<'a>,
    pub slot_mapping: TensorRef<'a>,
    pub descales: KvDescales<'a>,
    pub rotate: bool,
    pub seed: u64,
}

/// Writes the new tokens' K and V into the paged cache (host memory, on a CPU context). The caches
/// and the per-(token, head) descales are written only on success, and only at the given slots.
pub fn kv_append(context: &Context, args: &mut KvAppendArgs<'_>) -> Result<()> {
    let (granularity, k_descale, v_descale) = match &args.descales {
        KvDescales::None => (sys::FP8ATTN_KV_SCALE_NONE, absent(), absent()),
        KvDescales::PerHead { k, v } => (sys::FP8ATTN_KV_SCALE_PER_HEAD, k.raw, v.raw),
        KvDescales::PerTokenHead { k, v } => (sys::FP8ATTN_KV_SCALE_PER_TOKEN_HEAD, k.raw, v.raw),
    };
    let raw = sys::fp8attn_kv_append_args {
        struct_size: core::mem::size_of::<sys::fp8attn_kv_append_args>(),
        next: core::ptr::null(),
        k: args.k.raw,
        v: args.v.raw,
        k_cache: args.k_cache.raw,
        v_cache: args.v_cache.raw,
        slot_mapping: args.slot_mapping.raw,
        scale_granularity: granularity,
        rotate: args.rotate as u32,
        seed: args.seed,
        k_descale,
        v_descale,
    };
    check(|e| unsafe { sys::fp8attn_kv_append_async(context.as_raw(), &raw, core::ptr::null_mut(), e) })
}
