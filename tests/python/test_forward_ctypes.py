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
    assert checked >= 50


def test_desc_init_fills_the_full_layout(lib):
    desc = lib.default_desc()
    print(f"desc_init: struct_size {desc.struct_size}, head_dim {desc.head_dim}, p_scale_log2 {desc.p_scale_log2}")
    assert desc.struct_size == ctypes.sizeof(fa.AttentionDesc)
    assert (desc.head_dim, desc.p_scale_log2, desc.kv_order) == (128, 8, fa.KV_ORDER_REVERSE)
    assert desc.stabilized_shift_cap_log2 == 16.0


def test_bad_head_dim_reports_its_status(lib, ctx):
    desc = lib.default_desc()
    desc.head_dim = 96
    with pytest.raises(fa.Fp8attnError) as info:
        lib.plan(ctx, desc)
    print(info.value)
    assert info.value.status == fa.STATUS_UNSUPPORTED_HEAD_DIM
    assert "head_dim" in info.value.message


def _run_forward(lib, ctx, q8, k8, v8, descales, head_dim, heads_q, heads_kv, causal):
    """One forward call on padded [b, s, h, d] E4M3 arrays; F32 out and LSE, poisoned first."""
    desc = lib.default_desc()
    desc.output_dtype = fa.DTYPE_F32
    desc.head_dim = head_dim
    desc.num_heads_q = heads_q
    desc.num_heads_kv = heads_kv
    desc.causal = int(causal)
    plan = lib.plan(ctx, desc)
    try:
        b, sq, _, _ = q8.shape
        out = np.full((b, sq, heads_q, head_dim), POISON_F32, dtype=np.uint32).view(np.float32)
        lse = np.full((b, heads_q, sq), POISON_F32, dtype=np.uint32).view(np.float32)
        args = fa.AttentionArgs()
        args.struct_size = ctypes.sizeof(fa.AttentionArgs)
        args.q, args.k, args.v = fa.tensor_of(q8), fa.tensor_of(k8), fa.tensor_of(v8)
        args.out, args.lse = fa.tensor_of(out), fa.tensor_of(lse)
        args.q_descale, args.k_descale, args.v_descale = (fa.tensor_of(d) for d in descales)
        lib.forward(plan, args, b, sq, k8.shape[1])
    finally:
        lib.dll.fp8attn_plan_destroy(plan)
    return out, lse


# head_dim, heads_q, heads_kv, seqlen_q, seqlen_k, causal. The lengths cross the tile
# boundaries (BlockM × BlockN is 192 × 160 at head_dim 64 and 128 × 224 at 128); the last case
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
    # NOTE: the LSE has no FP8 rounding in it: logits are exact products of E4M3 values summed in
    # FP32, and the row sum is FP32, so it matches FP64 to FP32 accuracy.
    assert lse_err <= 2e-5 * max(1.0, float(np.max(np.abs(lse64[~empty]))))
