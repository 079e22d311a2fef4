"""Processes named by host and PID in files that other processes read: whether the one that wrote
a file still runs (an evaluation worker's claim, a store being made)."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def this_host() -> str:
    return socket.gethostname()


def alive(pid: int) -> bool:
    """Whether process ``pid`` of this host runs (a zombie does not: it has finished, unreaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return True  # no /proc (macOS): the signal test above is all there is
    return fields[0] != "Z"
