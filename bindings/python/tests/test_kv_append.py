"""kv_append: BF16 and F32 rows into E4M3 and BF16 paged caches against numpy, the slots' poison
kept, the per-(token, head) round trip with quantize, and a refusal that leaves the caches alone."""
import ml_dtypes
import numpy as np
import pytest

import fp8attn

from conftest import poisoned


def _problem(rng, tokens=9, heads=2, dim=64, pages=4, page_size=4, dtype=np.float32):
    k = (rng.standard_normal((tokens, heads, dim)) * rng.uniform(0.1, 10, (tokens, heads, 1))).astype(dtype)
    v = (rng.standard_normal((tokens, heads, dim)) * rng.uniform(0.1, 10, (tokens, heads, 1))).astype(dtype)
    slots = rng.permutation(pages * page_size)[:tokens].astype(np.int64)
    slots[rng.random(tokens) < 0.25] = -1  # padding
    return k, v, slots


def _e4m3_bits(x):
    return np.clip(x, -448, 448).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_kv_append_token_head_against_numpy(rng, dtype):
    k, v, slots = _problem(rng, dtype=dtype)
    k_cache, v_cache = poisoned((4, 4, 2, 64), ml_dtypes.float8_e4m3fn), poisoned((4, 4, 2, 64), ml_dtypes.float8_e4m3fn)
    k_descale, v_descale = poisoned((4, 4, 2), np.float32), poisoned((4, 4, 2), np.float32)
    fp8attn.kv_append(k, v, k_cache, v_cache, slots, scale_granularity="token_head", k_descale=k_descale,
                      v_descale=v_descale)
    for x, cache, descale in ((k, k_cache, k_descale), (v, v_cache, v_descale)):
        flat, dflat = cache.reshape(16, 2, 64).view(np.uint8), descale.reshape(16, 2)
        for t, slot in enumerate(slots):
            if slot < 0:
                continue
            row = x[t].astype(np.float32)
            scale = np.float32(448) / np.abs(row).max(axis=1, keepdims=True)
            assert np.array_equal(flat[slot], _e4m3_bits(row * scale)), f"token {t}"
            assert np.array_equal(dflat[slot], (np.float32(1) / scale)[:, 0]), f"token {t}"
        untouched = np.setdiff1d(np.arange(16), slots)
        assert np.all(flat[untouched] == 0x7F) and np.all(np.isnan(dflat[untouched]))


def test_kv_append_bf16_cache_and_head_descales(rng):
    k, v, slots = _problem(rng)
    k_cache, v_cache = poisoned((4, 4, 2, 64), ml_dtypes.bfloat16), poisoned((4, 4, 2, 64), ml_dtypes.bfloat16)
    fp8attn.kv_append(k, v, k_cache, v_cache, slots)
    written = slots >= 0
    assert np.array_equal(k_cache.reshape(16, 2, 64)[slots[written]], k[written].astype(ml_dtypes.bfloat16))
    k8, v8 = poisoned((4, 4, 2, 64), ml_dtypes.float8_e4m3fn), poisoned((4, 4, 2, 64), ml_dtypes.float8_e4m3fn)
    descale = np.array([0.05, 0.07], dtype=np.float32)
    fp8attn.kv_append(k, v, k8, v8, slots, scale_granularity="head", k_descale=descale, v_descale=descale)
    assert np.array_equal(v8.reshape(16, 2, 64).view(np.uint8)[slots[written]],
                          _e4m3_bits(v[written] / descale[None, :, None]))


def test_kv_append_rotated_round_trip_equals_quantize(rng):
    k, v, slots = _problem(rng, tokens=12, pages=4, page_size=4)
    k_cache, v_cache = poisoned((4, 4, 2, 64), ml_dtypes.float8_e4m3fn), poisoned((4, 4, 2, 64), ml_dtypes.float8_e4m3fn)
    k_descale, v_descale = poisoned((4, 4, 2), np.float32), poisoned((4, 4, 2), np.float32)
    fp8attn.kv_append(k, v, k_cache, v_cache, slots, scale_granularity="token_head", k_descale=k_descale,
                      v_descale=v_descale, rotate=True, seed=77)
    x8, descale, _ = fp8attn.quantize(k[None], granularity="block", block_rows=1, rotate=True, seed=77)
    written = slots >= 0
    assert np.array_equal(k_cache.reshape(16, 2, 64).view(np.uint8)[slots[written]], x8[0].view(np.uint8)[written])
    assert np.array_equal(k_descale.reshape(16, 2)[slots[written]], descale[0].T[written])


def test_kv_append_refusal_leaves_the_caches(rng):
    k, v, slots = _problem(rng)
    k_cache, v_cache = poisoned((4, 4, 2, 64), ml_dtypes.float8_e4m3fn), poisoned((4, 4, 2, 64), ml_dtypes.float8_e4m3fn)
    slots[0] = 16  # past the cache
    with pytest.raises(fp8attn.InvalidArgumentError) as e:
        fp8attn.kv_append(k, v, k_cache, v_cache, slots)
    assert e.value.name == "FP8ATTN_STATUS_INVALID_ARGUMENT" and "slot_mapping[0]" in str(e.value)
    with pytest.raises(fp8attn.InvalidArgumentError) as e:
        fp8attn.kv_append(k, v, k_cache, v_cache, slots.astype(np.int32))
    assert e.value.name == "FP8ATTN_STATUS_BAD_DTYPE"
    assert np.all(k_cache.view(np.uint8) == 0x7F) and np.all(v_cache.view(np.uint8) == 0x7F)
