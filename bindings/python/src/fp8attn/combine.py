"""fp8attn.attention_combine: merges partial attention results over disjoint key sets (split-KV,
a shared prefix and a suffix, context-parallel shards) with their log-sum-exps (the header's
fp8attn_attention_combine)."""
from __future__ import annotations

import ctypes
from typing import Any

from . import _abi
from ._arrays import binding_error, empty_like_library, view
from ._library import call
from .attention import _workspace, default_context
from .context import Context


def attention_combine(partial_out: Any, partial_lse: Any, *, out: Any = None, lse: Any = None,
                      return_lse: bool = False, out_dtype: str | None = None, context: Context | None = None,
                      stream: int | None = None) -> Any:
    """Returns out [tokens, heads, head_dim] (then lse [tokens, heads] when `return_lse` or `lse`
    is given), merged from partial_out [num_parts, tokens, heads, head_dim] (float32 or
    bfloat16) and partial_lse float32 [num_parts, tokens, heads] (natural log; -inf marks a part
    with no visible key, whose output is not read), 1 to 256 parts, any strides:
    lse = log Σ_p exp(lse_p), out = Σ_p exp(lse_p − lse)·O_p, in FP32 and in part order.
    A row whose parts are all empty gets out 0 and lse -inf. `out_dtype` ("float32" or
    "bfloat16") defaults to partial_out's; missing outputs are allocated with partial_out's array
    library on its device. A forward's lse is [heads, tokens]: stack and transpose it
    (np.stack(lses).transpose(0, 2, 1)); the call reads strides, nothing is copied."""
    vo, vl = view(partial_out, "partial_out", stream=stream), view(partial_lse, "partial_lse", stream=stream)
    if len(vo.shape) != 4:
        raise binding_error("FP8ATTN_STATUS_BAD_SHAPE", f"partial_out must be [num_parts, tokens, heads, head_dim], "
                                                        f"got shape {vo.shape}")
    ctx = context or default_context("cpu")
    want_lse = return_lse or lse is not None
    if out is None:
        out = empty_like_library(vo, vo.shape[1:], out_dtype or vo.dtype)
    if want_lse and lse is None:
        lse = empty_like_library(vo, vo.shape[1:3], "float32")
    args = _abi.new(_abi.CombineArgs)
    vout = view(out, "out", writable=True, stream=stream)
    args.partial_out, args.partial_lse, args.out = vo.struct, vl.struct, vout.struct
    keep: list[Any] = [vo, vl, vout]
    if want_lse:
        vlse = view(lse, "lse", writable=True, stream=stream)
        args.lse = vlse.struct
        keep.append(vlse)
    nbytes = ctypes.c_size_t()
    call("fp8attn_attention_combine_workspace_size", ctx.handle, ctypes.byref(args), ctypes.byref(nbytes))
    ws, ws_keep = _workspace(nbytes.value, ctx.backend, vo)
    call("fp8attn_attention_combine", ctx.handle, ctypes.byref(args), ws, nbytes.value,
         ctypes.c_void_p(stream) if stream else None)
    del ws_keep, keep
    return (out, lse) if want_lse else out
