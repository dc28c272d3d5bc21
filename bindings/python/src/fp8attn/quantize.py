"""fp8attn.quantize: BF16 or F32 to E4M3 with per-tensor, per-head or per-block descales and
optional incoherent processing (the header's fp8attn_quantize)."""
from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np

from . import _abi
from ._arrays import binding_error, empty_like_library, view
from ._library import call
from .attention import _host_ints, default_context
from .context import Context, _enum


def quantize(x: Any, *, granularity: str = "tensor", block_rows: int = 0, head_group: int = 1, rotate: bool = False,
             seed: int = 0, margin: int = 0, leading_rows: int = 0, cu_seqlens: Any = None, out: Any = None,
             descale: Any = None, context: Context | None = None) -> tuple[Any, Any, float]:
    """Returns (x8 float8_e4m3fn of x's shape, float32 descales, amax of the whole tensor).

    x is [batch, seqlen, heads, head_dim], or packed [total, heads, head_dim] with cu_seqlens.
    granularity "tensor": descale [1]; "head": [batch, heads / head_group]; "block":
    [batch, heads / head_group, blocks] with blocks of `block_rows` rows (after `leading_rows`).
    rotate=True multiplies each head-dim vector by H·D (seed picks D) before the cast: use it for Q
    and K with one seed, never for V. Outputs missing are allocated with x's array library.
    """
    vx = view(x, "x")
    ctx = context or default_context("cpu")
    options = _abi.new(_abi.QuantizeOptions)
    options.granularity = _enum(_abi.GRANULARITIES, granularity, "granularity")
    options.block_rows, options.head_group, options.rotate = block_rows, head_group, int(rotate)
    options.seed, options.margin, options.leading_rows = seed, margin, leading_rows
    keep: list[Any] = [vx]
    cu = None
    if cu_seqlens is not None:
        cu = view(cu_seqlens, "cu_seqlens")
        keep.append(cu)
        bounds = _host_ints(cu, "cu_seqlens")
        batch, max_seqlen = len(bounds) - 1, int(np.max(np.diff(bounds), initial=0))
    elif len(vx.shape) == 4:
        batch, max_seqlen = vx.shape[0], vx.shape[1]
    else:
        raise binding_error("FP8ATTN_STATUS_BAD_SHAPE", f"x must be [batch, seqlen, heads, head_dim] or packed "
                                                        f"with cu_seqlens, got shape {vx.shape}")
    heads = vx.shape[-2]
    groups = heads // max(head_group, 1)
    if granularity == "tensor":
        descale_shape: tuple[int, ...] = (1,)
    elif granularity == "head":
        descale_shape = (batch, groups)
    else:
        rows = max(block_rows, 1)
        if leading_rows > 0:
            blocks = 1 + (math.ceil((max_seqlen - leading_rows) / rows) if max_seqlen > leading_rows else 0)
        else:
            blocks = math.ceil(max_seqlen / rows)
        descale_shape = (batch, groups, max(blocks, 1))
    if out is None:
        out = empty_like_library(vx, vx.shape, "float8_e4m3fn")
    if descale is None:
        descale = empty_like_library(vx, descale_shape, "float32")
    vo, vd = view(out, "out", writable=True), view(descale, "descale", writable=True)
    keep += [vo, vd]
    amax = ctypes.c_float()
    call("fp8attn_quantize", ctx.handle, ctypes.byref(vx.struct), ctypes.byref(cu.struct) if cu else None,
         ctypes.byref(options), ctypes.byref(vo.struct), ctypes.byref(vd.struct), ctypes.byref(amax))
    return out, descale, amax.value
