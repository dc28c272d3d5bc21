package fp8attn

import (
	"math"
	"testing"
)

// Test references written from the math, independent of the library: BF16 rounding, an E4M3
// encoder, and FP64 attention gradients.

// normal is a standard normal draw (Box-Muller).
func (r *rng) normal() float64 {
	u := 1 - float64(r.next()>>11)/(1<<53)
	v := float64(r.next()>>11) / (1 << 53)
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*v)
}

// bf16 rounds to the nearest bfloat16 (ties to even); bf16f is its value.
func bf16(x float32) uint16 {
	b := math.Float32bits(x)
	return uint16((b + 0x7FFF + (b>>16)&1) >> 16)
}
func bf16f(b uint16) float64 { return float64(math.Float32frombits(uint32(b) << 16)) }

const bf16NaN = 0x7FC1

// e4m3SatFinite is x rounded to the nearest E4M3 (ties to the even code), saturating at ±448,
// by search over the 127 finite magnitudes.
func e4m3SatFinite(x float32) byte {
	if x != x {
		return 0x7F
	}
	sign := byte(0)
	if math.Signbit(float64(x)) {
		sign = 0x80
	}
	a, best := math.Abs(float64(x)), byte(0)
	for code := byte(1); code <= 0x7E; code++ {
		d, db := math.Abs(decodeE4M3(code)-a), math.Abs(decodeE4M3(best)-a)
		if d < db || (d == db && code%2 == 0) {
			best = code
		}
	}
	return sign | best
}

// problem is a padded attention problem: q [b, sq, hq, d], k and v [b, sk, hkv, d] row-major,
// causal and window aligned bottom-right (-1 unbounded), logit scale.
type problem struct {
	b, sq, sk, hq, hkv, d int
	causal                bool
	left, right           int
	scale                 float64
}

func (p problem) visible(i, j int) bool {
	diag := i + p.sk - p.sq
	return !(p.causal && j > diag) && !(p.left >= 0 && j < diag-p.left) && !(p.right >= 0 && j > diag+p.right)
}

// backward64 is (dq, dk, dv) of L = Σ dout∘out in FP64: dP = dO·Vᵀ, D = rowsum(dO∘O),
// dS = P∘(dP − D), dQ = scale·dS·K, dK = scale·dSᵀ·Q, dV = Pᵀ·dO; GQA sums dk, dv over a group.
func backward64(p problem, q, k, v, dout []float64) (dq, dk, dv []float64) {
	dq, dk, dv = make([]float64, len(q)), make([]float64, len(k)), make([]float64, len(v))
	dot := func(a, b []float64) float64 {
		s := 0.0
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	d := p.d
	for b := 0; b < p.b; b++ {
		for h := 0; h < p.hq; h++ {
			g := h / (p.hq / p.hkv)
			for i := 0; i < p.sq; i++ {
				qo := ((b*p.sq+i)*p.hq + h) * d
				qrow, dorow := q[qo:qo+d], dout[qo:qo+d]
				var keys []int
				var s []float64
				m := math.Inf(-1)
				for j := 0; j < p.sk; j++ {
					if p.visible(i, j) {
						ko := ((b*p.sk+j)*p.hkv + g) * d
						keys, s = append(keys, ko), append(s, dot(qrow, k[ko:ko+d])*p.scale)
						m = math.Max(m, s[len(s)-1])
					}
				}
				sum := 0.0
				for n := range s {
					s[n] = math.Exp(s[n] - m)
					sum += s[n]
				}
				o := make([]float64, d)
				for n, ko := range keys {
					s[n] /= sum
					for c := 0; c < d; c++ {
						o[c] += s[n] * v[ko+c]
					}
				}
				delta := dot(dorow, o)
				for n, ko := range keys {
					ds := s[n] * (dot(dorow, v[ko:ko+d]) - delta) * p.scale
					for c := 0; c < d; c++ {
						dq[qo+c] += ds * k[ko+c]
						dk[ko+c] += ds * qrow[c]
						dv[ko+c] += s[n] * dorow[c]
					}
				}
			}
		}
	}
	return dq, dk, dv
}

// checkRelL2 fails unless every element is finite and ‖got − want‖/‖want‖ ≤ bound.
func checkRelL2(t *testing.T, name string, got, want []float64, bound float64) {
	t.Helper()
	num, den := 0.0, 0.0
	for i := range want {
		if math.IsNaN(got[i]) || math.IsInf(got[i], 0) {
			t.Fatalf("%s: element %d is %g (unwritten or not finite)", name, i, got[i])
		}
		num += (got[i] - want[i]) * (got[i] - want[i])
		den += want[i] * want[i]
	}
	err := math.Sqrt(num / den)
	t.Logf("%s: rel L2 error %.2e (bound %.0e)", name, err, bound)
	if err > bound {
		t.Fatalf("%s: error %g over %g", name, err, bound)
	}
}
