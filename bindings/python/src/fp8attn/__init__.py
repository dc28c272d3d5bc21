"""fp8attn: FP8 attention for Hopper GPUs with a kernel-faithful CPU backend, over its C ABI
(include/fp8attn/fp8attn.h) through ctypes: one wheel for every CPython version.

The wheel bundles libfp8attn.so; set FP8ATTN_LIBRARY to the path of another libfp8attn.so (an
installed tree, your own build) to load that instead.
"""
from ._library import LIBRARY_ENV, library_path, status_name, version
from .attention import attention, default_context
from .combine import attention_combine
from .context import Context, Plan
from .errors import (DeviceError, Error, InternalError, InvalidArgumentError, NumericsError, ResourceError,
                     UnsupportedError)
from .kv_append import kv_append
from .numerics import logit_bound, predict_p_underflow, qk_spectral_norms
from .quantize import quantize
from .scale_state import ScaleState

__version__ = "0.1.0"

__all__ = [
    "attention", "attention_combine", "quantize", "kv_append", "predict_p_underflow", "qk_spectral_norms", "logit_bound",
    "Context", "Plan",
    "ScaleState", "Error", "InvalidArgumentError", "UnsupportedError", "ResourceError", "DeviceError",
    "InternalError", "NumericsError", "default_context", "library_path", "status_name", "version", "LIBRARY_ENV",
]
