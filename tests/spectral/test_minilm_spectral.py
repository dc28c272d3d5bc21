"""σ_h = ‖W_Q,hᵀ·W_K,h‖₂ on every layer and head of the trained all-MiniLM-L6-v2 weights,
against numpy's SVD of the explicitly formed 384 × 384 product; and the RoPE tightness report
(standard RoPE frequencies applied to its projections, which the BERT-style model lacks)."""
import functools

import ml_dtypes
import numpy as np
import pytest

from fp8attn_spectral_ctypes import FP8ATTN_DTYPE_E4M3, FP8ATTN_DTYPE_F32, Spectral
from minilm_weights import HEAD_DIM, NUM_HEADS, NUM_LAYERS, load_qk

E4M3_MAX = 448.0


@pytest.fixture(scope="module")
def spectral():
    s = Spectral()
    yield s
    s.close()


def formed_product_sigma(wq, wk):
    out = []
    for h in range(NUM_HEADS):
        rows = slice(h * HEAD_DIM, (h + 1) * HEAD_DIM)
        m = wq[rows].astype(np.float64).T @ wk[rows].astype(np.float64)  # d × d, formed on purpose
        out.append(np.linalg.svd(m, compute_uv=False)[0])
    return np.array(out)


@functools.lru_cache(maxsize=None)
def reference_sigma(layer):
    """numpy's SVD of the formed products of one layer, computed once per test session."""
    return formed_product_sigma(*load_qk(layer))


def quantize_e4m3(w):
    scale = E4M3_MAX / float(np.abs(w).max())
    q = np.clip(w * scale, -E4M3_MAX, E4M3_MAX).astype(ml_dtypes.float8_e4m3fn)
    return np.ascontiguousarray(q.view(np.uint8)), 1.0 / scale


def test_every_layer_and_head_against_numpy_svd(spectral):
    worst_f32, worst_e4m3 = 0.0, 0.0
    for layer in range(NUM_LAYERS):
        wq, wk = load_qk(layer)
        reference = reference_sigma(layer)
        sigma, iterations, residual = spectral.sigma(wq, wk, NUM_HEADS, NUM_HEADS, HEAD_DIM, FP8ATTN_DTYPE_F32)
        rel = np.abs(sigma - reference) / reference
        q8, dq = quantize_e4m3(wq)
        k8, dk = quantize_e4m3(wk)
        sigma8, iterations8, _ = spectral.sigma(q8, k8, NUM_HEADS, NUM_HEADS, HEAD_DIM, FP8ATTN_DTYPE_E4M3,
                                                wq_descale=dq, wk_descale=dk)
        rel8 = np.abs(sigma8 - reference) / reference
        print(f"layer {layer}: sigma {np.array2string(sigma, precision=4, max_line_width=200)}")
        print(f"  F32  rel err max {rel.max():.2e}, iterations {iterations.tolist()}, "
              f"residual max {residual.max():.1e}")
        print(f"  E4M3 rel err max {rel8.max():.2e}, iterations {iterations8.tolist()}")
        assert np.all(iterations >= 1) and np.all(iterations <= 100)
        worst_f32 = max(worst_f32, rel.max())
        worst_e4m3 = max(worst_e4m3, rel8.max())
    print(f"worst relative error: F32 {worst_f32:.3e} (bound 1e-4), E4M3 {worst_e4m3:.3e} (bound 3e-2)")
    assert worst_f32 <= 1e-4
    assert worst_e4m3 <= 3e-2


def test_rope_exact_maximum_versus_safe_bound(spectral):
    """The tightness report: exact max over offsets 0..511 (MiniLM's positions) vs the safe bound."""
    max_offset = 511
    print(f"RoPE (base 10000, half-split pairs) on all-MiniLM-L6-v2, offsets 0..{max_offset}")
    print("layer  sigma_max  exact_max  safe_max  exact/safe (mean over heads)  exact/sigma (max)")
    ratios = []
    for layer in range(NUM_LAYERS):
        wq, wk = load_qk(layer)
        sigma, _, _ = spectral.sigma(wq, wk, NUM_HEADS, NUM_HEADS, HEAD_DIM)
        safe, exact = spectral.rope_norms(wq, wk, NUM_HEADS, NUM_HEADS, HEAD_DIM, max_offset)
        assert np.all(exact <= safe * (1 + 1e-5)), "the exact maximum exceeds the safe bound"
        assert np.all(exact >= sigma * (1 - 1e-4)), "offset 0 is in the range, so exact ≥ σ"
        ratio = exact / safe
        ratios.extend(ratio.tolist())
        print(f"{layer:5d}  {sigma.max():9.4f}  {exact.max():9.4f}  {safe.max():8.4f}  "
              f"{ratio.mean():.3f} (min {ratio.min():.3f}, max {ratio.max():.3f})  {(exact / sigma).max():.3f}")
    ratios = np.array(ratios)
    print(f"over all {ratios.size} heads: the exact maximum is {ratios.mean():.3f} of the safe bound on average "
          f"(the safe bound is {1 / ratios.mean():.2f}x looser); range {ratios.min():.3f}..{ratios.max():.3f}")


def test_spectral_command_reads_the_safetensors_file():
    """`fp8attn spectral --csv` parses the safetensors header itself; its σ must match the SVD."""
    import os
    import subprocess

    from minilm_weights import safetensors_path

    tool = os.environ.get("FP8ATTN_TOOL")
    if not tool:
        pytest.skip("the command-line tool is not built (FP8ATTN_BUILD_TOOLS=OFF): FP8ATTN_TOOL is empty")
    out = subprocess.run([tool, "spectral", str(safetensors_path()), "--csv"], check=True, capture_output=True,
                         text=True).stdout.strip().splitlines()
    assert out[0] == "layer,head,sigma,iterations,residual"
    rows = [line.split(",") for line in out[1:]]
    assert len(rows) == NUM_LAYERS * NUM_HEADS
    worst = 0.0
    for layer in range(NUM_LAYERS):
        reference = reference_sigma(layer)
        for head in range(NUM_HEADS):
            row = rows[layer * NUM_HEADS + head]
            assert int(row[0]) == layer and int(row[1]) == head
            worst = max(worst, abs(float(row[2]) - reference[head]) / reference[head])
    print(f"fp8attn spectral: {len(rows)} heads, worst relative error vs SVD {worst:.2e}")
    assert worst <= 1e-4
