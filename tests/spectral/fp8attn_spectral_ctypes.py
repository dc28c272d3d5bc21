"""ctypes bindings of the spectral-norm entry points of libfp8attn, for the Python tests and
tools. The library path comes from the FP8ATTN_LIBRARY environment variable."""
import ctypes
import os

import numpy as np

FP8ATTN_DTYPE_F32 = 1
FP8ATTN_DTYPE_BF16 = 3
FP8ATTN_DTYPE_E4M3 = 5
FP8ATTN_BACKEND_CPU = 1
MAX_RANK = 8


class Error(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("status", ctypes.c_int32), ("message", ctypes.c_char * 512)]


class Tensor(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("next", ctypes.c_void_p), ("data", ctypes.c_void_p),
                ("dtype", ctypes.c_int32), ("device", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_RANK), ("stride", ctypes.c_int64 * MAX_RANK)]


class ContextOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("next", ctypes.c_void_p), ("backend", ctypes.c_int32),
                ("device_ordinal", ctypes.c_int32), ("num_threads", ctypes.c_int32), ("log_level", ctypes.c_int32),
                ("log_callback", ctypes.c_void_p), ("log_user_data", ctypes.c_void_p)]


class PowerIterationOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("next", ctypes.c_void_p), ("max_iterations", ctypes.c_int32),
                ("tolerance", ctypes.c_float), ("seed", ctypes.c_uint64), ("warm_start", ctypes.c_void_p),
                ("iterations_out", ctypes.c_void_p), ("residual_out", ctypes.c_void_p),
                ("wq_descale", ctypes.c_float), ("wk_descale", ctypes.c_float)]


class RopeOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("next", ctypes.c_void_p), ("theta_base", ctypes.c_float),
                ("layout", ctypes.c_int32), ("min_offset", ctypes.c_int64), ("max_offset", ctypes.c_int64),
                ("max_iterations", ctypes.c_int32), ("tolerance", ctypes.c_float), ("seed", ctypes.c_uint64)]


def load_library():
    path = os.environ.get("FP8ATTN_LIBRARY")
    if not path:
        raise RuntimeError("set FP8ATTN_LIBRARY to the built libfp8attn.so")
    lib = ctypes.CDLL(path)
    lib.fp8attn_context_create.argtypes = [ctypes.POINTER(ContextOptions), ctypes.POINTER(ctypes.c_void_p),
                                           ctypes.POINTER(Error)]
    lib.fp8attn_context_destroy.argtypes = [ctypes.c_void_p]
    lib.fp8attn_qk_spectral_norms_workspace_size.argtypes = [
        ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int64,
        ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(Error)]
    lib.fp8attn_qk_spectral_norms.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(Tensor), ctypes.POINTER(Tensor), ctypes.c_int32, ctypes.c_int32,
        ctypes.c_int32, ctypes.POINTER(PowerIterationOptions), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
        ctypes.c_void_p, ctypes.POINTER(Error)]
    lib.fp8attn_qk_rope_norms.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(Tensor), ctypes.POINTER(Tensor), ctypes.c_int32, ctypes.c_int32,
        ctypes.c_int32, ctypes.POINTER(RopeOptions), ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(Error)]
    return lib


def matrix_tensor(array, dtype):
    """A host tensor view of a C-contiguous 2-D numpy array (kept alive by the caller)."""
    assert array.flags["C_CONTIGUOUS"] and array.ndim == 2
    t = Tensor()
    t.struct_size = ctypes.sizeof(Tensor)
    t.data = array.ctypes.data
    t.dtype = dtype
    t.device = 0
    t.rank = 2
    t.shape[0], t.shape[1] = array.shape
    t.stride[0], t.stride[1] = array.shape[1], 1
    return t


class Spectral:
    """A CPU context and calls on it."""

    def __init__(self, num_threads=0):
        self.lib = load_library()
        opts = ContextOptions()
        opts.struct_size = ctypes.sizeof(ContextOptions)
        opts.backend = FP8ATTN_BACKEND_CPU
        opts.num_threads = num_threads
        self.ctx = ctypes.c_void_p()
        self._check(self.lib.fp8attn_context_create(ctypes.byref(opts), ctypes.byref(self.ctx), None), "context")

    def close(self):
        self.lib.fp8attn_context_destroy(self.ctx)

    @staticmethod
    def _check(status, what, err=None):
        if status != 0:
            detail = err.message.decode() if err is not None else ""
            raise RuntimeError(f"{what} failed with status {status}: {detail}")

    def sigma(self, wq, wk, heads_q, heads_kv, head_dim, dtype=FP8ATTN_DTYPE_F32, wq_descale=0.0, wk_descale=0.0,
              warm_start=None, max_iterations=0, tolerance=0.0):
        """Returns (sigma, iterations, residual) per query head."""
        d_model = wq.shape[1]
        size = ctypes.c_size_t()
        err = Error()
        err.struct_size = ctypes.sizeof(Error)
        self._check(self.lib.fp8attn_qk_spectral_norms_workspace_size(self.ctx, heads_q, heads_kv, head_dim, d_model,
                                                                      ctypes.byref(size), ctypes.byref(err)),
                    "workspace size", err)
        workspace = np.empty(size.value, dtype=np.uint8)
        sigma = np.full(heads_q, np.nan, dtype=np.float32)
        iterations = np.full(heads_q, -1, dtype=np.int32)
        residual = np.full(heads_q, np.nan, dtype=np.float32)
        opts = PowerIterationOptions()
        opts.struct_size = ctypes.sizeof(PowerIterationOptions)
        opts.max_iterations = max_iterations
        opts.tolerance = tolerance
        opts.iterations_out = iterations.ctypes.data
        opts.residual_out = residual.ctypes.data
        opts.wq_descale = wq_descale
        opts.wk_descale = wk_descale
        if warm_start is not None:
            opts.warm_start = warm_start.ctypes.data
        tq, tk = matrix_tensor(wq, dtype), matrix_tensor(wk, dtype)
        self._check(self.lib.fp8attn_qk_spectral_norms(self.ctx, ctypes.byref(tq), ctypes.byref(tk), heads_q,
                                                       heads_kv, head_dim, ctypes.byref(opts), sigma.ctypes.data,
                                                       workspace.ctypes.data, workspace.size, None,
                                                       ctypes.byref(err)),
                    "spectral norms", err)
        return sigma, iterations, residual

    def rope_norms(self, wq, wk, heads_q, heads_kv, head_dim, max_offset, min_offset=0, theta_base=10000.0,
                   interleaved=False):
        """Returns (safe bound, exact maximum over the offsets) per query head."""
        safe = np.full(heads_q, np.nan, dtype=np.float32)
        exact = np.full(heads_q, np.nan, dtype=np.float32)
        opts = RopeOptions()
        opts.struct_size = ctypes.sizeof(RopeOptions)
        opts.theta_base = theta_base
        opts.layout = 1 if interleaved else 0
        opts.min_offset = min_offset
        opts.max_offset = max_offset
        err = Error()
        err.struct_size = ctypes.sizeof(Error)
        tq, tk = matrix_tensor(wq, FP8ATTN_DTYPE_F32), matrix_tensor(wk, FP8ATTN_DTYPE_F32)
        self._check(self.lib.fp8attn_qk_rope_norms(self.ctx, ctypes.byref(tq), ctypes.byref(tk), heads_q, heads_kv,
                                                   head_dim, ctypes.byref(opts), safe.ctypes.data, exact.ctypes.data,
                                                   ctypes.byref(err)),
                    "rope norms", err)
        return safe, exact
