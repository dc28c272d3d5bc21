"""The forward's training options (CPU backend): E4M3 output with an output scale, amax_o, and a
scale state that supplies the descales and the output scale and receives the amaxes; the
refusals of bad combinations, with the library's status and message and the output untouched;
ScaleState.report_amax_device."""
import ml_dtypes
import numpy as np
import pytest

import fp8attn
from conftest import e4m3, poisoned

E4M3 = ml_dtypes.float8_e4m3fn


def _inputs(rng, b=2, sq=70, sk=90, hq=4, hkv=2, d=64):
    q = e4m3(rng.standard_normal((b, sq, hq, d)), 1.0)
    k = e4m3(rng.standard_normal((b, sk, hkv, d)), 1.0)
    v = e4m3(rng.standard_normal((b, sk, hkv, d)), 1.0)
    return q, k, v


def _plan(ctx, out_dtype, causal=False, telemetry=False):
    return fp8attn.Plan(ctx, input_dtype="float8_e4m3fn", output_dtype=out_dtype, head_dim=64, num_heads_q=4,
                        num_heads_kv=2, causal=causal, telemetry=telemetry)


def _bits(x):
    return np.asarray(x).view(np.uint8)


@pytest.mark.parametrize("causal,factor", [(False, 1.0), (True, 1.0), (False, 4.0)])
def test_e4m3_output_is_the_scaled_f32_output_rounded(rng, ctx, causal, factor):
    q, k, v = _inputs(rng)
    descales = tuple(float(x) for x in rng.uniform(0.3, 2.0, 3))
    with _plan(ctx, "float32", causal) as p32, _plan(ctx, "float8_e4m3fn", causal) as p8:
        ref = p32.forward(q, k, v, descales=descales, out=poisoned(q.shape, np.float32))
        amax_ref = float(np.max(np.abs(ref)))
        # factor 4 saturates the largest quarter of the range to ±448
        out_scale = np.float32(factor * 448.0 / amax_ref)
        out8 = poisoned(q.shape, E4M3)
        got, amax_o = p8.forward(q, k, v, descales=descales, out=out8, out_scale=float(out_scale),
                                 return_amax_o=True)
    want = e4m3(ref, out_scale)
    mismatches = int(np.count_nonzero(_bits(got) != _bits(want)))
    saturated = int(np.count_nonzero(np.abs(ref * out_scale) >= 464))  # would round past 448
    print(f"out_scale {out_scale:.4g}: {mismatches} mismatches, {saturated} saturated of {want.size}; "
          f"amax_o {amax_o} vs max|O| {amax_ref}")
    assert got is out8 and mismatches == 0
    assert (saturated > 0) == (factor > 1)
    assert amax_o == amax_ref


def test_attention_function_takes_the_training_options(rng):
    q, k, v = _inputs(rng, b=1, sq=40, sk=50)
    ref, amax = fp8attn.attention(q, k, v, out_dtype="float32", return_amax_o=True)
    out = fp8attn.attention(q, k, v, out_dtype="float8_e4m3fn", out_scale=300.0 / amax)
    assert out.dtype == E4M3 and np.array_equal(_bits(out), _bits(e4m3(ref, np.float32(300.0 / amax))))


def _state(ctx, rng):
    """Two layers; O and the logit on the current recipe (the next scale is 448 / the amax just
    reported), Q, K, V delayed; layer 1 has stepped once with random amaxes for Q, K, V (descales
    1/scale = amax/448 in 0.5 .. 2, as the E4M3 inputs need) and O (an output scale that uses
    E4M3's range)."""
    state = fp8attn.ScaleState(2, recipe={"o": "current", "logit": "current"}, context=ctx)
    for kind in ("q", "k", "v"):
        state.report_amax(1, kind, float(rng.uniform(224.0, 896.0)))
    state.report_amax(1, "o", float(rng.uniform(1.0, 3.0)))
    state.step()
    return state


def test_forward_with_a_scale_state_reads_its_scales_and_reports_its_amaxes(rng, ctx):
    q, k, v = _inputs(rng)
    with _state(ctx, rng) as state, _plan(ctx, "float8_e4m3fn", telemetry=True) as plan:
        descales = tuple(state.get_scale(1, kind)[1] for kind in ("q", "k", "v"))
        o_scale = state.get_scale(1, "o")[0]
        assert all(d != 1.0 for d in descales) and o_scale != 1.0
        before = state.to_bytes()
        want, want_tele = plan.forward(q, k, v, descales=descales, out_scale=o_scale)
        assert state.to_bytes() == before  # a call without the state leaves it alone
        got, tele, amax_o = plan.forward(q, k, v, out=poisoned(q.shape, E4M3), scale_state=state,
                                         scale_state_layer=1, return_amax_o=True)
        assert np.array_equal(_bits(got), _bits(want)), "the state's scales are not the descales and out scale"
        assert tele == want_tele
        layer0 = [state.get_scale(0, kind) for kind in fp8attn._abi.TENSOR_KINDS]
        state.step()
        o_after, logit_after = state.get_scale(1, "o")[0], state.get_scale(1, "logit")[0]
        print(f"amax_o {amax_o}: O scale {o_scale} -> {o_after}; max|scaled logit| "
              f"{tele['max_abs_scaled_logit']}: logit scale -> {logit_after}")
        assert o_after == pytest.approx(448.0 / amax_o, rel=1e-6)
        assert logit_after == pytest.approx(448.0 / tele["max_abs_scaled_logit"], rel=1e-6)
        assert [state.get_scale(0, kind) for kind in fp8attn._abi.TENSOR_KINDS] == layer0 == [(1.0, 1.0)] * 8
        # The logit scale is no longer 1: the forward has no place to apply it, and says so.
        before, out = state.to_bytes(), poisoned(q.shape, E4M3)
        with pytest.raises(fp8attn.UnsupportedError) as e:
            plan.forward(q, k, v, out=out, scale_state=state, scale_state_layer=1)
        print(e.value)
        assert e.value.name == "FP8ATTN_STATUS_UNSUPPORTED" and "logit" in e.value.message
        assert np.all(np.isnan(out.astype(np.float32))) and state.to_bytes() == before


@pytest.mark.parametrize("case", ["scale_with_bf16", "e4m3_without_scale", "layer_out_of_range",
                                  "layer_without_state", "scale_and_state", "descales_and_state"])
def test_bad_training_options_are_refused_with_the_library_status(rng, ctx, case):
    q, k, v = _inputs(rng, b=1, sq=33, sk=65)
    out_dtype = "bfloat16" if case == "scale_with_bf16" else "float8_e4m3fn"
    kwargs, status, needle = {
        "scale_with_bf16": ({"out_scale": 2.0}, "FP8ATTN_STATUS_BAD_OPTION", "E4M3 output only"),
        "e4m3_without_scale": ({}, "FP8ATTN_STATUS_NULL_POINTER", "output scale"),
        "layer_out_of_range": ({"scale_state_layer": 2}, "FP8ATTN_STATUS_INVALID_ARGUMENT", "out of range"),
        "layer_without_state": ({"scale_state_layer": 1, "out_scale": 2.0}, "FP8ATTN_STATUS_INVALID_ARGUMENT",
                                "scale_state is NULL"),
        "scale_and_state": ({"out_scale": 2.0, "scale_state_layer": 1}, "FP8ATTN_STATUS_BAD_OPTION", "both set"),
        "descales_and_state": ({"descales": (0.5, None, None), "scale_state_layer": 1}, "FP8ATTN_STATUS_BAD_OPTION",
                               "descale"),
    }[case]
    with _state(ctx, rng) as state, _plan(ctx, out_dtype) as plan:
        if case not in ("scale_with_bf16", "e4m3_without_scale", "layer_without_state"):
            kwargs["scale_state"] = state
        out = poisoned(q.shape, E4M3 if out_dtype != "bfloat16" else ml_dtypes.bfloat16)
        before = state.to_bytes()
        with pytest.raises(fp8attn.Error) as e:
            plan.forward(q, k, v, out=out, **kwargs)
        print(f"{case}: {e.value}")
        assert e.value.name == status and needle in e.value.message, e.value
        assert e.value.call == "fp8attn_attention_forward"
        assert np.all(np.isnan(out.astype(np.float32))) and state.to_bytes() == before


def test_report_amax_device_records_like_report_amax(rng, ctx):
    amax = rng.uniform(0.5, 40.0, 8).astype(np.float32)
    amax[[2, 5]] = -1.0  # not reported: those kinds keep their slot
    with fp8attn.ScaleState(2, context=ctx) as a, fp8attn.ScaleState(2, context=ctx) as b:
        a.report_amax_device(1, amax)
        for kind, x in enumerate(amax):
            if x >= 0:
                b.report_amax(1, kind, float(x))
        a.step()
        b.step()
        assert a.to_bytes() == b.to_bytes()
        assert a.get_scale(1, "q")[0] == pytest.approx(448.0 / amax[0], rel=1e-6)
        assert a.get_scale(1, "v") == (1.0, 1.0)
        before = a.to_bytes()
        bad = amax.copy()
        bad[7] = np.nan
        for args, status in (((1, bad), "FP8ATTN_STATUS_BAD_SCALE"), ((2, amax), "FP8ATTN_STATUS_INVALID_ARGUMENT"),
                             ((1, amax, 0x1234), "FP8ATTN_STATUS_BAD_STREAM")):
            with pytest.raises(fp8attn.InvalidArgumentError) as e:
                a.report_amax_device(*args)
            print(e.value)
            assert e.value.name == status and e.value.call == "fp8attn_scale_state_report_amax_device"
        with pytest.raises(fp8attn.InvalidArgumentError) as e:
            a.report_amax_device(1, amax[:7])
        assert e.value.name == "FP8ATTN_STATUS_BAD_SHAPE" and "binding" in e.value.call
        assert a.to_bytes() == before
