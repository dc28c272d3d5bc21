"""fp8attn.kv_append: new tokens' K and V written into a paged KV cache (the header's
fp8attn_kv_append_async, vLLM's reshape_and_cache_flash), quantized to E4M3 or rounded to BF16."""
from __future__ import annotations

import ctypes
from typing import Any

from . import _abi
from ._arrays import absent, view
from ._library import call
from .attention import default_context
from .context import Context, _enum


def kv_append(k: Any, v: Any, k_cache: Any, v_cache: Any, slot_mapping: Any, *, scale_granularity: str = "none",
              k_descale: Any = None, v_descale: Any = None, rotate: bool = False, seed: int = 0,
              stream: int | None = None, context: Context | None = None) -> None:
    """Writes token t's rows of k [tokens, heads_kv, head_dim] and v [tokens, heads_kv, head_dim_v]
    (bfloat16, float32, or float8_e4m3fn copied as it is) into page slot_mapping[t] // page_size,
    offset slot_mapping[t] % page_size of k_cache and v_cache [num_pages, page_size, heads_kv, dim]
    (float8_e4m3fn or bfloat16), in place. slot_mapping is int64 [tokens]; a negative slot skips
    its token.

    scale_granularity (E4M3 caches from bfloat16 or float32): "none" (descale 1), "head"
    (k_descale and v_descale float32 [heads_kv], read: code = round(x / descale)) or "token_head"
    (k_descale and v_descale float32 [num_pages, page_size, heads_kv], written at the slots with
    amax / 448). rotate=True multiplies K's rows by H·D first (seed picks D), as quantize(rotate=True)
    does for Q. On a CUDA context pass device arrays and the stream (an int handle, or None for
    the default stream).
    """
    ctx = context or default_context("cpu")
    args = _abi.new(_abi.KvAppendArgs)
    views = [view(k, "k"), view(v, "v"), view(k_cache, "k_cache", writable=True),
             view(v_cache, "v_cache", writable=True), view(slot_mapping, "slot_mapping")]
    args.k, args.v, args.k_cache, args.v_cache, args.slot_mapping = (w.struct for w in views)
    args.scale_granularity = _enum(_abi.KV_SCALE_GRANULARITIES, scale_granularity, "scale_granularity")
    args.rotate, args.seed = int(rotate), seed
    writable = scale_granularity == "token_head"
    for name, d in (("k_descale", k_descale), ("v_descale", v_descale)):
        if d is None:
            setattr(args, name, absent())
        else:
            w = view(d, name, writable=writable)
            views.append(w)
            setattr(args, name, w.struct)
    call("fp8attn_kv_append_async", ctx.handle, ctypes.byref(args), ctypes.c_void_p(stream) if stream else None)
    del views  # kept alive through the call
