package fp8attn

import (
	"errors"
	"math"
	"testing"
)

// TestDecodeNumSplits: the decode path over a paged cache; one split gives the plain forward's
// bits, three splits stay within 2·(plain forward's error against the FP64 reference) + 1e-3,
// and 257 splits are refused with BAD_OPTION.
func TestDecodeNumSplits(t *testing.T) {
	r := newRng(t)
	b, sq, sk, hq, hkv, d, page := 2, 4, 700, 8, 2, 64, 16
	ctx := cpuContext(t, ContextOptions{LogLevel: LogOff})
	defer ctx.Close()
	ref, err := NewContext(ContextOptions{Backend: BackendReference, LogLevel: LogOff, NumThreads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	f := newPagedFixture(t, r, b, sk, hkv, d, page)
	q, _ := NewHostTensor(E4M3, int64(b), int64(sq), int64(hq), int64(d))
	for i := range q.Bytes() {
		q.Bytes()[i] = r.e4m3()
	}
	run := func(c *Context, desc *Desc) []float32 {
		plan, err := NewPlan(c, desc.Causal(true).OutputDType(F32).PageSize(int32(page)))
		if err != nil {
			t.Fatal(err)
		}
		defer plan.Close()
		out, _ := NewHostTensor(F32, int64(b), int64(sq), int64(hq), int64(d))
		for i := range out.Float32s() {
			out.Float32s()[i] = float32(math.NaN())
		}
		if _, err := plan.Forward(&ForwardArgs{Q: q, K: f.kCache, V: f.vCache, Out: out,
			Paged: &PagedKV{BlockTable: f.tableView, SequsedK: f.seqused, MaxSeqlenK: int64(sk)}}); err != nil {
			t.Fatal(err)
		}
		return out.Float32s()
	}
	maxDiff := func(a, b []float32) float64 {
		m := 0.0
		for i := range a {
			m = math.Max(m, math.Abs(float64(a[i])-float64(b[i])))
		}
		return m
	}
	plain := run(ctx, NewDesc(int32(d), int32(hq), int32(hkv)))
	oracle := run(ref, NewDesc(int32(d), int32(hq), int32(hkv)))
	bound := 2*maxDiff(plain, oracle) + 1e-3
	one := run(ctx, NewDesc(int32(d), int32(hq), int32(hkv)).Decode(true).NumSplits(1))
	for i := range one {
		if math.Float32bits(one[i]) != math.Float32bits(plain[i]) {
			t.Fatalf("one split, element %d: %g, plain forward %g", i, one[i], plain[i])
		}
	}
	three := run(ctx, NewDesc(int32(d), int32(hq), int32(hkv)).Decode(true).NumSplits(3))
	if e := maxDiff(three, oracle); e > bound {
		t.Fatalf("three splits: max|out - fp64| %g above %g", e, bound)
	}
	var fe *Error
	_, err = NewPlan(ctx, NewDesc(int32(d), int32(hq), int32(hkv)).Decode(true).NumSplits(257))
	if !errors.As(err, &fe) || fe.Status != StatusBadOption {
		t.Fatalf("num_splits 257: %v", err)
	}
}
