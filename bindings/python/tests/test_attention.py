"""fp8attn.attention and Plan.forward on numpy arrays against the FP64 reference in
reference.py. Bound (as FlashAttention-3's FP8 test): max|out − FP64| ≤ 2·max|P-rounded model −
FP64| + one BF16 rounding of the output; inputs are N(0, 1)·spread, quantized per (batch, head)."""
import ml_dtypes
import numpy as np
import pytest

import fp8attn
import reference as ref
from conftest import e4m3, poisoned


def _quantized(rng, b, s, h, d, spread=1.0):
    x = rng.standard_normal((b, s, h, d)) * spread
    descale = (np.abs(x).max(axis=(1, 3)) / 448).astype(np.float32)  # [b, h]
    x8 = e4m3(x, 1 / descale[:, None, :, None].astype(np.float64))
    return x8, descale, x8.astype(np.float64) * descale[:, None, :, None]


def _check(out, lse, out64, p_model, what):
    out = np.asarray(out, dtype=np.float64)
    err, err_model = np.max(np.abs(out - out64)), np.max(np.abs(p_model - out64))
    bound = 2 * err_model + 2.0 ** -8 * np.max(np.abs(out64)) + 1e-6
    print(f"{what}: max|out - fp64| {err:.3e}, model {err_model:.3e}, bound {bound:.3e}")
    assert np.all(np.isfinite(out)) and err <= bound, what


@pytest.mark.parametrize("causal,window,heads", [(False, None, (4, 4)), (True, None, (8, 2)), (False, (40, 8), (4, 2))])
def test_e4m3_forward_against_fp64(rng, causal, window, heads):
    hq, hkv = heads
    q8, dq, qd = _quantized(rng, 2, 150, hq, 64)
    k8, dk, kd = _quantized(rng, 2, 230, hkv, 64, spread=1.5)
    v8, dv, vd = _quantized(rng, 2, 230, hkv, 64)
    # q's descales are per kv-head group: requantize with the group's max.
    group = hq // hkv
    dq = (np.abs(qd).reshape(2, 150, hkv, group, 64).max(axis=(1, 3, 4)) / 448).astype(np.float32)
    q8 = e4m3(qd, 1 / np.repeat(dq, group, axis=1)[:, None, :, None].astype(np.float64))
    qd = q8.astype(np.float64) * np.repeat(dq, group, axis=1)[:, None, :, None]
    out, lse, tele = fp8attn.attention(q8, k8, v8, causal=causal, window=window, descales=(dq, dk, dv),
                                       return_lse=True, telemetry=True)
    assert out.dtype == ml_dtypes.bfloat16 and out.shape == (2, 150, hq, 64) and lse.shape == (2, hq, 150)
    out64, lse64 = ref.attention(qd, kd, vd, causal, window)
    model, _ = ref.attention(qd, kd, vd, causal, window, p_round="e4m3")
    _check(out, lse, out64, model, f"causal {causal} window {window} heads {heads}")
    finite = np.isfinite(lse64)
    assert np.array_equal(np.isfinite(lse), finite)
    # The LSE has no FP8 rounding; the default accumulator model moves it by at most the slack.
    slack = ref.accumulator_lse_slack(qd, kd, causal, window)
    assert np.all(np.abs(lse[finite] - lse64[finite]) <= 2e-5 * max(1, np.max(np.abs(lse64[finite]))) + slack[finite])
    assert tele["p_positive"] > 0 and 0 <= tele["p_underflow"] <= tele["p_positive"]
    assert tele["max_abs_scaled_logit"] > 0


def test_bf16_inputs_and_scalar_descales(rng):
    q = rng.standard_normal((1, 70, 2, 128))
    k = rng.standard_normal((1, 90, 2, 128))
    v = rng.standard_normal((1, 90, 2, 128))
    qb, kb, vb = (x.astype(ml_dtypes.bfloat16) for x in (q, k, v))
    out = fp8attn.attention(qb, kb, vb, descales=(0.5, 2.0, 1.0))
    qd, kd, vd = (x.astype(np.float64) for x in (qb, kb, vb))
    out64, _ = ref.attention(qd * 0.5, kd * 2.0, vd)
    model, _ = ref.attention(qd * 0.5, kd * 2.0, vd, p_round="bf16")
    _check(out, None, out64, model, "bf16 with scalar descales")


def test_packed_varlen_and_plan_reuse(rng, ctx):
    lens_q, lens_k = [1, 77, 130], [5, 200, 64]
    seqs = [(_quantized(rng, 1, sq, 4, 64), _quantized(rng, 1, sk, 2, 64), _quantized(rng, 1, sk, 2, 64))
            for sq, sk in zip(lens_q, lens_k)]
    # q's E4M3 values are used as they are (descale 1); k and v keep their per-(sequence, head) descales.
    cat = lambda i, j: np.concatenate([s[i][j][0] for s in seqs])  # noqa: E731
    q8, k8, v8 = cat(0, 0), cat(1, 0), cat(2, 0)
    dq = np.ones((3, 2), np.float32)
    dk, dv = np.concatenate([s[1][1] for s in seqs]), np.concatenate([s[2][1] for s in seqs])
    cu_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32)
    with ctx.plan(head_dim=64, num_heads_q=4, num_heads_kv=2, output_dtype="float32") as plan:
        assert plan.tile[0] > 0 and plan.tile[1] > 0
        for _ in range(2):  # the plan is reusable
            out = poisoned((q8.shape[0], 4, 64), np.float32)
            lse = poisoned((4, q8.shape[0]), np.float32)
            res = plan.forward(q8, k8, v8, out=out, lse=lse, descales=(dq, dk, dv), cu_seqlens_q=cu_q,
                               cu_seqlens_k=cu_k)
            assert res[0] is out and res[1] is lse
            for b in range(3):
                rows = slice(cu_q[b], cu_q[b + 1])
                qd = q8[rows][None].astype(np.float64)
                kd, vd = seqs[b][1][2], seqs[b][2][2]
                out64, lse64 = ref.attention(qd, kd, vd)
                model, _ = ref.attention(qd, kd, vd, p_round="e4m3")
                _check(out[rows][None], None, out64, model, f"sequence {b}")
                slack = ref.accumulator_lse_slack(qd, kd)[0]
                assert np.all(np.abs(lse[:, rows] - lse64[0]) <= 2e-5 + 2e-5 * np.abs(lse64[0]) + slack)


def test_outputs_are_written_only_inside_their_view(rng, ctx):
    q8, dq, qd = _quantized(rng, 1, 64, 2, 64)
    k8, dk, kd = _quantized(rng, 1, 64, 2, 64)
    v8, dv, vd = _quantized(rng, 1, 64, 2, 64)
    wide = poisoned((1, 64, 2, 128), np.float32)
    with ctx.plan(head_dim=64, num_heads_q=2, num_heads_kv=2, output_dtype="float32") as plan:
        plan.forward(q8, k8, v8, out=wide[..., 64:], descales=(dq, dk, dv))
    assert np.all(np.isnan(wide[..., :64])) and np.all(np.isfinite(wide[..., 64:]))
