//! FP64 attention gradients, written from the math and independent of the library: for
//! L = Σ dout∘out with out = softmax(scale·Q·Kᵀ + mask)·V, per row i: dP_ij = dO_i·V_j,
//! D_i = dO_i·O_i, dS_ij = P_ij (dP_ij − D_i), dQ_i = scale·Σ_j dS_ij K_j, dK_j = scale·Σ_i dS_ij Q_i,
//! dV_j = Σ_i P_ij dO_i. GQA: dk and dv of a KV head sum over its query heads.

/// A padded problem: [b, sq, hq, d] queries, [b, sk, hkv, d] keys and values (row-major), the
/// causal mask and window aligned bottom-right (-1 unbounded), and the logit scale.
#[derive(Clone, Copy)]
pub struct Problem {
    pub b: usize,
    pub sq: usize,
    pub sk: usize,
    pub hq: usize,
    pub hkv: usize,
    pub d: usize,
    pub causal: bool,
    pub window: (i64, i64),
    pub scale: f64,
}

impl Problem {
    fn visible(&self, i: usize, j: usize) -> bool {
        let (diag, j) = (i as i64 + self.sk as i64 - self.sq as i64, j as i64);
        !(self.causal && j > diag)
            && !(self.window.0 >= 0 && j < diag - self.window.0)
            && !(self.window.1 >= 0 && j > diag + self.window.1)
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// (dq, dk, dv) in FP64, in the layouts of q, k and v.
pub fn attention_backward_fp64(p: &Problem, q: &[f64], k: &[f64], v: &[f64], dout: &[f64])
                               -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (d, group) = (p.d, p.hq / p.hkv);
    let (mut dq, mut dk, mut dv) = (vec![0.0; q.len()], vec![0.0; k.len()], vec![0.0; v.len()]);
    let qi = |b: usize, i: usize, h: usize| ((b * p.sq + i) * p.hq + h) * d;
    let kj = |b: usize, j: usize, g: usize| ((b * p.sk + j) * p.hkv + g) * d;
    for b in 0..p.b {
        for h in 0..p.hq {
            let g = h / group;
            for i in 0..p.sq {
                let (qrow, dorow) = (&q[qi(b, i, h)..][..d], &dout[qi(b, i, h)..][..d]);
                let keys: Vec<usize> = (0..p.sk).filter(|&j| p.visible(i, j)).collect();
                if keys.is_empty() {
                    continue;
                }
                let s: Vec<f64> = keys.iter().map(|&j| dot(qrow, &k[kj(b, j, g)..][..d]) * p.scale).collect();
                let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
                let sum: f64 = e.iter().sum();
                let prob: Vec<f64> = e.iter().map(|x| x / sum).collect();
                let mut o = vec![0.0; d];
                for (&j, &pj) in keys.iter().zip(&prob) {
                    for (oc, vc) in o.iter_mut().zip(&v[kj(b, j, g)..][..d]) {
                        *oc += pj * vc;
                    }
                }
                let delta = dot(dorow, &o);
                for (&j, &pj) in keys.iter().zip(&prob) {
                    let ds = pj * (dot(dorow, &v[kj(b, j, g)..][..d]) - delta) * p.scale;
                    for c in 0..d {
                        dq[qi(b, i, h) + c] += ds * k[kj(b, j, g) + c];
                        dk[kj(b, j, g) + c] += ds * qrow[c];
                        dv[kj(b, j, g) + c] += pj * dorow[c];
                    }
                }
            }
        }
    }
    (dq, dk, dv)
}
