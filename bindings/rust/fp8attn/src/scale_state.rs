//! `ScaleState`: FP8 scales with delayed, current and geometry-aware recipes, and its blob.
use crate::context::{Context, ContextInner};
use crate::error::{check, Result};
use fp8attn_sys as sys;
use std::sync::Arc;

/// Tensor kinds with a scale (the header's fp8attn_tensor_kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorKind {
    Q = 0,
    K = 1,
    V = 2,
    O = 3,
    P = 4,
    DO = 5,
    DP = 6,
    Logit = 7,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recipe {
    Default = 0,
    Delayed = 1,
    Current = 2,
    Geometry = 3,
}

/// fp8attn_scale_state_options with the binding's types; zeros are the library's defaults.
#[derive(Clone, Copy, Debug)]
pub struct ScaleStateOptions {
    pub num_layers: i32,
    pub recipe: [Recipe; 8],
    pub amax_history_len: i32,
    pub margin: f32,
    pub burn_in_steps: i32,
    pub token_norm_bound: f32,
}

impl Default for ScaleStateOptions {
    fn default() -> Self {
        ScaleStateOptions { num_layers: 1, recipe: [Recipe::Default; 8], amax_history_len: 0, margin: 0.0,
                            burn_in_steps: 0, token_norm_bound: 0.0 }
    }
}

pub struct ScaleState {
    raw: sys::fp8attn_scale_state,
    _context: Arc<ContextInner>,
}

// SAFETY: the header: reads may run on many threads while another thread updates (the library
// takes a shared or an exclusive lock); destroy must not race, which Drop guarantees.
unsafe impl Send for ScaleState {}
unsafe impl Sync for ScaleState {}

impl ScaleState {
    pub fn new(context: &Context, options: &ScaleStateOptions) -> Result<Self> {
        // SAFETY: all-zero is the documented default.
        let mut o: sys::fp8attn_scale_state_options = unsafe { core::mem::zeroed() };
        o.struct_size = core::mem::size_of::<sys::fp8attn_scale_state_options>();
        o.num_layers = options.num_layers;
        for (r, &recipe) in o.recipe.iter_mut().zip(&options.recipe) {
            *r = recipe as i32;
        }
        o.amax_history_len = options.amax_history_len;
        o.margin = options.margin;
        o.burn_in_steps = options.burn_in_steps;
        o.token_norm_bound = options.token_norm_bound;
        let mut raw = core::ptr::null_mut();
        check(|e| unsafe { sys::fp8attn_scale_state_create(context.inner.raw, &o, &mut raw, e) })?;
        Ok(ScaleState { raw, _context: context.inner.clone() })
    }

    pub fn report_amax(&self, layer: i32, tensor: TensorKind, amax: f32) -> Result<()> {
        check(|e| unsafe { sys::fp8attn_scale_state_report_amax(self.raw, layer, tensor as i32, amax, e) })
    }

    /// [num_layers · 8] amaxes, layer-major; a negative entry skips.
    pub fn report_amax_batch(&self, amax: &[f32]) -> Result<()> {
        check(|e| unsafe { sys::fp8attn_scale_state_report_amax_batch(self.raw, amax.as_ptr(), amax.len(), e) })
    }

    /// One layer's amaxes in fp8attn_tensor_kind order (a negative entry skips), read from host
    /// memory as fp8attn_scale_state_report_amax_device reads "device" memory on the CPU,
    /// reference and emulator backends (no stream). All are checked before any is recorded.
    pub fn report_amax_device(&self, layer: i32, amax: &[f32; sys::FP8ATTN_NUM_TENSOR_KINDS]) -> Result<()> {
        check(|e| unsafe {
            sys::fp8attn_scale_state_report_amax_device(self.raw, layer, amax.as_ptr(), core::ptr::null_mut(), e)
        })
    }

    /// fp8attn_scale_state_report_amax_device with a device pointer and a stream.
    /// # Safety
    /// `device_amax` must point at 8 floats in the memory of the state's context's device, valid
    /// until the call returns; `stream` must be NULL or a stream of that context.
    pub unsafe fn report_amax_device_raw(&self, layer: i32, device_amax: *const f32, stream: sys::cuda_stream)
                                         -> Result<()> {
        check(|e| unsafe { sys::fp8attn_scale_state_report_amax_device(self.raw, layer, device_amax, stream, e) })
    }

    pub fn step(&self) -> Result<()> {
        check(|e| unsafe { sys::fp8attn_scale_state_step(self.raw, e) })
    }

    /// (scale, scale_inv).
    pub fn scale(&self, layer: i32, tensor: TensorKind) -> Result<(f32, f32)> {
        let (mut s, mut inv) = (0f32, 0f32);
        check(|e| unsafe { sys::fp8attn_scale_state_get_scale(self.raw, layer, tensor as i32, &mut s, &mut inv, e) })?;
        Ok((s, inv))
    }

    pub fn set_qk_sigma(&self, layer: i32, sigma: &[f32], head_dim: i32, d_model: i64) -> Result<()> {
        check(|e| unsafe {
            sys::fp8attn_scale_state_set_qk_sigma(self.raw, layer, sigma.as_ptr(), sigma.len() as i32, head_dim,
                                                  d_model, e)
        })
    }

    pub fn as_raw(&self) -> sys::fp8attn_scale_state {
        self.raw
    }

    /// The versioned, checksummed blob.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut size = 0usize;
        check(|e| unsafe { sys::fp8attn_scale_state_serialize(self.raw, core::ptr::null_mut(), 0, &mut size, e) })?;
        let mut buf = vec![0u8; size];
        let mut written = 0usize;
        check(|e| unsafe {
            sys::fp8attn_scale_state_serialize(self.raw, buf.as_mut_ptr().cast(), buf.len(), &mut written, e)
        })?;
        buf.truncate(written);
        Ok(buf)
    }

    /// Replaces the whole state with a blob; unchanged on failure.
    pub fn load_bytes(&self, blob: &[u8]) -> Result<()> {
        check(|e| unsafe { sys::fp8attn_scale_state_deserialize(self.raw, blob.as_ptr().cast(), blob.len(), e) })
    }

    /// A new state holding a blob from `to_bytes`.
    pub fn from_bytes(context: &Context, blob: &[u8]) -> Result<Self> {
        let s = ScaleState::new(context, &ScaleStateOptions::default())?;
        s.load_bytes(blob)?;
        Ok(s)
    }
}

impl Drop for ScaleState {
    fn drop(&mut self) {
        // SAFETY: created by fp8attn_scale_state_create; `&mut self` excludes other calls.
        unsafe { sys::fp8attn_scale_state_destroy(self.raw) }
    }
}
