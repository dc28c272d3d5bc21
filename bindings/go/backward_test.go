package fp8attn

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// Plan.Backward on the CPU backend against backward64. Inputs: N(0, 1) rounded to BF16. Bound:
// relative L2 error ≤ 6e-3 per gradient, the C++ suite's bound (P and dS cast to BF16 before
// their products, D from the BF16 output, BF16 gradients: measured 2e-3 .. 3e-3).

// bf16Tensor is a HostTensor of N(0, 1) BF16 values and their FP64 copy.
func bf16Tensor(t *testing.T, r *rng, shape ...int64) (*HostTensor, []float64) {
	ht, err := NewHostTensor(BF16, shape...)
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]float64, len(ht.Uint16s()))
	for i := range vals {
		ht.Uint16s()[i] = bf16(float32(r.normal()))
		vals[i] = bf16f(ht.Uint16s()[i])
	}
	return ht, vals
}

// poisoned is a HostTensor filled with NaN: an element a call does not write stays NaN.
func poisoned(t *testing.T, dtype DType, shape ...int64) *HostTensor {
	ht, err := NewHostTensor(dtype, shape...)
	if err != nil {
		t.Fatal(err)
	}
	switch dtype {
	case F32:
		for i := range ht.Float32s() {
			ht.Float32s()[i] = float32(math.NaN())
		}
	case BF16:
		for i := range ht.Uint16s() {
			ht.Uint16s()[i] = bf16NaN
		}
	default:
		for i := range ht.Bytes() {
			ht.Bytes()[i] = 0x7F
		}
	}
	return ht
}

func values(ht *HostTensor) []float64 {
	if ht.DType() == F32 {
		out := make([]float64, len(ht.Float32s()))
		for i, x := range ht.Float32s() {
			out[i] = float64(x)
		}
		return out
	}
	out := make([]float64, len(ht.Uint16s()))
	for i, x := range ht.Uint16s() {
		out[i] = bf16f(x)
	}
	return out
}

func TestBackwardAgainstFP64(t *testing.T) {
	for _, p := range []problem{
		{b: 2, sq: 100, sk: 130, hq: 2, hkv: 2, d: 64, left: -1, right: -1, scale: 0.125},
		{b: 2, sq: 120, sk: 90, hq: 4, hkv: 2, d: 64, causal: true, left: -1, right: -1, scale: 0.125},
		{b: 1, sq: 80, sk: 140, hq: 4, hkv: 1, d: 64, left: 30, right: 5, scale: 0.09},
	} {
		name := fmt.Sprintf("causal=%v,heads=%d:%d,window=%d:%d", p.causal, p.hq, p.hkv, p.left, p.right)
		t.Run(name, func(t *testing.T) { backwardCase(t, p) })
	}
}

func backwardCase(t *testing.T, p problem) {
	r := newRng(t) // seeded by the subtest's name
	ctx := cpuContext(t, ContextOptions{LogLevel: LogOff})
	defer ctx.Close()
	plan, err := NewPlan(ctx, NewDesc(int32(p.d), int32(p.hq), int32(p.hkv)).InputDType(BF16).Causal(p.causal).
		Window(int32(p.left), int32(p.right)).SoftmaxScale(float32(p.scale)))
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	qs := []int64{int64(p.b), int64(p.sq), int64(p.hq), int64(p.d)}
	ks := []int64{int64(p.b), int64(p.sk), int64(p.hkv), int64(p.d)}
	q, qv := bf16Tensor(t, r, qs...)
	k, kv := bf16Tensor(t, r, ks...)
	v, vv := bf16Tensor(t, r, ks...)
	dout, dov := bf16Tensor(t, r, qs...)
	out, lse := poisoned(t, BF16, qs...), poisoned(t, F32, int64(p.b), int64(p.hq), int64(p.sq))
	if _, err := plan.Forward(&ForwardArgs{Q: q, K: k, V: v, Out: out, LSE: lse}); err != nil {
		t.Fatal(err)
	}
	dq, dk, dv := poisoned(t, F32, qs...), poisoned(t, BF16, ks...), poisoned(t, BF16, ks...)
	if err := plan.Backward(&BackwardArgs{Q: q, K: k, V: v, Out: out, DOut: dout, LSE: lse, DQ: dq, DK: dk, DV: dv,
		Deterministic: true}); err != nil {
		t.Fatal(err)
	}
	wq, wk, wv := backward64(p, qv, kv, vv, dov)
	t.Logf("causal %v heads %d:%d window (%d, %d) scale %g", p.causal, p.hq, p.hkv, p.left, p.right, p.scale)
	checkRelL2(t, "dq", values(dq), wq, 6e-3)
	checkRelL2(t, "dk", values(dk), wk, 6e-3)
	checkRelL2(t, "dv", values(dv), wv, 6e-3)
}

// TestVarlenBackward: the packed layout with cu_seqlens, each sequence against its own FP64
// problem; deterministic on and off give the same bits on the CPU backend; a BF16 dq is the F32
// dq rounded once.
func TestVarlenBackward(t *testing.T) {
	r := newRng(t)
	ctx := cpuContext(t, ContextOptions{LogLevel: LogOff})
	defer ctx.Close()
	hq, hkv, d := 4, 2, 64
	cq, ck := []int32{0, 37, 107}, []int32{0, 50, 141}
	plan, err := NewPlan(ctx, NewDesc(int32(d), int32(hq), int32(hkv)).InputDType(BF16).Causal(true))
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	tq, tk := int64(cq[2]), int64(ck[2])
	q, qv := bf16Tensor(t, r, tq, int64(hq), int64(d))
	k, kv := bf16Tensor(t, r, tk, int64(hkv), int64(d))
	v, vv := bf16Tensor(t, r, tk, int64(hkv), int64(d))
	dout, dov := bf16Tensor(t, r, tq, int64(hq), int64(d))
	cuq, _ := NewHostTensor(I32, 3)
	cuk, _ := NewHostTensor(I32, 3)
	copy(cuq.Int32s(), cq)
	copy(cuk.Int32s(), ck)
	out, lse := poisoned(t, BF16, tq, int64(hq), int64(d)), poisoned(t, F32, int64(hq), tq)
	if _, err := plan.Forward(&ForwardArgs{Q: q, K: k, V: v, Out: out, LSE: lse, CuSeqlensQ: cuq, CuSeqlensK: cuk,
		Batch: 2, MaxSeqlenQ: 70, MaxSeqlenK: 91}); err != nil {
		t.Fatal(err)
	}
	run := func(deterministic bool, dqType DType) [3]*HostTensor {
		g := [3]*HostTensor{poisoned(t, dqType, q.Shape()...), poisoned(t, BF16, k.Shape()...),
			poisoned(t, BF16, v.Shape()...)}
		if err := plan.Backward(&BackwardArgs{Q: q, K: k, V: v, Out: out, DOut: dout, LSE: lse, DQ: g[0], DK: g[1],
			DV: g[2], CuSeqlensQ: cuq, CuSeqlensK: cuk, Batch: 2, MaxSeqlenQ: 70, MaxSeqlenK: 91,
			Deterministic: deterministic}); err != nil {
			t.Fatal(err)
		}
		return g
	}
	det, nondet, half := run(true, F32), run(false, F32), run(true, BF16)
	for i, x := range det[0].Float32s() {
		if math.Float32bits(x) != math.Float32bits(nondet[0].Float32s()[i]) || bf16(x) != half[0].Uint16s()[i] {
			t.Fatalf("dq[%d]: %g deterministic, %g not, BF16 %#x", i, x, nondet[0].Float32s()[i], half[0].Uint16s()[i])
		}
	}
	for g := 1; g < 3; g++ {
		if string(det[g].Bytes()) != string(nondet[g].Bytes()) || string(det[g].Bytes()) != string(half[g].Bytes()) {
			t.Fatalf("gradient %d differs between the runs", g)
		}
	}
	dq, dk, dv := values(det[0]), values(det[1]), values(det[2])
	for s := 0; s < 2; s++ {
		q0, q1, k0, k1 := int(cq[s])*hq*d, int(cq[s+1])*hq*d, int(ck[s])*hkv*d, int(ck[s+1])*hkv*d
		p := problem{b: 1, sq: int(cq[s+1] - cq[s]), sk: int(ck[s+1] - ck[s]), hq: hq, hkv: hkv, d: d, causal: true,
			left: -1, right: -1, scale: 1 / math.Sqrt(float64(d))}
		wq, wk, wv := backward64(p, qv[q0:q1], kv[k0:k1], vv[k0:k1], dov[q0:q1])
		t.Logf("sequence %d", s)
		checkRelL2(t, "dq", dq[q0:q1], wq, 6e-3)
		checkRelL2(t, "dk", dk[k0:k1], wk, 6e-3)
		checkRelL2(t, "dv", dv[k0:k1], wv, 6e-3)
	}
}

func TestBackwardBadInput(t *testing.T) {
	r := newRng(t)
	ctx := cpuContext(t, ContextOptions{LogLevel: LogOff})
	defer ctx.Close()
	x, _ := bf16Tensor(t, r, 1, 20, 1, 64)
	lse := poisoned(t, F32, 1, 1, 20)
	for i := range lse.Float32s() {
		lse.Float32s()[i] = 3 + float32(r.normal())
	}
	dq, dk21, dv := poisoned(t, BF16, 1, 20, 1, 64), poisoned(t, BF16, 1, 21, 1, 64), poisoned(t, BF16, 1, 20, 1, 64)
	dk := poisoned(t, BF16, 1, 20, 1, 64)
	args := func(dk *HostTensor) *BackwardArgs {
		return &BackwardArgs{Q: x, K: x, V: x, Out: x, DOut: x, LSE: lse, DQ: dq, DK: dk, DV: dv}
	}
	fp8, _ := NewPlan(ctx, NewDesc(64, 1, 1))
	defer fp8.Close()
	var fe *Error
	err := fp8.Backward(args(dk))
	t.Log(err)
	// The binding's workspace query refuses first, with the same status and message.
	if !errors.As(err, &fe) || fe.Status != StatusUnsupportedDtype || !strings.Contains(fe.Message, "BF16") ||
		(fe.Call != "fp8attn_attention_backward" && fe.Call != "fp8attn_plan_backward_workspace_size") {
		t.Fatalf("an FP8 plan's backward: %v", err)
	}
	plan, _ := NewPlan(ctx, NewDesc(64, 1, 1).InputDType(BF16))
	defer plan.Close()
	err = plan.Backward(args(dk21))
	t.Log(err)
	if !errors.As(err, &fe) || fe.Status != StatusBadShape || !strings.Contains(fe.Message, "dk") ||
		fe.Call != "fp8attn_attention_backward" {
		t.Fatalf("dk of 21 rows: %v", err)
	}
	if err := plan.Backward(&BackwardArgs{Q: x, K: x, V: x, Out: x, DOut: x, DQ: dq, DK: dk, DV: dv}); !errors.As(err,
		&fe) || fe.Status != StatusInvalidArgument {
		t.Fatalf("no lse: %v", err)
	}
	for _, g := range []*HostTensor{dq, dk, dk21, dv} {
		for _, b := range g.Uint16s() {
			if b != bf16NaN {
				t.Fatal("a refused call wrote a gradient")
			}
		}
	}
}
