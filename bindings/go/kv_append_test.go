package fp8attn

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// kvProblem: K and V F32 [7, 2, 32] of N(0, σ) values, into an E4M3 cache of 3 pages of 4 slots,
// the slots a shuffled subset with token 2 padding; caches poisoned with NaN bits (0x7F).
func kvProblem(t *testing.T, r *rng) (k, v, kc, vc, slots *HostTensor) {
	t.Helper()
	var err error
	k, _ = NewHostTensor(F32, 7, 2, 32)
	v, _ = NewHostTensor(F32, 7, 2, 32)
	for i := range k.Float32s() {
		k.Float32s()[i] = float32(r.normal() * 3)
		v.Float32s()[i] = float32(r.normal() * 0.1)
	}
	if kc, err = NewHostTensor(E4M3, 3, 4, 2, 32); err != nil {
		t.Fatal(err)
	}
	vc, _ = NewHostTensor(E4M3, 3, 4, 2, 32)
	for i := range kc.Bytes() {
		kc.Bytes()[i], vc.Bytes()[i] = 0x7F, 0x7F
	}
	slots, _ = NewHostTensor(I64, 7)
	all := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	for i := len(all) - 1; i > 0; i-- {
		j := int(r.next() % uint64(i+1))
		all[i], all[j] = all[j], all[i]
	}
	copy(slots.Int64s(), all[:7])
	slots.Int64s()[2] = -1
	return
}

// e4m3Value decodes E4M3 bits (no NaN expected).
func e4m3Value(b byte) float64 {
	exp, man := int(b>>3&15), float64(b&7)
	x := math.Ldexp(1+man/8, exp-7)
	if exp == 0 {
		x = math.Ldexp(man/8, -6)
	}
	if b&0x80 != 0 {
		return -x
	}
	return x
}

// TestKvAppendPerTokenHead: each row's descale is 1/(448/amax) in FP32, its largest code ±448,
// every element within half an E4M3 step of the input, and untouched slots keep their poison.
func TestKvAppendPerTokenHead(t *testing.T) {
	ctx, err := NewContext(ContextOptions{Backend: BackendCPU, NumThreads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	k, v, kc, vc, slots := kvProblem(t, newRng(t))
	kd, _ := NewHostTensor(F32, 3, 4, 2)
	vd, _ := NewHostTensor(F32, 3, 4, 2)
	for i := range kd.Float32s() {
		kd.Float32s()[i], vd.Float32s()[i] = float32(math.NaN()), float32(math.NaN())
	}
	err = ctx.KvAppend(&KvAppendArgs{K: k, V: v, KCache: kc, VCache: vc, SlotMapping: slots,
		ScaleGranularity: KVScalePerTokenHead, KDescale: kd, VDescale: vd})
	if err != nil {
		t.Fatal(err)
	}
	written := map[int64]bool{}
	for _, side := range []struct{ in, cache, descale *HostTensor }{{k, kc, kd}, {v, vc, vd}} {
		for tok, slot := range slots.Int64s() {
			if slot < 0 {
				continue
			}
			written[slot] = true
			for h := 0; h < 2; h++ {
				row := side.in.Float32s()[(tok*2+h)*32 : (tok*2+h+1)*32]
				amax := float32(0)
				for _, x := range row {
					amax = float32(math.Max(float64(amax), math.Abs(float64(x))))
				}
				d := side.descale.Float32s()[int(slot)*2+h]
				if want := float32(1) / (float32(448) / amax); d != want {
					t.Fatalf("token %d head %d: descale %g, want %g", tok, h, d, want)
				}
				codes := side.cache.Bytes()[(int(slot)*2+h)*32 : (int(slot)*2+h+1)*32]
				peak := 0.0
				for e, c := range codes {
					q := e4m3Value(c)
					peak = math.Max(peak, math.Abs(q))
					halfStep := math.Max(math.Abs(q)/16, 1.0/1024) * float64(d)
					if math.Abs(q*float64(d)-float64(row[e])) > halfStep*1.0001 {
						t.Fatalf("token %d head %d element %d: %g·%g vs %g", tok, h, e, q, d, row[e])
					}
				}
				if peak != 448 {
					t.Fatalf("token %d head %d: largest code %g, want 448", tok, h, peak)
				}
			}
		}
		for slot := 0; slot < 12; slot++ {
			if written[int64(slot)] {
				continue
			}
			for _, c := range side.cache.Bytes()[slot*64 : (slot+1)*64] {
				if c != 0x7F {
					t.Fatalf("slot %d written", slot)
				}
			}
			if !math.IsNaN(float64(side.descale.Float32s()[slot*2])) {
				t.Fatalf("slot %d descale written", slot)
			}
		}
	}
}

// TestKvAppendRefusesASlotPastTheCache: FP8ATTN_STATUS_INVALID_ARGUMENT naming the slot, and the
// caches left as they were.
func TestKvAppendRefusesASlotPastTheCache(t *testing.T) {
	ctx, err := NewContext(ContextOptions{Backend: BackendCPU, NumThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	k, v, kc, vc, slots := kvProblem(t, newRng(t))
	slots.Int64s()[0] = 12
	err = ctx.KvAppend(&KvAppendArgs{K: k, V: v, KCache: kc, VCache: vc, SlotMapping: slots, Rotate: true, Seed: 9})
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusInvalidArgument || !strings.Contains(e.Message, "slot_mapping[0]") {
		t.Fatalf("got %v, want FP8ATTN_STATUS_INVALID_ARGUMENT about slot_mapping[0]", err)
	}
	for i := range kc.Bytes() {
		if kc.Bytes()[i] != 0x7F || vc.Bytes()[i] != 0x7F {
			t.Fatalf("byte %d of a cache written", i)
		}
	}
}
