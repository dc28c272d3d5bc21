"""Arrays in and out: numpy arrays (ml_dtypes' float8_e4m3fn and bfloat16) and any object with
`__dlpack__`, viewed zero-copy as fp8attn_tensor structs; outputs allocated with the library of
the input they follow."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any, Sequence

import ml_dtypes
import numpy as np

from . import _abi, _dlpack
from .errors import InvalidArgumentError

NUMPY_DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32), "float64": np.dtype(np.float64), "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float16": np.dtype(np.float16), "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2), "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
}
_BY_NUMPY = {v: k for k, v in NUMPY_DTYPES.items()}


def binding_error(status_name: str, message: str) -> InvalidArgumentError:
    """A 1xxx error the binding raises itself, before the call, with the header's status."""
    codes = {"FP8ATTN_STATUS_BAD_DTYPE": 1004, "FP8ATTN_STATUS_BAD_SHAPE": 1005, "FP8ATTN_STATUS_BAD_STRIDE": 1006,
             "FP8ATTN_STATUS_BAD_OPTION": 1010, "FP8ATTN_STATUS_BAD_DEVICE": 1011,
             "FP8ATTN_STATUS_INVALID_ARGUMENT": 1000}
    return InvalidArgumentError(codes[status_name], status_name, message, "fp8attn (binding)")


@dataclass
class View:
    """One argument as the library sees it; `keep` holds whatever keeps its memory alive."""
    struct: _abi.Tensor
    dtype: str
    shape: tuple[int, ...]
    device: str
    device_id: int
    source: Any
    keep: list[Any] = field(default_factory=list)


def absent() -> _abi.Tensor:
    """An absent optional tensor (data NULL)."""
    return _abi.Tensor()


def _struct(data: int, dtype: str, device: str, shape: Sequence[int], strides: Sequence[int]) -> _abi.Tensor:
    if not 1 <= len(shape) <= _abi.MAX_RANK:
        raise binding_error("FP8ATTN_STATUS_BAD_SHAPE", f"rank {len(shape)} is outside 1..{_abi.MAX_RANK}")
    t = _abi.new(_abi.Tensor)
    t.data = data
    t.dtype = _abi.DTYPES[dtype]
    t.device = _abi.DEVICE_CUDA if device == "cuda" else _abi.DEVICE_HOST
    t.rank = len(shape)
    for i, (extent, stride) in enumerate(zip(shape, strides)):
        t.shape[i], t.stride[i] = extent, stride
    return t


def view(x: Any, name: str, *, writable: bool = False, stream: int | None = None) -> View:
    """A zero-copy view of `x` (numpy array, or any `__dlpack__` object)."""
    if isinstance(x, np.ndarray):
        dtype = _BY_NUMPY.get(x.dtype)
        if dtype is None:
            raise binding_error("FP8ATTN_STATUS_BAD_DTYPE", f"{name}: numpy dtype {x.dtype} is not an fp8attn dtype")
        if writable and not x.flags.writeable:
            raise binding_error("FP8ATTN_STATUS_INVALID_ARGUMENT", f"{name}: the output array is read-only")
        if any(s % x.itemsize for s in x.strides):
            raise binding_error("FP8ATTN_STATUS_BAD_STRIDE", f"{name}: strides {x.strides} are not whole elements")
        strides = [s // x.itemsize for s in x.strides]
        data = x.ctypes.data if x.size else x.__array_interface__["data"][0]
        return View(_struct(data, dtype, "host", x.shape, strides), dtype, tuple(x.shape), "host", 0, x, [x])
    if hasattr(x, "__dlpack__"):
        d = _dlpack.view(x, stream)
        if d.dtype is None:
            raise binding_error("FP8ATTN_STATUS_BAD_DTYPE", f"{name}: {d.dtype_desc} is not an fp8attn dtype")
        if d.device not in ("host", "cuda"):
            raise binding_error("FP8ATTN_STATUS_BAD_DEVICE", f"{name}: DLPack device {d.device} is not host or CUDA")
        if writable and d.read_only:
            raise binding_error("FP8ATTN_STATUS_INVALID_ARGUMENT", f"{name}: the DLPack producer marks it read-only")
        return View(_struct(d.data, d.dtype, d.device, d.shape, d.strides), d.dtype, d.shape, d.device, d.device_id,
                    x, [d.capsule, x])
    raise TypeError(f"{name}: expected a numpy array or an object with __dlpack__, got {type(x).__name__}")


def empty_like_library(like: View, shape: Sequence[int], dtype: str) -> Any:
    """A new array of `shape` and `dtype` from the library of `like`'s array, on its device."""
    src = like.source
    module = type(src).__module__.split(".")[0]
    if module == "torch":
        import torch  # only when the caller already passed torch tensors

        return torch.empty(tuple(shape), dtype=getattr(torch, dtype), device=src.device)
    if not isinstance(src, np.ndarray) and hasattr(src, "__array_namespace__"):
        xp = src.__array_namespace__()
        if hasattr(xp, dtype) and hasattr(xp, "empty"):
            return xp.empty(tuple(shape), dtype=getattr(xp, dtype), device=getattr(src, "device", None))
    if like.device != "host":
        raise binding_error("FP8ATTN_STATUS_BAD_DEVICE",
                            f"cannot allocate a {like.device} output for a {type(src).__name__}: pass it in")
    return np.empty(tuple(shape), dtype=NUMPY_DTYPES[dtype])


def descale_view(d: Any, name: str, shape: Sequence[int], like: View) -> View | None:
    """A descale argument: None (absent, 1), a Python number (one value broadcast with strides 0)
    or an array of `shape`."""
    if d is None:
        return None
    if isinstance(d, (int, float, np.floating, np.integer)):
        one = np.array([float(d)], dtype=np.float32)
        t = _struct(one.ctypes.data, "float32", "host", shape, [0] * len(shape))
        if like.device != "host":
            raise binding_error("FP8ATTN_STATUS_BAD_DEVICE", f"{name}: a scalar descale needs host inputs")
        return View(t, "float32", tuple(shape), "host", 0, one, [one])
    return view(d, name)


def to_bytes_pointer(buf: bytes | bytearray | memoryview) -> tuple[ctypes.c_void_p, Any]:
    """A pointer to a read-only bytes-like object, and the object keeping it alive."""
    arr = np.frombuffer(buf, dtype=np.uint8)
    return ctypes.c_void_p(arr.ctypes.data), arr
