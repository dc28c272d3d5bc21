"""Zero-element K and V exported with a NULL data pointer, as PyTorch's DLPack export gives them
when every key sequence is empty: the forward accepts them and returns O = 0 and LSE = -inf."""
import ctypes

import ml_dtypes
import numpy as np

import fp8attn
from conftest import e4m3, poisoned


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype, _new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class NullDataEmpty:
    """A host DLPack producer of a zero-element float8_e4m3fn tensor whose data pointer is NULL."""

    def __init__(self, shape):
        assert 0 in shape
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._managed = _DLManagedTensor()
        t = self._managed.dl_tensor
        t.data, t.device, t.ndim = None, _DLDevice(1, 0), len(shape)
        t.dtype, t.shape, t.strides, t.byte_offset = _DLDataType(10, 8, 1), self._shape, None, 0

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, stream=None, max_version=None):
        return _new_capsule(ctypes.addressof(self._managed), b"dltensor", None)


def test_null_data_empty_keys_give_zero_output_and_minus_inf_lse(rng, ctx):
    q = e4m3(rng.standard_normal((2, 37, 2, 64)), 32.0)
    plan = fp8attn.Plan(ctx, input_dtype="float8_e4m3fn", output_dtype="float32", head_dim=64, num_heads_q=2,
                        num_heads_kv=2)
    out, lse = poisoned((2, 37, 2, 64), np.float32), poisoned((2, 2, 37), np.float32)
    k, v = NullDataEmpty((2, 0, 2, 64)), NullDataEmpty((2, 0, 2, 64))
    plan.forward(q, k, v, out=out, lse=lse)
    assert q.dtype == ml_dtypes.float8_e4m3fn
    assert np.all(out == 0.0)
    assert np.all(lse == -np.inf)
