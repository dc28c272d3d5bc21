"""fp8attn.Error and its subclasses, one per status category of the header (the thousands digit).

Every failed call raises one of them; none is swallowed and nothing falls back silently.
"""
from __future__ import annotations


class Error(Exception):
    """A failed fp8attn call: `status` (the code), `name` (such as "FP8ATTN_STATUS_BAD_SHAPE"),
    `message` (the library's detail, from the error struct the same call filled) and `call`."""

    def __init__(self, status: int, name: str, message: str, call: str = "") -> None:
        self.status = status
        self.code = status
        self.name = name
        self.message = message
        self.call = call
        super().__init__(f"{call + ': ' if call else ''}{name} ({status}): {message}")


class InvalidArgumentError(Error, ValueError):
    """1xxx: a bad argument."""


class UnsupportedError(Error, NotImplementedError):
    """2xxx: a valid request this build or backend does not support."""


class ResourceError(Error):
    """3xxx: out of memory, or a workspace or buffer too small."""


class DeviceError(Error):
    """4xxx: a CUDA runtime or driver failure, or no usable device."""


class InternalError(Error):
    """5xxx: a bug in fp8attn."""


class NumericsError(Error):
    """6xxx: a numerics failure, such as a blob that fails its checksum."""


_BY_CATEGORY = {1: InvalidArgumentError, 2: UnsupportedError, 3: ResourceError, 4: DeviceError, 5: InternalError,
                6: NumericsError}


def error_class(status: int) -> type[Error]:
    """The subclass for a status code (Error itself for a code outside the categories)."""
    return _BY_CATEGORY.get(status // 1000, Error)
