package fp8attn

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// TestAttentionCombineAgainstFP64 merges fresh random partials (O_p ~ N(0,1), lse_p ~ N(0, 9), a
// quarter of the parts empty, token 2 empty in every part) given in the forward's LSE layout
// ([parts][heads][tokens], through a strided view) and compares with an FP64 merge written from
// the definition. Bound on out: (P + 16)·2^-23·max|O|; an all-empty row must give 0 and −inf.
func TestAttentionCombineAgainstFP64(t *testing.T) {
	const P, T, H, D = 4, 11, 2, 32
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	ctx := cpuContext(t, ContextOptions{LogLevel: LogOff})
	defer ctx.Close()
	po, _ := NewHostTensor(F32, P, T, H, D)
	lseHT, _ := NewHostTensor(F32, P, H, T)
	out, _ := NewHostTensor(F32, T, H, D)
	lse, _ := NewHostTensor(F32, T, H)
	maxO := 0.0
	for i := range po.Float32s() {
		po.Float32s()[i] = float32(rng.NormFloat64())
		maxO = math.Max(maxO, math.Abs(float64(po.Float32s()[i])))
	}
	for i := range lseHT.Float32s() {
		lseHT.Float32s()[i] = float32(3 * rng.NormFloat64())
		if rng.Float64() < 0.25 || i%T == 2 {
			lseHT.Float32s()[i] = float32(math.Inf(-1))
		}
	}
	for i := range out.Float32s() {
		out.Float32s()[i] = float32(math.NaN())
	}
	pl, err := lseHT.View(0, []int64{P, T, H}, []int64{H * T, 1, T})
	if err != nil {
		t.Fatal(err)
	}
	if err := ctx.AttentionCombine(&CombineArgs{PartialOut: po, PartialLSE: pl, Out: out, LSE: lse}); err != nil {
		t.Fatal(err)
	}
	bound, worst := float64(P+16)*math.Pow(2, -23)*maxO, 0.0
	for tok := 0; tok < T; tok++ {
		for h := 0; h < H; h++ {
			l := func(p int) float64 { return float64(lseHT.Float32s()[(p*H+h)*T+tok]) }
			m := math.Inf(-1)
			for p := 0; p < P; p++ {
				m = math.Max(m, l(p))
			}
			gotLse := float64(lse.Float32s()[tok*H+h])
			if math.IsInf(m, -1) {
				if !math.IsInf(gotLse, -1) {
					t.Fatalf("token %d head %d: every part empty, lse %g", tok, h, gotLse)
				}
				for e := 0; e < D; e++ {
					if out.Float32s()[(tok*H+h)*D+e] != 0 {
						t.Fatalf("token %d head %d: every part empty, out must be 0", tok, h)
					}
				}
				continue
			}
			s := 0.0
			for p := 0; p < P; p++ {
				s += math.Exp(l(p) - m)
			}
			want := m + math.Log(s)
			if math.Abs(gotLse-want) > math.Pow(2, -21)*(math.Abs(want)+8) {
				t.Fatalf("lse %g, want %g", gotLse, want)
			}
			for e := 0; e < D; e++ {
				w := 0.0
				for p := 0; p < P; p++ {
					if !math.IsInf(l(p), -1) {
						w += math.Exp(l(p)-want) * float64(po.Float32s()[((p*T+tok)*H+h)*D+e])
					}
				}
				worst = math.Max(worst, math.Abs(float64(out.Float32s()[(tok*H+h)*D+e])-w))
			}
		}
	}
	t.Logf("max|out - fp64| %.3e, bound %.3e", worst, bound)
	if worst > bound {
		t.Fatalf("max|out - fp64| %g > %g", worst, bound)
	}
}

// TestAttentionCombineRefusals: the library's statuses with their messages, the output untouched.
func TestAttentionCombineRefusals(t *testing.T) {
	ctx := cpuContext(t, ContextOptions{LogLevel: LogOff})
	defer ctx.Close()
	po, _ := NewHostTensor(F32, 3, 4, 1, 8)
	pl, _ := NewHostTensor(F32, 2, 4, 1) // 2 LSE parts for 3 partial outputs
	out, _ := NewHostTensor(F32, 4, 1, 8)
	for i := range out.Float32s() {
		out.Float32s()[i] = float32(math.NaN())
	}
	var fe *Error
	err := ctx.AttentionCombine(&CombineArgs{PartialOut: po, PartialLSE: pl, Out: out})
	t.Log(err)
	if !errors.As(err, &fe) || fe.Status != StatusBadShape || !strings.Contains(fe.Message, "parts") ||
		!strings.HasPrefix(fe.Call, "fp8attn_attention_combine") {
		t.Fatalf("mismatched parts: %v", err)
	}
	big, _ := NewHostTensor(F32, int64(MaxCombineParts+1), 4, 1, 8)
	bigL, _ := NewHostTensor(F32, int64(MaxCombineParts+1), 4, 1)
	if err := ctx.AttentionCombine(&CombineArgs{PartialOut: big, PartialLSE: bigL, Out: out}); !errors.As(err, &fe) ||
		fe.Status != StatusBadShape {
		t.Fatalf("257 parts: %v", err)
	}
	pl3, _ := NewHostTensor(F32, 3, 4, 1)
	alias, _ := po.View(0, []int64{4, 1, 8}, []int64{8, 8, 1}) // out inside partial_out
	if err := ctx.AttentionCombine(&CombineArgs{PartialOut: po, PartialLSE: pl3, Out: alias}); !errors.As(err, &fe) ||
		fe.Status != StatusBadStride {
		t.Fatalf("out aliasing partial_out: %v", err)
	}
	for _, x := range out.Float32s() {
		if !math.IsNaN(float64(x)) {
			t.Fatal("a refused call wrote its output")
		}
	}
}
