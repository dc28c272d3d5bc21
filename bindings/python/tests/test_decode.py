"""fp8attn.attention(decode=True, num_splits=n): the decode path (at most 8 queries per sequence)
on the CPU backend. One split gives the plain forward's bits; other counts stay within twice the
plain forward's own error against the FP64 reference backend plus 1e-3 (N(0, 1) E4M3 inputs)."""
import numpy as np
import pytest

import fp8attn
from conftest import e4m3


def _inputs(rng, q_len, seqlen_k, hq, hkv):
    q = e4m3(rng.standard_normal((2, q_len, hq, 64)), 1.0)
    k = e4m3(rng.standard_normal((2, seqlen_k, hkv, 64)), 1.0)
    v = e4m3(rng.standard_normal((2, seqlen_k, hkv, 64)), 1.0)
    return q, k, v


@pytest.mark.parametrize("q_len,heads", [(1, (8, 1)), (4, (8, 2)), (8, (4, 4))])
def test_decode_num_splits_against_forward_and_fp64(rng, q_len, heads):
    q, k, v = _inputs(rng, q_len, 900, *heads)
    plain = np.asarray(fp8attn.attention(q, k, v, causal=True, out_dtype="float32"))
    fp64 = np.asarray(fp8attn.attention(q, k, v, causal=True, out_dtype="float32", backend="reference"))
    bound = 2 * np.max(np.abs(plain - fp64)) + 1e-3
    one = np.asarray(fp8attn.attention(q, k, v, causal=True, out_dtype="float32", decode=True, num_splits=1))
    assert np.array_equal(one.view(np.uint32), plain.view(np.uint32))
    for n in (2, 3, 7, 0):
        out = np.asarray(fp8attn.attention(q, k, v, causal=True, out_dtype="float32", decode=True, num_splits=n))
        err = np.max(np.abs(out - fp64))
        print(f"num_splits {n}: max|out - fp64| {err:.3e}, bound {bound:.3e}")
        assert np.all(np.isfinite(out)) and err <= bound


def test_decode_bad_options_raise_by_status(rng):
    q, k, v = _inputs(rng, 9, 50, 2, 1)
    with pytest.raises(fp8attn.Error) as e:
        fp8attn.attention(q[:, :1], k, v, decode=True, num_splits=257)
    assert e.value.name == "FP8ATTN_STATUS_BAD_OPTION"
    with pytest.raises(fp8attn.Error) as e:
        fp8attn.attention(q, k, v, decode=True)
    assert e.value.name == "FP8ATTN_STATUS_BAD_SHAPE"
