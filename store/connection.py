"""Opening a store's DuckDB file: bounded waits for the write lock, clear errors.

DuckDB lets one process write a database file; while it does, other processes
can open it neither for writing nor read-only. We retry for a bounded time and
then say which process holds the store.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from ood_store._errors import StoreError, StoreLockedError, first_line
from ood_store._filekinds import kind
from ood_store._store.damage import damaged_file, has_duckdb_magic, store_problem

T = TypeVar("T")

DEFAULT_LOCK_TIMEOUT = 30.0
#: The longest pause between two tries to open a store that another process holds: short enough that
#: a reader gets in between the commits of a collector (which pauses longer than this after each).
MAX_RETRY_DELAY_S = 0.1

_LOCK_HELD = re.compile(r"Conflicting lock is held in (?P<exe>.*?) \(PID (?P<pid>\d+)\)")


def connect(path: Path, *, read_only: bool, lock_timeout: float) -> duckdb.DuckDBPyConnection:
    """Open ``path``, waiting up to ``lock_timeout`` seconds for another writer."""
    _check_file(path, read_only)
    return waiting(path, lock_timeout, lambda: duckdb.connect(str(path), read_only=read_only))


def waiting(path: Path, lock_timeout: float, open_store: Callable[[], T]) -> T:
    """``open_store()`` (a connect, an ATTACH of ``path``), tried again while another process holds the store.

    Gives up after ``lock_timeout`` seconds naming the holder; a damaged file or any other refusal is a
    one-line :class:`StoreError` naming ``path``.
    """
    deadline = time.monotonic() + max(lock_timeout, 0.0)
    delay = 0.02
    while True:
        try:
            return open_store()
        except duckdb.ConnectionException as exc:
            raise StoreError(f"{path}: already open in this process in another mode ({first_line(exc)})") from None
        except duckdb.ResourceInUseException as exc:  # an ATTACH of a file this process has open for writing
            raise StoreError(f"{path}: already open for writing in this process ({first_line(exc)})") from None
        except duckdb.Error as exc:
            held = _LOCK_HELD.search(str(exc)) if isinstance(exc, duckdb.IOException) else None
            if held is None:
                raise store_problem(path, exc) or StoreError(
                    f"{path}: cannot open the store: {first_line(exc)}"
                ) from None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pid = int(held.group("pid"))
                raise StoreLockedError(
                    f"{path}: the store is in use by process {pid} ({describe_process(pid, held.group('exe'))}); "
                    f"gave up after waiting {lock_timeout:g}s. DuckDB allows one writing process: wait for it "
                    "to finish, raise `lock_timeout`, or use another store"
                ) from None
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, MAX_RETRY_DELAY_S)


def describe_process(pid: int, exe: str) -> str:
    """The command line of ``pid`` when the OS tells it, else the executable DuckDB named."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return exe
    words = [w for w in raw.decode("utf-8", "replace").split("\0") if w]
    if not words:
        return exe
    text = " ".join(" ".join(words).split())
    return text if len(text) <= 160 else text[:157] + "..."


def _check_file(path: Path, read_only: bool) -> None:
    if path.is_dir():
        raise StoreError(f"{path}: is a directory, not a store file")
    if not path.exists():
        if read_only:
            raise StoreError(f"{path}: no store here; create one with `ood-store init` or `ood-store ingest`")
        if not path.parent.exists():
            raise StoreError(f"{path}: folder {path.parent} does not exist")
        return
    try:
        what = kind(path.stat().st_mode)
        if what is not None:  # a FIFO would make the read below, and DuckDB, wait for a writer forever
            raise StoreError(f"{path}: not a regular file ({what}), so not a store file")
        with path.open("rb") as fh:
            head = fh.read(12)
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the store: {exc.strerror}") from None
    if not head:
        raise damaged_file(path, "it is empty (0 bytes)")
    if not has_duckdb_magic(head):
        raise StoreError(f"{path}: not a DuckDB database file")
    if not read_only and not os.access(path, os.W_OK):
        raise StoreError(f"{path}: the store is not writable")


def fetch_value(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> Any:
    """The first value of a query that returns one row (a count, a version)."""
    row = fetch_one(con, sql, params)
    if row is None:
        raise StoreError(f"internal query returned no row: {sql.splitlines()[0]}")
    return row[0]


def fetch_one(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> tuple | None:
    """The first row of a query, or None. Fetches everything: with DuckDB 2 an
    unfinished result would block the connection."""
    rows = con.execute(sql, params).fetchall()
    return rows[0] if rows else None
