//! Safe Rust API over libfp8attn (`include/fp8attn/fp8attn.h`): RAII handles, `Result<_, Error>`
//! with the status and the message of the same call, borrowed slices for host tensors, and
//! `Send`/`Sync` exactly where the header documents thread safety (Context, Plan, ScaleState).
//!
//! ```no_run
//! use fp8attn::*;
//! let ctx = Context::new(Backend::Cpu)?;
//! let plan = Plan::new(&ctx, &AttentionDesc::new(64, 2, 2).causal(true).output_dtype(DType::F32))?;
//! # let (q, k, v) = (vec![E4m3(0); 128], vec![E4m3(0); 128], vec![E4m3(0); 128]);
//! let mut out = vec![0f32; 128];
//! let shape = [1, 1, 2, 64];
//! plan.forward(&mut ForwardArgs::new(TensorRef::new(&q, &shape)?, TensorRef::new(&k, &shape)?,
//!                                    TensorRef::new(&v, &shape)?, TensorMut::new(&mut out, &shape)?))?;
//! # Ok::<(), fp8attn::Error>(())
//! ```
mod backward;
mod combine;
mod context;
mod error;
mod kv_append;
mod numerics;
mod plan;
mod scale_state;
mod tensor;

pub use backward::BackwardArgs;
pub use combine::attention_combine;
pub use context::{Backend, Context, ContextOptions, LogLevel};
pub use error::{status_name, Error, ErrorKind, Result};
pub use kv_append::{kv_append, KvAppendArgs, KvDescales};
pub use fp8attn_sys as sys;
pub use numerics::{predict_p_underflow, qk_spectral_norms, quantize, Granularity, QuantizeOptions};
pub use plan::{AccumulatorModel, AttentionDesc, ForwardArgs, KvOrder, KvScaleGranularity, PagedKv, Plan, Telemetry};
pub use scale_state::{Recipe, ScaleState, ScaleStateOptions, TensorKind};
pub use tensor::{Bf16, DType, E4m3, Element, HostBuffer, TensorMut, TensorRef};

/// The loaded library's (major, minor, patch).
pub fn version() -> (i32, i32, i32) {
    let v = unsafe { sys::fp8attn_get_version() };
    (v / 10000, v / 100 % 100, v % 100)
}
