"""Attention references in numpy, independent of the library (no use of its oracle).

- attention_fp64: exact softmax attention in FP64 on the dequantized inputs.
- accumulator_lse_slack: how far the tensor core's addition (the default) may move each LSE.
- attention_p_e4m3: the same with P̃ = exp(s − rowmax)·S_p rounded to E4M3 before the PV
  product, and the row sum taken in FP32 before the rounding. This models the FP8 error of the
  kernel's P cast (DESIGN §3, steps 3–5) without its online softmax, and sets the scale of the
  error bound, as FlashAttention-3's FP8 test does.
"""
import ml_dtypes
import numpy as np

E4M3_MAX = 448.0


def quantize_e4m3(x, heads_per_group):
    """Per-(batch, kv-head) E4M3 quantization of x [b, s, h, d]: returns (x8, descale [b, h_kv]).

    The descale maps each group's amax to 448. NOTE: ml_dtypes rounds to nearest even but does not
    saturate, so values are clipped to ±448 first, as the CUDA SATFINITE cast would.
    """
    b, _, h, _ = x.shape
    groups = x.reshape(b, x.shape[1], h // heads_per_group, heads_per_group, x.shape[3])
    amax = np.abs(groups).max(axis=(1, 3, 4))  # [b, h_kv]
    descale = (amax / E4M3_MAX).astype(np.float32)
    scale = np.repeat(1.0 / descale.astype(np.float64), heads_per_group, axis=1)  # [b, h]
    scaled = np.clip(x * scale[:, None, :, None], -E4M3_MAX, E4M3_MAX)
    return scaled.astype(ml_dtypes.float8_e4m3fn), descale


def dequantize(x8, descale, heads_per_group):
    """x8 [b, s, h, d] times its group's descale, in FP64."""
    scale = np.repeat(descale.astype(np.float64), heads_per_group, axis=1)
    return x8.astype(np.float64) * scale[:, None, :, None]


def _logits(q, k, softmax_scale, causal, window=(-1, -1)):
    """s [b, h_q, s_q, s_k] with masked entries at −inf; causal and the window (left, right; −1 =
    unbounded) aligned bottom-right: row i sees key j iff diag − left ≤ j ≤ diag + right (and j ≤
    diag when causal), diag = i + s_k − s_q. Written out here, independently of the library."""
    group = q.shape[2] // k.shape[2]
    k = np.repeat(k, group, axis=2)
    s = np.einsum("bqhd,bkhd->bhqk", q, k) * softmax_scale
    sq, sk = q.shape[1], k.shape[1]
    diag = np.arange(sq)[:, None] + (sk - sq)
    j = np.arange(sk)[None, :]
    visible = np.ones((sq, sk), dtype=bool)
    if causal:
        visible &= j <= diag
    left, right = window
    if left >= 0:
        visible &= j >= diag - left
    if right >= 0:
        visible &= j <= diag + right
    return np.where(visible[None, None], s, -np.inf)


def _finish(p, v, row_sum, rowmax, q_heads):
    group = q_heads // v.shape[2]
    v = np.repeat(v, group, axis=2)
    empty = row_sum == 0
    out = np.einsum("bhqk,bkhd->bqhd", p, v) / np.where(empty, 1.0, row_sum).transpose(0, 2, 1)[..., None]
    lse = np.where(empty, -np.inf, rowmax + np.log(np.where(empty, 1.0, row_sum)))
    return out, lse


def _rowmax(s):
    m = s.max(axis=-1)
    return np.where(np.isfinite(m), m, 0.0)  # rows with no visible key: any finite shift


def attention_fp64(q, k, v, softmax_scale, causal, window=(-1, -1)):
    """Exact attention: (out [b, s_q, h_q, d], lse [b, h_q, s_q]) in FP64, natural-log LSE."""
    s = _logits(q, k, softmax_scale, causal, window)
    m = _rowmax(s)
    p = np.exp(s - m[..., None])
    return _finish(p, v, p.sum(axis=-1), m, q.shape[2])


def attention_p_e4m3(q, k, v, softmax_scale, causal, p_scale=256.0, window=(-1, -1)):
    """Attention whose P̃ = exp(s − rowmax)·p_scale is rounded to E4M3 before P·V (FP32 row sum
    of the unrounded P̃): returns out [b, s_q, h_q, d] in FP64."""
    s = _logits(q, k, softmax_scale, causal, window)
    m = _rowmax(s)
    p_tilde = (np.exp(s - m[..., None]) * p_scale).astype(np.float32)
    row_sum = p_tilde.sum(axis=-1, dtype=np.float32).astype(np.float64)
    p8 = np.clip(p_tilde, -E4M3_MAX, E4M3_MAX).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
    out, _ = _finish(p8, v, row_sum, m + np.log(p_scale), q.shape[2])
    return out


def accumulator_lse_slack(q, k, softmax_scale, causal, mantissa_bits=13):
    """What the tensor core's addition (the default accumulator_model) may move each row's LSE by:
    [b, h_q, s_q], for E4M3 inputs.

    Per instruction of 32 products, each of its 33 addends is cut toward zero by less than
    2^(E − 13), 2^E being at most max(8·max|q·k|, |accumulator|) (8: an E4M3 subnormal counts at
    2^-6 though it may be 2^-9), the accumulator at most Σ_d |q·k| plus the error so far; the sum is
    then cut by less than 2^-13 of itself. A logit takes head_dim/32 instructions, and a
    log-sum-exp moves by at most its largest logit's change. Rows with no visible key get 0.
    """
    magnitude = _logits(np.abs(q), np.abs(k), softmax_scale, causal)  # masked entries are −inf
    top = _logits(np.abs(q).max(axis=3, keepdims=True), np.abs(k).max(axis=3, keepdims=True), softmax_scale, causal)
    magnitude = np.where(np.isfinite(magnitude), magnitude, 0.0)
    top = np.where(np.isfinite(top), top, 0.0)
    unit = 2.0 ** -mantissa_bits
    err = np.zeros_like(magnitude)
    for _ in range(q.shape[3] // 32):
        cut = 33 * unit * np.maximum(8.0 * top, magnitude + err)
        err = err + cut + unit * (magnitude + err + cut)
    return err.max(axis=-1)
