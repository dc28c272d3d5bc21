"""Loads libfp8attn.so with ctypes and calls its entry points.

The wheel carries the library next to this file. The environment variable FP8ATTN_LIBRARY, when
set, names another libfp8attn.so to load instead (a host that brings its own build, or a test of
an installed tree); the bundled one is then not touched.
"""
from __future__ import annotations

import ctypes
import os
import pathlib
import threading
from typing import Any

from . import _abi
from .errors import error_class

LIBRARY_ENV = "FP8ATTN_LIBRARY"

_lock = threading.Lock()
_dll: ctypes.CDLL | None = None


def library_path() -> str:
    """The path the library is (or will be) loaded from."""
    override = os.environ.get(LIBRARY_ENV)
    if override:
        return override
    bundled = pathlib.Path(__file__).with_name("libfp8attn.so")
    if not bundled.exists():
        raise OSError(f"fp8attn: no bundled libfp8attn.so at {bundled} and {LIBRARY_ENV} is not set")
    return str(bundled)


def dll() -> ctypes.CDLL:
    """The loaded library, with every prototype set (loaded once, on first use)."""
    global _dll
    with _lock:
        if _dll is None:
            lib = ctypes.CDLL(library_path())
            for name, (restype, argtypes) in _abi.PROTOTYPES.items():
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = restype, argtypes
            _dll = lib
        return _dll


def status_name(status: int) -> str:
    return dll().fp8attn_status_name(status).decode()


def version() -> tuple[int, int, int]:
    """The loaded library's (major, minor, patch)."""
    v = dll().fp8attn_get_version()
    return v // 10000, v // 100 % 100, v % 100


def call(name: str, *args: Any) -> None:
    """Calls an entry point whose last argument is an fp8attn_error*, with a fresh error struct per
    call; raises the status's Error subclass, carrying the message the same call wrote."""
    err = _abi.new(_abi.ErrorStruct)
    status = getattr(dll(), name)(*args, ctypes.byref(err))
    if status != 0:
        message = err.message.decode("utf-8", "replace")
        raise error_class(status)(status, status_name(status), message, name)
