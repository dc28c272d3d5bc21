"""Plan.backward (fp8attn_attention_backward) on numpy arrays against the FP64 gradients of
reference.py. Bound: relative L2 error ≤ 6e-3 per gradient, the C++ suite's bound (BF16 casts of
P and dS, D from the BF16 out, BF16 gradients: measured 2e-3 .. 3e-3)."""
import ml_dtypes
import numpy as np
import pytest

import fp8attn
import reference as ref
from conftest import poisoned


def _rel_l2(got, want):
    got = np.asarray(got, dtype=np.float64)
    return np.linalg.norm(got - want) / np.linalg.norm(want)


@pytest.mark.parametrize("causal,window,heads", [(False, None, (2, 2)), (True, None, (4, 2)), (False, (30, 5), (4, 1))])
def test_bf16_backward_against_fp64(rng, ctx, causal, window, heads):
    hq, hkv = heads
    bf = ml_dtypes.bfloat16
    q, dout = (rng.standard_normal((2, 120, hq, 64)).astype(bf) for _ in range(2))
    k, v = (rng.standard_normal((2, 150, hkv, 64)).astype(bf) for _ in range(2))
    left, right = window if window else (-1, -1)
    with fp8attn.Plan(ctx, input_dtype="bfloat16", output_dtype="bfloat16", head_dim=64, num_heads_q=hq,
                      num_heads_kv=hkv, causal=causal, window_left=left, window_right=right) as plan:
        out, lse = plan.forward(q, k, v, return_lse=True)
        dq = poisoned(q.shape, np.float32)
        dq, dk, dv = plan.backward(q, k, v, out, dout, lse, dq=dq)
    want = ref.attention_backward(*(x.astype(np.float64) for x in (q, k, v, dout)), causal, window)
    for name, got, w in zip(("dq", "dk", "dv"), (dq, dk, dv), want):
        err = _rel_l2(got, w)
        print(f"causal {causal} window {window} heads {heads}: {name} rel L2 error {err:.2e} (bound 6e-3)")
        assert np.all(np.isfinite(np.asarray(got, dtype=np.float64))) and err <= 6e-3, name
    assert dk.dtype == bf and dv.dtype == bf and dq.dtype == np.float32


def test_backward_refuses_an_fp8_plan_and_leaves_outputs(rng, ctx):
    q = rng.standard_normal((1, 16, 1, 64)).astype(ml_dtypes.float8_e4m3fn)
    lse = np.zeros((1, 1, 16), np.float32)
    dq = poisoned(q.shape, ml_dtypes.bfloat16)
    with fp8attn.Plan(ctx, input_dtype="float8_e4m3fn", head_dim=64) as plan:
        with pytest.raises(fp8attn.Error) as e:
            plan.backward(q, q, q, q.astype(ml_dtypes.bfloat16), q.astype(ml_dtypes.bfloat16), lse, dq=dq)
    assert e.value.name == "FP8ATTN_STATUS_UNSUPPORTED_DTYPE" and "BF16" in e.value.message
    assert np.all(np.isnan(dq.astype(np.float32)))
