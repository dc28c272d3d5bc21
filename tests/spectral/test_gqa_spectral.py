"""Llama-like GQA shapes (d_model 4096, 32 query heads, 8 KV heads, d_h 128) with random weights
of a decaying spectrum. Reference σ_h from thin QR factors (W_Q,hᵀ = Q_q·R_q, W_K,gᵀ = Q_k·R_k,
so σ_h = ‖R_q·R_kᵀ‖₂), an algorithm independent of the library's Gram power iteration."""
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
    group = HEADS_Q // HEADS_KV
    r_k = [np.linalg.qr(wk[g * HEAD_DIM:(g + 1) * HEAD_DIM].astype(np.float64).T, mode="r") for g in range(HEADS_KV)]
    out = []
    for h in range(HEADS_Q):
        r_q = np.linalg.qr(wq[h * HEAD_DIM:(h + 1) * HEAD_DIM].astype(np.float64).T, mode="r")
        out.append(np.linalg.svd(r_q @ r_k[h // group].T, compute_uv=False)[0])
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
