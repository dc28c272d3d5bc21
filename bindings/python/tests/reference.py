"""FP64 attention in numpy, independent of the library: exact, and with P̃ rounded to the
kernel's P dtype (E4M3 with S_p, or BF16) to size the FP8 error bound."""
import ml_dtypes
import numpy as np


def _logits(q, k, causal, window):
    """q [b, sq, hq, d], k [b, sk, hkv, d] in FP64 -> s [b, hq, sq, sk], masked at −inf."""
    group = q.shape[2] // k.shape[2]
    s = np.einsum("bqhd,bkhd->bhqk", q, np.repeat(k, group, axis=2)) / np.sqrt(q.shape[3])
    sq, sk = q.shape[1], k.shape[1]
    diag = np.arange(sq)[:, None] + (sk - sq)  # bottom-right aligned
    j = np.arange(sk)[None, :]
    visible = np.ones((sq, sk), bool)
    if causal:
        visible &= j <= diag
    if window is not None:
        left, right = window
        if left >= 0:
            visible &= j >= diag - left
        if right >= 0:
            visible &= j <= diag + right
    return np.where(visible, s, -np.inf)


def attention(q, k, v, causal=False, window=None, p_round=None):
    """(out [b, sq, hq, d], lse [b, hq, sq]). p_round: None (exact), "e4m3" (P̃·256 to E4M3) or
    "bf16" (P̃ to BF16), the row sum staying unrounded as in the kernel."""
    s = _logits(q, k, causal, window)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - m)
    row = p.sum(axis=-1)
    if p_round == "e4m3":
        p = np.clip(p * 256, 0, 448).astype(np.float32).astype(ml_dtypes.float8_e4m3fn).astype(np.float64) / 256
    elif p_round == "bf16":
        p = p.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)
    group = q.shape[2] // v.shape[2]
    o = np.einsum("bhqk,bkhd->bqhd", p, np.repeat(v, group, axis=2))
    empty = row == 0
    o = o / np.where(empty, 1, row).transpose(0, 2, 1)[..., None]
    lse = np.where(empty, -np.inf, m[..., 0] + np.log(np.where(empty, 1, row)))
    return o, lse


def accumulator_lse_slack(q, k, causal=False, window=None, mantissa_bits=13):
    """How far the tensor core's addition (the default accumulator_model) may move each LSE of an
    E4M3 forward: [b, hq, sq].

    Per 32-deep instruction each of its 33 addends is cut toward zero by less than 2^(E − 13),
    2^E at most max(8·max|q·k|, |accumulator|) (8: an E4M3 subnormal counts at 2^-6), the
    accumulator at most Σ_d |q·k| plus the error so far; the sum is then cut by less than 2^-13 of
    itself. A logit takes head_dim/32 instructions, and an LSE moves by at most its largest
    logit's change. Rows without keys get 0."""
    magnitude = _logits(np.abs(q), np.abs(k), causal, window)
    top = _logits(np.abs(q).max(axis=3, keepdims=True), np.abs(k).max(axis=3, keepdims=True), causal, window)
    magnitude = np.where(np.isfinite(magnitude), magnitude, 0.0)
    top = np.where(np.isfinite(top), top, 0.0)
    unit = 2.0 ** -mantissa_bits
    err = np.zeros_like(magnitude)
    for _ in range(q.shape[3] // 32):
        cut = 33 * unit * np.maximum(8.0 * top, magnitude + err)
        err = err + cut + unit * (magnitude + err + cut)
    return err.max(axis=-1)


def attention_backward(q, k, v, dout, causal=False, window=None):
    """FP64 (dq, dk, dv) of L = Σ dout∘out for out = attention(q, k, v): dP = dO·Vᵀ,
    D = rowsum(dO∘O), dS = P∘(dP − D), dQ = dS·K/√d, dK = dSᵀ·Q/√d, dV = Pᵀ·dO; GQA sums dk and dv
    over each KV head's query heads."""
    s = _logits(q, k, causal, window)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(s - m)
    row = e.sum(axis=-1, keepdims=True)
    p = e / np.where(row == 0, 1, row)  # [b, hq, sq, sk]
    group = q.shape[2] // v.shape[2]
    kr, vr = np.repeat(k, group, axis=2), np.repeat(v, group, axis=2)
    o = np.einsum("bhqk,bkhd->bqhd", p, vr)
    dp = np.einsum("bqhd,bkhd->bhqk", dout, vr)
    delta = np.einsum("bqhd,bqhd->bhq", dout, o)[..., None]
    ds = p * (dp - delta) / np.sqrt(q.shape[3])
    dq = np.einsum("bhqk,bkhd->bqhd", ds, kr)
    dk = np.einsum("bhqk,bqhd->bkhd", ds, q)
    dv = np.einsum("bhqk,bqhd->bkhd", p, dout)
    b, sk, hkv, d = k.shape
    return dq, dk.reshape(b, sk, hkv, group, d).sum(axis=3), dv.reshape(b, sk, hkv, group, d).sum(axis=3)
