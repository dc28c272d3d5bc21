//! The forward's training options on the CPU backend: E4M3 output with an output scale (bit for
//! bit the F32 output scaled and rounded by an encoder written here), amax_o (exactly max |O|), a
//! scale state that supplies the descales and the output scale and receives the amaxes, the
//! library's refusals with the output and the state untouched, and report_amax_device.
mod common;
use common::{e4m3_satfinite, seed, Rng};
use fp8attn::*;

const B: i64 = 2;
const SQ: i64 = 70;
const SK: i64 = 90;
const HQ: i64 = 4;
const HKV: i64 = 2;
const D: i64 = 64;
const QS: [i64; 4] = [B, SQ, HQ, D];
const KS: [i64; 4] = [B, SK, HKV, D];

fn cpu() -> Context {
    Context::with_options(ContextOptions { backend: Backend::Cpu, num_threads: 2, log_level: LogLevel::Off,
                                           ..Default::default() }).unwrap()
}

struct Inputs {
    q: Vec<E4m3>,
    k: Vec<E4m3>,
    v: Vec<E4m3>,
}

fn inputs(test: &str) -> Inputs {
    let mut rng = Rng(seed(test));
    Inputs { q: rng.e4m3_vec((B * SQ * HQ * D) as usize), k: rng.e4m3_vec((B * SK * HKV * D) as usize),
             v: rng.e4m3_vec((B * SK * HKV * D) as usize) }
}

fn plan(ctx: &Context, out: DType, causal: bool) -> Plan {
    Plan::new(ctx, &AttentionDesc::new(D as i32, HQ as i32, HKV as i32).output_dtype(out).causal(causal)
        .telemetry(true)).unwrap()
}

fn args<'a>(x: &'a Inputs, out: TensorMut<'a>) -> ForwardArgs<'a> {
    ForwardArgs::new(TensorRef::new(&x.q, &QS).unwrap(), TensorRef::new(&x.k, &KS).unwrap(),
                     TensorRef::new(&x.v, &KS).unwrap(), out)
}

/// Per-tensor descales as [batch, heads_kv] views of stride 0 over one value each.
fn descales(d: &[f32; 3]) -> [Option<TensorRef<'_>>; 3] {
    let t = |i: usize| Some(TensorRef::strided(&d[i..i + 1], &[B, HKV], &[0, 0]).unwrap());
    [t(0), t(1), t(2)]
}

fn e4m3_out() -> Vec<E4m3> {
    vec![E4m3(0x7F); (B * SQ * HQ * D) as usize] // poisoned: E4M3 NaN
}

#[test]
fn e4m3_output_is_the_scaled_f32_output_rounded_and_amax_o_is_max_abs_o() {
    let ctx = cpu();
    let x = inputs("e4m3 output");
    let ds = [0.37f32, 0.81, 1.9];
    for (causal, factor) in [(false, 1.0f32), (true, 1.0), (false, 4.0)] {
        let mut reference = vec![f32::NAN; (B * SQ * HQ * D) as usize];
        let [dq, dk, dv] = descales(&ds);
        plan(&ctx, DType::F32, causal)
            .forward(&mut args(&x, TensorMut::new(&mut reference, &QS).unwrap()).descales(dq, dk, dv)).unwrap();
        let amax_ref = reference.iter().fold(0f32, |m, o| m.max(o.abs()));
        // factor 4 saturates the largest quarter of the range to ±448
        let out_scale = factor * 448.0 / amax_ref;
        let (mut out, mut amax_o) = (e4m3_out(), -1.0f32);
        let [dq, dk, dv] = descales(&ds);
        plan(&ctx, DType::E4m3, causal)
            .forward(&mut args(&x, TensorMut::new(&mut out, &QS).unwrap()).descales(dq, dk, dv).out_scale(out_scale)
                .amax_o(&mut amax_o)).unwrap();
        let (mut mismatches, mut saturated) = (0, 0);
        for (i, (&o, &r)) in out.iter().zip(&reference).enumerate() {
            let want = e4m3_satfinite(r * out_scale);
            saturated += ((r * out_scale).abs() >= 464.0) as usize; // would round past 448
            if o != want {
                mismatches += 1;
                if mismatches <= 5 {
                    println!("element {i}: O = {r}, expected E4M3 {:#04x}, got {:#04x}", want.0, o.0);
                }
            }
        }
        println!("causal {causal} out_scale {out_scale}: {mismatches} mismatches, {saturated} saturated of {}; \
                  amax_o {amax_o} vs max|O| {amax_ref}", out.len());
        assert_eq!(mismatches, 0);
        assert_eq!(saturated > 0, factor > 1.0);
        assert_eq!(amax_o, amax_ref);
    }
}

/// Two layers; O and the logit on the current recipe (the next scale is 448 / the amax just
/// reported); layer 1 stepped once with random amaxes for Q, K, V (descales amax/448 in 0.5 .. 2,
/// as the E4M3 inputs need) and O (an output scale that uses E4M3's range).
fn state(ctx: &Context, rng: &mut Rng) -> ScaleState {
    let mut opts = ScaleStateOptions { num_layers: 2, ..Default::default() };
    opts.recipe[TensorKind::O as usize] = Recipe::Current;
    opts.recipe[TensorKind::Logit as usize] = Recipe::Current;
    let s = ScaleState::new(ctx, &opts).unwrap();
    for kind in [TensorKind::Q, TensorKind::K, TensorKind::V] {
        s.report_amax(1, kind, (224.0 + 672.0 * rng.uniform()) as f32).unwrap();
    }
    s.report_amax(1, TensorKind::O, (1.0 + 2.0 * rng.uniform()) as f32).unwrap();
    s.step().unwrap();
    s
}

#[test]
fn a_forward_with_a_scale_state_reads_its_scales_and_reports_its_amaxes() {
    let ctx = cpu();
    let x = inputs("scale state forward");
    let mut rng = Rng(seed("scale state"));
    let st = state(&ctx, &mut rng);
    let p = plan(&ctx, DType::E4m3, false);
    let inv = |k| st.scale(1, k).unwrap().1;
    let ds = [inv(TensorKind::Q), inv(TensorKind::K), inv(TensorKind::V)];
    let o_scale = st.scale(1, TensorKind::O).unwrap().0;
    assert!(ds.iter().all(|&d| d != 1.0) && o_scale != 1.0);
    let mut want = e4m3_out();
    let [dq, dk, dv] = descales(&ds);
    let want_tele = p.forward(&mut args(&x, TensorMut::new(&mut want, &QS).unwrap()).descales(dq, dk, dv)
        .out_scale(o_scale)).unwrap().unwrap();
    let (mut got, mut amax_o) = (e4m3_out(), -1.0f32);
    let tele = p.forward(&mut args(&x, TensorMut::new(&mut got, &QS).unwrap()).scale_state(&st, 1)
        .amax_o(&mut amax_o)).unwrap().unwrap();
    assert!(got == want, "the state's scales are not the descales and the output scale");
    assert_eq!(tele.max_abs_scaled_logit, want_tele.max_abs_scaled_logit);
    st.step().unwrap();
    let (o_after, logit_after) = (st.scale(1, TensorKind::O).unwrap().0, st.scale(1, TensorKind::Logit).unwrap().0);
    println!("amax_o {amax_o}: O scale {o_scale} -> {o_after}; max|scaled logit| {}: logit scale -> {logit_after}",
             tele.max_abs_scaled_logit);
    assert!((o_after / (448.0 / amax_o) - 1.0).abs() <= 1e-6, "O's amax did not reach the state");
    assert!((logit_after / (448.0 / tele.max_abs_scaled_logit) - 1.0).abs() <= 1e-6, "the logit amax did not");
    for kind in [TensorKind::Q, TensorKind::O, TensorKind::Logit] {
        assert_eq!(st.scale(0, kind).unwrap(), (1.0, 1.0), "layer 0 changed");
    }
    // The logit scale is no longer 1: the forward has no place to apply it, and says so.
    let (blob, mut out) = (st.to_bytes().unwrap(), e4m3_out());
    let e = p.forward(&mut args(&x, TensorMut::new(&mut out, &QS).unwrap()).scale_state(&st, 1)).err().unwrap();
    println!("{e}");
    assert_eq!(e.status(), sys::FP8ATTN_STATUS_UNSUPPORTED);
    assert!(e.message().contains("logit"), "{e}");
    assert!(out.iter().all(|&o| o == E4m3(0x7F)) && st.to_bytes().unwrap() == blob);
}

#[test]
fn bad_training_options_are_refused_with_the_library_status() {
    let ctx = cpu();
    let x = inputs("training refusals");
    let mut rng = Rng(seed("training refusals state"));
    let st = state(&ctx, &mut rng);
    let (p8, p16) = (plan(&ctx, DType::E4m3, false), plan(&ctx, DType::Bf16, false));
    let blob = st.to_bytes().unwrap();
    let one = [1.0f32];
    let d = TensorRef::strided(&one, &[B, HKV], &[0, 0]).unwrap();
    // A layer without a state cannot be expressed: the safe API pairs the layer with its state.
    type Case = (&'static str, i32, &'static str);
    let cases: [Case; 4] = [("e4m3 without a scale", sys::FP8ATTN_STATUS_NULL_POINTER, "output scale"),
                            ("layer out of range", sys::FP8ATTN_STATUS_INVALID_ARGUMENT, "out of range"),
                            ("out_scale and a state", sys::FP8ATTN_STATUS_BAD_OPTION, "both set"),
                            ("descales and a state", sys::FP8ATTN_STATUS_BAD_OPTION, "descale")];
    for (name, status, needle) in cases {
        let mut out = e4m3_out();
        let a = args(&x, TensorMut::new(&mut out, &QS).unwrap());
        let mut a = match name {
            "e4m3 without a scale" => a,
            "layer out of range" => a.scale_state(&st, 2),
            "out_scale and a state" => a.out_scale(2.0).scale_state(&st, 1),
            _ => a.descales(Some(d), None, None).scale_state(&st, 1),
        };
        check(name, p8.forward(&mut a).err().unwrap(), status, needle);
        drop(a);
        assert!(out.iter().all(|&o| o == E4m3(0x7F)), "{name}: a refused call wrote its output");
    }
    let mut out16 = vec![common::BF16_NAN; (B * SQ * HQ * D) as usize];
    let e = p16.forward(&mut args(&x, TensorMut::new(&mut out16, &QS).unwrap()).out_scale(2.0)).err().unwrap();
    check("out_scale with BF16 output", e, sys::FP8ATTN_STATUS_BAD_OPTION, "E4M3 output only");
    assert!(out16.iter().all(|o| o.to_f32().is_nan()));
    assert_eq!(st.to_bytes().unwrap(), blob, "a refused call changed the state");
}

fn check(name: &str, e: Error, status: i32, needle: &str) {
    println!("{name}: {e}");
    assert_eq!(e.status(), status, "{name}: {e}");
    assert!(e.message().contains(needle), "{name}: {e}");
}

#[test]
fn report_amax_device_records_like_report_amax() {
    let ctx = cpu();
    let mut rng = Rng(seed("report_amax_device"));
    let mut amax = [0f32; 8];
    for a in amax.iter_mut() {
        *a = (0.5 + 40.0 * rng.uniform()) as f32;
    }
    amax[2] = -1.0; // not reported: V keeps its slot
    amax[5] = -1.0;
    let opts = ScaleStateOptions { num_layers: 2, ..Default::default() };
    let (a, b) = (ScaleState::new(&ctx, &opts).unwrap(), ScaleState::new(&ctx, &opts).unwrap());
    a.report_amax_device(1, &amax).unwrap();
    let kinds = [TensorKind::Q, TensorKind::K, TensorKind::V, TensorKind::O, TensorKind::P, TensorKind::DO,
                 TensorKind::DP, TensorKind::Logit];
    for (kind, &x) in kinds.iter().zip(&amax) {
        if x >= 0.0 {
            b.report_amax(1, *kind, x).unwrap();
        }
    }
    a.step().unwrap();
    b.step().unwrap();
    assert_eq!(a.to_bytes().unwrap(), b.to_bytes().unwrap());
    let q = a.scale(1, TensorKind::Q).unwrap().0;
    assert!((q / (448.0 / amax[0]) - 1.0).abs() <= 1e-6, "Q scale {q} for amax {}", amax[0]);
    assert_eq!(a.scale(1, TensorKind::V).unwrap(), (1.0, 1.0));
    let blob = a.to_bytes().unwrap();
    let mut bad = amax;
    bad[7] = f32::NAN;
    check("NaN amax", a.report_amax_device(1, &bad).err().unwrap(), sys::FP8ATTN_STATUS_BAD_SCALE, "");
    check("layer 2", a.report_amax_device(2, &amax).err().unwrap(), sys::FP8ATTN_STATUS_INVALID_ARGUMENT, "layer");
    // SAFETY: host memory on a CPU context; the library refuses the stream before reading.
    let e = unsafe { a.report_amax_device_raw(1, amax.as_ptr(), 0x1234 as sys::cuda_stream) }.err().unwrap();
    check("a stream on the CPU", e, sys::FP8ATTN_STATUS_BAD_STREAM, "stream");
    assert_eq!(a.to_bytes().unwrap(), blob, "a refused report changed the state");
}
