"""Causal single-head attention in FP64 NumPy for the training run: the exact forward (the
oracle the run compares against) and the FlashAttention backward from a given O and LSE,
D = rowsum(dO∘O), P = exp(S·scale − LSE), dV = Pᵀ dO, dP = dO Vᵀ, dS = P∘(dP − D),
dQ = dS K·scale, dK = dSᵀ Q·scale. Arrays are [batch, seq, dim]."""
import numpy as np


def _scores(q, k):
    scale = 1.0 / np.sqrt(q.shape[-1])
    s = np.einsum("bid,bjd->bij", q, k) * scale
    t = q.shape[1]
    s[:, np.triu(np.ones((t, t), dtype=bool), 1)] = -np.inf
    return s, scale


def forward(q, k, v):
    """Exact O and LSE (natural log) in FP64."""
    s, _ = _scores(q, k)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m)
    l = p.sum(axis=-1, keepdims=True)
    return np.einsum("bij,bjd->bid", p / l, v), (m + np.log(l))[..., 0]


def backward(q, k, v, o, lse, d_o):
    """dQ, dK, dV from the forward's O and LSE (O enters through D = rowsum(dO∘O))."""
    s, scale = _scores(q, k)
    p = np.exp(s - lse[..., None])
    dv = np.einsum("bij,bid->bjd", p, d_o)
    dp = np.einsum("bid,bjd->bij", d_o, v)
    d = (d_o * o).sum(axis=-1, keepdims=True)
    ds = p * (dp - d)
    return np.einsum("bij,bjd->bid", ds, k) * scale, np.einsum("bij,bid->bjd", ds, q) * scale, dv


def tied_row_fraction(q, k):
    """The fraction of query rows whose maximum logit is reached by two or more keys."""
    s, _ = _scores(q, k)
    return float(((s == s.max(axis=-1, keepdims=True)).sum(axis=-1) >= 2).mean())
