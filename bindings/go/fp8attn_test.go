package fp8attn

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

type rng struct{ s uint64 }

func newRng(t *testing.T) *rng {
	seed := uint64(20261123)
	if v, err := strconv.ParseUint(os.Getenv("FP8ATTN_TEST_SEED"), 10, 64); err == nil {
		seed = v
	}
	for _, c := range t.Name() {
		seed += uint64(c)
	}
	t.Logf("seed %d", seed)
	return &rng{seed}
}

func (r *rng) next() uint64 { // splitmix64
	r.s += 0x9E3779B97F4A7C15
	z := r.s
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// e4m3 is a random finite E4M3 byte with |x| ≤ 3.75 (exponent field 0..8).
func (r *rng) e4m3() byte {
	v := r.next()
	return byte((v>>16)&1)<<7 | byte(v%9)<<3 | byte((v>>8)&7)
}

func decodeE4M3(b byte) float64 {
	sign := 1.0
	if b&0x80 != 0 {
		sign = -1
	}
	exp, man := int(b>>3)&15, float64(b&7)
	if exp == 0 {
		return sign * man / 8 * math.Pow(2, -6)
	}
	return sign * (1 + man/8) * math.Pow(2, float64(exp-7))
}

func cpuContext(t *testing.T, o ContextOptions) *Context {
	o.Backend, o.NumThreads = BackendCPU, 2
	ctx, err := NewContext(o)
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

// layoutProbeSource is the probe's C source in this checkout, "" when the package is outside it.
func layoutProbeSource() string {
	source, err := filepath.Abs(filepath.Join("..", "layout_probe", "fp8attn_layout_probe.c"))
	if err != nil {
		return ""
	}
	if _, err := os.Stat(source); err != nil {
		return ""
	}
	return source
}

// layoutProbeHowTo says how to run the layout test by hand: the probe compiled against the
// installed header, then named.
func layoutProbeHowTo() string {
	source := layoutProbeSource()
	if source == "" {
		source = "<fp8attn source>/bindings/layout_probe/fp8attn_layout_probe.c"
	}
	return "to run it: cc -std=c99 -I<prefix>/include " + source + " -o /tmp/fp8attn_layout_probe && " +
		"FP8ATTN_LAYOUT_PROBE=/tmp/fp8attn_layout_probe go test ./..."
}

// layoutProbe is FP8ATTN_LAYOUT_PROBE, or ../layout_probe/fp8attn_layout_probe.c compiled with cc
// (or $CC) against the header pkg-config finds for fp8attn (the package's own #cgo pkg-config).
// It returns why not when the probe cannot be built here; a compiler that runs and fails is fatal.
func layoutProbe(t *testing.T) (string, string) {
	if probe := os.Getenv("FP8ATTN_LAYOUT_PROBE"); probe != "" {
		return probe, ""
	}
	source := layoutProbeSource()
	if source == "" {
		return "", "no probe source next to the package (../layout_probe/fp8attn_layout_probe.c)"
	}
	pkgConfig := os.Getenv("PKG_CONFIG")
	if pkgConfig == "" {
		pkgConfig = "pkg-config"
	}
	cflags, err := exec.Command(pkgConfig, "--cflags", "fp8attn").Output()
	if err != nil {
		return "", pkgConfig + " --cflags fp8attn: " + err.Error()
	}
	cc := strings.Fields(os.Getenv("CC"))
	if len(cc) == 0 {
		cc = []string{"cc"}
	}
	if _, err := exec.LookPath(cc[0]); err != nil {
		return "", "no C compiler (" + err.Error() + ")"
	}
	probe := filepath.Join(t.TempDir(), "fp8attn_layout_probe")
	args := append(append(cc[1:], "-std=c99"), strings.Fields(string(cflags))...)
	args = append(args, source, "-o", probe)
	if out, err := exec.Command(cc[0], args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc[0], strings.Join(args, " "), err, out)
	}
	return probe, ""
}

func TestLayoutMatchesTheCProbe(t *testing.T) {
	probe, why := layoutProbe(t)
	if why != "" {
		if os.Getenv("FP8ATTN_LAYOUT_REQUIRED") == "1" {
			t.Fatal("the layout probe: " + why)
		}
		t.Skip("the layout probe: " + why + "; " + layoutProbeHowTo())
	}
	out, err := exec.Command(probe).Output()
	if err != nil {
		t.Fatal(err)
	}
	goLayout := cLayout()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, line := range lines {
		f := strings.Fields(line)
		want, _ := strconv.ParseUint(f[2], 10, 64)
		got, ok := goLayout[f[0]+" "+f[1]]
		if !ok || uint64(got) != want {
			t.Errorf("%s.%s: Go %d (present %v), C %d", f[0], f[1], got, ok, want)
		}
	}
	if len(lines) != len(goLayout) {
		t.Errorf("the probe prints %d entries, the Go table has %d", len(lines), len(goLayout))
	}
	t.Logf("%d sizes and offsets checked", len(lines))
}

// attention64 is exact attention over [b, s, h, d] row-major data with per-tensor descales.
func attention64(q, k, v []float64, b, sq, sk, hq, hkv, d int, causal bool, ds [3]float64) []float64 {
	out := make([]float64, b*sq*hq*d)
	scale := ds[0] * ds[1] / math.Sqrt(float64(d))
	for bi := 0; bi < b; bi++ {
		for h := 0; h < hq; h++ {
			g := h / (hq / hkv)
			for i := 0; i < sq; i++ {
				logits := make([]float64, sk)
				m := math.Inf(-1)
				for j := 0; j < sk; j++ {
					logits[j] = math.Inf(-1)
					if causal && j+sq > i+sk {
						continue
					}
					s := 0.0
					for c := 0; c < d; c++ {
						s += q[((bi*sq+i)*hq+h)*d+c] * k[((bi*sk+j)*hkv+g)*d+c]
					}
					logits[j] = s * scale
					m = math.Max(m, logits[j])
				}
				if math.IsInf(m, -1) {
					continue
				}
				sum := 0.0
				for j := range logits {
					logits[j] = math.Exp(logits[j] - m)
					sum += logits[j]
				}
				for j, p := range logits {
					for c := 0; c < d; c++ {
						out[((bi*sq+i)*hq+h)*d+c] += p / sum * v[((bi*sk+j)*hkv+g)*d+c] * ds[2]
					}
				}
			}
		}
	}
	return out
}

// TestForwardAgainstFP64: random finite E4M3 inputs (|x| ≤ 3.75), per-tensor descales. The P cast
// (3 mantissa bits) bounds |out − FP64| by (2^-4 + s_k·2^-18)·max|V·descale_v|.
func TestForwardAgainstFP64(t *testing.T) {
	r := newRng(t)
	b, sq, sk, hq, hkv, d := 2, 90, 150, 4, 2, 64
	ctx := cpuContext(t, ContextOptions{})
	defer ctx.Close()
	plan, err := NewPlan(ctx, NewDesc(int32(d), int32(hq), int32(hkv)).Causal(true).OutputDType(F32).Telemetry(true))
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	fill := func(shape ...int64) (*HostTensor, []float64) {
		ht, err := NewHostTensor(E4M3, shape...)
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]float64, len(ht.Bytes()))
		for i := range ht.Bytes() {
			ht.Bytes()[i] = r.e4m3()
			vals[i] = decodeE4M3(ht.Bytes()[i])
		}
		return ht, vals
	}
	q, qv := fill(int64(b), int64(sq), int64(hq), int64(d))
	k, kv := fill(int64(b), int64(sk), int64(hkv), int64(d))
	v, vv := fill(int64(b), int64(sk), int64(hkv), int64(d))
	out, _ := NewHostTensor(F32, int64(b), int64(sq), int64(hq), int64(d))
	for i := range out.Float32s() {
		out.Float32s()[i] = float32(math.NaN())
	}
	ds := [3]float64{0.5, 0.25, 2}
	descale, _ := NewHostTensor(F32, 3)
	views := make([]Tensor, 3)
	for i := range ds {
		descale.Float32s()[i] = float32(ds[i])
		views[i], err = descale.View(int64(i), []int64{int64(b), int64(hkv)}, []int64{0, 0})
		if err != nil {
			t.Fatal(err)
		}
	}
	tele, err := plan.Forward(&ForwardArgs{Q: q, K: k, V: v, Out: out, QDescale: views[0], KDescale: views[1],
		VDescale: views[2]})
	if err != nil {
		t.Fatal(err)
	}
	want := attention64(qv, kv, vv, b, sq, sk, hq, hkv, d, true, ds)
	vmax := 0.0
	for _, x := range vv {
		vmax = math.Max(vmax, math.Abs(x)*ds[2])
	}
	bound, worst := vmax*(1.0/16+float64(sk)/262144), 0.0
	for i, o := range out.Float32s() {
		if math.IsNaN(float64(o)) {
			t.Fatalf("element %d unwritten", i)
		}
		worst = math.Max(worst, math.Abs(float64(o)-want[i]))
	}
	t.Logf("max|out - fp64| = %.3e, bound %.3e, telemetry %+v", worst, bound, *tele)
	if worst > bound || tele.PPositive == 0 {
		t.Fatalf("error %g over bound %g (or no telemetry)", worst, bound)
	}
	for _, ht := range []*HostTensor{q, k, v, out, descale} {
		ht.Free()
	}
}

func TestBadInputsGiveTheirStatus(t *testing.T) {
	ctx := cpuContext(t, ContextOptions{LogLevel: LogOff})
	defer ctx.Close()
	var fe *Error
	if _, err := NewPlan(ctx, NewDesc(96, 1, 1)); !errors.As(err, &fe) || fe.Status != StatusUnsupportedHeadDim ||
		fe.Name != "FP8ATTN_STATUS_UNSUPPORTED_HEAD_DIM" || !strings.Contains(fe.Message, "head_dim") {
		t.Fatalf("head_dim 96: %v", err)
	}
	if _, err := NewPlan(ctx, NewDesc(64, 3, 2)); !errors.As(err, &fe) || fe.Status != StatusBadHeads {
		t.Fatalf("heads 3:2: %v", err)
	}
	plan, _ := NewPlan(ctx, NewDesc(64, 1, 1).OutputDType(F32))
	defer plan.Close()
	q, _ := NewHostTensor(E4M3, 1, 16, 1, 64)
	v, _ := NewHostTensor(E4M3, 1, 17, 1, 64) // k is q: seqlen 16, v 17
	out, _ := NewHostTensor(F32, 1, 16, 1, 64)
	for i := range out.Float32s() {
		out.Float32s()[i] = float32(math.NaN())
	}
	_, err := plan.Forward(&ForwardArgs{Q: q, K: q, V: v, Out: out})
	t.Log(err)
	if !errors.As(err, &fe) || fe.Status != StatusBadShape || fe.Call != "fp8attn_attention_forward" {
		t.Fatalf("v's seqlen: %v", err)
	}
	for _, x := range out.Float32s() {
		if !math.IsNaN(float64(x)) {
			t.Fatal("a failed call wrote its output")
		}
	}
	nan, _ := NewHostTensor(F32, 1)
	nan.Float32s()[0] = float32(math.NaN())
	view, _ := nan.View(0, []int64{1, 1}, []int64{0, 0})
	if _, err := plan.Forward(&ForwardArgs{Q: q, K: q, V: q, Out: out, KDescale: view}); !errors.As(err, &fe) ||
		fe.Status != StatusBadScale {
		t.Fatalf("NaN descale: %v", err)
	}
	if _, err := q.View(0, []int64{1, 16, 1, 65}, []int64{1024, 64, 64, 1}); !errors.As(err, &fe) ||
		fe.Status != StatusBadShape {
		t.Fatalf("a view past its allocation: %v", err)
	}
	if err := ctx.Close(); err == nil {
		t.Fatal("Close succeeded with a plan open")
	}
}

// TestGoPointerIsRefusedBeforeCgo: Go heap memory (a slice, a new(T)) handed to WrapHost is refused
// with ErrGoPointer before any cgo call; C memory from NewHostTensor is accepted.
func TestGoPointerIsRefusedBeforeCgo(t *testing.T) {
	slice := make([]float32, 64)
	array := new([64]float32)
	for _, p := range []unsafe.Pointer{unsafe.Pointer(&slice[0]), unsafe.Pointer(&array[0])} {
		_, err := WrapHost(p, 256, F32, []int64{64}, []int64{1})
		if !errors.Is(err, ErrGoPointer) {
			t.Fatalf("Go memory accepted: %v", err)
		}
		t.Log(err)
	}
	c, _ := NewHostTensor(F32, 64)
	defer c.Free()
	if _, err := WrapHost(unsafe.Pointer(&c.Float32s()[0]), 256, F32, []int64{64}, []int64{1}); err != nil {
		t.Fatalf("C memory refused: %v", err)
	}
}

func TestLogCallbackPanicIsRecovered(t *testing.T) {
	t.Setenv("FP8ATTN_CUDA_BACKEND", "/nonexistent/libfp8attn_cuda.so")
	var got []string
	ctx, err := NewContext(ContextOptions{Backend: BackendAuto, LogLevel: LogTrace, Log: func(l LogLevel, m string) {
		got = append(got, m)
		panic("a log callback that panics")
	}})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := ctx.Backend(); b != BackendCPU {
		t.Fatalf("auto without a GPU gave backend %d", b)
	}
	if _, err := NewPlan(ctx, NewDesc(100, 1, 1)); err == nil {
		t.Fatal("head_dim 100 accepted")
	}
	t.Logf("%d messages, %d panics recovered; first: %q", len(got), ctx.LogPanics(), got[0])
	if len(got) == 0 || ctx.LogPanics() != int64(len(got)) {
		t.Fatal("the callback was not called, or its panics were not all recovered")
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestScaleStateRoundTrip(t *testing.T) {
	ctx := cpuContext(t, ContextOptions{})
	defer ctx.Close()
	r := newRng(t)
	s, err := NewScaleState(ctx, ScaleStateOptions{NumLayers: 2, AmaxHistoryLen: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for step := 0; step < 3; step++ {
		for layer := int32(0); layer < 2; layer++ {
			for _, kind := range []TensorKind{KindQ, KindK, KindV} {
				if err := s.ReportAmax(layer, kind, float32(r.next()%1000)/10+0.5); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := s.Step(); err != nil {
			t.Fatal(err)
		}
	}
	blob, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	c, _ := NewScaleState(ctx, ScaleStateOptions{})
	defer c.Close()
	if err := c.UnmarshalBinary(blob); err != nil {
		t.Fatal(err)
	}
	again, _ := c.MarshalBinary()
	if string(again) != string(blob) {
		t.Fatal("the blob changed in a round trip")
	}
	sq, _, _ := s.Scale(1, KindQ)
	cq, _, _ := c.Scale(1, KindQ)
	if sq != cq || sq == 1 {
		t.Fatalf("scales %g vs %g", sq, cq)
	}
	broken := append([]byte(nil), blob...)
	broken[len(broken)/2] ^= 0x40
	var fe *Error
	if err := c.UnmarshalBinary(broken); !errors.As(err, &fe) || fe.Status != StatusChecksumMismatch {
		t.Fatalf("corrupted blob: %v", err)
	}
	if err := c.UnmarshalBinary(blob[:len(blob)-9]); !errors.As(err, &fe) || fe.Status != StatusTruncatedBlob {
		t.Fatalf("truncated blob: %v", err)
	}
}
