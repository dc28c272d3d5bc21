"""P-underflow prediction, spectral norms of the QK interaction matrices and the logit bound."""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from . import _abi
from ._arrays import view
from ._library import call
from .attention import default_context
from .context import Context, _enum

_f32p = ctypes.POINTER(ctypes.c_float)


def predict_p_underflow(sink_strength: float, k_sink: int, seqlen_k: int, *, p_scale: float = 256.0,
                        kv_order: str = "reverse", block_n: int = 128) -> tuple[float, float]:
    """(leading_order, expected): the predicted fraction of non-sink P̃ whose E4M3 cast is 0 under
    the sink model (k_sink keys at logit Δ + z, the rest z, z ~ N(0, 1))."""
    model = _abi.new(_abi.SinkModel)
    model.sink_strength, model.k_sink, model.p_scale = sink_strength, k_sink, p_scale
    model.kv_order, model.block_n, model.seqlen_k = _enum(_abi.KV_ORDERS, kv_order, "kv_order"), block_n, seqlen_k
    lead, expected = ctypes.c_double(), ctypes.c_double()
    call("fp8attn_predict_p_underflow", ctypes.byref(model), ctypes.byref(lead), ctypes.byref(expected))
    return lead.value, expected.value


def qk_spectral_norms(wq: Any, wk: Any, num_heads_q: int, num_heads_kv: int, head_dim: int, *,
                      max_iterations: int = 0, tolerance: float = 0.0, seed: int = 0,
                      warm_start: np.ndarray | None = None, wq_descale: float = 0.0, wk_descale: float = 0.0,
                      return_details: bool = False, context: Context | None = None) -> Any:
    """σ_h = ‖W_Q,hᵀ·W_K,g(h)‖₂ per query head, float32 [num_heads_q].

    wq [num_heads_q·head_dim, d_model], wk [num_heads_kv·head_dim, d_model]: float32, bfloat16 or
    float8_e4m3fn. warm_start (float32 [num_heads_q·head_dim], zeros at first) is updated in place.
    With return_details, returns (sigma, iterations int32 [heads], residuals float32 [heads]).
    """
    ctx = context or default_context("cpu")
    vq, vk = view(wq, "wq"), view(wk, "wk")
    d_model = vq.shape[-1]
    nbytes = ctypes.c_size_t()
    call("fp8attn_qk_spectral_norms_workspace_size", ctx.handle, num_heads_q, num_heads_kv, head_dim, d_model,
         ctypes.byref(nbytes))
    opts = _abi.new(_abi.PowerIterationOptions)
    opts.max_iterations, opts.tolerance, opts.seed = max_iterations, tolerance, seed
    opts.wq_descale, opts.wk_descale = wq_descale, wk_descale
    iterations = np.zeros(num_heads_q, dtype=np.int32)
    residuals = np.zeros(num_heads_q, dtype=np.float32)
    opts.iterations_out = iterations.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
    opts.residual_out = residuals.ctypes.data_as(_f32p)
    if warm_start is not None:
        if warm_start.dtype != np.float32 or warm_start.size != num_heads_q * head_dim or \
                not warm_start.flags.c_contiguous or not warm_start.flags.writeable:
            raise ValueError("warm_start must be a writable, contiguous float32 array of num_heads_q·head_dim")
        opts.warm_start = warm_start.ctypes.data_as(_f32p)
    sigma = np.empty(num_heads_q, dtype=np.float32)
    workspace = np.empty(max(nbytes.value, 1) + 64, dtype=np.uint8)
    ws = workspace.ctypes.data + (-workspace.ctypes.data) % 64
    call("fp8attn_qk_spectral_norms", ctx.handle, ctypes.byref(vq.struct), ctypes.byref(vk.struct), num_heads_q,
         num_heads_kv, head_dim, ctypes.byref(opts), sigma.ctypes.data_as(_f32p), ws, nbytes.value, None)
    return (sigma, iterations, residuals) if return_details else sigma


def logit_bound(sigma: np.ndarray, head_dim: int, token_norm_bound: float, alpha: float = 1.0) -> tuple[float, float]:
    """(L, 448 / L): the logit bound α·max σ·B_X²/√d_h and the FP8 logit scale."""
    s = np.ascontiguousarray(sigma, dtype=np.float32)
    bound, scale = ctypes.c_float(), ctypes.c_float()
    call("fp8attn_logit_bound", s.ctypes.data_as(_f32p), s.size, head_dim, token_norm_bound, alpha,
         ctypes.byref(bound), ctypes.byref(scale))
    return bound.value, scale.value
