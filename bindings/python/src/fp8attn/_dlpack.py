"""Zero-copy views of any object with `__dlpack__` (torch, JAX, CuPy, numpy), host or CUDA.

The capsule is read in place: its DLTensor's data pointer, shape, strides and dtype become an
fp8attn_tensor. The capsule is not renamed ("consumed"), so the producer's own capsule destructor
releases the tensor when the view is dropped, after the call.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from ctypes import POINTER, c_char_p, c_int32, c_int64, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device", _DLDevice), ("ndim", c_int32), ("dtype", _DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32), ("manager_ctx", c_void_p), ("deleter", c_void_p),
                ("flags", c_uint64), ("dl_tensor", _DLTensor)]


_READ_ONLY_FLAG = 1
# DLDeviceType: kDLCPU, kDLCUDA, kDLCUDAHost (pinned host memory, usable as host memory).
_HOST_DEVICES, _CUDA_DEVICES = (1, 3), (2,)
# DLDataTypeCode and bits -> the binding's dtype names.
_DTYPES = {(2, 32): "float32", (2, 64): "float64", (4, 16): "bfloat16", (2, 16): "float16",
           (10, 8): "float8_e4m3fn", (12, 8): "float8_e5m2", (0, 32): "int32", (0, 64): "int64"}

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = c_void_p, [ctypes.py_object, c_char_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype, _is_valid.argtypes = ctypes.c_int, [ctypes.py_object, c_char_p]


@dataclass
class DLView:
    """What an fp8attn_tensor needs from a DLPack capsule; `capsule` keeps the memory alive."""
    data: int
    device: str  # "host" or "cuda"
    device_id: int
    dtype: str | None  # None: a dtype the library does not take
    dtype_desc: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    read_only: bool
    capsule: Any


def device_of(obj: Any) -> tuple[str, int]:
    """("host" | "cuda" | "other:<n>", id) from `__dlpack_device__`."""
    kind, ident = obj.__dlpack_device__()
    kind = int(kind)
    if kind in _HOST_DEVICES:
        return "host", int(ident)
    if kind in _CUDA_DEVICES:
        return "cuda", int(ident)
    return f"other:{kind}", int(ident)


def view(obj: Any, stream: int | None = None) -> DLView:
    """Reads `obj.__dlpack__()`; for CUDA producers `stream` is the stream the library will use
    (the producer then orders its pending work before it), per the array API standard."""
    device, _ = device_of(obj)
    kwargs = {"stream": stream} if device == "cuda" else {}
    try:
        capsule = obj.__dlpack__(max_version=(1, 0), **kwargs)
    except TypeError:  # a producer from before DLPack 1.0
        capsule = obj.__dlpack__(**kwargs)
    if _is_valid(capsule, b"dltensor_versioned"):
        managed = _DLManagedTensorVersioned.from_address(_get_pointer(capsule, b"dltensor_versioned"))
        t, read_only = managed.dl_tensor, bool(managed.flags & _READ_ONLY_FLAG)
    elif _is_valid(capsule, b"dltensor"):
        t, read_only = _DLManagedTensor.from_address(_get_pointer(capsule, b"dltensor")).dl_tensor, False
    else:
        raise TypeError("__dlpack__ returned no DLPack capsule (or one already consumed)")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides:
        strides = tuple(t.strides[i] for i in range(t.ndim))
    else:  # NULL strides: compact row-major
        compact: list[int] = []
        run = 1
        for extent in reversed(shape):
            compact.insert(0, run)
            run *= extent
        strides = tuple(compact)
    dev = "host" if t.device.device_type in _HOST_DEVICES else "cuda" if t.device.device_type in _CUDA_DEVICES \
        else f"other:{t.device.device_type}"
    key = (t.dtype.code, t.dtype.bits)
    return DLView(data=(t.data or 0) + t.byte_offset, device=dev, device_id=t.device.device_id,
                  dtype=_DTYPES.get(key) if t.dtype.lanes == 1 else None,
                  dtype_desc=f"DLPack code {t.dtype.code}, {t.dtype.bits} bits, {t.dtype.lanes} lanes",
                  shape=shape, strides=strides, read_only=read_only, capsule=capsule)
