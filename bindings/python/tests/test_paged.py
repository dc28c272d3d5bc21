"""fp8attn.attention over a paged KV cache (block_table, seqused_k): bit-equal to the packed
contiguous call on the same K and V, within the forward's FP64 bound, per-head descales equal to
per-sequence ones, and the library's refusals with their status and message."""
import ml_dtypes
import numpy as np
import pytest

import fp8attn
import reference as ref
from conftest import e4m3


def _paged(rng, lengths, page_size, heads_kv, dim, dtype, spread=1.0):
    """A shuffled page pool holding each sequence's keys; unused slots hold NaN codes. Returns the
    caches, the block table (a row stride larger than its row), seqused_k and the packed K and V."""
    pages = [-(-n // page_size) for n in lengths]
    num_pages = sum(pages) + 2
    perm = rng.permutation(num_pages)
    table = np.full((len(lengths), max(pages) + 3), -1, dtype=np.int32)
    k_cache = np.full((num_pages, page_size, heads_kv, dim), np.nan, dtype=np.float64)
    v_cache = k_cache.copy()
    at = 0
    for b, n in enumerate(lengths):
        table[b, :pages[b]] = perm[at:at + pages[b]]
        at += pages[b]
        for j in range(n):
            k_cache[table[b, j // page_size], j % page_size] = rng.standard_normal((heads_kv, dim)) * spread
            v_cache[table[b, j // page_size], j % page_size] = rng.standard_normal((heads_kv, dim))
    cast = (lambda x: e4m3(x, 1.0)) if dtype == "e4m3" else (lambda x: x.astype(ml_dtypes.bfloat16))
    k_cache, v_cache = cast(k_cache), cast(v_cache)
    gather = lambda c: np.concatenate([c[table[b, np.arange(n) // page_size], np.arange(n) % page_size]
                                       for b, n in enumerate(lengths)])
    return k_cache, v_cache, table[:, :max(pages)], np.array(lengths, dtype=np.int32), gather(k_cache), gather(v_cache)


@pytest.mark.parametrize("page_size,dtype,causal", [(16, "e4m3", True), (3, "e4m3", False), (64, "bf16", True)])
def test_paged_equals_contiguous(rng, page_size, dtype, causal):
    lengths = [0, 1, page_size - 1, page_size, page_size + 1, 3 * page_size + 5]
    k_cache, v_cache, table, seqused, k_packed, v_packed = _paged(rng, lengths, page_size, 2, 64, dtype)
    q = rng.standard_normal((len(lengths), 5, 4, 64))
    q = e4m3(q, 1.0) if dtype == "e4m3" else q.astype(ml_dtypes.bfloat16)
    out, lse = fp8attn.attention(q, k_cache, v_cache, block_table=table, seqused_k=seqused, causal=causal,
                                 return_lse=True, out_dtype="float32")
    cu_q = np.arange(len(lengths) + 1, dtype=np.int32) * 5
    cu_k = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    out_c, lse_c = fp8attn.attention(q.reshape(-1, 4, 64), k_packed, v_packed, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
                                     causal=causal, return_lse=True, out_dtype="float32")
    assert out.shape == (len(lengths), 5, 4, 64) and lse.shape == (len(lengths), 4, 5)
    assert np.array_equal(out.reshape(-1, 4, 64).view(np.uint32), out_c.view(np.uint32))
    assert np.array_equal(lse.transpose(1, 0, 2).reshape(4, -1).view(np.uint32), lse_c.view(np.uint32))


def test_paged_chunked_prefill_gqa_against_fp64(rng):
    lengths = [300, 77]
    k_cache, v_cache, table, seqused, k_packed, v_packed = _paged(rng, lengths, 16, 1, 128, "e4m3")
    q_lens = [40, 77]
    q = e4m3(rng.standard_normal((sum(q_lens), 8, 128)), 1.0)
    cu_q = np.array([0, 40, 117], dtype=np.int32)
    out = fp8attn.attention(q, k_cache, v_cache, block_table=table, seqused_k=seqused, cu_seqlens_q=cu_q,
                            causal=True, out_dtype="float32")
    for b in range(2):
        qs = q[cu_q[b]:cu_q[b + 1]].astype(np.float64)[None]
        ks = k_packed[sum(lengths[:b]):sum(lengths[:b + 1])].astype(np.float64)[None]
        vs = v_packed[sum(lengths[:b]):sum(lengths[:b + 1])].astype(np.float64)[None]
        out64, _ = ref.attention(qs, ks, vs, True)
        model, _ = ref.attention(qs, ks, vs, True, p_round="e4m3")
        err, err_model = np.max(np.abs(out[cu_q[b]:cu_q[b + 1]] - out64[0])), np.max(np.abs(model - out64))
        print(f"sequence {b}: max|out - fp64| {err:.3e}, P-rounded model {err_model:.3e}")
        assert err <= 2 * err_model + 1e-3


def test_bf16_queries_over_an_e4m3_cache(rng):
    k_cache, v_cache, table, seqused, k_packed, v_packed = _paged(rng, [100, 33], 16, 2, 64, "e4m3")
    q = rng.standard_normal((2, 20, 2, 64)).astype(ml_dtypes.bfloat16)
    out = fp8attn.attention(q, k_cache, v_cache, block_table=table, seqused_k=seqused, out_dtype="float32")
    for b, (lo, hi) in enumerate(((0, 100), (100, 133))):
        out64, _ = ref.attention(q[b:b + 1].astype(np.float64), k_packed[None, lo:hi].astype(np.float64),
                                 v_packed[None, lo:hi].astype(np.float64))
        model, _ = ref.attention(q[b:b + 1].astype(np.float64), k_packed[None, lo:hi].astype(np.float64),
                                 v_packed[None, lo:hi].astype(np.float64), p_round="bf16")
        assert np.max(np.abs(out[b:b + 1] - out64)) <= 2 * np.max(np.abs(model - out64)) + 1e-4


def test_per_head_descales_equal_per_sequence_ones(rng):
    k_cache, v_cache, table, seqused, _, _ = _paged(rng, [50, 20], 16, 2, 64, "e4m3")
    q = e4m3(rng.standard_normal((2, 8, 4, 64)), 1.0)
    kd, vd = np.array([0.5, 0.25], np.float32), np.array([2.0, 0.125], np.float32)
    out = fp8attn.attention(q, k_cache, v_cache, block_table=table, seqused_k=seqused, out_dtype="float32",
                            kv_scale_granularity="head", kv_descales=(kd, vd))
    out_s = fp8attn.attention(q, k_cache, v_cache, block_table=table, seqused_k=seqused, out_dtype="float32",
                              descales=(None, np.tile(kd, (2, 1)), np.tile(vd, (2, 1))))
    assert np.array_equal(out.view(np.uint32), out_s.view(np.uint32))


def test_bad_block_table_entry_is_refused(rng):
    k_cache, v_cache, table, seqused, _, _ = _paged(rng, [50, 20], 16, 1, 64, "e4m3")
    table[1, 1] = k_cache.shape[0]
    q = e4m3(rng.standard_normal((2, 8, 2, 64)), 1.0)
    with pytest.raises(fp8attn.InvalidArgumentError) as e:
        fp8attn.attention(q, k_cache, v_cache, block_table=table, seqused_k=seqused)
    assert e.value.name == "FP8ATTN_STATUS_INVALID_ARGUMENT" and "block_table[1, 1]" in str(e.value)
    seqused[0] = 70  # 5 pages; the table lists 4
    table[1, 1] = 0
    with pytest.raises(fp8attn.InvalidArgumentError) as e:
        fp8attn.attention(q, k_cache, v_cache, block_table=table, seqused_k=seqused)
    assert e.value.name == "FP8ATTN_STATUS_BAD_SEQLENS"
