//! quantize, predict_p_underflow and qk_spectral_norms.
use crate::context::Context;
use crate::error::{check, Result};
use crate::plan::KvOrder;
use crate::tensor::{HostBuffer, TensorMut, TensorRef};
use fp8attn_sys as sys;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Granularity {
    PerTensor = 0,
    PerHead = 1,
    PerBlock = 2,
}

/// fp8attn_quantize_options; `Default` is the library's (per tensor, no rotation, no margin).
#[derive(Clone, Copy, Debug)]
pub struct QuantizeOptions {
    pub granularity: Granularity,
    pub block_rows: i32,
    pub head_group: i32,
    pub rotate: bool,
    pub seed: u64,
    pub margin: i32,
    pub leading_rows: i32,
}

impl Default for QuantizeOptions {
    fn default() -> Self {
        QuantizeOptions { granularity: Granularity::PerTensor, block_rows: 0, head_group: 0, rotate: false, seed: 0,
                          margin: 0, leading_rows: 0 }
    }
}

/// Quantizes `input` (BF16 or F32) into `output` (E4M3) and `descale` (F32, shaped by the
/// granularity); returns the amax of the whole tensor.
pub fn quantize(context: &Context, input: &TensorRef<'_>, cu_seqlens: Option<&TensorRef<'_>>,
                options: &QuantizeOptions, output: &mut TensorMut<'_>, descale: &mut TensorMut<'_>) -> Result<f32> {
    let o = sys::fp8attn_quantize_options {
        struct_size: core::mem::size_of::<sys::fp8attn_quantize_options>(),
        next: core::ptr::null(),
        granularity: options.granularity as i32,
        block_rows: options.block_rows,
        head_group: options.head_group,
        rotate: options.rotate as u32,
        seed: options.seed,
        margin: options.margin,
        leading_rows: options.leading_rows,
    };
    let mut amax = 0f32;
    let cu = cu_seqlens.map_or(core::ptr::null(), |c| &c.raw as *const _);
    check(|e| unsafe {
        sys::fp8attn_quantize(context.as_raw(), &input.raw, cu, &o, &output.raw, &descale.raw, &mut amax, e)
    })?;
    Ok(amax)
}

/// (leading_order, expected) fraction of non-sink P̃ whose E4M3 cast underflows (sink model).
pub fn predict_p_underflow(sink_strength: f64, k_sink: i32, seqlen_k: i64, p_scale: f64, kv_order: KvOrder,
                           block_n: i32) -> Result<(f64, f64)> {
    let m = sys::fp8attn_sink_model {
        struct_size: core::mem::size_of::<sys::fp8attn_sink_model>(),
        next: core::ptr::null(),
        sink_strength,
        k_sink,
        p_scale,
        kv_order: kv_order as i32,
        block_n,
        seqlen_k,
    };
    let (mut lead, mut expected) = (0f64, 0f64);
    check(|e| unsafe { sys::fp8attn_predict_p_underflow(&m, &mut lead, &mut expected, e) })?;
    Ok((lead, expected))
}

/// σ_h = ‖W_Q,hᵀ·W_K,g(h)‖₂ for every query head (default power-iteration options).
pub fn qk_spectral_norms(context: &Context, wq: &TensorRef<'_>, wk: &TensorRef<'_>, num_heads_q: i32,
                         num_heads_kv: i32, head_dim: i32) -> Result<Vec<f32>> {
    let d_model = wq.shape()[wq.shape().len() - 1];
    let mut bytes = 0usize;
    check(|e| unsafe {
        sys::fp8attn_qk_spectral_norms_workspace_size(context.as_raw(), num_heads_q, num_heads_kv, head_dim, d_model,
                                                      &mut bytes, e)
    })?;
    let mut workspace = HostBuffer::new(bytes)?;
    let mut sigma = vec![0f32; num_heads_q.max(0) as usize];
    check(|e| unsafe {
        sys::fp8attn_qk_spectral_norms(context.as_raw(), &wq.raw, &wk.raw, num_heads_q, num_heads_kv, head_dim,
                                       core::ptr::null(), sigma.as_mut_ptr(), workspace.as_mut_ptr(), bytes,
                                       core::ptr::null_mut(), e)
    })?;
    Ok(sigma)
}
