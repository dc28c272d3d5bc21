"""ScaleState: FP8 scales with delayed, current and geometry-aware recipes, and its versioned,
checksummed blob (to_bytes / from_bytes). Reads may run on many threads while one updates; the
library locks (header: fp8attn_scale_state)."""
from __future__ import annotations

import ctypes
from typing import Any, Mapping

import numpy as np

from . import _abi
from ._arrays import binding_error, to_bytes_pointer, view
from ._handle import OwnedHandle
from ._library import call
from .attention import default_context
from .context import Context, _enum

_f32p = ctypes.POINTER(ctypes.c_float)


def _kind(tensor: str | int) -> int:
    return tensor if isinstance(tensor, int) else _enum(_abi.TENSOR_KINDS, tensor, "tensor")


class ScaleState(OwnedHandle):
    """Per-layer scales of the tensor kinds "q", "k", "v", "o", "p", "do", "dp", "logit".

    recipe maps kinds to "delayed", "current" or "geometry" (logit only); the rest of the keyword
    arguments are the fp8attn_scale_state_options fields (0 picks the documented default).
    """

    _destroy = "fp8attn_scale_state_destroy"

    def __init__(self, num_layers: int = 1, *, recipe: Mapping[str, str] | None = None, amax_history_len: int = 0,
                 amax_algo: str = "max", margin: float = 0.0, burn_in_steps: int = 0, token_norm_bound: float = 0.0,
                 alpha_margin: float = 0.0, alpha_decay: float = 0.0, grad_dtype: str = "float8_e5m2",
                 context: Context | None = None) -> None:
        self.context = context or default_context("cpu")
        o = _abi.new(_abi.ScaleStateOptions)
        o.num_layers = num_layers
        for kind, r in (recipe or {}).items():
            o.recipe[_kind(kind)] = _enum(_abi.RECIPES, r, "recipe")
        o.amax_history_len, o.amax_algo = amax_history_len, _enum(_abi.AMAX_ALGOS, amax_algo, "amax_algo")
        o.margin, o.burn_in_steps, o.token_norm_bound = margin, burn_in_steps, token_norm_bound
        o.alpha_margin, o.alpha_decay = alpha_margin, alpha_decay
        o.grad_dtype = _enum(_abi.DTYPES, grad_dtype, "grad_dtype")
        self.num_layers = num_layers
        self._handle = ctypes.c_void_p()
        call("fp8attn_scale_state_create", self.context.handle, ctypes.byref(o), ctypes.byref(self._handle))

    @property
    def handle(self) -> ctypes.c_void_p:
        if not self._handle:
            raise ValueError("the scale state is closed")
        return self._handle

    def report_amax(self, layer: int, tensor: str | int, amax: float) -> None:
        call("fp8attn_scale_state_report_amax", self.handle, layer, _kind(tensor), amax)

    def report_amax_batch(self, amax: Any) -> None:
        """amax: [num_layers, 8] (layer-major, kinds in header order); a negative entry skips."""
        a = np.ascontiguousarray(amax, dtype=np.float32)
        call("fp8attn_scale_state_report_amax_batch", self.handle, a.ctypes.data_as(_f32p), a.size)

    def report_amax_device(self, layer: int, amax: Any, stream: int | None = None) -> None:
        """One layer's 8 amaxes (kinds in header order; a negative entry skips) from the memory of
        the state's context's device, as a kernel writes them: a float32 [8] numpy array on the
        CPU, reference and emulator backends, any contiguous `__dlpack__` float32 [8] (a CUDA
        tensor on the CUDA backend, where a host function on `stream` records the report after the
        copy). `stream` must be None on the CPU and reference backends."""
        v = view(amax, "amax")
        if v.dtype != "float32" or v.shape != (_abi.NUM_TENSOR_KINDS,) or v.struct.stride[0] != 1:
            raise binding_error("FP8ATTN_STATUS_BAD_SHAPE", f"amax must be a contiguous float32 "
                                                            f"[{_abi.NUM_TENSOR_KINDS}], got {v.dtype} {v.shape}")
        call("fp8attn_scale_state_report_amax_device", self.handle, layer, ctypes.cast(v.struct.data, _f32p),
             ctypes.c_void_p(stream) if stream else None)
        del v  # kept alive (with its DLPack capsule) until the call returned

    def step(self) -> None:
        call("fp8attn_scale_state_step", self.handle)

    def get_scale(self, layer: int, tensor: str | int) -> tuple[float, float]:
        """(scale, scale_inv) of a tensor kind in a layer."""
        s, inv = ctypes.c_float(), ctypes.c_float()
        call("fp8attn_scale_state_get_scale", self.handle, layer, _kind(tensor), ctypes.byref(s), ctypes.byref(inv))
        return s.value, inv.value

    def set_qk_weights(self, layer: int, wq: Any, wk: Any, num_heads_q: int, num_heads_kv: int,
                       head_dim: int) -> None:
        vq, vk = view(wq, "wq"), view(wk, "wk")
        call("fp8attn_scale_state_set_qk_weights", self.handle, layer, ctypes.byref(vq.struct),
             ctypes.byref(vk.struct), num_heads_q, num_heads_kv, head_dim)

    def set_qk_sigma(self, layer: int, sigma: Any, head_dim: int, d_model: int) -> None:
        s = np.ascontiguousarray(sigma, dtype=np.float32)
        call("fp8attn_scale_state_set_qk_sigma", self.handle, layer, s.ctypes.data_as(_f32p), s.size, head_dim,
             d_model)

    def to_bytes(self) -> bytes:
        """The versioned little-endian blob with its CRC32C."""
        size = ctypes.c_size_t()
        call("fp8attn_scale_state_serialize", self.handle, None, 0, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        written = ctypes.c_size_t()
        call("fp8attn_scale_state_serialize", self.handle, buf, size.value, ctypes.byref(written))
        return buf.raw[: written.value]

    def load_bytes(self, blob: bytes | bytearray | memoryview) -> None:
        """Replaces the whole state (options included) with a blob; unchanged on failure."""
        ptr, keep = to_bytes_pointer(blob)
        call("fp8attn_scale_state_deserialize", self.handle, ptr, len(keep))

    @classmethod
    def from_bytes(cls, blob: bytes | bytearray | memoryview, *, context: Context | None = None) -> "ScaleState":
        """A new state holding a blob from to_bytes()."""
        state = cls(context=context)
        state.load_bytes(blob)
        return state

