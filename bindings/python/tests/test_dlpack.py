"""Objects with __dlpack__: zero-copy in and out. numpy's own exporter covers float32 and int32;
a minimal exporter written here (a DLManagedTensor in a "dltensor" capsule over a numpy buffer)
covers float8_e4m3fn and bfloat16, which numpy cannot export, and a CUDA device claim. No CUDA
device exists here, so the CUDA path is exercised only up to the library's BAD_DEVICE refusal."""
import ctypes

import ml_dtypes
import numpy as np
import pytest

import fp8attn
from fp8attn import _dlpack
from conftest import e4m3, poisoned

_NAME = b"dltensor"
_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype, _new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_CODES = {np.dtype(ml_dtypes.float8_e4m3fn): (10, 8), np.dtype(ml_dtypes.bfloat16): (4, 16),
          np.dtype(np.float32): (2, 32), np.dtype(np.int32): (0, 32), np.dtype(np.int64): (0, 64)}


class Exporter:
    """Exports a numpy array through DLPack only (it is not an ndarray), claiming `device_type`."""

    def __init__(self, array, device_type=1, device_id=0):
        self.array, self.device_type, self.device_id, self.exports = array, device_type, device_id, 0

    def __dlpack_device__(self):
        return self.device_type, self.device_id

    def __dlpack__(self, stream=None, max_version=None):
        self.exports += 1
        a = self.array
        self._shape = (ctypes.c_int64 * a.ndim)(*a.shape)
        self._strides = (ctypes.c_int64 * a.ndim)(*(s // a.itemsize for s in a.strides))
        m = _dlpack._DLManagedTensor()
        t = m.dl_tensor
        t.data, t.ndim = a.ctypes.data, a.ndim
        t.device.device_type, t.device.device_id = self.device_type, self.device_id
        t.dtype.code, t.dtype.bits = _CODES[a.dtype]
        t.dtype.lanes = 1
        t.shape, t.strides = self._shape, self._strides
        self._managed = m  # the exporter owns the memory; no deleter is needed
        return _new_capsule(ctypes.addressof(m), _NAME, None)


def _inputs(rng):
    q8 = e4m3(rng.standard_normal((1, 40, 2, 64)), 1.0)
    k8 = e4m3(rng.standard_normal((1, 50, 2, 64)), 1.0)
    v8 = e4m3(rng.standard_normal((1, 50, 2, 64)), 1.0)
    return q8, k8, v8


def test_dlpack_inputs_and_output_are_zero_copy(rng, ctx):
    q8, k8, v8 = _inputs(rng)
    want = fp8attn.attention(q8, k8, v8, causal=True)
    q, k, v = Exporter(q8), Exporter(k8), Exporter(v8)
    got = fp8attn.attention(q, k, v, causal=True)  # output allocated with numpy (host, unknown library)
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16)) and q.exports >= 1
    out = poisoned((1, 40, 2, 64), ml_dtypes.bfloat16)
    with ctx.plan(head_dim=64, num_heads_q=2, num_heads_kv=2, causal=True) as plan:
        res = plan.forward(q, k, v, out=Exporter(out))
    assert isinstance(res, Exporter)
    assert np.array_equal(out.view(np.uint16), want.view(np.uint16)), "the call wrote through the DLPack view"


def test_numpy_dlpack_exports_work(rng):
    x = rng.standard_normal((1, 30, 2, 64)).astype(np.float32)

    class OnlyDLPack:  # numpy's own exporter, behind an object that is not an ndarray
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    a8, ad, amax = fp8attn.quantize(OnlyDLPack(x), granularity="head")
    b8, bd, bmax = fp8attn.quantize(x, granularity="head")
    assert np.array_equal(a8.view(np.uint8), b8.view(np.uint8)) and np.array_equal(ad, bd) and amax == bmax


def test_cuda_claim_reaches_the_library_as_a_device_tensor(rng):
    q8, k8, v8 = _inputs(rng)
    with pytest.raises(fp8attn.InvalidArgumentError) as info:
        fp8attn.attention(Exporter(q8, 2), Exporter(k8, 2), Exporter(v8, 2), backend="cpu")
    print(info.value)
    # The output is allocated for the input's device: unknown library on CUDA -> the binding refuses.
    assert info.value.name == "FP8ATTN_STATUS_BAD_DEVICE"
    out = poisoned((1, 40, 2, 64), ml_dtypes.bfloat16)
    with fp8attn.Context("cpu") as c, c.plan(head_dim=64, num_heads_q=2, num_heads_kv=2) as plan:
        with pytest.raises(fp8attn.InvalidArgumentError) as info:
            plan.forward(Exporter(q8, 2), Exporter(k8, 2), Exporter(v8, 2), out=Exporter(out, 2))
    print(info.value)
    assert info.value.name == "FP8ATTN_STATUS_BAD_DEVICE" and info.value.call == "fp8attn_attention_forward"
    assert np.all(np.isnan(out.astype(np.float32)))
    # A CUDA tensor on another device than the context's is refused by the binding itself.
    with fp8attn.Context("cpu", device_ordinal=0) as c, c.plan(head_dim=64, num_heads_q=2, num_heads_kv=2) as plan:
        with pytest.raises(fp8attn.InvalidArgumentError) as info:
            plan.forward(Exporter(q8, 2, 1), Exporter(k8, 2, 1), Exporter(v8, 2, 1), out=Exporter(out, 2, 1))
    assert info.value.name == "FP8ATTN_STATUS_BAD_DEVICE" and info.value.call == "fp8attn (binding)"
    assert "device 1" in info.value.message


def test_unknown_dlpack_dtype_is_refused():
    class Int8(Exporter):
        pass

    x = np.zeros((2, 2), np.int8)
    _CODES[x.dtype] = (0, 8)
    try:
        with pytest.raises(fp8attn.InvalidArgumentError) as info:
            fp8attn.quantize(Int8(x.reshape(1, 1, 2, 2)))
        assert info.value.name == "FP8ATTN_STATUS_BAD_DTYPE"
    finally:
        del _CODES[x.dtype]


def test_int64_slot_mapping_through_dlpack():
    """kv_append's slot_mapping is int64: through DLPack (torch's int64 tensors come so) it reaches
    the library as FP8ATTN_DTYPE_I64 and writes the same cache bytes as the numpy array."""
    rng = np.random.default_rng()
    k = rng.standard_normal((3, 2, 64)).astype(np.float32)
    v = rng.standard_normal((3, 2, 64)).astype(np.float32)
    slots = rng.choice(32, size=3, replace=False).astype(np.int64)
    assert _dlpack.view(Exporter(slots)).dtype == "int64"
    caches = [[poisoned((4, 8, 2, 64), ml_dtypes.float8_e4m3fn) for _ in range(2)] for _ in range(2)]
    fp8attn.kv_append(k, v, caches[0][0], caches[0][1], slots)
    fp8attn.kv_append(k, v, caches[1][0], caches[1][1], Exporter(slots))
    for a, b in zip(caches[0], caches[1]):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))
    assert not np.all(caches[1][0].view(np.uint8) == 0x7F), "nothing was written"
