"""The lifetime of a library handle, shared by Context, Plan and ScaleState: closed once, by
close(), a with-block or garbage collection."""
from __future__ import annotations

import ctypes
from typing import Any, TypeVar

from ._library import dll

_T = TypeVar("_T", bound="OwnedHandle")


class OwnedHandle:
    """Holds `_handle` (a ctypes.c_void_p) and destroys it with the C function `_destroy`."""

    _destroy = ""
    _handle: ctypes.c_void_p

    def close(self) -> None:
        if getattr(self, "_handle", None):
            getattr(dll(), self._destroy)(self._handle)
            self._handle = ctypes.c_void_p()

    def __enter__(self: _T) -> _T:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
