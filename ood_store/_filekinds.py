"""What a path is when it is not a regular file: a folder, a FIFO, a device... Read by ingest (input
files) and by the store (its file), which both read regular files only: opening a FIFO waits for a writer."""

from __future__ import annotations

import stat

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def kind(mode: int) -> str | None:
    """What a file of this ``st_mode`` is, when it is not a regular file (None when it is)."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")
