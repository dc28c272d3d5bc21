//! Bad input: the library's statuses with the message of the same call, outputs untouched, the
//! binding's own refusals (a view outside its slice) before any call, and a log callback whose
//! panic is caught before it reaches C.
mod common;
use common::{seed, Rng};
use fp8attn::*;

fn cpu() -> Context {
    Context::with_options(ContextOptions { backend: Backend::Cpu, num_threads: 1, log_level: LogLevel::Off,
                                           ..Default::default() }).unwrap()
}

#[test]
fn unsupported_head_dim() {
    let e = Plan::new(&cpu(), &AttentionDesc::new(96, 1, 1)).err().expect("head_dim 96 must fail");
    println!("{e}");
    assert_eq!(e.status(), sys::FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM);
    assert_eq!(e.name(), "FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM");
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.message().contains("head_dim"));
}

#[test]
fn bad_heads_and_bad_shape_leave_the_output_untouched() {
    let ctx = cpu();
    let e = Plan::new(&ctx, &AttentionDesc::new(64, 3, 2)).err().unwrap();
    assert_eq!(e.status(), sys::FP8ATTN_STATUS_BAD_HEADS);
    let plan = Plan::new(&ctx, &AttentionDesc::new(64, 2, 2).output_dtype(DType::F32)).unwrap();
    let mut rng = Rng(seed("bad_shape"));
    let (q, k, v) = (rng.e4m3_vec(16 * 2 * 64), rng.e4m3_vec(20 * 2 * 64), rng.e4m3_vec(21 * 2 * 64));
    let mut out = vec![f32::NAN; 16 * 2 * 64];
    let e = plan
        .forward(&mut ForwardArgs::new(TensorRef::new(&q, &[1, 16, 2, 64]).unwrap(),
                                       TensorRef::new(&k, &[1, 20, 2, 64]).unwrap(),
                                       TensorRef::new(&v, &[1, 21, 2, 64]).unwrap(),
                                       TensorMut::new(&mut out, &[1, 16, 2, 64]).unwrap()))
        .err()
        .unwrap();
    println!("{e}");
    assert_eq!(e.status(), sys::FP8ATTN_STATUS_BAD_SHAPE);
    assert!(!e.message().is_empty());
    assert!(out.iter().all(|x| x.is_nan()), "a failed call wrote its output");
}

#[test]
fn nan_descale_is_bad_scale() {
    let ctx = cpu();
    let plan = Plan::new(&ctx, &AttentionDesc::new(64, 1, 1).output_dtype(DType::F32)).unwrap();
    let mut rng = Rng(seed("nan_descale"));
    let x = rng.e4m3_vec(8 * 64);
    let mut out = vec![0f32; 8 * 64];
    let nan = [f32::NAN];
    let s = [1, 8, 1, 64];
    let d = TensorRef::strided(&nan, &[1, 1], &[0, 0]).unwrap();
    let e = plan
        .forward(&mut ForwardArgs::new(TensorRef::new(&x, &s).unwrap(), TensorRef::new(&x, &s).unwrap(),
                                       TensorRef::new(&x, &s).unwrap(), TensorMut::new(&mut out, &s).unwrap())
            .descales(None, Some(d), None))
        .err()
        .unwrap();
    assert_eq!(e.status(), sys::FP8ATTN_STATUS_BAD_SCALE, "{e}");
}

#[test]
fn views_outside_their_slice_are_refused_by_the_binding() {
    let data = vec![0f32; 100];
    let e = TensorRef::new(&data, &[1, 10, 1, 11]).err().unwrap();
    assert_eq!(e.status(), sys::FP8ATTN_STATUS_BAD_SHAPE);
    assert!(e.message().contains("reaches element 109"), "{e}");
    let e = TensorRef::strided(&data, &[10, 10], &[10, -1]).err().unwrap();
    assert_eq!(e.status(), sys::FP8ATTN_STATUS_BAD_STRIDE);
    assert!(TensorRef::strided(&data, &[10, 10], &[10, 1]).is_ok());
}

#[test]
fn cuda_without_a_gpu_is_a_device_error() {
    std::env::set_var("FP8ATTN_CUDA_BACKEND", "/nonexistent/libfp8attn_cuda.so");
    let e = Context::new(Backend::Cuda).err().unwrap();
    println!("{e}");
    assert_eq!(e.kind(), ErrorKind::Device);
}

#[test]
fn a_panicking_log_callback_is_caught() {
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = seen.clone();
    let ctx = Context::with_options(ContextOptions {
        backend: Backend::Cpu,
        log_level: LogLevel::Trace,
        log_callback: Some(Box::new(move |level, msg| {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            assert!(level >= LogLevel::Error && !msg.is_empty());
            panic!("a log callback that panics");
        })),
        ..Default::default()
    })
    .unwrap();
    assert!(Plan::new(&ctx, &AttentionDesc::new(100, 1, 1)).is_err());
    let n = seen.load(std::sync::atomic::Ordering::Relaxed);
    println!("{n} messages, {} panics caught", ctx.log_callback_panics());
    assert!(n > 0 && ctx.log_callback_panics() == n);
}
