//! Plan::backward on the CPU backend against the FP64 gradients of common/backward_fp64.rs.
//! Inputs: N(0, 1) rounded to BF16. Bound: relative L2 error ≤ 6e-3 per gradient, the C++
//! suite's bound (the library casts P and dS to BF16 before their products, takes D from the BF16
//! output, and rounds the gradients to BF16: measured 2e-3 .. 3e-3).
mod common;
use common::{attention_backward_fp64, rel_l2, seed, Problem, Rng, BF16_NAN};
use fp8attn::*;

fn cpu() -> Context {
    Context::with_options(ContextOptions { backend: Backend::Cpu, num_threads: 2, log_level: LogLevel::Off,
                                           ..Default::default() }).unwrap()
}

fn f64s(x: &[Bf16]) -> Vec<f64> {
    x.iter().map(|v| v.to_f32() as f64).collect()
}

fn r<'a>(x: &'a [Bf16], shape: &[i64]) -> TensorRef<'a> {
    TensorRef::new(x, shape).unwrap()
}

fn check(name: &str, got: &[f64], want: &[f64]) {
    let err = rel_l2(got, want);
    println!("{name}: rel L2 error {err:.2e} (bound 6e-3)");
    assert!(got.iter().all(|x| x.is_finite()), "{name}: unwritten (NaN-poisoned) or non-finite elements");
    assert!(err <= 6e-3, "{name}: error {err} over 6e-3");
}

/// Forward (BF16 out, LSE) then backward of a padded problem; dq in F32.
fn run_padded(p: Problem) {
    let ctx = cpu();
    let mut rng = Rng(seed(&format!("backward {} {} {} {} {:?}", p.causal, p.hq, p.hkv, p.sq, p.window)));
    let (nq, nk) = (p.b * p.sq * p.hq * p.d, p.b * p.sk * p.hkv * p.d);
    let (q, k, v, dout) = (rng.bf16_vec(nq), rng.bf16_vec(nk), rng.bf16_vec(nk), rng.bf16_vec(nq));
    let desc = AttentionDesc::new(p.d as i32, p.hq as i32, p.hkv as i32).input_dtype(DType::Bf16)
        .causal(p.causal).window(p.window.0 as i32, p.window.1 as i32).softmax_scale(p.scale as f32);
    let plan = Plan::new(&ctx, &desc).unwrap();
    let qs = [p.b as i64, p.sq as i64, p.hq as i64, p.d as i64];
    let ks = [p.b as i64, p.sk as i64, p.hkv as i64, p.d as i64];
    let ls = [p.b as i64, p.hq as i64, p.sq as i64];
    let (mut out, mut lse) = (vec![BF16_NAN; nq], vec![f32::NAN; p.b * p.hq * p.sq]);
    plan.forward(&mut ForwardArgs::new(r(&q, &qs), r(&k, &ks), r(&v, &ks), TensorMut::new(&mut out, &qs).unwrap())
        .lse(TensorMut::new(&mut lse, &ls).unwrap())).unwrap();
    let (mut dq, mut dk, mut dv) = (vec![f32::NAN; nq], vec![BF16_NAN; nk], vec![BF16_NAN; nk]);
    plan.backward(&mut BackwardArgs::new(r(&q, &qs), r(&k, &ks), r(&v, &ks), r(&out, &qs), r(&dout, &qs),
                                         TensorRef::new(&lse, &ls).unwrap(), TensorMut::new(&mut dq, &qs).unwrap(),
                                         TensorMut::new(&mut dk, &ks).unwrap(), TensorMut::new(&mut dv, &ks).unwrap()))
        .unwrap();
    let (wq, wk, wv) = attention_backward_fp64(&p, &f64s(&q), &f64s(&k), &f64s(&v), &f64s(&dout));
    check("dq", &dq.iter().map(|&x| x as f64).collect::<Vec<_>>(), &wq);
    check("dk", &f64s(&dk), &wk);
    check("dv", &f64s(&dv), &wv);
}

fn problem(sq: usize, sk: usize, hq: usize, hkv: usize, causal: bool, window: (i64, i64)) -> Problem {
    Problem { b: 2, sq, sk, hq, hkv, d: 64, causal, window, scale: 0.125 }
}

#[test]
fn backward_matches_fp64_gradients() {
    run_padded(problem(100, 130, 2, 2, false, (-1, -1)));
}

#[test]
fn causal_gqa_backward_matches_fp64_gradients() {
    run_padded(problem(120, 90, 4, 2, true, (-1, -1)));
}

#[test]
fn windowed_mqa_backward_with_a_softmax_scale_matches_fp64_gradients() {
    run_padded(Problem { scale: 0.09, ..problem(80, 140, 4, 1, false, (30, 5)) });
}

/// Packed layout with cu_seqlens: each sequence's gradients against its own FP64 problem, so a
/// mix-up across sequences fails. Also: deterministic on and off give the same bits on the CPU
/// backend, and a BF16 dq is the F32 dq rounded once.
#[test]
fn varlen_backward_deterministic_modes_and_dq_dtypes() {
    let ctx = cpu();
    let mut rng = Rng(seed("varlen backward"));
    let (hq, hkv, d) = (4usize, 2usize, 64usize);
    let (cu_q, cu_k) = ([0i32, 37, 107], [0i32, 50, 141]);
    let (tq, tk) = (cu_q[2] as usize, cu_k[2] as usize);
    let (q, dout) = (rng.bf16_vec(tq * hq * d), rng.bf16_vec(tq * hq * d));
    let (k, v) = (rng.bf16_vec(tk * hkv * d), rng.bf16_vec(tk * hkv * d));
    let plan = Plan::new(&ctx, &AttentionDesc::new(d as i32, hq as i32, hkv as i32).input_dtype(DType::Bf16)
        .causal(true)).unwrap();
    let (qs, ks, ls) = ([tq as i64, hq as i64, d as i64], [tk as i64, hkv as i64, d as i64], [hq as i64, tq as i64]);
    let cu = || (TensorRef::new(&cu_q, &[3]).unwrap(), TensorRef::new(&cu_k, &[3]).unwrap());
    let (mut out, mut lse) = (vec![BF16_NAN; q.len()], vec![f32::NAN; hq * tq]);
    plan.forward(&mut ForwardArgs::new(r(&q, &qs), r(&k, &ks), r(&v, &ks), TensorMut::new(&mut out, &qs).unwrap())
        .lse(TensorMut::new(&mut lse, &ls).unwrap()).varlen(cu().0, cu().1, 70, 91)).unwrap();
    let run = |deterministic: bool, dq: &mut [f32], dq16: Option<&mut [Bf16]>| {
        let (mut dk, mut dv) = (vec![BF16_NAN; k.len()], vec![BF16_NAN; v.len()]);
        let dq = match dq16 {
            Some(x) => TensorMut::new(x, &qs).unwrap(),
            None => TensorMut::new(dq, &qs).unwrap(),
        };
        plan.backward(&mut BackwardArgs::new(r(&q, &qs), r(&k, &ks), r(&v, &ks), r(&out, &qs), r(&dout, &qs),
                                             TensorRef::new(&lse, &ls).unwrap(), dq,
                                             TensorMut::new(&mut dk, &ks).unwrap(), TensorMut::new(&mut dv, &ks).unwrap())
            .varlen(cu().0, cu().1, 70, 91).deterministic(deterministic)).unwrap();
        (dk, dv)
    };
    let (mut dq, mut dq_nd, mut dq16) = (vec![f32::NAN; q.len()], vec![f32::NAN; q.len()], vec![BF16_NAN; q.len()]);
    let (dk, dv) = run(true, &mut dq, None);
    let (dk_nd, dv_nd) = run(false, &mut dq_nd, None);
    let (dk16, dv16) = run(true, &mut [], Some(&mut dq16));
    assert!(dq.iter().zip(&dq_nd).all(|(a, b)| a.to_bits() == b.to_bits()) && dk == dk_nd && dv == dv_nd,
            "deterministic=false changed the bits on the CPU backend");
    assert!(dk == dk16 && dv == dv16);
    assert!(dq.iter().zip(&dq16).all(|(&a, &b)| Bf16::from_f32(a) == b), "the BF16 dq is not the F32 dq rounded");
    for s in 0..2 {
        let (q0, q1, k0, k1) = (cu_q[s] as usize, cu_q[s + 1] as usize, cu_k[s] as usize, cu_k[s + 1] as usize);
        let p = Problem { b: 1, sq: q1 - q0, sk: k1 - k0, hq, hkv, d, causal: true, window: (-1, -1),
                          scale: 1.0 / (d as f64).sqrt() };
        let (qr, kr) = (q0 * hq * d..q1 * hq * d, k0 * hkv * d..k1 * hkv * d);
        let (wq, wk, wv) = attention_backward_fp64(&p, &f64s(&q[qr.clone()]), &f64s(&k[kr.clone()]),
                                                   &f64s(&v[kr.clone()]), &f64s(&dout[qr.clone()]));
        println!("sequence {s}:");
        check("dq", &dq[qr].iter().map(|&x| x as f64).collect::<Vec<_>>(), &wq);
        check("dk", &f64s(&dk[kr.clone()]), &wk);
        check("dv", &f64s(&dv[kr]), &wv);
    }
}

#[test]
fn backward_bad_input_gives_the_library_status_and_leaves_the_gradients() {
    let ctx = cpu();
    let mut rng = Rng(seed("backward bad input"));
    let x = rng.bf16_vec(20 * 64);
    let lse: Vec<f32> = (0..20).map(|_| rng.uniform() as f32 + 3.0).collect();
    let (mut dq, mut dk, mut dv) = (vec![BF16_NAN; 20 * 64], vec![BF16_NAN; 21 * 64], vec![BF16_NAN; 20 * 64]);
    fn args<'a>(x: &'a [Bf16], lse: &'a [f32], dq: &'a mut [Bf16], dk: &'a mut [Bf16], dv: &'a mut [Bf16],
                dk_rows: i64) -> BackwardArgs<'a> {
        let s = [1i64, 20, 1, 64];
        let r = |t: &'a [Bf16]| TensorRef::new(t, &s).unwrap();
        BackwardArgs::new(r(x), r(x), r(x), r(x), r(x), TensorRef::new(lse, &[1, 1, 20]).unwrap(),
                          TensorMut::new(dq, &s).unwrap(), TensorMut::new(dk, &[1, dk_rows, 1, 64]).unwrap(),
                          TensorMut::new(dv, &s).unwrap())
    }
    // An FP8 plan has no backward.
    let fp8 = Plan::new(&ctx, &AttentionDesc::new(64, 1, 1)).unwrap();
    let e = fp8.backward(&mut args(&x, &lse, &mut dq, &mut dk, &mut dv, 20)).err().expect("an FP8 plan's backward");
    println!("{e}");
    assert_eq!(e.status(), sys::FP8ATTN_STATUS_UNSUPPORTED_DTYPE);
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.message().contains("BF16"), "{e}");
    // dk of 21 rows for k of 20.
    let bf16 = Plan::new(&ctx, &AttentionDesc::new(64, 1, 1).input_dtype(DType::Bf16)).unwrap();
    let e = bf16.backward(&mut args(&x, &lse, &mut dq, &mut dk, &mut dv, 21)).err().expect("dk of the wrong shape");
    println!("{e}");
    assert_eq!(e.status(), sys::FP8ATTN_STATUS_BAD_SHAPE);
    assert!(e.message().contains("dk"), "{e}");
    assert!(dq.iter().chain(&dk).chain(&dv).all(|x| x.to_f32().is_nan()), "a refused call wrote a gradient");
}
