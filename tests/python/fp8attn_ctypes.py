"""ctypes access to the fp8attn C ABI (include/fp8attn/fp8attn.h) for the Python host tests.

The structs are the fp8attn package's (bindings/python/src/fp8attn/_abi.py), written by hand
from the header as a host in another language would write them; test_forward_ctypes.py checks
their layout against the C compiler's.
"""
import ctypes
import os
import pathlib
import sys

import ml_dtypes
import numpy as np

MAX_RANK = 8
ERROR_MESSAGE_LEN = 512

OK = 0
STATUS_UNSUPPORTED_HEAD_DIM = 2001
STATUS_BAD_SHAPE = 1005

DTYPE_F32, DTYPE_F64, DTYPE_BF16, DTYPE_F16, DTYPE_E4M3, DTYPE_E5M2, DTYPE_I32 = range(1, 8)
DEVICE_HOST = 0
BACKEND_CPU = 1
LOG_OFF = 6
KV_ORDER_REVERSE, KV_ORDER_FORWARD = 0, 1


# The structs come from the fp8attn package (bindings/python), the one copy of the ABI on the
# Python side; this file keeps only the tests' helpers around them.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bindings" / "python" / "src"))
from fp8attn import _abi  # noqa: E402

Error = _abi.ErrorStruct
Tensor = _abi.Tensor
LogCallback = _abi.LogCallback
ContextOptions = _abi.ContextOptions
AttentionDesc = _abi.AttentionDesc
Telemetry = _abi.Telemetry
AttentionArgs = _abi.AttentionArgs
MIRRORS = _abi.STRUCTS

_DTYPES = {
    np.dtype(np.float32): DTYPE_F32,
    np.dtype(np.float64): DTYPE_F64,
    np.dtype(ml_dtypes.bfloat16): DTYPE_BF16,
    np.dtype(np.float16): DTYPE_F16,
    np.dtype(ml_dtypes.float8_e4m3fn): DTYPE_E4M3,
    np.dtype(ml_dtypes.float8_e5m2): DTYPE_E5M2,
    np.dtype(np.int32): DTYPE_I32,
}


def tensor_of(array):
    """A Tensor viewing a host numpy array (borrowed: keep the array alive across the call)."""
    if array is None:
        return Tensor()  # data NULL: an absent optional tensor
    t = Tensor()
    t.struct_size = ctypes.sizeof(Tensor)
    t.data = array.ctypes.data
    t.dtype = _DTYPES[array.dtype]
    t.device = DEVICE_HOST
    t.rank = array.ndim
    for i, (extent, stride_bytes) in enumerate(zip(array.shape, array.strides)):
        t.shape[i] = extent
        t.stride[i] = stride_bytes // array.itemsize
    return t


class Fp8attnError(RuntimeError):
    def __init__(self, lib, call, status, err):
        self.status = status
        self.message = err.message.decode("utf-8", "replace")
        super().__init__(f"{call}: {lib.status_name(status)} ({status}): {self.message}")


class Library:
    """libfp8attn loaded by path, with the prototypes of the entry points the tests use."""

    def __init__(self, path=None):
        path = path or os.environ.get("FP8ATTN_LIBRARY")
        if not path:
            raise RuntimeError("set FP8ATTN_LIBRARY to the path of libfp8attn.so")
        self.path = path
        self.dll = ctypes.CDLL(path)
        d = self.dll
        P = ctypes.POINTER
        c_void_p = ctypes.c_void_p
        d.fp8attn_get_version.restype = ctypes.c_int32
        d.fp8attn_get_version.argtypes = []
        d.fp8attn_status_name.restype = ctypes.c_char_p
        d.fp8attn_status_name.argtypes = [ctypes.c_int32]
        d.fp8attn_context_create.restype = ctypes.c_int32
        d.fp8attn_context_create.argtypes = [P(ContextOptions), P(c_void_p), P(Error)]
        d.fp8attn_context_destroy.restype = None
        d.fp8attn_context_destroy.argtypes = [c_void_p]
        d.fp8attn_attention_desc_init.restype = ctypes.c_int32
        d.fp8attn_attention_desc_init.argtypes = [P(AttentionDesc)]
        d.fp8attn_plan_create.restype = ctypes.c_int32
        d.fp8attn_plan_create.argtypes = [c_void_p, P(AttentionDesc), P(c_void_p), P(Error)]
        d.fp8attn_plan_destroy.restype = None
        d.fp8attn_plan_destroy.argtypes = [c_void_p]
        d.fp8attn_plan_workspace_size.restype = ctypes.c_int32
        d.fp8attn_plan_workspace_size.argtypes = [c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                                  P(ctypes.c_size_t), P(Error)]
        d.fp8attn_attention_forward.restype = ctypes.c_int32
        d.fp8attn_attention_forward.argtypes = [c_void_p, P(AttentionArgs), c_void_p, ctypes.c_size_t, c_void_p,
                                                P(Error)]

    def status_name(self, status):
        return self.dll.fp8attn_status_name(status).decode()

    def call(self, name, *args):
        """Calls an entry point whose last argument is an fp8attn_error*; raises on failure."""
        err = Error()
        err.struct_size = ctypes.sizeof(Error)
        status = getattr(self.dll, name)(*args, ctypes.byref(err))
        if status != OK:
            raise Fp8attnError(self, name, status, err)
        return status

    def cpu_context(self, num_threads=2):
        options = ContextOptions()
        options.struct_size = ctypes.sizeof(ContextOptions)
        options.backend = BACKEND_CPU
        options.num_threads = num_threads
        options.log_level = LOG_OFF
        ctx = ctypes.c_void_p()
        self.call("fp8attn_context_create", ctypes.byref(options), ctypes.byref(ctx))
        return ctx

    def default_desc(self):
        desc = AttentionDesc()
        desc.struct_size = ctypes.sizeof(AttentionDesc)  # this mirror's layout; the library fills no more
        status = self.dll.fp8attn_attention_desc_init(ctypes.byref(desc))
        if status != OK:
            raise RuntimeError(f"fp8attn_attention_desc_init: {self.status_name(status)}")
        return desc

    def plan(self, ctx, desc):
        plan = ctypes.c_void_p()
        self.call("fp8attn_plan_create", ctx, ctypes.byref(desc), ctypes.byref(plan))
        return plan

    def forward(self, plan, args, batch, max_seqlen_q, max_seqlen_k):
        """Queries the workspace, allocates it, and runs one forward call."""
        size = ctypes.c_size_t()
        self.call("fp8attn_plan_workspace_size", plan, batch, max_seqlen_q, max_seqlen_k, ctypes.byref(size))
        workspace = np.empty(max(size.value, 1), dtype=np.uint8)
        self.call("fp8attn_attention_forward", plan, ctypes.byref(args), workspace.ctypes.data, size.value, None)
