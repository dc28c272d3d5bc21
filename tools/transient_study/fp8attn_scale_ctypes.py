"""ctypes bindings of libfp8attn's scale state, for the transient study."""
import ctypes

import numpy as np

FP8ATTN_DTYPE_F32 = 1
FP8ATTN_BACKEND_CPU = 1
FP8ATTN_TENSOR_LOGIT = 7
FP8ATTN_RECIPE_DELAYED = 1
FP8ATTN_RECIPE_GEOMETRY = 3
NUM_TENSOR_KINDS = 8


class Error(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("status", ctypes.c_int32), ("message", ctypes.c_char * 512)]


class Tensor(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("next", ctypes.c_void_p), ("data", ctypes.c_void_p),
                ("dtype", ctypes.c_int32), ("device", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * 8), ("stride", ctypes.c_int64 * 8)]


class ContextOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("next", ctypes.c_void_p), ("backend", ctypes.c_int32),
                ("device_ordinal", ctypes.c_int32), ("num_threads", ctypes.c_int32), ("log_level", ctypes.c_int32),
                ("log_callback", ctypes.c_void_p), ("log_user_data", ctypes.c_void_p)]


class ScaleStateOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("next", ctypes.c_void_p), ("num_layers", ctypes.c_int32),
                ("recipe", ctypes.c_int32 * NUM_TENSOR_KINDS), ("amax_history_len", ctypes.c_int32),
                ("amax_algo", ctypes.c_int32), ("margin", ctypes.c_float), ("burn_in_steps", ctypes.c_int32),
                ("token_norm_bound", ctypes.c_float), ("alpha_margin", ctypes.c_float),
                ("alpha_decay", ctypes.c_float), ("grad_dtype", ctypes.c_int32)]


def _matrix(array):
    t = Tensor()
    t.struct_size = ctypes.sizeof(Tensor)
    t.data = array.ctypes.data
    t.dtype = FP8ATTN_DTYPE_F32
    t.rank = 2
    t.shape[0], t.shape[1] = array.shape
    t.stride[0], t.stride[1] = array.shape[1], 1
    return t


class Library:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.ctx = ctypes.c_void_p()
        opts = ContextOptions()
        opts.struct_size = ctypes.sizeof(ContextOptions)
        opts.backend = FP8ATTN_BACKEND_CPU
        self.check(self.lib.fp8attn_context_create(ctypes.byref(opts), ctypes.byref(self.ctx), None), "context")

    def check(self, status, what, err=None):
        if status != 0:
            raise RuntimeError(f"{what}: status {status} {err.message.decode() if err else ''}")

    def close(self):
        self.lib.fp8attn_context_destroy(self.ctx)


class ScaleState:
    """One layer's scale state with the given logit recipe."""

    def __init__(self, library, logit_recipe, token_norm_bound, burn_in_steps):
        self.library, self.lib = library, library.lib
        opts = ScaleStateOptions()
        opts.struct_size = ctypes.sizeof(ScaleStateOptions)
        opts.num_layers = 1
        opts.recipe[FP8ATTN_TENSOR_LOGIT] = logit_recipe
        opts.token_norm_bound = token_norm_bound
        opts.burn_in_steps = burn_in_steps
        self.handle = ctypes.c_void_p()
        self.err = Error()
        self.err.struct_size = ctypes.sizeof(Error)
        library.check(self.lib.fp8attn_scale_state_create(library.ctx, ctypes.byref(opts), ctypes.byref(self.handle),
                                                          ctypes.byref(self.err)), "scale state", self.err)

    def set_qk_weights(self, wq, wk, heads_q, heads_kv, head_dim):
        tq, tk = _matrix(wq), _matrix(wk)
        self.library.check(self.lib.fp8attn_scale_state_set_qk_weights(
            self.handle, 0, ctypes.byref(tq), ctypes.byref(tk), heads_q, heads_kv, head_dim, ctypes.byref(self.err)),
            "set_qk_weights", self.err)

    def logit_scale(self):
        scale = ctypes.c_float()
        self.library.check(self.lib.fp8attn_scale_state_get_scale(self.handle, 0, FP8ATTN_TENSOR_LOGIT,
                                                                  ctypes.byref(scale), None, ctypes.byref(self.err)),
                           "get_scale", self.err)
        return scale.value

    def report_logit_amax(self, amax):
        self.library.check(self.lib.fp8attn_scale_state_report_amax(self.handle, 0, FP8ATTN_TENSOR_LOGIT,
                                                                    ctypes.c_float(amax), ctypes.byref(self.err)),
                           "report_amax", self.err)

    def step(self):
        self.library.check(self.lib.fp8attn_scale_state_step(self.handle, ctypes.byref(self.err)), "step", self.err)

    def close(self):
        self.lib.fp8attn_scale_state_destroy(self.handle)
