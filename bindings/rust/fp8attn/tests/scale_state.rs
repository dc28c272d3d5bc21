//! ScaleState: a blob round trip gives the same scales and the same bytes; a corrupted or
//! truncated blob is refused with its status and leaves the state as it was.
mod common;
use common::{seed, Rng};
use fp8attn::*;

#[test]
fn scale_state_round_trip() {
    let ctx = Context::new(Backend::Cpu).unwrap();
    let mut opts = ScaleStateOptions { num_layers: 2, amax_history_len: 16, ..Default::default() };
    opts.recipe[TensorKind::K as usize] = Recipe::Current;
    let state = ScaleState::new(&ctx, &opts).unwrap();
    let mut rng = Rng(seed("scale_state"));
    for _ in 0..3 {
        let amax: Vec<f32> = (0..16).map(|_| (rng.uniform() * 10.0 + 0.1) as f32).collect();
        state.report_amax_batch(&amax).unwrap();
        state.step().unwrap();
    }
    let (scale_q, inv_q) = state.scale(0, TensorKind::Q).unwrap();
    assert!(scale_q != 1.0 && (scale_q * inv_q - 1.0).abs() < 1e-6);
    let blob = state.to_bytes().unwrap();
    let copy = ScaleState::from_bytes(&ctx, &blob).unwrap();
    assert_eq!(copy.to_bytes().unwrap(), blob);
    for layer in 0..2 {
        for kind in [TensorKind::Q, TensorKind::K, TensorKind::V, TensorKind::Logit] {
            assert_eq!(copy.scale(layer, kind).unwrap(), state.scale(layer, kind).unwrap());
        }
    }
    let mut broken = blob.clone();
    let mid = broken.len() / 2;
    broken[mid] ^= 0x40;
    let e = copy.load_bytes(&broken).err().unwrap();
    assert_eq!(e.status(), sys::FP8ATTN_STATUS_CHECKSUM_MISMATCH, "{e}");
    assert_eq!(e.kind(), ErrorKind::Numerics);
    let e = copy.load_bytes(&blob[..blob.len() - 9]).err().unwrap();
    assert_eq!(e.status(), sys::FP8ATTN_STATUS_TRUNCATED_BLOB, "{e}");
    assert_eq!(copy.to_bytes().unwrap(), blob, "a refused blob changed the state");
    assert_eq!(state.report_amax(0, TensorKind::Q, f32::INFINITY).err().unwrap().status(),
               sys::FP8ATTN_STATUS_BAD_SCALE);
}

#[test]
fn quantize_and_predict() {
    let ctx = Context::new(Backend::Cpu).unwrap();
    let mut rng = Rng(seed("quantize"));
    let x: Vec<f32> = (0..2 * 40 * 2 * 64).map(|_| (rng.uniform() * 20.0 - 10.0) as f32).collect();
    let mut x8 = vec![E4m3(0); x.len()];
    let mut descale = vec![0f32; 4];
    let shape = [2, 40, 2, 64];
    let opts = QuantizeOptions { granularity: Granularity::PerHead, ..Default::default() };
    let amax = quantize(&ctx, &TensorRef::new(&x, &shape).unwrap(), None, &opts,
                        &mut TensorMut::new(&mut x8, &shape).unwrap(), &mut TensorMut::new(&mut descale, &[2, 2]).unwrap())
        .unwrap();
    assert_eq!(amax, x.iter().fold(0f32, |m, v| m.max(v.abs())));
    for (i, (&xi, &qi)) in x.iter().zip(&x8).enumerate() {
        let d = descale[(i / (40 * 2 * 64)) * 2 + (i / 64) % 2];
        let err = (qi.to_f32() * d - xi).abs();
        assert!(err <= (xi.abs() / 16.0).max(d / 1024.0) * 1.000001, "element {i}: {xi} -> {}", qi.to_f32() * d);
    }
    let (lead, _) = predict_p_underflow(9.0, 1, 4096, 256.0, KvOrder::Forward, 128).unwrap();
    let a: f64 = 9.0 - 1024f64.ln() - 256f64.ln();
    let phi = 0.5 * (1.0 + erf(a / 2f64.sqrt()));
    assert!((lead - phi).abs() <= 1e-6 * phi, "{lead} vs Φ = {phi}");
}

/// erf by its Taylor series (|x| < 3 here), to 1e-12.
fn erf(x: f64) -> f64 {
    let (mut term, mut sum, mut n) = (x, x, 0f64);
    while term.abs() > 1e-17 {
        n += 1.0;
        term *= -x * x / n;
        sum += term / (2.0 * n + 1.0);
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}
