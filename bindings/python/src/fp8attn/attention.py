"""fp8attn.attention: one forward call on arrays, modelled on FlashAttention-3's
`flash_attn_func` (padded [batch, seqlen, heads, head_dim]) and `flash_attn_varlen_func` (packed
[total, heads, head_dim] with cu_seqlens)."""
from __future__ import annotations

import ctypes
import threading
from typing import Any, Sequence

import numpy as np

from . import _abi
from ._arrays import View, absent, binding_error, descale_view, empty_like_library, view
from ._library import call
from .context import Context, Plan

_contexts: dict[str, Context] = {}
_contexts_lock = threading.Lock()


def default_context(backend: str) -> Context:
    """The shared context of a backend that attention() and friends use (created once)."""
    with _contexts_lock:
        ctx = _contexts.get(backend)
        if ctx is None:
            ctx = _contexts[backend] = Context(backend)
        return ctx


def _host_ints(v: View, name: str) -> np.ndarray:
    """A host int32 tensor's values (cu_seqlens), to size the problem."""
    if v.device != "host" or v.dtype != "int32" or len(v.shape) != 1:
        raise binding_error("FP8ATTN_STATUS_BAD_SHAPE", f"{name} must be a host int32 vector to infer max_seqlen; "
                                                        "pass max_seqlen_q/max_seqlen_k for device tensors")
    n, stride = v.shape[0], v.struct.stride[0]
    base = ctypes.cast(v.struct.data, ctypes.POINTER(ctypes.c_int32))
    return np.array([base[i * stride] for i in range(n)], dtype=np.int64)


def _workspace(nbytes: int, backend: str, like: View) -> tuple[int, Any]:
    """Scratch in the memory of the plan's backend (not of the inputs, which the library checks)."""
    if nbytes == 0:
        return 0, None
    if backend != "cuda":
        raw = np.empty(nbytes + 64, dtype=np.uint8)  # NOTE: aligned to 64 bytes for the CPU engine's vectors
        offset = (-raw.ctypes.data) % 64
        return raw.ctypes.data + offset, raw
    import torch  # a CUDA workspace needs a device allocator; torch is the one this binding knows

    buf = torch.empty(nbytes, dtype=torch.uint8, device=like.source.device)
    return buf.data_ptr(), buf


def forward_with_plan(plan: Plan, q: Any, k: Any, v: Any, *, out: Any = None, lse: Any = None,
                      return_lse: bool = False, descales: Sequence[Any] | None = None,
                      block_descales: Sequence[Any] | None = None, cu_seqlens_q: Any = None,
                      cu_seqlens_k: Any = None, max_seqlen_q: int | None = None, max_seqlen_k: int | None = None,
                      stream: int | None = None, out_scale: float | None = None, return_amax_o: bool = False,
                      scale_state: Any = None, scale_state_layer: int = 0, block_table: Any = None,
                      seqused_k: Any = None, kv_scale_granularity: str = "none",
                      kv_descales: Sequence[Any] | None = None) -> Any:
    """Runs the plan. Returns out, then lse when `return_lse` (or `lse` is given), then the
    telemetry dict when the plan was made with telemetry=True, then max |O| (a float, before the
    output scale and the cast) when `return_amax_o`. Missing outputs are allocated with q's array
    library on q's device.

    Training options (the CPU backend only): `out_scale` is the output scale of a plan with
    output_dtype="float8_e4m3fn" (out = E4M3(O · out_scale), saturating). `scale_state` (a
    ScaleState) and `scale_state_layer` make the call read the Q, K, V descales and the E4M3 output
    scale from that layer of the state, and report the amaxes of O and of the scaled logits into
    it after success; per-tensor `descales` and `out_scale` are then refused by the library.

    A paged KV cache (a plan with page_size ≥ 1): k and v are the caches [num_pages, page_size,
    heads_kv, head_dim], `block_table` int32 [batch, max_pages_per_seq] lists each sequence's
    pages, `seqused_k` int32 [batch] its keys (max_seqlen_k: their bound, from seqused_k when it
    is host memory); q is padded [batch, seqlen_q, ...] or packed with cu_seqlens_q alone.
    `kv_scale_granularity` "head" (float32 [heads_kv]) or "token_head" (float32 [num_pages,
    page_size, heads_kv]) names the layout of `kv_descales` = (k's, v's)."""
    vq, vk, vv = view(q, "q", stream=stream), view(k, "k", stream=stream), view(v, "v", stream=stream)
    heads_q, dim_v = vq.shape[-2], vv.shape[-1]
    args = _abi.new(_abi.AttentionArgs)
    keep: list[Any] = [vq, vk, vv]
    args.k, args.v = vk.struct, vv.struct
    if block_table is not None or seqused_k is not None:
        return _forward_paged(plan, vq, vk, vv, args, keep, out=out, lse=lse, return_lse=return_lse,
                              descales=descales, cu_seqlens_q=cu_seqlens_q, max_seqlen_q=max_seqlen_q,
                              max_seqlen_k=max_seqlen_k, stream=stream, block_table=block_table,
                              seqused_k=seqused_k, granularity=kv_scale_granularity, kv_descales=kv_descales,
                              block_descales=block_descales, out_scale=out_scale, return_amax_o=return_amax_o,
                              scale_state=scale_state, scale_state_layer=scale_state_layer)
    packed = cu_seqlens_q is not None or cu_seqlens_k is not None
    if packed:
        if cu_seqlens_q is None or cu_seqlens_k is None:
            raise binding_error("FP8ATTN_STATUS_INVALID_ARGUMENT",
                                "cu_seqlens_q and cu_seqlens_k come together")
        cq, ck = view(cu_seqlens_q, "cu_seqlens_q"), view(cu_seqlens_k, "cu_seqlens_k")
        keep += [cq, ck]
        args.cu_seqlens_q, args.cu_seqlens_k = cq.struct, ck.struct
        batch = cq.shape[0] - 1
        if max_seqlen_q is None:
            max_seqlen_q = int(np.max(np.diff(_host_ints(cq, "cu_seqlens_q")), initial=0))
        if max_seqlen_k is None:
            max_seqlen_k = int(np.max(np.diff(_host_ints(ck, "cu_seqlens_k")), initial=0))
        out_shape: tuple[int, ...] = (vq.shape[0], heads_q, dim_v)
        lse_shape: tuple[int, ...] = (heads_q, vq.shape[0])
        heads_kv = vk.shape[-2]
    else:
        if len(vq.shape) != 4:
            raise binding_error("FP8ATTN_STATUS_BAD_SHAPE", f"q must be [batch, seqlen, heads, head_dim], "
                                                            f"got shape {vq.shape} (packed q needs cu_seqlens)")
        batch, max_seqlen_q, max_seqlen_k = vq.shape[0], vq.shape[1], vk.shape[1]
        out_shape, lse_shape = (batch, vq.shape[1], heads_q, dim_v), (batch, heads_q, vq.shape[1])
        heads_kv = vk.shape[2]
    return _run(plan, vq, args, keep, batch=batch, heads_kv=heads_kv, out=out, lse=lse, return_lse=return_lse,
                out_shape=out_shape, lse_shape=lse_shape, descales=descales, block_descales=block_descales,
                max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k, stream=stream, out_scale=out_scale,
                return_amax_o=return_amax_o, scale_state=scale_state, scale_state_layer=scale_state_layer)


def _forward_paged(plan: Plan, vq: View, vk: View, vv: View, args: _abi.AttentionArgs, keep: list[Any], *,
                   block_table: Any, seqused_k: Any, granularity: str, kv_descales: Sequence[Any] | None,
                   cu_seqlens_q: Any, max_seqlen_q: int | None, max_seqlen_k: int | None, stream: int | None,
                   **outputs: Any) -> Any:
    """forward_with_plan over a paged cache: the fp8attn_paged_kv chained on args.next."""
    if block_table is None or seqused_k is None:
        raise binding_error("FP8ATTN_STATUS_INVALID_ARGUMENT", "block_table and seqused_k come together")
    if granularity not in _abi.KV_SCALE_GRANULARITIES:
        raise binding_error("FP8ATTN_STATUS_BAD_OPTION", f"kv_scale_granularity must be one of "
                                                         f"{sorted(_abi.KV_SCALE_GRANULARITIES)}, got {granularity!r}")
    paged = _abi.new(_abi.PagedKv)
    paged.struct_type = _abi.STRUCT_TYPE_PAGED_KV
    paged.scale_granularity = _abi.KV_SCALE_GRANULARITIES[granularity]
    vt, vs = view(block_table, "block_table", stream=stream), view(seqused_k, "seqused_k", stream=stream)
    paged.k_cache, paged.v_cache, paged.block_table, paged.seqused_k = vk.struct, vv.struct, vt.struct, vs.struct
    keep += [vt, vs, paged]
    for name, d in zip(("k_descale", "v_descale"), kv_descales or (None, None)):
        if d is not None:
            dv = view(d, name, stream=stream)
            setattr(paged, name, dv.struct)
            keep.append(dv)
    if max_seqlen_k is None:
        max_seqlen_k = int(np.max(_host_ints(vs, "seqused_k"), initial=0))
    paged.max_seqlen_k = max_seqlen_k
    args.k, args.v = absent(), absent()
    args.next = ctypes.cast(ctypes.pointer(paged), ctypes.c_void_p)
    heads_q, dim_v, heads_kv = vq.shape[-2], vv.shape[-1], vk.shape[-2]
    if cu_seqlens_q is not None:
        cq = view(cu_seqlens_q, "cu_seqlens_q")
        keep.append(cq)
        args.cu_seqlens_q = cq.struct
        batch = cq.shape[0] - 1
        if max_seqlen_q is None:
            max_seqlen_q = int(np.max(np.diff(_host_ints(cq, "cu_seqlens_q")), initial=0))
        out_shape: tuple[int, ...] = (vq.shape[0], heads_q, dim_v)
        lse_shape: tuple[int, ...] = (heads_q, vq.shape[0])
    else:
        if len(vq.shape) != 4:
            raise binding_error("FP8ATTN_STATUS_BAD_SHAPE", f"q must be [batch, seqlen, heads, head_dim], "
                                                            f"got shape {vq.shape} (packed q needs cu_seqlens_q)")
        batch, max_seqlen_q = vq.shape[0], vq.shape[1]
        out_shape, lse_shape = (batch, vq.shape[1], heads_q, dim_v), (batch, heads_q, vq.shape[1])
    return _run(plan, vq, args, keep, batch=batch, heads_kv=heads_kv, out_shape=out_shape, lse_shape=lse_shape,
                max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k, stream=stream, **outputs)


def _run(plan: Plan, vq: View, args: _abi.AttentionArgs, keep: list[Any], *, batch: int, heads_kv: int, out: Any,
         lse: Any, return_lse: bool, out_shape: tuple[int, ...], lse_shape: tuple[int, ...],
         descales: Sequence[Any] | None, max_seqlen_q: int, max_seqlen_k: int, stream: int | None,
         block_descales: Sequence[Any] | None = None, out_scale: float | None = None, return_amax_o: bool = False,
         scale_state: Any = None, scale_state_layer: int = 0) -> Any:
    """Outputs, descales and the call, shared by the contiguous and the paged forward."""
    want_lse = return_lse or lse is not None
    if out is None:
        out = empty_like_library(vq, out_shape, _out_dtype(plan))
    if want_lse and lse is None:
        lse = empty_like_library(vq, lse_shape, "float32")
    vo = view(out, "out", writable=True, stream=stream)
    args.q, args.out = vq.struct, vo.struct
    keep.append(vo)
    if want_lse:
        vl = view(lse, "lse", writable=True, stream=stream)
        args.lse = vl.struct
        keep.append(vl)
    for name, d in zip(("q_descale", "k_descale", "v_descale"), descales or (None, None, None)):
        dv = descale_view(d, name, (batch, heads_kv), vq)
        setattr(args, name, dv.struct if dv else absent())
        keep.append(dv)
    for name, d in zip(("q_block_descale", "k_block_descale", "v_block_descale"), block_descales or (None,) * 3):
        if d is not None:
            bv = view(d, name)
            setattr(args, name, bv.struct)
            keep.append(bv)
    for t in keep:
        # The ABI's tensors name no device ordinal: the context's is the one the library uses.
        if isinstance(t, View) and t.device == "cuda" and t.device_id != plan.context.device_ordinal:
            raise binding_error("FP8ATTN_STATUS_BAD_DEVICE", f"a tensor is on CUDA device {t.device_id}, the "
                                                             f"context on device {plan.context.device_ordinal}")
    _training_options(args, keep, out_scale, scale_state, scale_state_layer)
    amax_o = ctypes.c_float(float("nan")) if return_amax_o else None
    if amax_o is not None:
        args.amax_o = ctypes.pointer(amax_o)
    tele = None
    if plan.desc.telemetry:
        tele = _abi.new(_abi.Telemetry)
        args.telemetry = ctypes.pointer(tele)
    nbytes = plan.workspace_size(max(batch, 1), max(max_seqlen_q, 1), max(max_seqlen_k, 1))
    ws, ws_keep = _workspace(nbytes, plan.context.backend, vq)
    call("fp8attn_attention_forward", plan.handle, ctypes.byref(args), ws, nbytes,
         ctypes.c_void_p(stream) if stream else None)
    del ws_keep, keep
    result: list[Any] = [out]
    if want_lse:
        result.append(lse)
    if tele is not None:
        result.append({"p_positive": tele.p_positive, "p_underflow": tele.p_underflow,
                       "max_abs_scaled_logit": tele.max_abs_scaled_logit})
    if amax_o is not None:
        result.append(amax_o.value)
    return result[0] if len(result) == 1 else tuple(result)


def _training_options(args: _abi.AttentionArgs, keep: list[Any], out_scale: float | None, scale_state: Any,
                      layer: int) -> None:
    """Sets args.out_scale and the scale state; the library checks their combinations (it names
    the field in its message), so none is refused here."""
    if out_scale is not None:
        scale = ctypes.c_float(out_scale)
        keep.append(scale)
        args.out_scale = ctypes.pointer(scale)
    if scale_state is not None:
        keep.append(scale_state)  # the state must outlive the call
        args.scale_state = scale_state.handle
    args.scale_state_layer = layer


def backward_with_plan(plan: Plan, q: Any, k: Any, v: Any, out: Any, dout: Any, lse: Any, *, dq: Any = None,
                       dk: Any = None, dv: Any = None, cu_seqlens_q: Any = None, cu_seqlens_k: Any = None,
                       max_seqlen_q: int | None = None, max_seqlen_k: int | None = None, deterministic: bool = True,
                       dq_dtype: str = "bfloat16", stream: int | None = None) -> tuple[Any, Any, Any]:
    """Gradients (dq, dk, dv) of attention for a plan with bfloat16 inputs, given the forward's
    q, k, v, out and lse (forward_with_plan(..., return_lse=True)) and dout, the loss's gradient
    with respect to out. Layouts are the forward's (padded, or packed with cu_seqlens); the plan's
    causal, window, GQA and softmax_scale apply; dk and dv of a KV head sum over its query heads.
    deterministic=True asks for the same bits whatever the schedule (the CPU backend always is).
    Missing outputs are allocated with q's array library: dk and dv as bfloat16, dq as `dq_dtype`
    ("bfloat16" or "float32")."""
    vq, vk, vv = view(q, "q", stream=stream), view(k, "k", stream=stream), view(v, "v", stream=stream)
    vo, vg, vl = view(out, "out", stream=stream), view(dout, "dout", stream=stream), view(lse, "lse", stream=stream)
    args = _abi.new(_abi.AttentionBwdArgs)
    keep: list[Any] = [vq, vk, vv, vo, vg, vl]
    if cu_seqlens_q is not None or cu_seqlens_k is not None:
        if cu_seqlens_q is None or cu_seqlens_k is None:
            raise binding_error("FP8ATTN_STATUS_INVALID_ARGUMENT", "cu_seqlens_q and cu_seqlens_k come together")
        cq, ck = view(cu_seqlens_q, "cu_seqlens_q"), view(cu_seqlens_k, "cu_seqlens_k")
        keep += [cq, ck]
        args.cu_seqlens_q, args.cu_seqlens_k = cq.struct, ck.struct
        batch = cq.shape[0] - 1
        if max_seqlen_q is None:
            max_seqlen_q = int(np.max(np.diff(_host_ints(cq, "cu_seqlens_q")), initial=0))
        if max_seqlen_k is None:
            max_seqlen_k = int(np.max(np.diff(_host_ints(ck, "cu_seqlens_k")), initial=0))
    else:
        if len(vq.shape) != 4 or len(vk.shape) != 4:
            raise binding_error("FP8ATTN_STATUS_BAD_SHAPE", f"q and k must be [batch, seqlen, heads, head_dim], "
                                                            f"got shapes {vq.shape}, {vk.shape}")
        batch, max_seqlen_q, max_seqlen_k = vq.shape[0], vq.shape[1], vk.shape[1]
    dq = empty_like_library(vq, vq.shape, dq_dtype) if dq is None else dq
    dk = empty_like_library(vq, vk.shape, "bfloat16") if dk is None else dk
    dv = empty_like_library(vq, vv.shape, "bfloat16") if dv is None else dv
    vdq, vdk, vdv = (view(x, name, writable=True, stream=stream) for x, name in ((dq, "dq"), (dk, "dk"), (dv, "dv")))
    keep += [vdq, vdk, vdv]
    args.q, args.k, args.v, args.out, args.dout, args.lse = vq.struct, vk.struct, vv.struct, vo.struct, vg.struct, vl.struct
    args.dq, args.dk, args.dv = vdq.struct, vdk.struct, vdv.struct
    args.deterministic = int(bool(deterministic))
    nbytes = plan.backward_workspace_size(max(batch, 1), max(max_seqlen_q, 1), max(max_seqlen_k, 1))
    ws, ws_keep = _workspace(nbytes, plan.context.backend, vq)
    call("fp8attn_attention_backward", plan.handle, ctypes.byref(args), ws, nbytes,
         ctypes.c_void_p(stream) if stream else None)
    del ws_keep, keep
    return dq, dk, dv


def _out_dtype(plan: Plan) -> str:
    return {v: k for k, v in _abi.DTYPES.items()}[plan.desc.output_dtype]


def attention(q: Any, k: Any, v: Any, *, causal: bool = False, window: tuple[int, int] | None = None,
              descales: Sequence[Any] | None = None, kv_order: str = "reverse", p_scale_log2: int = 8,
              backend: str = "cpu", cu_seqlens_q: Any = None, cu_seqlens_k: Any = None, return_lse: bool = False,
              telemetry: bool = False, out_dtype: str = "bfloat16", out_scale: float | None = None,
              return_amax_o: bool = False, scale_state: Any = None, scale_state_layer: int = 0,
              block_table: Any = None, seqused_k: Any = None, max_seqlen_k: int | None = None,
              kv_scale_granularity: str = "none", kv_descales: Sequence[Any] | None = None,
              decode: bool = False, num_splits: int = 0) -> Any:
    """softmax(Q·Kᵀ/√d + mask)·V with FP8 (float8_e4m3fn) or bfloat16 inputs and a bfloat16
    output (or `out_dtype` "float32", or "float8_e4m3fn" with `out_scale` or a `scale_state`).

    q [batch, seqlen_q, heads_q, head_dim], k and v [batch, seqlen_k, heads_kv, head_dim]; or
    packed [total, heads, head_dim] with cu_seqlens_q and cu_seqlens_k (int32 [batch + 1]).
    window: (left, right) keys visible around the diagonal, -1 unbounded. descales: (q, k, v), each
    None, a number, or float32 [batch, heads_kv]. Returns out, then the float32 LSE
    ([batch, heads_q, seqlen_q]; packed [heads_q, total_q]) when return_lse, then a telemetry dict
    (p_positive, p_underflow, max_abs_scaled_logit) when telemetry, then max |O| when
    return_amax_o. out_scale, return_amax_o, scale_state and scale_state_layer are
    forward_with_plan's training options (CPU backend).

    Paged KV cache (vLLM's and FlashAttention-3's layout; the CPU and reference backends):
    attention(q, k_cache, v_cache, block_table=..., seqused_k=...) with caches [num_pages,
    page_size, heads_kv, head_dim], block_table int32 [batch, max_pages_per_seq] and seqused_k
    int32 [batch]; q padded, or packed with cu_seqlens_q alone. Causal masks align each query
    chunk to the end of its sequence's keys. kv_scale_granularity ("head", "token_head") and
    kv_descales=(k's, v's) give an E4M3 cache's descales. A float8_e4m3fn cache under bfloat16 q
    runs the bfloat16 path on the exactly decoded codes.

    decode=True takes the decode path (at most 8 queries per sequence; the CPU and reference
    backends): a KV group's heads and tokens share a tile, and each sequence's KV blocks are cut
    into num_splits splits (0: a heuristic; 1 gives the plain forward's bits) merged by the rule
    of attention_combine.
    """
    vq = view(q, "q")
    if vq.dtype not in ("float8_e4m3fn", "bfloat16"):
        raise binding_error("FP8ATTN_STATUS_BAD_DTYPE", f"q is {vq.dtype}; attention takes float8_e4m3fn or bfloat16")
    vk = view(k, "k")
    heads_kv = vk.shape[-2]
    paged = block_table is not None or seqused_k is not None
    left, right = window if window is not None else (-1, -1)
    plan = Plan(default_context(backend), input_dtype=vq.dtype, output_dtype=out_dtype, head_dim=vq.shape[-1],
                head_dim_v=view(v, "v").shape[-1], num_heads_q=vq.shape[-2], num_heads_kv=heads_kv,
                causal=causal, window_left=left, window_right=right, kv_order=kv_order, p_scale_log2=p_scale_log2,
                telemetry=telemetry, page_size=vk.shape[1] if paged and len(vk.shape) == 4 else 0,
                kv_dtype=vk.dtype if vk.dtype in ("float8_e4m3fn", "bfloat16") else vq.dtype,
                decode=decode, num_splits=num_splits)
    try:
        return forward_with_plan(plan, q, k, v, descales=descales, cu_seqlens_q=cu_seqlens_q,
                                 cu_seqlens_k=cu_seqlens_k, return_lse=return_lse, out_scale=out_scale,
                                 return_amax_o=return_amax_o, scale_state=scale_state,
                                 scale_state_layer=scale_state_layer, block_table=block_table, seqused_k=seqused_k,
                                 max_seqlen_k=max_seqlen_k, kv_scale_granularity=kv_scale_granularity,
                                 kv_descales=kv_descales)
    finally:
        plan.close()
