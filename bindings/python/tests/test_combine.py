"""attention_combine against an FP64 merge in numpy, split-KV forwards merged against the FP64
attention over all keys, empty parts, BF16, and the library's refusals (outputs untouched).
Inputs: O_p ~ N(0,1), lse_p ~ N(0, 9), i.i.d.; bound on out (F32):
(P + 16)·2^-23·max|O| (P sequential FP32 additions plus a few ulp in each weight)."""
import ml_dtypes
import numpy as np
import pytest

import fp8attn
from conftest import poisoned
from reference import attention as reference_attention


def _fp64_merge(po, pl):
    po, pl = po.astype(np.float64), pl.astype(np.float64)
    m = pl.max(axis=0)
    finite = np.isfinite(m)
    ms = np.where(finite, m, 0.0)
    w = np.exp(pl - ms)  # −inf parts give 0
    s = w.sum(axis=0)
    lse = np.where(finite, ms + np.log(np.where(finite, s, 1.0)), -np.inf)
    weights = np.where(finite, w / np.where(finite, s, 1.0), 0.0)
    out = np.einsum("pth,pthe->the", weights, np.where(np.isfinite(pl)[..., None], po, 0.0))
    return out, lse


@pytest.mark.parametrize("parts", [1, 3, 256])
def test_combine_matches_fp64_merge(ctx, rng, parts):
    po = rng.standard_normal((parts, 19, 3, 40)).astype(np.float32)
    pl = (3 * rng.standard_normal((parts, 19, 3))).astype(np.float32)
    out, lse = poisoned((19, 3, 40), np.float32), poisoned((19, 3), np.float32)
    got, got_lse = fp8attn.attention_combine(po, pl, out=out, lse=lse, context=ctx)
    assert got is out and got_lse is lse
    want, want_lse = _fp64_merge(po, pl)
    bound = (parts + 16) * 2.0**-23 * np.abs(po).max()
    err = np.abs(out - want).max()
    print(f"{parts} parts: max|out - fp64| {err:.3e}, bound {bound:.3e}")
    assert err <= bound
    assert np.abs(lse - want_lse).max() <= 2.0**-21 * (np.abs(want_lse).max() + 8)


def test_combine_bf16_transposed_lse_and_empty_rows(ctx, rng):
    po = rng.standard_normal((4, 12, 2, 64)).astype(ml_dtypes.bfloat16)
    # The forwards' LSEs are [heads, tokens]: stacked [parts, heads, tokens], passed transposed.
    pl_ht = (2 * rng.standard_normal((4, 2, 12))).astype(np.float32)
    pl_ht[rng.random(pl_ht.shape) < 0.3] = -np.inf
    pl_ht[:, 1, 5] = -np.inf  # token 5, head 1: every part empty
    pl = pl_ht.transpose(0, 2, 1)
    po_f = po.astype(np.float32)
    po_f[np.isneginf(pl)] = np.nan  # an empty part's O is not read
    po = po_f.astype(ml_dtypes.bfloat16)
    out, lse = fp8attn.attention_combine(po, pl, return_lse=True, context=ctx)
    assert out.dtype == ml_dtypes.bfloat16 and out.shape == (12, 2, 64) and lse.shape == (12, 2)
    assert np.all(out[5, 1].astype(np.float32) == 0) and lse[5, 1] == -np.inf
    want, want_lse = _fp64_merge(po.astype(np.float32), pl)
    got = out.astype(np.float32)
    assert np.all(np.isfinite(got))
    assert np.all(np.abs(got - want) <= 2.0**-8 * np.abs(want) + 19 * 2.0**-23 * 4)
    f32 = fp8attn.attention_combine(po, pl, out_dtype="float32", context=ctx)
    assert f32.dtype == np.float32 and np.abs(f32 - want).max() <= 20 * 2.0**-23 * np.nanmax(np.abs(po_f))


def test_split_kv_forwards_combine_to_the_full_attention(ctx, rng):
    q, k, v = (rng.standard_normal((1, n, 2, 64)).astype(ml_dtypes.bfloat16) for n in (96, 200, 200))
    cuts = [0, 50, 51, 200]
    outs, lses = [], []
    for a, b in zip(cuts, cuts[1:]):
        o, l = fp8attn.attention(q, k[:, a:b], v[:, a:b], return_lse=True, out_dtype="float32")
        outs.append(o[0])
        lses.append(l[0])  # [heads, tokens]
    out, lse = fp8attn.attention_combine(np.stack(outs), np.stack(lses).transpose(0, 2, 1), return_lse=True,
                                         context=ctx)
    f64 = [x.astype(np.float64) for x in (q, k, v)]
    want, want_lse = reference_attention(*f64)
    bf16_p, _ = reference_attention(*f64, p_round="bf16")
    bound = 2 * np.abs(bf16_p - want).max() + 1e-3
    err = np.abs(out - want[0]).max()
    print(f"split-KV: max|combined - fp64| {err:.3e}, bound {bound:.3e}")
    assert err <= bound
    assert np.abs(lse - want_lse[0].T).max() <= 1e-4 * max(1.0, np.abs(want_lse).max())


def test_combine_refusals_leave_outputs_untouched(ctx, rng):
    po = rng.standard_normal((3, 4, 2, 8)).astype(np.float32)
    pl = rng.standard_normal((3, 4, 2)).astype(np.float32)
    out = poisoned((4, 2, 8), np.float32)
    before = out.copy()
    with pytest.raises(fp8attn.Error) as e:
        fp8attn.attention_combine(po, pl[:2], out=out, context=ctx)
    assert e.value.name == "FP8ATTN_STATUS_BAD_SHAPE" and "parts" in e.value.message
    with pytest.raises(fp8attn.Error) as e:
        fp8attn.attention_combine(np.zeros((257, 1, 1, 1), np.float32), np.zeros((257, 1, 1), np.float32),
                                  context=ctx)
    assert e.value.name == "FP8ATTN_STATUS_BAD_SHAPE"
    with pytest.raises(fp8attn.Error) as e:
        fp8attn.attention_combine(po, pl.astype(ml_dtypes.bfloat16), out=out, context=ctx)
    assert e.value.name == "FP8ATTN_STATUS_BAD_DTYPE"
    with pytest.raises(fp8attn.Error) as e:
        fp8attn.attention_combine(po, pl, out=po[0], context=ctx)  # out aliases partial_out
    assert e.value.name == "FP8ATTN_STATUS_BAD_STRIDE"
    assert np.array_equal(out.view(np.uint32), before.view(np.uint32))
