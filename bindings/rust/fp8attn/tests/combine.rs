//! attention_combine against an FP64 merge written from the definition, on fresh random partials
//! (O_p ~ N(0,1), lse_p ~ N(0, 9), a quarter of the parts empty, one row empty in every part) with
//! the LSEs in the forward's [parts][heads][tokens] layout; BF16 partials; and the library's
//! refusals, outputs untouched. Bound on out (F32): (P + 16)·2^-23·max|O|.
mod common;
use common::{seed, Rng};
use fp8attn::*;

fn cpu() -> Context {
    Context::with_options(ContextOptions { backend: Backend::Cpu, num_threads: 2, log_level: LogLevel::Off,
                                           ..Default::default() }).unwrap()
}

const P: usize = 5;
const T: usize = 17;
const H: usize = 3;
const D: usize = 24;

/// (out [t][h][e], lse [t][h]) in FP64; lse_ht is [p][h][t].
fn fp64_merge(o: &[f64], lse_ht: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let (mut out, mut lse) = (vec![0f64; T * H * D], vec![f64::NEG_INFINITY; T * H]);
    for t in 0..T {
        for h in 0..H {
            let l = |p: usize| lse_ht[(p * H + h) * T + t] as f64;
            let m = (0..P).map(l).fold(f64::NEG_INFINITY, f64::max);
            if m == f64::NEG_INFINITY {
                continue;
            }
            let total = m + (0..P).map(|p| (l(p) - m).exp()).sum::<f64>().ln();
            lse[t * H + h] = total;
            for p in (0..P).filter(|&p| l(p) != f64::NEG_INFINITY) {
                for e in 0..D {
                    out[(t * H + h) * D + e] += (l(p) - total).exp() * o[((p * T + t) * H + h) * D + e];
                }
            }
        }
    }
    (out, lse)
}

fn partials(rng: &mut Rng) -> (Vec<f64>, Vec<f32>) {
    let o: Vec<f64> = (0..P * T * H * D).map(|_| rng.normal()).collect();
    let mut lse: Vec<f32> = (0..P * H * T).map(|_| (3.0 * rng.normal()) as f32).collect();
    for (i, l) in lse.iter_mut().enumerate() {
        if rng.uniform() < 0.25 || i % T == 4 {
            *l = f32::NEG_INFINITY; // token 4 is empty in every part and head
        }
    }
    (o, lse)
}

#[test]
fn combine_matches_an_fp64_merge_f32_and_bf16() {
    let ctx = cpu();
    let mut rng = Rng(seed("combine_fp64"));
    let (o, lse_ht) = partials(&mut rng);
    let (want, want_lse) = fp64_merge(&o, &lse_ht);
    let lse_shape = [P as i64, T as i64, H as i64];
    let lse_view = TensorRef::strided(&lse_ht, &lse_shape, &[(H * T) as i64, 1, T as i64]).unwrap();
    let max_o = o.iter().fold(0f64, |a, &x| a.max(x.abs()));
    // F32 partials.
    let o32: Vec<f32> = o.iter().map(|&x| x as f32).collect();
    let (want32, _) = fp64_merge(&o32.iter().map(|&x| x as f64).collect::<Vec<_>>(), &lse_ht);
    let mut out = vec![f32::NAN; T * H * D];
    let mut lse = vec![f32::NAN; T * H];
    attention_combine(&ctx, &TensorRef::new(&o32, &[P as i64, T as i64, H as i64, D as i64]).unwrap(), &lse_view,
                      &mut TensorMut::new(&mut out, &[T as i64, H as i64, D as i64]).unwrap(),
                      Some(&mut TensorMut::new(&mut lse, &[T as i64, H as i64]).unwrap())).unwrap();
    let bound = (P + 16) as f64 * 2f64.powi(-23) * max_o;
    let err = out.iter().zip(&want32).map(|(&g, &w)| (g as f64 - w).abs()).fold(0f64, f64::max);
    println!("F32: max|out - fp64| {err:.3e}, bound {bound:.3e}");
    assert!(err <= bound, "F32: {err} > {bound}");
    for (i, (&g, &w)) in lse.iter().zip(&want_lse).enumerate() {
        if w == f64::NEG_INFINITY {
            assert!(g == f32::NEG_INFINITY, "row {i} is empty everywhere: lse {g}");
            assert!(out[i * D..(i + 1) * D].iter().all(|&x| x == 0.0), "row {i}: out must be 0");
        } else {
            assert!((g as f64 - w).abs() <= 2f64.powi(-21) * (w.abs() + 8.0), "lse row {i}: {g} vs {w}");
        }
    }
    // BF16 partials and BF16 out.
    let o16: Vec<Bf16> = o.iter().map(|&x| Bf16::from_f32(x as f32)).collect();
    let (want16, _) = fp64_merge(&o16.iter().map(|x| x.to_f32() as f64).collect::<Vec<_>>(), &lse_ht);
    let mut out16 = vec![Bf16(0x7FC1); T * H * D];
    attention_combine(&ctx, &TensorRef::new(&o16, &[P as i64, T as i64, H as i64, D as i64]).unwrap(), &lse_view,
                      &mut TensorMut::new(&mut out16, &[T as i64, H as i64, D as i64]).unwrap(), None).unwrap();
    for (g, &w) in out16.iter().zip(&want16) {
        let g = g.to_f32() as f64;
        assert!((g - w).abs() <= 2f64.powi(-8) * w.abs() + bound, "BF16: {g} vs {w}");
    }
    let _ = want;
}

#[test]
fn combine_refusals_leave_the_output_untouched() {
    let ctx = cpu();
    let mut rng = Rng(seed("combine_refusals"));
    let (o, lse_ht) = partials(&mut rng);
    let o32: Vec<f32> = o.iter().map(|&x| x as f32).collect();
    let mut out = vec![f32::NAN; T * H * D];
    // LSEs of 4 parts for 5 partial outputs.
    let lse4 = TensorRef::new(&lse_ht[..4 * H * T], &[4, T as i64, H as i64]).unwrap();
    let e = attention_combine(&ctx, &TensorRef::new(&o32, &[P as i64, T as i64, H as i64, D as i64]).unwrap(), &lse4,
                              &mut TensorMut::new(&mut out, &[T as i64, H as i64, D as i64]).unwrap(), None)
        .err()
        .expect("mismatched part counts must fail");
    println!("{e}");
    assert_eq!(e.status(), sys::FP8ATTN_STATUS_BAD_SHAPE);
    assert!(e.message().contains("parts"));
    // 257 parts.
    let (big_o, big_l) = (vec![1f32; 257], vec![0f32; 257]);
    let mut one = vec![f32::NAN; 1];
    let e = attention_combine(&ctx, &TensorRef::new(&big_o, &[257, 1, 1, 1]).unwrap(),
                              &TensorRef::new(&big_l, &[257, 1, 1]).unwrap(),
                              &mut TensorMut::new(&mut one, &[1, 1, 1]).unwrap(), None)
        .err()
        .expect("257 parts must fail");
    assert_eq!(e.status(), sys::FP8ATTN_STATUS_BAD_SHAPE);
    // A BF16 LSE.
    let lse16: Vec<Bf16> = lse_ht.iter().map(|&x| Bf16::from_f32(x)).collect();
    let e = attention_combine(&ctx, &TensorRef::new(&o32, &[P as i64, T as i64, H as i64, D as i64]).unwrap(),
                              &TensorRef::new(&lse16, &[P as i64, T as i64, H as i64]).unwrap(),
                              &mut TensorMut::new(&mut out, &[T as i64, H as i64, D as i64]).unwrap(), None)
        .err()
        .expect("a BF16 LSE must fail");
    assert_eq!(e.status(), sys::FP8ATTN_STATUS_BAD_DTYPE);
    assert!(out.iter().all(|x| x.is_nan()) && one[0].is_nan(), "a refused call wrote its output");
}
