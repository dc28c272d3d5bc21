"""Llama-like GQA shapes (d_model 4096, 32 query heads, 8 KV heads, d_h 128) with random weights
of a decaying spectrum. Reference σ_h by a direct method in float64 (Cholesky of G_Q,h and
LAPACK's symmetric eigensolver), independent of the library's FP32 Grams and power iteration."""
import numpy as np

from fp8attn_spectral_ctypes import Spectral

D_MODEL, HEADS_Q, HEADS_KV, HEAD_DIM = 4096, 32, 8, 128
SEED = 1234


def decaying_weights(rows, rng, rank=256):
    """W = A·diag(s)·B/√d + small noise, with s_i = exp(−i/48): a trained-like decaying spectrum."""
    a = rng.standard_normal((rows, rank), dtype=np.float32)
    b = rng.standard_normal((rank, D_MODEL), dtype=np.float32)
    s = np.exp(-np.arange(rank, dtype=np.float32) / 48.0)
    w = (a * s) @ b / np.float32(np.sqrt(D_MODEL))
    w += np.float32(0.01) * rng.standard_normal((rows, D_MODEL), dtype=np.float32)
    return np.ascontiguousarray(w, dtype=np.float32)


def make_llama_like_weights(seed=SEED):
    rng = np.random.default_rng(seed)
    return decaying_weights(HEADS_Q * HEAD_DIM, rng), decaying_weights(HEADS_KV * HEAD_DIM, rng)


def reference_sigma(wq, wk):
    """σ_h² = λ_max(L_qᵀ·G_K,g·L_q) with G_Q,h = L_q·L_qᵀ (Cholesky), in float64 with LAPACK's
    symmetric eigensolver: the same spectrum as M_hᵀ·M_h, by a direct method."""
    group = HEADS_Q // HEADS_KV
    q64, k64 = wq.astype(np.float64), wk.astype(np.float64)
    g_k = [k64[g * HEAD_DIM:(g + 1) * HEAD_DIM] @ k64[g * HEAD_DIM:(g + 1) * HEAD_DIM].T for g in range(HEADS_KV)]
    out = []
    for h in range(HEADS_Q):
        rows = q64[h * HEAD_DIM:(h + 1) * HEAD_DIM]
        l_q = np.linalg.cholesky(rows @ rows.T)
        out.append(np.sqrt(np.linalg.eigvalsh(l_q.T @ g_k[h // group] @ l_q)[-1]))
    return np.array(out)


def test_llama_gqa_shapes_match_reference():
    print(f"seed {SEED}")
    wq, wk = make_llama_like_weights()
    spectral = Spectral()
    try:
        sigma, iterations, residual = spectral.sigma(wq, wk, HEADS_Q, HEADS_KV, HEAD_DIM)
    finally:
        spectral.close()
    reference = reference_sigma(wq, wk)
    rel = np.abs(sigma - reference) / reference
    print(f"sigma range {sigma.min():.4f}..{sigma.max():.4f}; rel err max {rel.max():.2e}; "
          f"iterations {iterations.min()}..{iterations.max()} (mean {iterations.mean():.1f}); "
          f"residual max {residual.max():.1e}")
    assert rel.max() <= 1e-4
