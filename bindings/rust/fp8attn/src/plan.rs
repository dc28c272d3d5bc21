//! `AttentionDesc`, `Plan` (immutable, `Send + Sync`) and the forward call.
use crate::context::{Context, ContextInner};
use crate::error::{check, Error, Result};
use crate::scale_state::ScaleState;
use crate::tensor::{absent, DType, HostBuffer, TensorMut, TensorRef};
use fp8attn_sys as sys;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvOrder {
    Reverse = 0,
    Forward = 1,
}

/// How the CPU and emulated backends add a tensor-core instruction's products
/// (fp8attn_accumulator_model); the CUDA backend runs what the hardware does either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccumulatorModel {
    /// Plain FP32 chunk sums: for throughput on the CPU.
    Fp32 = sys::FP8ATTN_ACCUMULATOR_FP32 as isize,
    /// Hopper's exact addition (the default), for FP8 and BF16 inputs.
    TensorCore = sys::FP8ATTN_ACCUMULATOR_TENSOR_CORE as isize,
}

/// What a plan computes: fp8attn_attention_desc filled by fp8attn_attention_desc_init.
#[derive(Clone, Copy)]
pub struct AttentionDesc {
    pub raw: sys::fp8attn_attention_desc,
}

impl AttentionDesc {
    /// Defaults (E4M3 in, BF16 out, reverse KV order, S_p = 256) for these heads.
    pub fn new(head_dim: i32, num_heads_q: i32, num_heads_kv: i32) -> Self {
        // SAFETY: all-zero is valid; desc_init fills the rest, struct_size 0 meaning "all of it".
        let mut raw: sys::fp8attn_attention_desc = unsafe { core::mem::zeroed() };
        let status = unsafe { sys::fp8attn_attention_desc_init(&mut raw) };
        debug_assert_eq!(status, sys::FP8ATTN_OK);
        raw.struct_size = core::mem::size_of::<sys::fp8attn_attention_desc>();
        raw.head_dim = head_dim;
        raw.num_heads_q = num_heads_q;
        raw.num_heads_kv = num_heads_kv;
        AttentionDesc { raw }
    }
    pub fn input_dtype(mut self, d: DType) -> Self {
        self.raw.input_dtype = d as i32;
        self
    }
    pub fn output_dtype(mut self, d: DType) -> Self {
        self.raw.output_dtype = d as i32;
        self
    }
    pub fn causal(mut self, on: bool) -> Self {
        self.raw.causal = on as u32;
        self
    }
    /// Keys visible left and right of the diagonal; -1 is unbounded.
    pub fn window(mut self, left: i32, right: i32) -> Self {
        self.raw.window_left = left;
        self.raw.window_right = right;
        self
    }
    pub fn softmax_scale(mut self, s: f32) -> Self {
        self.raw.softmax_scale = s;
        self
    }
    pub fn kv_order(mut self, o: KvOrder) -> Self {
        self.raw.kv_order = o as i32;
        self
    }
    pub fn p_scale_log2(mut self, p: i32) -> Self {
        self.raw.p_scale_log2 = p;
        self
    }
    pub fn telemetry(mut self, on: bool) -> Self {
        self.raw.telemetry = on as u32;
        self
    }
    /// Tokens per page of a paged KV cache (ForwardArgs::paged); 0 (default) is not paged.
    pub fn page_size(mut self, tokens: i32) -> Self {
        self.raw.page_size = tokens;
        self
    }
    /// K's and V's dtype when it is not Q's: E4M3 under BF16 Q.
    pub fn kv_dtype(mut self, d: DType) -> Self {
        self.raw.kv_dtype = d as i32;
        self
    }
    /// The decode path (at most 8 queries per sequence; the CPU and reference backends):
    /// GQA-packed tiles over KV splits merged by the combine rule.
    pub fn decode(mut self, on: bool) -> Self {
        self.raw.decode = on as u32;
        self
    }
    /// The decode path's KV splits per sequence, 1..=256; 0 (default) picks by a heuristic. A
    /// fixed count gives batch-invariant results; 1 gives the plain forward's bits.
    pub fn num_splits(mut self, n: i32) -> Self {
        self.raw.num_splits = n;
        self
    }
    /// The accumulation of the CPU and emulated backends (default `TensorCore`).
    pub fn accumulator_model(mut self, m: AccumulatorModel) -> Self {
        self.raw.accumulator_model = m as u32;
        self
    }
}

pub use sys::fp8attn_telemetry as Telemetry;

/// How a paged E4M3 cache's descales are laid out (fp8attn_kv_scale_granularity).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvScaleGranularity {
    /// F32 [heads_kv]: one descale per KV head.
    PerHead = sys::FP8ATTN_KV_SCALE_PER_HEAD as isize,
    /// F32 [num_pages, page_size, heads_kv] beside the pages.
    PerTokenHead = sys::FP8ATTN_KV_SCALE_PER_TOKEN_HEAD as isize,
}

/// A paged KV cache: `ForwardArgs::new(q, k_cache, v_cache, out).paged(...)` with caches
/// [num_pages, page_size, heads_kv, head_dim], for a plan with `page_size` set.
#[derive(Clone, Copy)]
pub struct PagedKv<'a> {
    /// int32 [batch, max_pages_per_seq]: each sequence's pages in order; any strides.
    pub block_table: TensorRef<'a>,
    /// int32 [batch]: keys in use per sequence.
    pub seqused_k: TensorRef<'a>,
    /// Upper bound of seqused_k.
    pub max_seqlen_k: i64,
    /// The cache's K and V descales, laid out as the granularity says.
    pub scales: Option<(KvScaleGranularity, TensorRef<'a>, TensorRef<'a>)>,
}

/// Arguments of one forward call; tensors are borrowed for `'a`.
pub struct ForwardArgs<'a> {
    pub q: TensorRef<'a>,
    pub k: TensorRef<'a>,
    pub v: TensorRef<'a>,
    pub out: TensorMut<'a>,
    pub lse: Option<TensorMut<'a>>,
    pub cu_seqlens: Option<(TensorRef<'a>, TensorRef<'a>)>,
    /// Longest query and key sequences (needed with cu_seqlens to size the workspace).
    pub max_seqlens: Option<(i64, i64)>,
    pub descales: [Option<TensorRef<'a>>; 3],
    pub block_descales: [Option<TensorRef<'a>>; 3],
    /// The E4M3 output's scale: out = E4M3(O · out_scale), saturating (E4M3 plans only).
    pub out_scale: Option<f32>,
    /// Out: max |O| before the output scale and the cast; written only on success.
    pub amax_o: Option<&'a mut f32>,
    /// A scale state and its layer: the call reads the Q, K, V descales and the E4M3 output scale
    /// from it and reports the amaxes of O and of the scaled logits into it after success.
    pub scale_state: Option<(&'a ScaleState, i32)>,
    /// K and V from a paged cache: `k` and `v` are then the caches.
    pub paged: Option<PagedKv<'a>>,
}

impl<'a> ForwardArgs<'a> {
    pub fn new(q: TensorRef<'a>, k: TensorRef<'a>, v: TensorRef<'a>, out: TensorMut<'a>) -> Self {
        ForwardArgs { q, k, v, out, lse: None, cu_seqlens: None, max_seqlens: None, descales: [None, None, None],
                      block_descales: [None, None, None], out_scale: None, amax_o: None, scale_state: None,
                      paged: None }
    }
    pub fn lse(mut self, lse: TensorMut<'a>) -> Self {
        self.lse = Some(lse);
        self
    }
    pub fn descales(mut self, q: Option<TensorRef<'a>>, k: Option<TensorRef<'a>>, v: Option<TensorRef<'a>>) -> Self {
        self.descales = [q, k, v];
        self
    }
    /// Per-block descales (q per query tile, k and v per KV block), multiplied with the others.
    pub fn block_descales(mut self, q: Option<TensorRef<'a>>, k: Option<TensorRef<'a>>, v: Option<TensorRef<'a>>)
                          -> Self {
        self.block_descales = [q, k, v];
        self
    }
    /// The output scale of an E4M3 output (CPU backend).
    pub fn out_scale(mut self, scale: f32) -> Self {
        self.out_scale = Some(scale);
        self
    }
    /// Where the call writes max |O| (CPU backend).
    pub fn amax_o(mut self, amax: &'a mut f32) -> Self {
        self.amax_o = Some(amax);
        self
    }
    /// Scales from, and amaxes into, a layer of a scale state (CPU backend). The library refuses
    /// per-tensor descales and an out_scale together with it (FP8ATTN_STATUS_BAD_OPTION).
    pub fn scale_state(mut self, state: &'a ScaleState, layer: i32) -> Self {
        self.scale_state = Some((state, layer));
        self
    }
    /// Packed layout: int32 [batch + 1] offsets and the longest sequences.
    pub fn varlen(mut self, cu_q: TensorRef<'a>, cu_k: TensorRef<'a>, max_seqlen_q: i64, max_seqlen_k: i64) -> Self {
        self.cu_seqlens = Some((cu_q, cu_k));
        self.max_seqlens = Some((max_seqlen_q, max_seqlen_k));
        self
    }
    /// K and V from a paged cache (padded q [batch, seqlen_q, heads_q, head_dim]); `k` and `v` are
    /// the caches. Query i of a q_len-long chunk sees keys ≤ seqused_k − q_len + i when causal.
    pub fn paged(mut self, paged: PagedKv<'a>) -> Self {
        self.paged = Some(paged);
        self
    }
    /// (batch, max_seqlen_q, max_seqlen_k) for the workspace query.
    fn sizes(&self) -> Result<(i64, i64, i64)> {
        if let Some(p) = &self.paged {
            return match (&self.cu_seqlens, self.q.shape().len()) {
                (None, 4) => Ok((self.q.shape()[0], self.q.shape()[1], p.max_seqlen_k)),
                _ => Err(Error::new(sys::FP8ATTN_STATUS_BAD_SHAPE,
                                    "a paged forward takes q padded [batch, seqlen, heads, head_dim] here")),
            };
        }
        problem_sizes(&self.q, &self.k, &self.cu_seqlens, self.max_seqlens)
    }
}

/// (batch, max_seqlen_q, max_seqlen_k) of a padded or packed problem, for the workspace queries
/// of the forward and the backward.
pub(crate) fn problem_sizes(q: &TensorRef<'_>, k: &TensorRef<'_>, cu_seqlens: &Option<(TensorRef<'_>, TensorRef<'_>)>,
                            max_seqlens: Option<(i64, i64)>) -> Result<(i64, i64, i64)> {
    match (cu_seqlens, max_seqlens) {
        (Some((cu, _)), Some((sq, sk))) => Ok((cu.shape()[0] - 1, sq, sk)),
        (None, _) if q.shape().len() == 4 && k.shape().len() == 4 => Ok((q.shape()[0], q.shape()[1], k.shape()[1])),
        _ => Err(Error::new(sys::FP8ATTN_STATUS_BAD_SHAPE,
                            "q and k must be rank 4 [batch, seqlen, heads, head_dim], or packed with varlen()")),
    }
}

/// An immutable plan. It keeps its context alive.
pub struct Plan {
    raw: sys::fp8attn_plan,
    telemetry: bool,
    context: Arc<ContextInner>,
}

// SAFETY: the header: "An opaque, immutable attention plan. It may be shared across threads";
// forward calls on one plan may run concurrently. Destroy runs in Drop (exclusive).
unsafe impl Send for Plan {}
unsafe impl Sync for Plan {}

impl Plan {
    pub fn new(context: &Context, desc: &AttentionDesc) -> Result<Self> {
        let mut raw = core::ptr::null_mut();
        check(|e| unsafe { sys::fp8attn_plan_create(context.inner.raw, &desc.raw, &mut raw, e) })?;
        Ok(Plan { raw, telemetry: desc.raw.telemetry != 0, context: context.inner.clone() })
    }

    /// (block_m, block_n): query rows per tile and keys per KV block.
    pub fn tile(&self) -> Result<(i32, i32)> {
        let (mut m, mut n) = (0, 0);
        check(|e| unsafe { sys::fp8attn_plan_get_tile(self.raw, &mut m, &mut n, e) })?;
        Ok((m, n))
    }

    pub fn workspace_size(&self, batch: i64, max_seqlen_q: i64, max_seqlen_k: i64) -> Result<usize> {
        let mut bytes = 0usize;
        check(|e| unsafe { sys::fp8attn_plan_workspace_size(self.raw, batch, max_seqlen_q, max_seqlen_k, &mut bytes, e) })?;
        Ok(bytes)
    }

    /// Runs the forward call with a host workspace it allocates. Returns the telemetry when the
    /// plan was made with `telemetry(true)`.
    pub fn forward(&self, args: &mut ForwardArgs<'_>) -> Result<Option<Telemetry>> {
        let (b, sq, sk) = args.sizes()?;
        let bytes = self.workspace_size(b.max(1), sq.max(1), sk.max(1))?;
        let mut workspace = HostBuffer::new(bytes)?;
        self.forward_with_workspace(args, &mut workspace)
    }

    /// Runs the forward call in a caller's workspace (at least `workspace_size` bytes).
    pub fn forward_with_workspace(&self, args: &mut ForwardArgs<'_>, workspace: &mut HostBuffer)
                                  -> Result<Option<Telemetry>> {
        let mut telemetry = Telemetry { struct_size: core::mem::size_of::<Telemetry>(), ..Default::default() };
        let opt = |t: &Option<TensorRef<'_>>| t.map_or_else(absent, |t| t.raw);
        // The paged cache rides on args.next and lives on this frame for the call.
        let paged = args.paged.map(|p| sys::fp8attn_paged_kv {
            struct_size: core::mem::size_of::<sys::fp8attn_paged_kv>(),
            next: core::ptr::null(),
            struct_type: sys::FP8ATTN_STRUCT_TYPE_PAGED_KV,
            scale_granularity: p.scales.map_or(sys::FP8ATTN_KV_SCALE_NONE, |(g, _, _)| g as i32),
            k_cache: args.k.raw,
            v_cache: args.v.raw,
            block_table: p.block_table.raw,
            seqused_k: p.seqused_k.raw,
            max_seqlen_k: p.max_seqlen_k,
            k_descale: p.scales.map_or_else(absent, |(_, k, _)| k.raw),
            v_descale: p.scales.map_or_else(absent, |(_, _, v)| v.raw),
        });
        let raw = sys::fp8attn_attention_args {
            struct_size: core::mem::size_of::<sys::fp8attn_attention_args>(),
            next: paged.as_ref().map_or(core::ptr::null(), |p| p as *const sys::fp8attn_paged_kv as *const _),
            q: args.q.raw,
            k: if paged.is_some() { absent() } else { args.k.raw },
            v: if paged.is_some() { absent() } else { args.v.raw },
            out: args.out.raw,
            lse: args.lse.as_ref().map_or_else(absent, |t| t.raw),
            cu_seqlens_q: args.cu_seqlens.map_or_else(absent, |c| c.0.raw),
            cu_seqlens_k: args.cu_seqlens.map_or_else(absent, |c| c.1.raw),
            q_descale: opt(&args.descales[0]),
            k_descale: opt(&args.descales[1]),
            v_descale: opt(&args.descales[2]),
            telemetry: &mut telemetry,
            q_block_descale: opt(&args.block_descales[0]),
            k_block_descale: opt(&args.block_descales[1]),
            v_block_descale: opt(&args.block_descales[2]),
            out_scale: args.out_scale.as_ref().map_or(core::ptr::null(), |s| s as *const f32),
            amax_o: args.amax_o.as_mut().map_or(core::ptr::null_mut(), |a| &mut **a as *mut f32),
            scale_state: args.scale_state.map_or(core::ptr::null_mut(), |(s, _)| s.as_raw()),
            scale_state_layer: args.scale_state.map_or(0, |(_, layer)| layer),
        };
        let (ptr, len) = (workspace.as_mut_ptr(), workspace.len());
        check(|e| unsafe { sys::fp8attn_attention_forward(self.raw, &raw, ptr, len, core::ptr::null_mut(), e) })?;
        Ok(if self.telemetry_enabled() { Some(telemetry) } else { None })
    }

    fn telemetry_enabled(&self) -> bool {
        self.telemetry
    }

    pub fn as_raw(&self) -> sys::fp8attn_plan {
        self.raw
    }
}

impl Drop for Plan {
    fn drop(&mut self) {
        let _ = &self.context; // the context outlives the plan: its Arc is released after this
        // SAFETY: created by fp8attn_plan_create; `&mut self` means no forward call is running.
        unsafe { sys::fp8attn_plan_destroy(self.raw) }
    }
}
