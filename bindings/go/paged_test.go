package fp8attn

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// pagedFixture scatters padded K and V [b, sk, hkv, d] (random E4M3) into shuffled pages of
// `page` tokens; unused slots hold NaN codes and the block table's row stride exceeds its row.
type pagedFixture struct {
	k, v, kCache, vCache, table, tableView, seqused *HostTensor
	numPages                                        int
}

func newPagedFixture(t *testing.T, r *rng, b, sk, hkv, d, page int) *pagedFixture {
	pages := (sk + page - 1) / page
	f := &pagedFixture{numPages: b*pages + 1}
	var err error
	alloc := func(dt DType, shape ...int64) *HostTensor {
		ht, e := NewHostTensor(dt, shape...)
		if e != nil {
			t.Fatal(e)
		}
		return ht
	}
	f.k, f.v = alloc(E4M3, int64(b), int64(sk), int64(hkv), int64(d)), alloc(E4M3, int64(b), int64(sk), int64(hkv), int64(d))
	for i := range f.k.Bytes() {
		f.k.Bytes()[i], f.v.Bytes()[i] = r.e4m3(), r.e4m3()
	}
	f.kCache = alloc(E4M3, int64(f.numPages), int64(page), int64(hkv), int64(d))
	f.vCache = alloc(E4M3, int64(f.numPages), int64(page), int64(hkv), int64(d))
	for i := range f.kCache.Bytes() {
		f.kCache.Bytes()[i], f.vCache.Bytes()[i] = 0x7F, 0x7F
	}
	perm := make([]int32, f.numPages)
	for i := range perm {
		perm[i] = int32(i)
	}
	for i := len(perm) - 1; i > 0; i-- {
		j := int(r.next() % uint64(i+1))
		perm[i], perm[j] = perm[j], perm[i]
	}
	f.table = alloc(I32, int64(b), int64(pages+2))
	for i := range f.table.Int32s() {
		f.table.Int32s()[i] = -1
	}
	row := hkv * d
	for s := 0; s < b; s++ {
		for p := 0; p < pages; p++ {
			f.table.Int32s()[s*(pages+2)+p] = perm[s*pages+p]
		}
		for j := 0; j < sk; j++ {
			slot := int(f.table.Int32s()[s*(pages+2)+j/page])*page + j%page
			copy(f.kCache.Bytes()[slot*row:(slot+1)*row], f.k.Bytes()[(s*sk+j)*row:(s*sk+j+1)*row])
			copy(f.vCache.Bytes()[slot*row:(slot+1)*row], f.v.Bytes()[(s*sk+j)*row:(s*sk+j+1)*row])
		}
	}
	if f.tableView, err = f.table.View(0, []int64{int64(b), int64(pages)}, []int64{int64(pages + 2), 1}); err != nil {
		t.Fatal(err)
	}
	f.seqused = alloc(I32, int64(b))
	for s := range f.seqused.Int32s() {
		f.seqused.Int32s()[s] = int32(sk)
	}
	return f
}

func TestPagedForwardEqualsContiguous(t *testing.T) {
	r := newRng(t)
	b, sq, sk, hq, hkv, d, page := 2, 9, 45, 4, 2, 64, 16
	ctx := cpuContext(t, ContextOptions{LogLevel: LogOff})
	defer ctx.Close()
	desc := NewDesc(int32(d), int32(hq), int32(hkv)).Causal(true).OutputDType(F32)
	contiguous, err := NewPlan(ctx, desc)
	if err != nil {
		t.Fatal(err)
	}
	defer contiguous.Close()
	paged, err := NewPlan(ctx, NewDesc(int32(d), int32(hq), int32(hkv)).Causal(true).OutputDType(F32).PageSize(int32(page)))
	if err != nil {
		t.Fatal(err)
	}
	defer paged.Close()
	f := newPagedFixture(t, r, b, sk, hkv, d, page)
	q, _ := NewHostTensor(E4M3, int64(b), int64(sq), int64(hq), int64(d))
	for i := range q.Bytes() {
		q.Bytes()[i] = r.e4m3()
	}
	out, _ := NewHostTensor(F32, int64(b), int64(sq), int64(hq), int64(d))
	want, _ := NewHostTensor(F32, int64(b), int64(sq), int64(hq), int64(d))
	for i := range out.Float32s() {
		out.Float32s()[i], want.Float32s()[i] = float32(math.NaN()), float32(math.NaN())
	}
	if _, err := paged.Forward(&ForwardArgs{Q: q, K: f.kCache, V: f.vCache, Out: out,
		Paged: &PagedKV{BlockTable: f.tableView, SequsedK: f.seqused, MaxSeqlenK: int64(sk)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := contiguous.Forward(&ForwardArgs{Q: q, K: f.k, V: f.v, Out: want}); err != nil {
		t.Fatal(err)
	}
	for i, o := range out.Float32s() {
		if math.IsNaN(float64(o)) || math.Float32bits(o) != math.Float32bits(want.Float32s()[i]) {
			t.Fatalf("element %d: paged %g, contiguous %g", i, o, want.Float32s()[i])
		}
	}
	t.Logf("%d outputs bit-equal", len(out.Float32s()))
}

func TestPagedBadInputsGiveTheirStatus(t *testing.T) {
	r := newRng(t)
	b, sq, sk, hq, hkv, d, page := 2, 9, 45, 4, 2, 64, 16
	ctx := cpuContext(t, ContextOptions{LogLevel: LogOff})
	defer ctx.Close()
	plan, err := NewPlan(ctx, NewDesc(int32(d), int32(hq), int32(hkv)).OutputDType(F32).PageSize(int32(page)))
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	f := newPagedFixture(t, r, b, sk, hkv, d, page)
	q, _ := NewHostTensor(E4M3, int64(b), int64(sq), int64(hq), int64(d))
	out, _ := NewHostTensor(F32, int64(b), int64(sq), int64(hq), int64(d))
	for i := range out.Float32s() {
		out.Float32s()[i] = float32(math.NaN())
	}
	var fe *Error
	f.table.Int32s()[(3+2)+1] = int32(f.numPages) // sequence 1's second page
	_, err = plan.Forward(&ForwardArgs{Q: q, K: f.kCache, V: f.vCache, Out: out,
		Paged: &PagedKV{BlockTable: f.tableView, SequsedK: f.seqused, MaxSeqlenK: int64(sk)}})
	if !errors.As(err, &fe) || fe.Status != StatusInvalidArgument || !strings.Contains(fe.Message, "block_table[1, 1]") {
		t.Fatalf("a block-table entry past the pool: %v", err)
	}
	f.table.Int32s()[(3+2)+1] = 0
	_, err = plan.Forward(&ForwardArgs{Q: q, K: f.kCache, V: f.vCache, Out: out,
		Paged: &PagedKV{BlockTable: f.tableView, SequsedK: f.seqused, MaxSeqlenK: int64(sk - 1)}})
	if !errors.As(err, &fe) || fe.Status != StatusBadSeqlens {
		t.Fatalf("seqused_k above max_seqlen_k: %v", err)
	}
	_, err = plan.Forward(&ForwardArgs{Q: q, K: f.kCache, V: f.vCache, Out: out})
	if !errors.As(err, &fe) || fe.Name != "FP8ATTN_STATUS_BAD_EXTENSION" {
		t.Fatalf("a paged plan without the cache: %v", err)
	}
	for _, x := range out.Float32s() {
		if !math.IsNaN(float64(x)) {
			t.Fatal("a failed call wrote its output")
		}
	}
}
