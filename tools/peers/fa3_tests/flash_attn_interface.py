"""FlashAttention-3's Python entry points (hopper/flash_attn_interface.py's names and signatures)
implemented on the fp8attn Python binding, CPU backend, torch tensors in and out.

Written for running FlashAttention-3's own test file against fp8attn (tools/peers/fa3_tests/run.sh);
none of FlashAttention's code is used. What fp8attn computes, it computes here through its own calls:
causal and sliding-window masks (bottom-right aligned), GQA/MQA, padded and packed (cu_seqlens)
layouts, E4M3 inputs with per-(batch, KV head) descales, BF16 inputs, the LSE, the BF16 backward,
the paged KV cache, the decode path with its splits, appending to a cache, and the LSE combine.

Four FlashAttention arguments have no fp8attn field; the adapter builds them from fp8attn calls
without changing what is computed (each is exact, not an approximation; FP8ATTN_FA3_STRICT=1
turns them into NotImplementedError instead):
  * seqused_q / seqused_k of the packed layout and cache_leftpad: the used rows are gathered into
    a packed problem with their own cu_seqlens (unused query rows get 0, as FlashAttention's
    test expects after masking);
  * attention_chunk: keys are cut into chunks of that many positions (FlashAttention's rule: query
    row i sees keys in the chunk holding i + seqlen_k - seqlen_q); each (sequence, chunk) becomes
    a sequence of one packed call whose bottom-right alignment equals the original's, so causal
    and window masks apply unchanged;
  * head_dim_v a multiple of head_dim (fp8attn needs them equal): O = P·V is linear in V's
    columns, so V is cut into head_dim-wide column slices, one call each; the backward sums dQ
    (FP32 from fp8attn) and dK over the slices.
Everything else fp8attn does not have raises NotImplementedError naming the feature: softcap,
FP16 inputs, head dims other than 64/128/256, Qv, rotary embedding in the cache update, FP8
backward, and output buffers passed in.

pack_gqa, num_splits (outside the decode path), deterministic, sm_margin and scheduler metadata
are scheduling knobs of FlashAttention's GPU kernels; fp8attn's CPU backend computes the same
result whatever they are (it is deterministic), so they are accepted and not used.
"""
from __future__ import annotations

import math
import os
from typing import Any, Optional, Sequence

import numpy as np
import torch

import fp8attn
from fp8attn.context import Plan

_SUPPORTED_HEAD_DIMS = (64, 128, 256)
_MAX_DECODE_Q = 8  # FP8ATTN_MAX_DECODE_Q_LEN


def _strict() -> bool:
    return os.environ.get("FP8ATTN_FA3_STRICT", "0") == "1"


_context: Optional[fp8attn.Context] = None


def _ctx() -> fp8attn.Context:
    global _context
    if _context is None:
        _context = fp8attn.Context("cpu", num_threads=int(os.environ.get("FP8ATTN_FA3_THREADS", "0")))
    return _context


_plans: dict[tuple, Plan] = {}


def _plan(**fields: Any) -> Plan:
    key = tuple(sorted(fields.items()))
    p = _plans.get(key)
    if p is None:
        if len(_plans) > 256:
            for old in _plans.values():
                old.close()
            _plans.clear()
        p = _plans[key] = Plan(_ctx(), **fields)
    return p


# ---------------------------------------------------------------------------------------------
# Argument checks: everything fp8attn does not have is refused here, by name.

_DTYPES = {torch.bfloat16: "bfloat16", torch.float8_e4m3fn: "float8_e4m3fn"}


def _unsupported(what: str) -> NotImplementedError:
    return NotImplementedError(f"fp8attn does not support {what}")


def _check_common(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, softcap: float, qv: Any,
                  attention_chunk: int, d_v: int) -> None:
    if q.dtype not in _DTYPES:
        raise _unsupported(f"{q.dtype} inputs (it takes float8_e4m3fn and bfloat16)")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise _unsupported(f"mixed input dtypes q {q.dtype}, k {k.dtype}, v {v.dtype}")
    if softcap != 0.0:
        raise _unsupported("softcap (tanh logit capping)")
    if qv is not None:
        raise _unsupported("Qv (the extra Qv·Vᵀ logit term)")
    d = q.shape[-1]
    if d not in _SUPPORTED_HEAD_DIMS:
        raise _unsupported(f"head_dim {d} (it has kernels for 64, 128 and 256)")
    if d_v != d:
        if _strict():
            raise _unsupported(f"head_dim_v {d_v} != head_dim {d} (strict mode)")
        if d_v % d != 0:
            raise _unsupported(f"head_dim_v {d_v} (must equal head_dim {d}, or be a multiple of it "
                               "for the adapter's column slices)")
    if attention_chunk and _strict():
        raise _unsupported("attention_chunk (strict mode)")


def _window(window_size: Any, causal: bool) -> tuple[int, int]:
    left, right = (int(x) for x in window_size)
    left = -1 if left < 0 else left
    right = -1 if right < 0 else right
    if causal:
        right = 0
    return left, right


def _descales(q: torch.Tensor, descales: Sequence[Any]) -> Optional[tuple]:
    """FlashAttention applies descales only to FP8 inputs; fp8attn would apply them to BF16 too,
    so they are passed for FP8 inputs only, as FlashAttention uses them."""
    if q.dtype != torch.float8_e4m3fn or all(d is None for d in descales):
        return None
    return tuple(None if d is None else d.detach().to(torch.float32).contiguous() for d in descales)


# ---------------------------------------------------------------------------------------------
# The core: one fp8attn forward (and its backward) on padded or packed tensors.


class _Problem:
    """Everything of one fp8attn call but the tensors."""

    def __init__(self, *, causal: bool, window: tuple[int, int], scale: float, descales: Optional[tuple],
                 cu_q: Optional[torch.Tensor] = None, cu_k: Optional[torch.Tensor] = None,
                 max_q: int = 0, max_k: int = 0) -> None:
        self.causal, self.window, self.scale, self.descales = causal, window, scale, descales
        self.cu_q, self.cu_k, self.max_q, self.max_k = cu_q, cu_k, max_q, max_k

    def plan(self, q: torch.Tensor, k: torch.Tensor) -> Plan:
        return _plan(input_dtype=_DTYPES[q.dtype], output_dtype="bfloat16", head_dim=q.shape[-1],
                     num_heads_q=q.shape[-2], num_heads_kv=k.shape[-2], causal=int(self.causal),
                     window_left=self.window[0], window_right=self.window[1], softmax_scale=self.scale)

    def packed_kwargs(self) -> dict:
        if self.cu_q is None:
            return {}
        return dict(cu_seqlens_q=self.cu_q, cu_seqlens_k=self.cu_k, max_seqlen_q=self.max_q,
                    max_seqlen_k=self.max_k)


def _slices(d: int, d_v: int) -> list[slice]:
    return [slice(s, s + d) for s in range(0, d_v, d)]


def _forward(p: _Problem, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    q, k, v = q.detach(), k.detach(), v.detach()  # the binding exports through DLPack
    plan = p.plan(q, k)
    d, d_v = q.shape[-1], v.shape[-1]
    out = torch.empty(*q.shape[:-1], d_v, dtype=torch.bfloat16)
    if p.cu_q is None:
        lse = torch.empty(q.shape[0], q.shape[2], q.shape[1], dtype=torch.float32)
    else:
        lse = torch.empty(q.shape[1], q.shape[0], dtype=torch.float32)
    for i, cols in enumerate(_slices(d, d_v)):
        plan.forward(q, k, v[..., cols], out=out[..., cols], lse=lse if i == 0 else None,
                     descales=p.descales, **p.packed_kwargs())
    return out, lse


class _AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, p: _Problem) -> tuple:
        out, lse = _forward(p, q, k, v)
        ctx.problem = p
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.mark_non_differentiable(lse)
        return out, lse

    @staticmethod
    def backward(ctx: Any, dout: torch.Tensor, _dlse: Any) -> tuple:
        q, k, v, out, lse = (t.detach() for t in ctx.saved_tensors)
        p: _Problem = ctx.problem
        if q.dtype != torch.bfloat16:
            raise _unsupported(f"the backward of {q.dtype} inputs (its backward takes bfloat16)")
        plan = p.plan(q, k)
        dout = dout.detach().to(torch.bfloat16).contiguous()
        d, d_v = q.shape[-1], v.shape[-1]
        cols = _slices(d, d_v)
        if len(cols) == 1:
            dq, dk, dv = plan.backward(q, k, v, out, dout, lse, deterministic=True, **p.packed_kwargs())
            return dq, dk, dv, None
        dq = torch.zeros(q.shape, dtype=torch.float32)
        dk = torch.zeros(k.shape, dtype=torch.float32)
        dv = torch.empty(v.shape, dtype=torch.bfloat16)
        for c in cols:
            dq_s, dk_s, _ = plan.backward(q, k, v[..., c], out[..., c], dout[..., c], lse, dv=dv[..., c],
                                          dq_dtype="float32", deterministic=True, **p.packed_kwargs())
            dq += dq_s
            dk += dk_s.float()
        return dq.to(q.dtype), dk.to(k.dtype), dv, None


def _attend(p: _Problem, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return _AttentionFunction.apply(q, k, v, p)
    return _forward(p, q, k, v)


# ---------------------------------------------------------------------------------------------
# Gathered problems: seqused, leftpad and attention_chunk, by rows.


def _take(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    if x.dtype == torch.float8_e4m3fn:  # index_select has no float8 kernel on every build
        return x.view(torch.uint8).index_select(0, idx).view(torch.float8_e4m3fn)
    return x.index_select(0, idx)


class _Segment:
    """One sequence: its batch index (for descales), its query rows and its key rows (flat row
    indices into the packed query and key sources)."""

    def __init__(self, batch: int, q_rows: np.ndarray, k_rows: np.ndarray) -> None:
        self.batch, self.q_rows, self.k_rows = batch, q_rows, k_rows


def _chunk(segments: list[_Segment], chunk: int) -> list[_Segment]:
    """FlashAttention's attention_chunk: query row i (of sq) of a sequence with sk keys sees only
    keys in [c·chunk, (c+1)·chunk) with c = floor((i + sk - sq) / chunk). Each (sequence, chunk)
    becomes a sequence whose queries' bottom-right alignment is the original one, since its
    last query row and its last key are aligned the same way; rows with no chunk (i + sk - sq < 0)
    see no key."""
    pieces = []
    for s in segments:
        sq, sk = len(s.q_rows), len(s.k_rows)
        off = sk - sq
        for c in range(-(-sk // chunk)):
            qa, qb = max(c * chunk - off, 0), min((c + 1) * chunk - off, sq)
            if qb > qa:
                pieces.append(_Segment(s.batch, s.q_rows[qa:qb], s.k_rows[c * chunk:min((c + 1) * chunk, sk)]))
    return pieces


def _gathered(segments: list[_Segment], q_flat: torch.Tensor, k_flat: torch.Tensor, v_flat: torch.Tensor, *,
              causal: bool, window: tuple[int, int], scale: float, descales: Optional[tuple],
              attention_chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention over `segments`, as one packed fp8attn call; returns out [rows of q_flat, heads,
    d_v] (0 on rows no segment uses) and lse [heads, rows] (-inf there)."""
    if attention_chunk:
        segments = _chunk(segments, int(attention_chunk))
    total_q, heads = q_flat.shape[0], q_flat.shape[1]
    d_v = v_flat.shape[-1]
    lens_q = np.array([len(s.q_rows) for s in segments], dtype=np.int64)
    lens_k = np.array([len(s.k_rows) for s in segments], dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    idx_q = torch.from_numpy(np.concatenate([s.q_rows for s in segments] or [empty]).astype(np.int64))
    idx_k = torch.from_numpy(np.concatenate([s.k_rows for s in segments] or [empty]).astype(np.int64))
    cu_q = torch.from_numpy(np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32))
    cu_k = torch.from_numpy(np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32))
    if descales is not None:
        rows = torch.tensor([s.batch for s in segments], dtype=torch.int64)
        descales = tuple(None if d is None else d.index_select(0, rows).contiguous() for d in descales)
    p = _Problem(causal=causal, window=window, scale=scale, descales=descales, cu_q=cu_q, cu_k=cu_k,
                 max_q=int(lens_q.max(initial=0)), max_k=int(lens_k.max(initial=0)))
    out_p, lse_p = _attend(p, _take(q_flat, idx_q), _take(k_flat, idx_k), _take(v_flat, idx_k))
    out = torch.zeros(total_q, heads, d_v, dtype=out_p.dtype).index_copy(0, idx_q, out_p)
    lse = torch.full((heads, total_q), -math.inf, dtype=torch.float32).index_copy(1, idx_q, lse_p.detach())
    return out, lse


def _rows(start: int, length: int) -> np.ndarray:
    return np.arange(start, start + length, dtype=np.int64)


def _host(x: Optional[torch.Tensor]) -> Optional[np.ndarray]:
    return None if x is None else x.detach().cpu().to(torch.int64).numpy()


# ---------------------------------------------------------------------------------------------
# FlashAttention-3's functions.


def flash_attn_func(q, k, v, softmax_scale=None, causal=False, qv=None, q_descale=None, k_descale=None,
                    v_descale=None, window_size=(-1, -1), attention_chunk=0, softcap=0.0, num_splits=1,
                    pack_gqa=None, deterministic=False, sm_margin=0, return_attn_probs=False):
    """Padded q [batch, seqlen_q, heads, d], k and v [batch, seqlen_k, heads_kv, d(_v)]."""
    _check_common(q, k, v, softcap=softcap, qv=qv, attention_chunk=attention_chunk, d_v=v.shape[-1])
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    window = _window(window_size, causal)
    descales = _descales(q, (q_descale, k_descale, v_descale))
    if not attention_chunk:
        out, lse = _attend(_Problem(causal=causal, window=window, scale=scale, descales=descales), q, k, v)
    else:
        b, sq, sk = q.shape[0], q.shape[1], k.shape[1]
        segments = [_Segment(i, _rows(i * sq, sq), _rows(i * sk, sk)) for i in range(b)]
        out, lse = _gathered(segments, q.reshape(b * sq, *q.shape[2:]), k.reshape(b * sk, *k.shape[2:]),
                             v.reshape(b * sk, *v.shape[2:]), causal=causal, window=window, scale=scale,
                             descales=descales, attention_chunk=attention_chunk)
        out = out.reshape(b, sq, *out.shape[1:])
        lse = lse.reshape(lse.shape[0], b, sq).transpose(0, 1)
    return (out, lse) if return_attn_probs else out


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q=None,
                           seqused_k=None, softmax_scale=None, causal=False, qv=None, q_descale=None,
                           k_descale=None, v_descale=None, window_size=(-1, -1), attention_chunk=0, softcap=0.0,
                           num_splits=1, pack_gqa=None, deterministic=False, sm_margin=0,
                           return_attn_probs=False):
    """Packed q [total_q, heads, d], k and v [total_k, heads_kv, d(_v)] with cu_seqlens (int32
    [batch + 1]); seqused_q / seqused_k (int32 [batch]) use only the first rows of each sequence."""
    _check_common(q, k, v, softcap=softcap, qv=qv, attention_chunk=attention_chunk, d_v=v.shape[-1])
    if (seqused_q is not None or seqused_k is not None) and _strict():
        raise _unsupported("seqused_q / seqused_k with packed K and V (strict mode)")
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    window = _window(window_size, causal)
    descales = _descales(q, (q_descale, k_descale, v_descale))
    cu_q32 = cu_seqlens_q.detach().to(torch.int32).contiguous()
    cu_k32 = cu_seqlens_k.detach().to(torch.int32).contiguous()
    if seqused_q is None and seqused_k is None and not attention_chunk:
        p = _Problem(causal=causal, window=window, scale=scale, descales=descales, cu_q=cu_q32, cu_k=cu_k32,
                     max_q=int(max_seqlen_q), max_k=int(max_seqlen_k))
        out, lse = _attend(p, q, k, v)
    else:
        cq, ck = _host(cu_seqlens_q), _host(cu_seqlens_k)
        uq, uk = _host(seqused_q), _host(seqused_k)
        segments = []
        for b in range(len(cq) - 1):
            nq = int(uq[b]) if uq is not None else int(cq[b + 1] - cq[b])
            nk = int(uk[b]) if uk is not None else int(ck[b + 1] - ck[b])
            segments.append(_Segment(b, _rows(int(cq[b]), nq), _rows(int(ck[b]), nk)))
        out, lse = _gathered(segments, q, k, v, causal=causal, window=window, scale=scale, descales=descales,
                             attention_chunk=attention_chunk)
    return (out, lse) if return_attn_probs else out


def flash_attn_combine(out_partial, lse_partial, out=None, out_dtype=None):
    """out_partial [splits, batch, seqlen, heads, d] and lse_partial [splits, batch, seqlen, heads]
    (float32, any strides) → out [batch, seqlen, heads, d] and lse [batch, seqlen, heads]."""
    if out is not None:
        raise _unsupported("an output buffer passed to combine (the adapter allocates it)")
    out_dtype = out_dtype or out_partial.dtype
    names = {torch.float32: "float32", torch.bfloat16: "bfloat16"}
    if out_dtype not in names:
        raise _unsupported(f"a {out_dtype} combine output (it writes float32 and bfloat16)")
    if out_partial.dtype not in names:
        raise _unsupported(f"{out_partial.dtype} partial outputs (it reads float32 and bfloat16)")
    lse_partial = lse_partial.to(torch.float32)
    splits, batch, seqlen, heads, d = out_partial.shape
    result = torch.empty(batch, seqlen, heads, d, dtype=out_dtype)
    lse = torch.empty(batch, seqlen, heads, dtype=torch.float32)
    # One call per batch element: [splits, seqlen, heads, d] views, any strides, nothing copied.
    for b in range(batch):
        fp8attn.attention_combine(out_partial[:, b], lse_partial[:, b], out=result[b], lse=lse[b], context=_ctx())
    return result, lse


def get_scheduler_metadata(batch_size, max_seqlen_q, max_seqlen_k, num_heads_q, num_heads_kv, headdim,
                           cache_seqlens, qkv_dtype=torch.bfloat16, headdim_v=None, cu_seqlens_q=None,
                           cu_seqlens_k_new=None, cache_leftpad=None, page_size=None, max_seqlen_k_new=0,
                           causal=False, window_size=(-1, -1), attention_chunk=0, has_softcap=False, num_splits=0,
                           pack_gqa=None, sm_margin=0):
    """fp8attn's CPU backend has no scheduler to prime: an empty int32 tensor, accepted (and not
    read) by flash_attn_with_kvcache."""
    return torch.zeros(0, dtype=torch.int32)


def _append(k_new: torch.Tensor, v_new: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
            slots: np.ndarray) -> None:
    """fp8attn_kv_append: the new rows into the cache viewed as [pages, page_size, heads, d]."""
    if k_new.shape[0] == 0:
        return
    # NOTE: slot_mapping as a numpy array: the binding's DLPack reader has no int64 entry, so a
    # torch int64 tensor is refused with FP8ATTN_STATUS_BAD_DTYPE (docs/results/fa3_test_suite.md).
    fp8attn.kv_append(k_new.detach().contiguous(), v_new.detach().contiguous(), k_cache, v_cache,
                      np.ascontiguousarray(slots, dtype=np.int64), context=_ctx())


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, qv=None, rotary_cos=None, rotary_sin=None,
                            cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, page_table=None,
                            cu_seqlens_q=None, cu_seqlens_k_new=None, max_seqlen_q=None, rotary_seqlens=None,
                            q_descale=None, k_descale=None, v_descale=None, softmax_scale=None, causal=False,
                            window_size=(-1, -1), attention_chunk=0, softcap=0.0, rotary_interleaved=True,
                            scheduler_metadata=None, num_splits=0, pack_gqa=None, sm_margin=0,
                            return_softmax_lse=False):
    """q padded [batch, seqlen_q, heads, d] or packed with cu_seqlens_q; a contiguous cache
    [batch_cache, seqlen_cache, heads_kv, d] or a paged one [pages, page_size, heads_kv, d] with
    page_table; new k/v (padded, or packed with cu_seqlens_k_new) are appended at cache_seqlens
    (fp8attn_kv_append) before attending."""
    _check_common(q, k_cache, v_cache, softcap=softcap, qv=qv, attention_chunk=attention_chunk,
                  d_v=v_cache.shape[-1])
    if rotary_cos is not None or rotary_sin is not None:
        raise _unsupported("rotary embedding applied while appending to the KV cache")
    if v_cache.shape[-1] != q.shape[-1]:
        raise _unsupported(f"head_dim_v {v_cache.shape[-1]} != head_dim {q.shape[-1]} in a KV cache call")
    if (cache_leftpad is not None or cache_batch_idx is not None) and _strict():
        raise _unsupported("cache_leftpad / cache_batch_idx (strict mode)")
    if (k is None) != (v is None):
        raise ValueError("k and v come together")
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    window = _window(window_size, causal)
    descales = _descales(q, (q_descale, k_descale, v_descale))
    varlen_q = cu_seqlens_q is not None
    batch = (cu_seqlens_q.shape[0] - 1) if varlen_q else q.shape[0]
    paged = page_table is not None
    page_size = k_cache.shape[1]  # a contiguous cache [batch_cache, seqlen, ...] is one page per row
    seqlens = _host(cache_seqlens) if cache_seqlens is not None else np.full(batch, k_cache.shape[1], np.int64)
    bidx = _host(cache_batch_idx) if cache_batch_idx is not None else np.arange(batch, dtype=np.int64)
    if paged:
        table = page_table.detach().to(torch.int32)
        table_rows = table.index_select(0, torch.from_numpy(bidx)) if cache_batch_idx is not None else table
    else:
        table_rows = torch.from_numpy(bidx.astype(np.int32)).reshape(batch, 1)
    table_np = table_rows.numpy().astype(np.int64)

    def slot(b: int, pos: np.ndarray) -> np.ndarray:
        return table_np[b, pos // page_size] * page_size + pos % page_size

    new_lens = np.zeros(batch, dtype=np.int64)
    if k is not None:
        if cu_seqlens_k_new is not None:
            cn = _host(cu_seqlens_k_new)
            new_lens = np.diff(cn)
            starts = cn[:-1]
            k_rows, v_rows = k, v
        else:
            new_lens[:] = k.shape[1]
            starts = np.arange(batch, dtype=np.int64) * k.shape[1]
            k_rows, v_rows = k.reshape(-1, *k.shape[2:]), v.reshape(-1, *v.shape[2:])
        slots = np.full(k_rows.shape[0], -1, dtype=np.int64)
        for b in range(batch):
            n = int(new_lens[b])
            slots[starts[b]:starts[b] + n] = slot(b, np.arange(seqlens[b], seqlens[b] + n))
        _append(k_rows, v_rows, k_cache, v_cache, slots)
    total_k = seqlens + new_lens
    cu_q32 = cu_seqlens_q.detach().to(torch.int32).contiguous() if varlen_q else None
    if varlen_q:
        cq = _host(cu_seqlens_q)
        q_lens = np.diff(cq)
    else:
        q_lens = np.full(batch, q.shape[1], dtype=np.int64)
    max_q = int(max_seqlen_q) if max_seqlen_q is not None else int(q_lens.max(initial=0))

    if cache_leftpad is None and not attention_chunk:
        # fp8attn's paged cache: block_table rows and seqused_k. Up to 8 queries per sequence take
        # the decode path, whose splits are FlashAttention's num_splits (0: a heuristic).
        decode = max_q <= _MAX_DECODE_Q
        plan = _plan(input_dtype=_DTYPES[q.dtype], output_dtype="bfloat16", head_dim=q.shape[-1],
                     num_heads_q=q.shape[-2], num_heads_kv=k_cache.shape[-2], causal=int(causal),
                     window_left=window[0], window_right=window[1], softmax_scale=scale,
                     page_size=page_size, kv_dtype=_DTYPES[k_cache.dtype], decode=int(decode),
                     num_splits=int(num_splits) if decode else 0)
        seqused = torch.from_numpy(total_k.astype(np.int32))
        max_k = int(table_rows.shape[1]) * page_size
        out, lse = plan.forward(q, k_cache, v_cache, block_table=table_rows.contiguous(), seqused_k=seqused,
                                max_seqlen_k=max_k, return_lse=True, descales=descales,
                                **(dict(cu_seqlens_q=cu_q32, max_seqlen_q=max_q) if varlen_q else {}))
    else:
        # Left padding or chunks: the used key rows gathered from the cache into a packed problem.
        lp = _host(cache_leftpad) if cache_leftpad is not None else np.zeros(batch, dtype=np.int64)
        q_starts = cq[:-1] if varlen_q else np.arange(batch, dtype=np.int64) * q.shape[1]
        segments = [_Segment(b, _rows(int(q_starts[b]), int(q_lens[b])), slot(b, np.arange(lp[b], total_k[b])))
                    for b in range(batch)]
        q_flat = q if varlen_q else q.reshape(-1, *q.shape[2:])
        k_flat, v_flat = k_cache.reshape(-1, *k_cache.shape[2:]), v_cache.reshape(-1, *v_cache.shape[2:])
        out, lse = _gathered(segments, q_flat, k_flat, v_flat, causal=causal, window=window, scale=scale,
                             descales=descales, attention_chunk=attention_chunk)
        if not varlen_q:
            out = out.reshape(batch, q.shape[1], *out.shape[1:])
            lse = lse.reshape(lse.shape[0], batch, q.shape[1]).transpose(0, 1)
    return (out, lse) if return_softmax_lse else out
