"""Context and Plan: the library's handles, for callers who reuse them across calls.

Thread safety is the header's: a Context and a Plan may be used from many threads at once (CPU
calls on one context run one at a time on its worker threads); ctypes releases the GIL during
every call. A plan and a scale state keep their context alive.
"""
from __future__ import annotations

import ctypes
from typing import Any, Callable

from . import _abi
from ._handle import OwnedHandle
from ._library import call, dll

LogCallback = Callable[[str, str], None]
_LEVEL_NAMES = {v: k for k, v in _abi.LOG_LEVELS.items()}
_BACKEND_NAMES = {v: k for k, v in _abi.BACKENDS.items()}


def _enum(table: dict[str, int], value: str, what: str) -> int:
    try:
        return table[value]
    except KeyError:
        raise ValueError(f"{what} must be one of {sorted(table)}, got {value!r}") from None


class Context(OwnedHandle):
    """A backend ("auto", "cpu", "cuda", "reference", "emulator"), its worker threads and its logger.

    `log_callback(level, message)` receives the library's messages (levels "error" .. "trace")
    from any thread using the context; an exception it raises is caught and kept in
    `log_errors` rather than crossing the C ABI.
    """

    _destroy = "fp8attn_context_destroy"

    def __init__(self, backend: str = "cpu", *, num_threads: int = 0, device_ordinal: int = 0,
                 log_level: str = "default", log_callback: LogCallback | None = None) -> None:
        self._handle = ctypes.c_void_p()
        self.log_errors: list[BaseException] = []
        self.device_ordinal = device_ordinal
        options = _abi.new(_abi.ContextOptions)
        options.backend = _enum(_abi.BACKENDS, backend, "backend")
        options.device_ordinal = device_ordinal
        options.num_threads = num_threads
        options.log_level = _enum(_abi.LOG_LEVELS, log_level, "log_level")
        self._callback = None
        if log_callback is not None:
            def trampoline(_user: Any, level: int, msg: Any, length: int) -> None:
                try:
                    log_callback(_LEVEL_NAMES.get(level, str(level)), ctypes.string_at(msg, length).decode("utf-8",
                                                                                                   "replace"))
                except BaseException as e:  # never unwind into C
                    self.log_errors.append(e)
            self._callback = _abi.LogCallback(trampoline)  # kept alive as long as the context
            options.log_callback = self._callback
        call("fp8attn_context_create", ctypes.byref(options), ctypes.byref(self._handle))

    @property
    def handle(self) -> ctypes.c_void_p:
        if not self._handle:
            raise ValueError("the context is closed")
        return self._handle

    @property
    def backend(self) -> str:
        """The backend the context runs on (never "auto")."""
        b = ctypes.c_int32()
        call("fp8attn_context_get_backend", self.handle, ctypes.byref(b))
        return _BACKEND_NAMES.get(b.value, str(b.value))

    def set_log_level(self, level: str) -> None:
        """Changes the context's log level at run time ("error", "warn", "info", "debug", "trace",
        "off" or "default")."""
        call("fp8attn_context_set_log_level", self.handle, _enum(_abi.LOG_LEVELS, level, "log_level"))


    def plan(self, *, head_dim: int, num_heads_q: int = 1, num_heads_kv: int = 1, **options: Any) -> "Plan":
        """A plan; `options` are fp8attn_attention_desc field names (see Plan)."""
        return Plan(self, head_dim=head_dim, num_heads_q=num_heads_q, num_heads_kv=num_heads_kv, **options)


_DESC_ENUMS = {"input_dtype": _abi.DTYPES, "output_dtype": _abi.DTYPES, "kv_dtype": _abi.DTYPES,
               "kv_order": _abi.KV_ORDERS,
               "softmax_variant": _abi.SOFTMAX_VARIANTS, "accumulator_model": _abi.ACCUMULATOR_MODELS}


class Plan(OwnedHandle):
    """An immutable attention plan. Keyword options are the fp8attn_attention_desc fields (enums
    by name: input_dtype="float8_e4m3fn", output_dtype="bfloat16", kv_order="reverse",
    accumulator_model="tensor_core" (the default: Hopper's exact addition) or "fp32", ...);
    unset fields keep fp8attn_attention_desc_init()'s defaults."""

    _destroy = "fp8attn_plan_destroy"

    def __init__(self, context: Context, **fields: Any) -> None:
        self.context = context
        desc = _abi.new(_abi.AttentionDesc)
        status = dll().fp8attn_attention_desc_init(ctypes.byref(desc))
        assert status == 0, status
        names = {f[0] for f in _abi.AttentionDesc._fields_} - {"struct_size", "next"}
        for key, value in fields.items():
            if key not in names:
                raise TypeError(f"unknown plan option {key!r}")
            if key in _DESC_ENUMS:
                value = _enum(_DESC_ENUMS[key], value, key)
            setattr(desc, key, int(value) if isinstance(value, bool) else value)
        self.desc = desc
        self._handle = ctypes.c_void_p()
        call("fp8attn_plan_create", context.handle, ctypes.byref(desc), ctypes.byref(self._handle))

    @property
    def handle(self) -> ctypes.c_void_p:
        if not self._handle:
            raise ValueError("the plan is closed")
        return self._handle

    @property
    def tile(self) -> tuple[int, int]:
        """(block_m, block_n): query rows per tile and keys per KV block."""
        m, n = ctypes.c_int32(), ctypes.c_int32()
        call("fp8attn_plan_get_tile", self.handle, ctypes.byref(m), ctypes.byref(n))
        return m.value, n.value

    def workspace_size(self, batch: int, max_seqlen_q: int, max_seqlen_k: int) -> int:
        size = ctypes.c_size_t()
        call("fp8attn_plan_workspace_size", self.handle, batch, max_seqlen_q, max_seqlen_k, ctypes.byref(size))
        return size.value

    def forward(self, q: Any, k: Any, v: Any, **kwargs: Any) -> Any:
        """See fp8attn.attention.forward_with_plan."""
        from .attention import forward_with_plan

        return forward_with_plan(self, q, k, v, **kwargs)

    def backward_workspace_size(self, batch: int, max_seqlen_q: int, max_seqlen_k: int) -> int:
        size = ctypes.c_size_t()
        call("fp8attn_plan_backward_workspace_size", self.handle, batch, max_seqlen_q, max_seqlen_k,
             ctypes.byref(size))
        return size.value

    def backward(self, q: Any, k: Any, v: Any, out: Any, dout: Any, lse: Any, **kwargs: Any) -> Any:
        """See fp8attn.attention.backward_with_plan."""
        from .attention import backward_with_plan

        return backward_with_plan(self, q, k, v, out, dout, lse, **kwargs)

