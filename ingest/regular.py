"""Opening input files: only regular files are read; a FIFO, a socket or a device is named, never waited on.

A FIFO named ``results_x.json`` would make a plain ``open`` wait for a writer
forever. Files are opened without blocking, checked with ``fstat`` on the open
descriptor (so that nothing can be swapped in between the check and the read),
and only then read.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from ood_store._errors import InputError
from ood_store._filekinds import kind


def not_regular(shown: str, mode: int) -> InputError | None:
    """The error for a path whose ``st_mode`` is not a regular file's (None for a regular file)."""
    what = kind(mode)
    return None if what is None else InputError(shown, None, f"not a regular file ({what}): not read")


def cannot_read(shown: str, exc: OSError) -> InputError:
    return InputError(shown, None, f"cannot read: {exc.strerror or type(exc).__name__}")


def open_regular(path: Path, shown: str) -> BinaryIO:
    """``path`` open for reading bytes; InputError naming ``shown`` when it cannot be read or is not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise cannot_read(shown, exc) from None
    try:
        error = not_regular(shown, os.fstat(fd).st_mode)
        if error is not None:
            raise error
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path, shown: str) -> bytes:
    """The bytes of ``path`` (see :func:`open_regular`)."""
    with open_regular(path, shown) as file:
        try:
            return file.read()
        except OSError as exc:
            raise cannot_read(shown, exc) from None


def check_name(path: Path, shown: str) -> None:
    """InputError naming ``shown`` when ``path`` is not UTF-8 text (bytes of another encoding in a name).

    The store keeps paths, and the task a samples file's name gives, as text.
    """
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(shown, None, "the path is not UTF-8 text, which the store keeps paths as: rename it") from None
