//! The forward call against an FP64 attention written here. Inputs: random finite E4M3 values
//! (|x| ≤ 3.75) with per-tensor descales. Bound: FP8's P cast (P̃·256 to E4M3, 3 mantissa bits)
//! leaves a relative error of at most 2^-4 per probability, so |out − FP64| ≤ (2^-4 + s_k·2^-18)·max|V·descale_v|
//! (the second term for subnormal P̃; FP32 accumulation is far smaller); the LSE has no FP8 rounding and matches to 1e-5
//! with FP32 accumulation (the tensor core's addition, the default, moves logits by up to 2^-13 relative per
//! MMA; the library's own suites bound that).
mod common;
use common::{attention_fp64, seed, Rng};
use fp8attn::*;

fn run(causal: bool, hq: usize, hkv: usize, sq: usize, sk: usize) {
    let (b, d) = (2usize, 64usize);
    let mut rng = Rng(seed(&format!("forward {causal} {hq} {hkv} {sq} {sk}")));
    let q = rng.e4m3_vec(b * sq * hq * d);
    let k = rng.e4m3_vec(b * sk * hkv * d);
    let v = rng.e4m3_vec(b * sk * hkv * d);
    let descales = [0.5f32, 0.25, 2.0];
    let ctx = Context::with_options(ContextOptions { backend: Backend::Cpu, num_threads: 2, ..Default::default() })
        .unwrap();
    let desc = AttentionDesc::new(d as i32, hq as i32, hkv as i32).causal(causal).output_dtype(DType::F32)
        .telemetry(true).accumulator_model(AccumulatorModel::Fp32);
    let plan = Plan::new(&ctx, &desc).unwrap();
    let mut out = vec![f32::NAN; b * sq * hq * d];
    let mut lse = vec![f32::NAN; b * hq * sq];
    let (qs, ks) = ([b as i64, sq as i64, hq as i64, d as i64], [b as i64, sk as i64, hkv as i64, d as i64]);
    let ds: Vec<TensorRef> =
        descales.iter().map(|x| TensorRef::strided(std::slice::from_ref(x), &[b as i64, hkv as i64], &[0, 0]).unwrap())
            .collect();
    let telemetry = {
        let mut args = ForwardArgs::new(TensorRef::new(&q, &qs).unwrap(), TensorRef::new(&k, &ks).unwrap(),
                                        TensorRef::new(&v, &ks).unwrap(), TensorMut::new(&mut out, &qs).unwrap())
            .lse(TensorMut::new(&mut lse, &[b as i64, hq as i64, sq as i64]).unwrap())
            .descales(Some(ds[0]), Some(ds[1]), Some(ds[2]));
        plan.forward(&mut args).unwrap().expect("telemetry requested")
    };
    let f = |x: &Vec<E4m3>| x.iter().map(|e| e.to_f32() as f64).collect::<Vec<f64>>();
    let (want, want_lse) = attention_fp64(&f(&q), &f(&k), &f(&v), b, sq, sk, hq, hkv, d, causal,
                                          descales.map(|x| x as f64));
    let vmax = f(&v).iter().fold(0f64, |m, x| m.max(x.abs())) * descales[2] as f64;
    let err = out.iter().zip(&want).map(|(&o, &w)| (o as f64 - w).abs()).fold(0f64, f64::max);
    // Normal P̃ round with a relative 2^-4; underflowing ones lose at most 2^-10/S_p of the row sum each.
    let bound = vmax * (1.0 / 16.0 + sk as f64 / 262144.0);
    assert!(out.iter().all(|x| x.is_finite()), "unwritten (NaN-poisoned) outputs");
    println!("max|out - fp64| = {err:.3e}, bound {bound:.3e}; telemetry {telemetry:?}");
    assert!(err <= bound, "error {err} over bound {bound}");
    for (&l, &w) in lse.iter().zip(&want_lse) {
        if w.is_finite() {
            assert!((l as f64 - w).abs() <= 1e-5 * w.abs().max(1.0), "lse {l} vs {w}");
        } else {
            assert_eq!(l, f32::NEG_INFINITY);
        }
    }
    assert!(telemetry.p_positive > 0 && telemetry.p_underflow <= telemetry.p_positive);
}

#[test]
fn forward_matches_fp64_attention() {
    run(false, 4, 4, 100, 170);
}

#[test]
fn causal_gqa_forward_matches_fp64_attention() {
    run(true, 4, 2, 130, 90);
}

#[test]
fn a_plan_is_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Context>();
    assert_send_sync::<Plan>();
    assert_send_sync::<ScaleState>();
    let ctx = Context::new(Backend::Cpu).unwrap();
    let plan = std::sync::Arc::new(Plan::new(&ctx, &AttentionDesc::new(64, 1, 1).output_dtype(DType::F32)).unwrap());
    drop(ctx); // the plan keeps its context alive
    let mut rng = Rng(seed("threads"));
    let data = std::sync::Arc::new(rng.e4m3_vec(3 * 32 * 64));
    let results: Vec<Vec<f32>> = (0..3)
        .map(|_| {
            let (plan, data) = (plan.clone(), data.clone());
            std::thread::spawn(move || {
                let shape = [1, 32, 1, 64];
                let mut out = vec![f32::NAN; 32 * 64];
                let t = |i: usize| TensorRef::new(&data[i * 2048..(i + 1) * 2048], &shape).unwrap();
                plan.forward(&mut ForwardArgs::new(t(0), t(1), t(2), TensorMut::new(&mut out, &shape).unwrap()))
                    .unwrap();
                out
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect();
    assert!(results[0].iter().all(|x| x.is_finite()));
    assert!(results.iter().all(|r| r == &results[0]), "the same inputs gave different outputs across threads");
}
