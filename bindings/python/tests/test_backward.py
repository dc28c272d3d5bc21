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


def test_varlen_backward_matches_each_sequence_alone(rng, ctx):
    """Packed [total, heads, dim] with cu_seqlens, causal GQA: each sequence's gradients against
    the FP64 reference of that sequence alone (the packed layout must not mix sequences)."""
    bf = ml_dtypes.bfloat16
    lens_q, lens_k = [37, 70], [50, 91]
    cu_q, cu_k = (np.concatenate([[0], np.cumsum(n)]).astype(np.int32) for n in (lens_q, lens_k))
    q, dout = (rng.standard_normal((cu_q[-1], 4, 64)).astype(bf) for _ in range(2))
    k, v = (rng.standard_normal((cu_k[-1], 2, 64)).astype(bf) for _ in range(2))
    with fp8attn.Plan(ctx, input_dtype="bfloat16", output_dtype="bfloat16", head_dim=64, num_heads_q=4,
                      num_heads_kv=2, causal=True) as plan:
        out, lse = plan.forward(q, k, v, return_lse=True, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k)
        dq, dk, dv = plan.backward(q, k, v, out, dout, lse, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
                                   dq=poisoned(q.shape, bf), dk=poisoned(k.shape, bf), dv=poisoned(v.shape, bf))
    for i in range(2):
        sq, sk = slice(cu_q[i], cu_q[i + 1]), slice(cu_k[i], cu_k[i + 1])
        want = ref.attention_backward(*(x[s][None].astype(np.float64) for x, s in ((q, sq), (k, sk), (v, sk),
                                                                                  (dout, sq))), True, None)
        for name, got, w in zip(("dq", "dk", "dv"), (dq[sq], dk[sk], dv[sk]), want):
            err = _rel_l2(got[None], w)
            print(f"sequence {i}: {name} rel L2 error {err:.2e} (bound 6e-3)")
            assert err <= 6e-3, (i, name)


def test_deterministic_modes_and_dq_dtypes(rng, ctx):
    """deterministic=True and False give the same bits on the CPU backend (it is deterministic in
    both); the default dq is bfloat16 and equals the float32 dq rounded once."""
    bf = ml_dtypes.bfloat16
    q, dout = (rng.standard_normal((1, 90, 2, 128)).astype(bf) for _ in range(2))
    k, v = (rng.standard_normal((1, 140, 1, 128)).astype(bf) for _ in range(2))
    with fp8attn.Plan(ctx, input_dtype="bfloat16", output_dtype="float32", head_dim=128, num_heads_q=2,
                      num_heads_kv=1, window_left=40, window_right=3, softmax_scale=0.07) as plan:
        out, lse = plan.forward(q, k, v, return_lse=True)
        runs = [plan.backward(q, k, v, out, dout.astype(np.float32), lse, deterministic=d, dq_dtype=t)
                for d, t in ((True, "float32"), (False, "float32"), (True, "bfloat16"))]
    (dq32, dk, dv), again, (dq16, dk16, dv16) = runs
    assert dq32.dtype == np.float32 and dq16.dtype == bf
    for a, b in zip(runs[0], again):
        assert np.array_equal(a, b)
    assert np.array_equal(dk, dk16) and np.array_equal(dv, dv16)
    assert np.array_equal(dq32.astype(bf), dq16)
    assert np.all(np.isfinite(dq32)) and np.abs(dq32).max() > 0


def test_backward_refuses_a_gradient_of_the_wrong_shape(rng, ctx):
    bf = ml_dtypes.bfloat16
    q = rng.standard_normal((1, 20, 1, 64)).astype(bf)
    with fp8attn.Plan(ctx, input_dtype="bfloat16", head_dim=64) as plan:
        out, lse = plan.forward(q, q, q, return_lse=True)
        dq, dk, dv = poisoned(q.shape, bf), poisoned((1, 21, 1, 64), bf), poisoned(q.shape, bf)
        with pytest.raises(fp8attn.InvalidArgumentError) as e:
            plan.backward(q, q, q, out, out, lse, dq=dq, dk=dk, dv=dv)
        print(e.value)
        assert e.value.name == "FP8ATTN_STATUS_BAD_SHAPE" and "dk" in e.value.message
        assert e.value.call == "fp8attn_attention_backward"
        for x in (dq, dk, dv):
            assert np.all(np.isnan(x.astype(np.float32)))
