"""fp8attn through ctypes, as a Python host sees it: struct layouts against the C compiler's,
and E4M3 forward calls on numpy arrays checked against this file's own numpy references
(attention_reference.py), never the library's oracle.

Environment (set by ctest): FP8ATTN_LIBRARY, the path of libfp8attn.so; FP8ATTN_LAYOUT_PROBE,
the path of struct_layout_probe. FP8ATTN_TEST_SEED overrides the seed.
"""
import ctypes
import math
import os
import subprocess

# numpy and ml_dtypes are required: CI installs them, so a missing one is a failure, not a skip.
import ml_dtypes
import numpy as np
import pytest

import attention_reference as ref
import fp8attn_ctypes as fa

SEED = int(os.environ.get("FP8ATTN_TEST_SEED", "20261122"))
POISON_F32 = np.uint32(0x7FC0DEAD)  # a NaN: any element the call does not write stays non-finite


@pytest.fixture(scope="module")
def lib():
    return fa.Library()


@pytest.fixture(scope="module")
def ctx(lib):
    handle = lib.cpu_context(num_threads=2)
    yield handle
    lib.dll.fp8attn_context_destroy(handle)


def test_struct_layouts_match_the_c_compiler():
    probe = os.environ.get("FP8ATTN_LAYOUT_PROBE")
    assert probe, "set FP8ATTN_LAYOUT_PROBE to the struct_layout_probe executable"
    lines = subprocess.run([probe], check=True, capture_output=True, text=True).stdout.split("\n")
    checked = 0
    for line in filter(None, lines):
        struct, field, value = line.split()
        mirror = fa.MIRRORS[struct]
        got = ctypes.sizeof(mirror) if field == "sizeof" else getattr(mirror, field).offset
        assert got == int(value), f"{struct}.{field}: ctypes {got}, C {value}"
        checked += 1
    print(f"{checked} sizes and offsets match the C compiler's")
    assert checked >= 120


def test_desc_init_fills_the_full_layout(lib):
    desc = lib.default_desc()
    print(f"desc_init: struct_size {desc.struct_size}, head_dim {desc.head_dim}, p_scale_log2 {desc.p_scale_log2}")
    assert desc.struct_size == ctypes.sizeof(fa.AttentionDesc)
    assert (desc.head_dim, desc.p_scale_log2, desc.kv_order) == (128, 8, fa.KV_ORDER_REVERSE)
    assert desc.stabilized_shift_cap_log2 == 16.0
    # The tensor core's addition is the default accumulation (13 fraction bits for FP8).
    assert (desc.accumulator_model, desc.accumulator_mantissa_bits) == (1, 13)


def test_bad_head_dim_reports_its_status(lib, ctx):
    desc = lib.default_desc()
    desc.head_dim = 96
    with pytest.raises(fa.Fp8attnError) as info:
        lib.plan(ctx, desc)
    print(info.value)
    assert info.value.status == fa.STATUS_UNSUPPORTED_HEAD_DIM
    assert "head_dim" in info.value.message


def _args(q8, k8, v8, out, lse, descales, cu_seqlens=None):
    args = fa.AttentionArgs()
    args.struct_size = ctypes.sizeof(fa.AttentionArgs)
    args.q, args.k, args.v = fa.tensor_of(q8), fa.tensor_of(k8), fa.tensor_of(v8)
    args.out, args.lse = fa.tensor_of(out), fa.tensor_of(lse)
    args.q_descale, args.k_descale, args.v_descale = (fa.tensor_of(d) for d in descales)
    if cu_seqlens is not None:
        args.cu_seqlens_q, args.cu_seqlens_k = fa.tensor_of(cu_seqlens[0]), fa.tensor_of(cu_seqlens[1])
    return args


def _plan(lib, ctx, head_dim, heads_q, heads_kv, causal):
    desc = lib.default_desc()
    desc.output_dtype = fa.DTYPE_F32
    desc.head_dim, desc.num_heads_q, desc.num_heads_kv, desc.causal = head_dim, heads_q, heads_kv, int(causal)
    return lib.plan(ctx, desc)


def _check_against_numpy(out, lse, qd, kd, vd, causal, what):
    """Bound and LSE check of one (sequence or batch) result; returns the printed figures."""
    scale = 1.0 / math.sqrt(qd.shape[3])
    out64, lse64 = ref.attention_fp64(qd, kd, vd, scale, causal)
    out_p8 = ref.attention_p_e4m3(qd, kd, vd, scale, causal)
    err_lib = float(np.max(np.abs(out - out64)))
    err_p8 = float(np.max(np.abs(out_p8 - out64)))
    lse_err = float(np.max(np.abs(lse - lse64)))
    lse_bound = 2e-5 * max(1.0, float(np.max(np.abs(lse64)))) + ref.accumulator_lse_slack(qd, kd, scale, causal)
    print(f"{what}: max|lib - fp64| = {err_lib:.3e}, P-E4M3 model {err_p8:.3e}, max|LSE - fp64| = {lse_err:.3e}, "
          f"worst row at {float(np.max(np.abs(lse - lse64) / lse_bound)):.3f} of its bound")
    assert err_lib <= 2.0 * err_p8 + 1e-3, what
    assert np.all(np.abs(lse - lse64) <= lse_bound), what


def _run_forward(lib, ctx, q8, k8, v8, descales, head_dim, heads_q, heads_kv, causal):
    """One forward call on padded [b, s, h, d] E4M3 arrays; F32 out and LSE, poisoned first."""
    b, sq, _, _ = q8.shape
    out = np.full((b, sq, heads_q, head_dim), POISON_F32, dtype=np.uint32).view(np.float32)
    lse = np.full((b, heads_q, sq), POISON_F32, dtype=np.uint32).view(np.float32)
    plan = _plan(lib, ctx, head_dim, heads_q, heads_kv, causal)
    try:
        lib.forward(plan, _args(q8, k8, v8, out, lse, descales), b, sq, k8.shape[1])
    finally:
        lib.dll.fp8attn_plan_destroy(plan)
    return out, lse


# head_dim, heads_q, heads_kv, seqlen_q, seqlen_k, causal. The lengths cross the tile
# boundaries (BlockM × BlockN is 192 × 96 at head_dim 64 and 128 × 224 at 128); the last case
# has more queries than keys, so its first causal rows see no key at all.
CASES = [
    (64, 4, 4, 250, 333, False),
    (64, 8, 2, 250, 333, True),
    (128, 4, 1, 200, 300, False),
    (128, 8, 2, 200, 300, True),
    (64, 2, 1, 300, 170, True),
]


@pytest.mark.parametrize("head_dim,heads_q,heads_kv,seqlen_q,seqlen_k,causal", CASES)
def test_forward_against_numpy(lib, ctx, head_dim, heads_q, heads_kv, seqlen_q, seqlen_k, causal):
    batch = 2
    group = heads_q // heads_kv
    seed = SEED + 1000 * head_dim + 10 * heads_q + heads_kv + (1 if causal else 0)
    rng = np.random.default_rng(seed)
    print(f"seed {seed}: batch {batch}, head_dim {head_dim}, heads {heads_q}:{heads_kv}, "
          f"seqlen {seqlen_q}x{seqlen_k}, causal {causal}")
    # Per-batch spreads make the per-(batch, kv-head) descales differ.
    spread = rng.uniform(0.5, 2.0, size=(batch, 1, 1, 1))
    q = rng.standard_normal((batch, seqlen_q, heads_q, head_dim)) * spread
    k = rng.standard_normal((batch, seqlen_k, heads_kv, head_dim)) * spread * 1.5
    v = rng.standard_normal((batch, seqlen_k, heads_kv, head_dim)) / spread
    q8, q_descale = ref.quantize_e4m3(q, group)
    k8, k_descale = ref.quantize_e4m3(k, 1)
    v8, v_descale = ref.quantize_e4m3(v, 1)
    assert len(np.unique(q_descale)) > 1 and len(np.unique(v_descale)) > 1

    out, lse = _run_forward(lib, ctx, q8, k8, v8, (q_descale, k_descale, v_descale), head_dim, heads_q, heads_kv,
                            causal)

    qd, kd, vd = ref.dequantize(q8, q_descale, group), ref.dequantize(k8, k_descale, 1), ref.dequantize(v8, v_descale, 1)
    scale = 1.0 / math.sqrt(head_dim)
    out64, lse64 = ref.attention_fp64(qd, kd, vd, scale, causal)
    out_p8 = ref.attention_p_e4m3(qd, kd, vd, scale, causal)

    # Rows with no visible key: zeros and LSE −inf (DESIGN §3, masks).
    empty = np.isneginf(lse64)  # [b, h, s_q]
    n_empty = int(empty.sum())
    assert np.array_equal(np.isneginf(lse), empty), "LSE is −inf exactly on the rows without keys"
    assert np.all(out.transpose(0, 2, 1, 3)[empty] == 0.0)
    assert np.all(np.isfinite(out)), "out has elements the call did not write (poison) or non-finite values"
    assert np.all(np.isfinite(lse[~empty])), "lse has unwritten or non-finite entries"

    err_lib = float(np.max(np.abs(out - out64)))
    err_p8 = float(np.max(np.abs(out_p8 - out64)))
    bound = 2.0 * err_p8 + 1e-3
    lse_err = float(np.max(np.abs(lse[~empty] - lse64[~empty])))
    print(f"max|lib - fp64| = {err_lib:.3e}; max|P-E4M3 model - fp64| = {err_p8:.3e}; bound {bound:.3e}; "
          f"max|LSE - fp64| = {lse_err:.3e}; {n_empty} empty rows")
    assert err_lib <= bound
    # NOTE: the LSE has no FP8 rounding in it: logits are exact products of E4M3 values and the row
    # sum is FP32, so it matches FP64 to FP32 accuracy plus what the tensor core's addition (the
    # default accumulation) moves the logits by (ref.accumulator_lse_slack).
    lse_bound = (2e-5 * max(1.0, float(np.max(np.abs(lse64[~empty]))))
                 + ref.accumulator_lse_slack(qd, kd, scale, causal)[~empty])
    print(f"LSE: worst row at {float(np.max(np.abs(lse[~empty] - lse64[~empty]) / lse_bound)):.3f} of its bound")
    assert np.all(np.abs(lse[~empty] - lse64[~empty]) <= lse_bound)


@pytest.mark.parametrize("causal", [True, False])
def test_packed_varlen_against_numpy(lib, ctx, causal):
    """Rank-3 packed tensors with cu_seqlens; lengths around the 128-row tile, GQA 2:1."""
    head_dim, heads_q, heads_kv = 128, 4, 2
    group = heads_q // heads_kv
    lens_q = [1, 127, 128, 129]
    lens_k = lens_q if causal else [5, 200, 64, 129]
    seed = SEED + 7 + int(causal)
    rng = np.random.default_rng(seed)
    print(f"seed {seed}: packed, lengths q {lens_q} k {lens_k}, causal {causal}")
    seqs = []
    for sq, sk in zip(lens_q, lens_k):
        q = rng.standard_normal((1, sq, heads_q, head_dim))
        k = rng.standard_normal((1, sk, heads_kv, head_dim)) * rng.uniform(0.5, 2.0)
        v = rng.standard_normal((1, sk, heads_kv, head_dim))
        seqs.append((ref.quantize_e4m3(q, group), ref.quantize_e4m3(k, 1), ref.quantize_e4m3(v, 1)))
    q8 = np.concatenate([s[0][0][0] for s in seqs])
    k8 = np.concatenate([s[1][0][0] for s in seqs])
    v8 = np.concatenate([s[2][0][0] for s in seqs])
    descales = [np.concatenate([s[i][1] for s in seqs]) for i in range(3)]  # [batch, heads_kv] each
    cu_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32)
    out = np.full((q8.shape[0], heads_q, head_dim), POISON_F32, dtype=np.uint32).view(np.float32)
    lse = np.full((heads_q, q8.shape[0]), POISON_F32, dtype=np.uint32).view(np.float32)

    plan = _plan(lib, ctx, head_dim, heads_q, heads_kv, causal)
    try:
        lib.forward(plan, _args(q8, k8, v8, out, lse, descales, (cu_q, cu_k)), len(lens_q), max(lens_q), max(lens_k))
    finally:
        lib.dll.fp8attn_plan_destroy(plan)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(lse)), "unwritten (poisoned) or non-finite outputs"

    for b, (sq, (qq, kk, vv)) in enumerate(zip(lens_q, seqs)):
        rows = slice(cu_q[b], cu_q[b + 1])
        qd = ref.dequantize(qq[0], qq[1], group)
        kd, vd = ref.dequantize(kk[0], kk[1], 1), ref.dequantize(vv[0], vv[1], 1)
        _check_against_numpy(out[None, rows], lse[None, :, rows], qd, kd, vd, causal, f"sequence {b} ({sq} rows)")


def test_strided_views_and_writes_confined_to_the_view(lib, ctx):
    """Q, K and out as non-contiguous numpy views: strides pass through ctypes in elements, and
    the call writes only the elements of the out view (the rest of its buffer stays poisoned)."""
    batch, seqlen_q, seqlen_k, head_dim, heads = 2, 100, 180, 64, 2
    rng = np.random.default_rng(SEED + 11)
    print(f"seed {SEED + 11}: strided views, seqlen {seqlen_q}x{seqlen_k}")
    q8, q_descale = ref.quantize_e4m3(rng.standard_normal((batch, seqlen_q, heads, head_dim)), 1)
    k8, k_descale = ref.quantize_e4m3(rng.standard_normal((batch, seqlen_k, heads, head_dim)), 1)
    v8, v_descale = ref.quantize_e4m3(rng.standard_normal((batch, seqlen_k, heads, head_dim)), 1)
    # Every other head of a wider array, and K stored [batch, heads, seqlen, dim].
    q_wide = np.zeros((batch, seqlen_q, 2 * heads, head_dim), dtype=q8.dtype)
    q_wide[:, :, ::2] = q8
    k_bhsd = np.ascontiguousarray(k8.transpose(0, 2, 1, 3))
    q_view, k_view = q_wide[:, :, ::2], k_bhsd.transpose(0, 2, 1, 3)
    assert not q_view.flags.c_contiguous and not k_view.flags.c_contiguous
    out_wide = np.full((batch, seqlen_q, heads, 2 * head_dim), POISON_F32, dtype=np.uint32).view(np.float32)
    out_view = out_wide[..., head_dim:]
    lse = np.full((batch, heads, seqlen_q), POISON_F32, dtype=np.uint32).view(np.float32)

    plan = _plan(lib, ctx, head_dim, heads, heads, False)
    try:
        lib.forward(plan, _args(q_view, k_view, v8, out_view, lse, (q_descale, k_descale, v_descale)), batch, seqlen_q,
                    seqlen_k)
    finally:
        lib.dll.fp8attn_plan_destroy(plan)
    untouched = out_wide[..., :head_dim].view(np.uint32)
    print(f"outside the out view: {int(np.sum(untouched != POISON_F32))} elements written")
    assert np.all(untouched == POISON_F32), "the call wrote outside the out view"
    assert np.all(np.isfinite(out_view)) and np.all(np.isfinite(lse))
    qd, kd, vd = ref.dequantize(q8, q_descale, 1), ref.dequantize(k8, k_descale, 1), ref.dequantize(v8, v_descale, 1)
    _check_against_numpy(out_view, lse, qd, kd, vd, False, "strided views")


# Windowed and causal masks against the mask written out in numpy (the engine, the oracle
# and the C++ references share sm90::visible_keys, so only an independent mask catches an
# off-by-one in it). (causal, window_left, window_right); Sq ≠ Sk so the diagonal is offset.
WINDOWS = [(False, 40, 0), (False, 17, 23), (True, 64, -1), (True, 0, -1), (False, -1, 5), (True, 100, 7)]


@pytest.mark.parametrize("causal,left,right", WINDOWS)
def test_windowed_forward_against_numpy(lib, ctx, causal, left, right):
    batch, head_dim, heads_q, heads_kv, seqlen_q, seqlen_k = 1, 64, 2, 1, 210, 260
    seed = SEED + 31 * (left + 2) + 7 * (right + 2) + int(causal)
    rng = np.random.default_rng(seed)
    print(f"seed {seed}: causal {causal}, window ({left}, {right}), seqlen {seqlen_q}x{seqlen_k}")
    q = rng.standard_normal((batch, seqlen_q, heads_q, head_dim))
    k = rng.standard_normal((batch, seqlen_k, heads_kv, head_dim))
    v = rng.standard_normal((batch, seqlen_k, heads_kv, head_dim))
    q8, q_descale = ref.quantize_e4m3(q, heads_q // heads_kv)
    k8, k_descale = ref.quantize_e4m3(k, 1)
    v8, v_descale = ref.quantize_e4m3(v, 1)
    out = np.full((batch, seqlen_q, heads_q, head_dim), POISON_F32, dtype=np.uint32).view(np.float32)
    lse = np.full((batch, heads_q, seqlen_q), POISON_F32, dtype=np.uint32).view(np.float32)
    desc = lib.default_desc()
    desc.output_dtype = fa.DTYPE_F32
    desc.head_dim, desc.num_heads_q, desc.num_heads_kv, desc.causal = head_dim, heads_q, heads_kv, int(causal)
    desc.window_left, desc.window_right = left, right
    plan = lib.plan(ctx, desc)
    try:
        lib.forward(plan, _args(q8, k8, v8, out, lse, (q_descale, k_descale, v_descale)), batch, seqlen_q, seqlen_k)
    finally:
        lib.dll.fp8attn_plan_destroy(plan)
    qd = ref.dequantize(q8, q_descale, heads_q // heads_kv)
    kd, vd = ref.dequantize(k8, k_descale, 1), ref.dequantize(v8, v_descale, 1)
    scale = 1.0 / math.sqrt(head_dim)
    out64, lse64 = ref.attention_fp64(qd, kd, vd, scale, causal, window=(left, right))
    out_p8 = ref.attention_p_e4m3(qd, kd, vd, scale, causal, window=(left, right))
    empty = np.isneginf(lse64)
    assert np.array_equal(np.isneginf(lse), empty), "LSE is −inf exactly on the rows without keys"
    assert np.all(np.isfinite(out)), "out has unwritten or non-finite elements"
    err_lib = float(np.max(np.abs(out - out64)))
    err_p8 = float(np.max(np.abs(out_p8 - out64)))
    lse_err = float(np.max(np.abs(lse[~empty] - lse64[~empty]))) if np.any(~empty) else 0.0
    print(f"max|lib - fp64| = {err_lib:.3e}; P-E4M3 model {err_p8:.3e}; max|LSE - fp64| = {lse_err:.3e}")
    assert err_lib <= 2.0 * err_p8 + 1e-3
    # The tensor core's addition moves logits by at most ref.accumulator_lse_slack (taken over
    # all keys, which bounds the window's).
    lse_bound = (2e-5 * max(1.0, float(np.max(np.abs(lse64[~empty]))))
                 + ref.accumulator_lse_slack(qd, kd, scale, causal)[~empty])
    assert np.all(np.abs(lse[~empty] - lse64[~empty]) <= lse_bound)
