"""quantize against numpy (E4M3 rounding bound), predict_p_underflow against closed forms,
qk_spectral_norms against numpy's SVD, and the ScaleState blob round trip."""
import math

import ml_dtypes
import numpy as np
import pytest

import fp8attn


def _phi(x):
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


@pytest.mark.parametrize("granularity", ["tensor", "head", "block"])
def test_quantize_against_numpy(rng, granularity):
    x = (rng.standard_normal((2, 100, 4, 64)) * rng.uniform(0.1, 10, (2, 1, 4, 1))).astype(np.float32)
    x8, descale, amax = fp8attn.quantize(x, granularity=granularity, block_rows=32)
    assert x8.dtype == ml_dtypes.float8_e4m3fn and x8.shape == x.shape and descale.dtype == np.float32
    assert amax == np.abs(x).max()
    if granularity == "tensor":
        full = np.broadcast_to(descale[0], x.shape)
        assert descale.shape == (1,)
    elif granularity == "head":
        assert descale.shape == (2, 4)
        full = np.broadcast_to(descale[:, None, :, None], x.shape)
    else:
        assert descale.shape == (2, 4, 4)
        full = np.repeat(descale.transpose(0, 2, 1), 32, axis=1)[:, :100, :, None]
    deq = x8.astype(np.float64) * full
    # E4M3 keeps 3 mantissa bits: a rounding error ≤ 2^-4 relative for normals, ≤ 2^-10·descale
    # (half the smallest subnormal 2^-9) below them.
    err = np.abs(deq - x)
    bound = np.maximum(np.abs(x) * 2.0 ** -4, 2.0 ** -10 * full) * (1 + 1e-6)
    print(f"{granularity}: max error/bound {np.max(err / bound):.3f}")
    assert np.all(err <= bound)
    assert np.max(np.abs(x8.astype(np.float32))) == 448  # the amax of each slice maps onto 448


def test_quantize_rotation_keeps_row_norms(rng):
    x = rng.standard_normal((1, 50, 2, 64)).astype(np.float32)
    x[0, :, :, 3] *= 30  # an outlier channel, spread by the rotation
    x8, descale, _ = fp8attn.quantize(x, granularity="head", rotate=True, seed=7)
    deq = x8.astype(np.float64) * descale[:, None, :, None]
    plain8, _, _ = fp8attn.quantize(x, granularity="head")
    assert not np.array_equal(x8.view(np.uint8), plain8.view(np.uint8))
    ratio = np.linalg.norm(deq, axis=-1) / np.linalg.norm(x, axis=-1)
    print(f"row norm ratio in [{ratio.min():.4f}, {ratio.max():.4f}]")
    assert np.all(np.abs(ratio - 1) < 0.05)


def test_quantize_bad_option(rng):
    with pytest.raises(fp8attn.InvalidArgumentError) as info:
        fp8attn.quantize(rng.standard_normal((1, 4, 1, 64)).astype(np.float32), margin=99)
    assert info.value.name == "FP8ATTN_STATUS_BAD_OPTION"


@pytest.mark.parametrize("delta", [5.0, 9.0, 12.0])
def test_predict_p_underflow_closed_forms(delta):
    # One sink key: δ_1 = E[max of one N(0,1)] = 0, and E[Φ(a + Z)] = Φ(a/√2) for Z ~ N(0,1).
    a = delta - math.log(2 ** 10) - math.log(256)
    lead, expected = fp8attn.predict_p_underflow(delta, 1, 4096, kv_order="forward")
    print(f"Δ {delta}: leading {lead:.6g} (closed {_phi(a):.6g}), expected {expected:.6g} ({_phi(a / 2 ** .5):.6g})")
    assert lead == pytest.approx(_phi(a), rel=1e-6, abs=1e-12)
    assert expected == pytest.approx(_phi(a / math.sqrt(2)), rel=1e-4, abs=1e-9)
    rev_lead, _ = fp8attn.predict_p_underflow(delta, 1, 4096, kv_order="reverse", block_n=128)
    assert rev_lead == pytest.approx(lead * 127 / 4095, rel=1e-6, abs=1e-12)


def test_qk_spectral_norms_against_svd(rng):
    hq, hkv, d, dm = 4, 2, 16, 48
    wq = rng.standard_normal((hq * d, dm)).astype(np.float32)
    wk = rng.standard_normal((hkv * d, dm)).astype(np.float32)
    sigma, iterations, residuals = fp8attn.qk_spectral_norms(wq, wk, hq, hkv, d, tolerance=1e-7,
                                                             return_details=True)
    want = [np.linalg.norm(wq[h * d:(h + 1) * d].astype(np.float64).T @ wk[(h // 2) * d:(h // 2 + 1) * d], 2)
            for h in range(hq)]
    print(f"sigma {sigma}, svd {np.array(want)}, iterations {iterations}")
    assert np.allclose(sigma, want, rtol=1e-4) and np.all(iterations > 0)
    bound, scale = fp8attn.logit_bound(sigma, d, math.sqrt(dm))
    assert bound == pytest.approx(max(want) * dm / math.sqrt(d), rel=1e-4) and scale == pytest.approx(448 / bound)


def test_scale_state_round_trip(rng):
    state = fp8attn.ScaleState(2, recipe={"q": "delayed", "k": "current"}, amax_history_len=16)
    for _ in range(3):
        state.report_amax_batch(np.abs(rng.standard_normal((2, 8))) * 10)
        state.step()
    blob = state.to_bytes()
    copy = fp8attn.ScaleState.from_bytes(blob)
    assert copy.to_bytes() == blob
    for layer in range(2):
        for kind in ("q", "k", "v", "logit"):
            assert copy.get_scale(layer, kind) == state.get_scale(layer, kind)
    scale_q = state.get_scale(0, "q")[0]
    assert scale_q != 1.0  # the steps moved it
    broken = bytearray(blob)
    broken[len(blob) // 2] ^= 0x40
    before = copy.to_bytes()
    with pytest.raises(fp8attn.NumericsError) as info:
        copy.load_bytes(bytes(broken))
    assert info.value.name == "FP8ATTN_STATUS_CHECKSUM_MISMATCH" and copy.to_bytes() == before
    with pytest.raises(fp8attn.NumericsError) as info:
        copy.load_bytes(blob[:-9])
    assert info.value.name == "FP8ATTN_STATUS_TRUNCATED_BLOB"
    with pytest.raises(fp8attn.InvalidArgumentError):
        state.report_amax(0, "q", float("inf"))
