//! The backward call: `BackwardArgs` and `Plan::backward` (fp8attn_attention_backward).
use crate::error::{check, Result};
use crate::plan::{problem_sizes, Plan};
use crate::tensor::{absent, HostBuffer, TensorMut, TensorRef};
use fp8attn_sys as sys;

/// Arguments of one backward call; tensors are borrowed for `'a`. The plan is the forward's, with
/// BF16 inputs: its causal mask, window, GQA and softmax scale apply. Layouts are the forward's
/// (padded [batch, seqlen, heads, dim], or packed with `varlen`); each gradient has its tensor's
/// shape. `dq` is BF16 or F32, `dk` and `dv` BF16; with GQA, dk and dv of a KV head sum over its
/// query heads.
pub struct BackwardArgs<'a> {
    pub q: TensorRef<'a>,
    pub k: TensorRef<'a>,
    pub v: TensorRef<'a>,
    /// The forward's output and the loss's gradient with respect to it (the plan's output dtype).
    pub out: TensorRef<'a>,
    pub dout: TensorRef<'a>,
    /// The forward's F32 log-sum-exp ([batch, heads_q, seqlen_q]; packed [heads_q, total_q]).
    pub lse: TensorRef<'a>,
    pub dq: TensorMut<'a>,
    pub dk: TensorMut<'a>,
    pub dv: TensorMut<'a>,
    pub cu_seqlens: Option<(TensorRef<'a>, TensorRef<'a>)>,
    /// Longest query and key sequences (needed with cu_seqlens to size the workspace).
    pub max_seqlens: Option<(i64, i64)>,
    /// The same bits whatever the thread count or schedule (the CPU backend is deterministic in
    /// both modes; `false` lets a GPU backend accumulate dq with atomics). Default `true`.
    pub deterministic: bool,
}

impl<'a> BackwardArgs<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(q: TensorRef<'a>, k: TensorRef<'a>, v: TensorRef<'a>, out: TensorRef<'a>, dout: TensorRef<'a>,
               lse: TensorRef<'a>, dq: TensorMut<'a>, dk: TensorMut<'a>, dv: TensorMut<'a>) -> Self {
        BackwardArgs { q, k, v, out, dout, lse, dq, dk, dv, cu_seqlens: None, max_seqlens: None, deterministic: true }
    }
    /// Packed layout: int32 [batch + 1] offsets and the longest sequences.
    pub fn varlen(mut self, cu_q: TensorRef<'a>, cu_k: TensorRef<'a>, max_seqlen_q: i64, max_seqlen_k: i64) -> Self {
        self.cu_seqlens = Some((cu_q, cu_k));
        self.max_seqlens = Some((max_seqlen_q, max_seqlen_k));
        self
    }
    pub fn deterministic(mut self, on: bool) -> Self {
        self.deterministic = on;
        self
    }
}

impl Plan {
    /// Workspace bytes of a backward call for problems up to these sizes.
    pub fn backward_workspace_size(&self, batch: i64, max_seqlen_q: i64, max_seqlen_k: i64) -> Result<usize> {
        let mut bytes = 0usize;
        check(|e| unsafe {
            sys::fp8attn_plan_backward_workspace_size(self.as_raw(), batch, max_seqlen_q, max_seqlen_k, &mut bytes, e)
        })?;
        Ok(bytes)
    }

    /// Runs the backward call with a host workspace it allocates. dq, dk and dv are written only
    /// on success (or, with FP8ATTN_STATUS_NUMERICS, hold unspecified values).
    pub fn backward(&self, args: &mut BackwardArgs<'_>) -> Result<()> {
        let (b, sq, sk) = problem_sizes(&args.q, &args.k, &args.cu_seqlens, args.max_seqlens)?;
        let bytes = self.backward_workspace_size(b.max(1), sq.max(1), sk.max(1))?;
        let mut workspace = HostBuffer::new(bytes)?;
        self.backward_with_workspace(args, &mut workspace)
    }

    /// Runs the backward call in a caller's workspace (at least `backward_workspace_size` bytes).
    pub fn backward_with_workspace(&self, args: &mut BackwardArgs<'_>, workspace: &mut HostBuffer) -> Result<()> {
        let raw = sys::fp8attn_attention_bwd_args {
            struct_size: core::mem::size_of::<sys::fp8attn_attention_bwd_args>(),
            next: core::ptr::null(),
            q: args.q.raw,
            k: args.k.raw,
            v: args.v.raw,
            out: args.out.raw,
            dout: args.dout.raw,
            lse: args.lse.raw,
            dq: args.dq.raw,
            dk: args.dk.raw,
            dv: args.dv.raw,
            cu_seqlens_q: args.cu_seqlens.map_or_else(absent, |c| c.0.raw),
            cu_seqlens_k: args.cu_seqlens.map_or_else(absent, |c| c.1.raw),
            deterministic: args.deterministic as i32,
        };
        let (ptr, len) = (workspace.as_mut_ptr(), workspace.len());
        check(|e| unsafe { sys::fp8attn_attention_backward(self.as_raw(), &raw, ptr, len, core::ptr::null_mut(), e) })
    }
}
