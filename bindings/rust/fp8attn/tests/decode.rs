//! The decode path (AttentionDesc::decode, num_splits): one split gives the plain forward's bits;
//! three splits stay within 2·(the plain forward's error against the FP64 reference) + 1e-3; a
//! split count above 256 is refused with BAD_OPTION. N(0, 1)-ish random E4M3 codes.
mod common;
use common::{seed, Rng};
use fp8attn::*;

const B: usize = 2;
const SQ: usize = 4;
const SK: usize = 700;
const HQ: usize = 8;
const HKV: usize = 2;
const D: usize = 64;

fn run(ctx: &Context, desc: &AttentionDesc, q: &[E4m3], k: &[E4m3], v: &[E4m3]) -> Vec<f32> {
    let (qs, ks) = ([B as i64, SQ as i64, HQ as i64, D as i64], [B as i64, SK as i64, HKV as i64, D as i64]);
    let mut out = vec![f32::NAN; B * SQ * HQ * D];
    let plan = Plan::new(ctx, desc).unwrap();
    let mut args = ForwardArgs::new(TensorRef::new(q, &qs).unwrap(), TensorRef::new(k, &ks).unwrap(),
                                    TensorRef::new(v, &ks).unwrap(), TensorMut::new(&mut out, &qs).unwrap());
    plan.forward(&mut args).unwrap();
    out
}

fn max_diff(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (*x as f64 - *y as f64).abs()).fold(0.0, f64::max)
}

#[test]
fn decode_num_splits_against_forward_and_reference() {
    let mut rng = Rng(seed("decode num_splits"));
    let (q, k, v) = (rng.e4m3_vec(B * SQ * HQ * D), rng.e4m3_vec(B * SK * HKV * D), rng.e4m3_vec(B * SK * HKV * D));
    let cpu = Context::with_options(ContextOptions { backend: Backend::Cpu, num_threads: 2, ..Default::default() })
        .unwrap();
    let reference =
        Context::with_options(ContextOptions { backend: Backend::Reference, num_threads: 2, ..Default::default() })
            .unwrap();
    let desc = AttentionDesc::new(D as i32, HQ as i32, HKV as i32).causal(true).output_dtype(DType::F32);
    let plain = run(&cpu, &desc, &q, &k, &v);
    let oracle = run(&reference, &desc, &q, &k, &v);
    let bound = 2.0 * max_diff(&plain, &oracle) + 1e-3;
    let one = run(&cpu, &desc.decode(true).num_splits(1), &q, &k, &v);
    assert!(one.iter().zip(&plain).all(|(a, b)| a.to_bits() == b.to_bits()), "one split differs from the forward");
    let three = run(&cpu, &desc.decode(true).num_splits(3), &q, &k, &v);
    let err = max_diff(&three, &oracle);
    assert!(err <= bound, "three splits: max|out - fp64| {err} above {bound}");
    let refused = match Plan::new(&cpu, &desc.decode(true).num_splits(257)) {
        Ok(_) => panic!("num_splits 257 was accepted"),
        Err(e) => e,
    };
    assert_eq!(refused.status(), sys::FP8ATTN_STATUS_BAD_OPTION, "{}", refused.message());
}
