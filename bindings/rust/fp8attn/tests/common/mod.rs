//! Test helpers: a seeded generator, random finite E4M3 and BF16 data, an E4M3 encoder, and FP64
//! attention (forward here, backward in backward_fp64.rs).
#![allow(dead_code)]
mod backward_fp64;
#[allow(unused_imports)]
pub use backward_fp64::{attention_backward_fp64, Problem};
use fp8attn::{Bf16, E4m3};

pub fn seed(test: &str) -> u64 {
    let base: u64 = std::env::var("FP8ATTN_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(20261123);
    let s = base.wrapping_add(test.bytes().map(u64::from).sum::<u64>());
    println!("{test}: seed {s}");
    s
}

/// splitmix64.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// A random finite E4M3 value with |x| ≤ 3.75 (exponent field 0..8).
    pub fn e4m3(&mut self) -> E4m3 {
        let r = self.next_u64();
        let exp = (r % 9) as u8;
        let man = ((r >> 8) & 7) as u8;
        let sign = ((r >> 16) & 1) as u8;
        E4m3((sign << 7) | (exp << 3) | man)
    }
    pub fn e4m3_vec(&mut self, n: usize) -> Vec<E4m3> {
        (0..n).map(|_| self.e4m3()).collect()
    }
    /// A standard normal draw (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (1.0 - self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
    /// N(0, 1) values rounded to BF16.
    pub fn bf16_vec(&mut self, n: usize) -> Vec<Bf16> {
        (0..n).map(|_| Bf16::from_f32(self.normal() as f32)).collect()
    }
}

/// BF16 NaN bits, to poison outputs: an element the call does not write stays NaN.
pub const BF16_NAN: Bf16 = Bf16(0x7FC1);

/// x rounded to the nearest E4M3 (ties to the even code), saturating at ±448 (the library's
/// round_e4m3_satfinite), by search over the 127 finite magnitudes: independent of the library.
pub fn e4m3_satfinite(x: f32) -> E4m3 {
    if x.is_nan() {
        return E4m3(0x7F);
    }
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = x.abs() as f64;
    let mut best = 0u8;
    for code in 1..=0x7Eu8 {
        let (d, db) = ((E4m3(code).to_f32() as f64 - a).abs(), (E4m3(best).to_f32() as f64 - a).abs());
        if d < db || (d == db && code % 2 == 0) {
            best = code;
        }
    }
    E4m3(sign | best)
}

/// The relative L2 error ‖got − want‖ / ‖want‖.
pub fn rel_l2(got: &[f64], want: &[f64]) -> f64 {
    let num: f64 = got.iter().zip(want).map(|(g, w)| (g - w) * (g - w)).sum();
    let den: f64 = want.iter().map(|w| w * w).sum();
    (num / den).sqrt()
}

/// Exact attention in FP64 over [b, s, h, d] data (row-major), GQA, causal bottom-right:
/// (out [b, sq, hq, d], lse [b, hq, sq]).
#[allow(clippy::too_many_arguments)]
pub fn attention_fp64(q: &[f64], k: &[f64], v: &[f64], b: usize, sq: usize, sk: usize, hq: usize, hkv: usize,
                      d: usize, causal: bool, descales: [f64; 3]) -> (Vec<f64>, Vec<f64>) {
    let scale = 1.0 / (d as f64).sqrt() * descales[0] * descales[1];
    let (mut out, mut lse) = (vec![0.0; b * sq * hq * d], vec![f64::NEG_INFINITY; b * hq * sq]);
    for bi in 0..b {
        for h in 0..hq {
            let g = h / (hq / hkv);
            for i in 0..sq {
                let qi = &q[((bi * sq + i) * hq + h) * d..][..d];
                let visible = |j: usize| !causal || j + sq <= i + sk;
                let logits: Vec<f64> = (0..sk)
                    .map(|j| {
                        let kj = &k[((bi * sk + j) * hkv + g) * d..][..d];
                        if visible(j) { qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>() * scale } else { f64::NEG_INFINITY }
                    })
                    .collect();
                let m = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                if m == f64::NEG_INFINITY {
                    continue;
                }
                let p: Vec<f64> = logits.iter().map(|&s| (s - m).exp()).collect();
                let sum: f64 = p.iter().sum();
                lse[(bi * hq + h) * sq + i] = m + sum.ln();
                let o = &mut out[((bi * sq + i) * hq + h) * d..][..d];
                for (j, pj) in p.iter().enumerate() {
                    let vj = &v[((bi * sk + j) * hkv + g) * d..][..d];
                    for (oc, vc) in o.iter_mut().zip(vj) {
                        *oc += pj / sum * vc * descales[2];
                    }
                }
            }
        }
    }
    (out, lse)
}
