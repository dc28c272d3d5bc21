package fp8attn

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// The forward's training options on the CPU backend: E4M3 output with an output scale (bit for
// bit the F32 output scaled and rounded by e4m3SatFinite), AmaxO (exactly max |O|), a scale state
// that supplies the descales and the output scale and receives the amaxes, the library's
// refusals with the output and the state untouched, and ReportAmaxDevice.

var trainShapeQ, trainShapeK = []int64{2, 70, 4, 64}, []int64{2, 90, 2, 64}

type trainInputs struct{ q, k, v *HostTensor }

func newTrainInputs(t *testing.T, r *rng) trainInputs {
	fill := func(shape []int64) *HostTensor {
		ht, err := NewHostTensor(E4M3, shape...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range ht.Bytes() {
			ht.Bytes()[i] = r.e4m3()
		}
		return ht
	}
	return trainInputs{fill(trainShapeQ), fill(trainShapeK), fill(trainShapeK)}
}

func trainPlan(t *testing.T, ctx *Context, out DType, causal bool) *Plan {
	p, err := NewPlan(ctx, NewDesc(64, 4, 2).OutputDType(out).Causal(causal).Telemetry(true))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// broadcastDescales are per-tensor descales: [batch, heads_kv] views of stride 0.
func broadcastDescales(t *testing.T, ds [3]float32) [3]Tensor {
	h, _ := NewHostTensor(F32, 3)
	var views [3]Tensor
	for i := range ds {
		h.Float32s()[i] = ds[i]
		v, err := h.View(int64(i), []int64{2, 2}, []int64{0, 0})
		if err != nil {
			t.Fatal(err)
		}
		views[i] = v
	}
	return views
}

func TestE4M3OutputAndAmaxO(t *testing.T) {
	r := newRng(t)
	ctx := cpuContext(t, ContextOptions{LogLevel: LogOff})
	defer ctx.Close()
	in := newTrainInputs(t, r)
	d := broadcastDescales(t, [3]float32{0.37, 0.81, 1.9})
	for _, c := range []struct {
		causal bool
		factor float32 // 4 saturates the largest quarter of the range to ±448
	}{{false, 1}, {true, 1}, {false, 4}} {
		p32, p8 := trainPlan(t, ctx, F32, c.causal), trainPlan(t, ctx, E4M3, c.causal)
		ref := poisoned(t, F32, trainShapeQ...)
		if _, err := p32.Forward(&ForwardArgs{Q: in.q, K: in.k, V: in.v, Out: ref, QDescale: d[0], KDescale: d[1],
			VDescale: d[2]}); err != nil {
			t.Fatal(err)
		}
		amaxRef := float32(0)
		for _, o := range ref.Float32s() {
			amaxRef = float32(math.Max(float64(amaxRef), math.Abs(float64(o))))
		}
		scale, amaxO := c.factor*448/amaxRef, float32(-1)
		out := poisoned(t, E4M3, trainShapeQ...)
		if _, err := p8.Forward(&ForwardArgs{Q: in.q, K: in.k, V: in.v, Out: out, QDescale: d[0], KDescale: d[1],
			VDescale: d[2], OutScale: &scale, AmaxO: &amaxO}); err != nil {
			t.Fatal(err)
		}
		mismatches, saturated := 0, 0
		for i, o := range out.Bytes() {
			want := e4m3SatFinite(ref.Float32s()[i] * scale)
			if math.Abs(float64(ref.Float32s()[i]*scale)) >= 464 { // would round past 448
				saturated++
			}
			if o != want {
				if mismatches++; mismatches <= 5 {
					t.Errorf("element %d: O = %g, expected E4M3 %#x, got %#x", i, ref.Float32s()[i], want, o)
				}
			}
		}
		t.Logf("causal %v out_scale %g: %d mismatches, %d saturated of %d; amax_o %g vs max|O| %g", c.causal, scale,
			mismatches, saturated, len(out.Bytes()), amaxO, amaxRef)
		if mismatches != 0 || (saturated > 0) != (c.factor > 1) || amaxO != amaxRef {
			t.Fatal("E4M3 output or amax_o wrong")
		}
		p32.Close()
		p8.Close()
	}
}

// trainState has two layers; O and the logit on the current recipe (the next scale is 448 / the
// amax just reported); layer 1 stepped once with random amaxes for Q, K, V (descales amax/448 in
// 0.5 .. 2, as the E4M3 inputs need) and O (an output scale that uses E4M3's range).
func trainState(t *testing.T, ctx *Context, r *rng) *ScaleState {
	o := ScaleStateOptions{NumLayers: 2}
	o.Recipe[KindO], o.Recipe[KindLogit] = RecipeCurrent, RecipeCurrent
	s, err := NewScaleState(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	uniform := func() float32 { return float32(r.next()>>11) / (1 << 53) }
	for _, kind := range []TensorKind{KindQ, KindK, KindV, KindO} {
		amax := 224 + 672*uniform()
		if kind == KindO {
			amax = 1 + 2*uniform()
		}
		if err := s.ReportAmax(1, kind, amax); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Step(); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestForwardWithAScaleState(t *testing.T) {
	r := newRng(t)
	ctx := cpuContext(t, ContextOptions{LogLevel: LogOff})
	defer ctx.Close()
	in, st := newTrainInputs(t, r), trainState(t, ctx, r)
	defer st.Close()
	plan := trainPlan(t, ctx, E4M3, false)
	defer plan.Close()
	var ds [3]float32
	for i, kind := range []TensorKind{KindQ, KindK, KindV} {
		_, ds[i], _ = st.Scale(1, kind)
	}
	oScale, _, _ := st.Scale(1, KindO)
	if ds[0] == 1 || ds[1] == 1 || ds[2] == 1 || oScale == 1 {
		t.Fatalf("the state's scales are still 1: %v %g", ds, oScale)
	}
	d := broadcastDescales(t, ds)
	want := poisoned(t, E4M3, trainShapeQ...)
	wantTele, err := plan.Forward(&ForwardArgs{Q: in.q, K: in.k, V: in.v, Out: want, QDescale: d[0], KDescale: d[1],
		VDescale: d[2], OutScale: &oScale})
	if err != nil {
		t.Fatal(err)
	}
	got, amaxO := poisoned(t, E4M3, trainShapeQ...), float32(-1)
	tele, err := plan.Forward(&ForwardArgs{Q: in.q, K: in.k, V: in.v, Out: got, ScaleState: st, ScaleStateLayer: 1,
		AmaxO: &amaxO})
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Bytes()) != string(want.Bytes()) || *tele != *wantTele {
		t.Fatal("the state's scales are not the descales and the output scale")
	}
	if err := st.Step(); err != nil {
		t.Fatal(err)
	}
	oAfter, _, _ := st.Scale(1, KindO)
	logitAfter, _, _ := st.Scale(1, KindLogit)
	t.Logf("amax_o %g: O scale %g -> %g; max|scaled logit| %g: logit scale -> %g", amaxO, oScale, oAfter,
		tele.MaxAbsScaledLogit, logitAfter)
	if math.Abs(float64(oAfter)/(448/float64(amaxO))-1) > 1e-6 ||
		math.Abs(float64(logitAfter)/(448/float64(tele.MaxAbsScaledLogit))-1) > 1e-6 {
		t.Fatal("the amaxes did not reach the state")
	}
	for _, kind := range []TensorKind{KindQ, KindO, KindLogit} {
		if s, inv, _ := st.Scale(0, kind); s != 1 || inv != 1 {
			t.Fatalf("layer 0 changed: kind %d scale %g", kind, s)
		}
	}
	// The logit scale is no longer 1: the forward has no place to apply it, and says so.
	blob, _ := st.MarshalBinary()
	out := poisoned(t, E4M3, trainShapeQ...)
	_, err = plan.Forward(&ForwardArgs{Q: in.q, K: in.k, V: in.v, Out: out, ScaleState: st, ScaleStateLayer: 1})
	t.Log(err)
	var fe *Error
	if !errors.As(err, &fe) || fe.Status != StatusUnsupported || !strings.Contains(fe.Message, "logit") {
		t.Fatalf("a layer with a logit scale: %v", err)
	}
	checkUntouched(t, out, st, blob)
}

func checkUntouched(t *testing.T, out *HostTensor, st *ScaleState, blob []byte) {
	t.Helper()
	for _, b := range out.Bytes() {
		if b != 0x7F {
			t.Fatal("a refused call wrote its output")
		}
	}
	if now, _ := st.MarshalBinary(); string(now) != string(blob) {
		t.Fatal("a refused call changed the state")
	}
}

func TestBadTrainingOptions(t *testing.T) {
	r := newRng(t)
	ctx := cpuContext(t, ContextOptions{LogLevel: LogOff})
	defer ctx.Close()
	in, st := newTrainInputs(t, r), trainState(t, ctx, r)
	defer st.Close()
	p8, p16 := trainPlan(t, ctx, E4M3, false), trainPlan(t, ctx, BF16, false)
	defer p8.Close()
	defer p16.Close()
	blob, _ := st.MarshalBinary()
	two := float32(2)
	d := broadcastDescales(t, [3]float32{1, 1, 1})
	for _, c := range []struct {
		name   string
		plan   *Plan
		args   ForwardArgs
		status int32
		needle string
	}{
		{"e4m3 without a scale", p8, ForwardArgs{}, StatusNullPointer, "output scale"},
		{"out_scale with BF16 output", p16, ForwardArgs{OutScale: &two}, StatusBadOption, "E4M3 output only"},
		{"layer out of range", p8, ForwardArgs{ScaleState: st, ScaleStateLayer: 2}, StatusInvalidArgument,
			"out of range"},
		{"layer without a state", p8, ForwardArgs{OutScale: &two, ScaleStateLayer: 1}, StatusInvalidArgument,
			"scale_state is NULL"},
		{"out_scale and a state", p8, ForwardArgs{OutScale: &two, ScaleState: st, ScaleStateLayer: 1},
			StatusBadOption, "both set"},
		{"descales and a state", p8, ForwardArgs{QDescale: d[0], ScaleState: st, ScaleStateLayer: 1},
			StatusBadOption, "descale"},
	} {
		a := c.args
		outType := E4M3
		if c.plan == p16 {
			outType = BF16
		}
		out, amaxO := poisoned(t, outType, trainShapeQ...), float32(-7)
		a.Q, a.K, a.V, a.Out, a.AmaxO = in.q, in.k, in.v, out, &amaxO
		_, err := c.plan.Forward(&a)
		t.Logf("%s: %v", c.name, err)
		var fe *Error
		if !errors.As(err, &fe) || fe.Status != c.status || !strings.Contains(fe.Message, c.needle) ||
			fe.Call != "fp8attn_attention_forward" {
			t.Fatalf("%s: want %s containing %q, got %v", c.name, StatusName(c.status), c.needle, err)
		}
		if outType == BF16 {
			for _, b := range out.Uint16s() {
				if b != bf16NaN {
					t.Fatalf("%s: a refused call wrote its output", c.name)
				}
			}
			if now, _ := st.MarshalBinary(); string(now) != string(blob) {
				t.Fatal("a refused call changed the state")
			}
		} else {
			checkUntouched(t, out, st, blob)
		}
		if amaxO != -7 {
			t.Fatalf("%s: a refused call wrote amax_o", c.name)
		}
	}
}

func TestReportAmaxDevice(t *testing.T) {
	r := newRng(t)
	ctx := cpuContext(t, ContextOptions{LogLevel: LogOff})
	defer ctx.Close()
	a, _ := NewScaleState(ctx, ScaleStateOptions{NumLayers: 2})
	b, _ := NewScaleState(ctx, ScaleStateOptions{NumLayers: 2})
	defer a.Close()
	defer b.Close()
	amax, _ := NewHostTensor(F32, NumTensorKinds)
	defer amax.Free()
	for i := range amax.Float32s() {
		amax.Float32s()[i] = float32(0.5 + 40*float64(r.next()>>11)/(1<<53))
	}
	amax.Float32s()[2], amax.Float32s()[5] = -1, -1 // not reported: V and dO keep their slots
	if err := a.ReportAmaxDevice(1, amax, 0); err != nil {
		t.Fatal(err)
	}
	for kind, x := range amax.Float32s() {
		if x >= 0 {
			if err := b.ReportAmax(1, TensorKind(kind), x); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, _ = a.Step(), b.Step()
	blobA, _ := a.MarshalBinary()
	blobB, _ := b.MarshalBinary()
	q, _, _ := a.Scale(1, KindQ)
	v, _, _ := a.Scale(1, KindV)
	t.Logf("Q scale %g for amax %g; V scale %g", q, amax.Float32s()[0], v)
	if string(blobA) != string(blobB) || math.Abs(float64(q)/(448/float64(amax.Float32s()[0]))-1) > 1e-6 || v != 1 {
		t.Fatal("ReportAmaxDevice did not record as ReportAmax does")
	}
	bad, _ := NewHostTensor(F32, NumTensorKinds)
	defer bad.Free()
	copy(bad.Float32s(), amax.Float32s())
	bad.Float32s()[7] = float32(math.NaN())
	short, _ := amax.View(0, []int64{7}, []int64{1})
	for _, c := range []struct {
		layer  int32
		amax   Tensor
		stream uintptr
		status int32
	}{{1, bad, 0, StatusBadScale}, {2, amax, 0, StatusInvalidArgument}, {1, amax, 0x1234, StatusBadStream},
		{1, short, 0, StatusBadShape}} {
		err := a.ReportAmaxDevice(c.layer, c.amax, c.stream)
		t.Log(err)
		var fe *Error
		if !errors.As(err, &fe) || fe.Status != c.status {
			t.Fatalf("want %s, got %v", StatusName(c.status), err)
		}
	}
	if now, _ := a.MarshalBinary(); string(now) != string(blobA) {
		t.Fatal("a refused report changed the state")
	}
}
