"""Opening a store's DuckDB file: bounded waits for the write lock, clear errors.

DuckDB lets one process write a database file; while it does, other processes
can open it neither for writing nor read-only. We retry for a bounded time and
then say which process holds the store.

DuckDB (2.0.1) reads a file's headers before it takes the file's lock, and trusts them once it has
the lock. A writer that checkpoints and lets go in between (on close) leaves the opener with headers
that no longer describe the file: it reads old blocks (and a commit it then checkpoints silently
drops the other writer's last one) or blocks past the end ("the store file is damaged: it is shorter
than DuckDB expects"). So every open of a store by ood-store and every close of a writer's connection
happen under an advisory lock of our own on the store's folder (:func:`guarded`): shared for an open,
exclusive for a writer's open and close, so that no open reads the headers while a writer checkpoints
and lets go. tests/test_store_birth.py (``test_a_writer_closing_between_an_openers_header_read_and_lock``)
shows the loss with DuckDB alone and its absence through :func:`connect`.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from ood_store._errors import StoreError, StoreLockedError, first_line
from ood_store._filekinds import kind
from ood_store._store.damage import has_duckdb_magic, store_problem

T = TypeVar("T")

DEFAULT_LOCK_TIMEOUT = 30.0
#: The longest pause between two tries to open a store that another process holds: short enough that
#: a reader gets in between the commits of a collector (which pauses longer than this after each).
MAX_RETRY_DELAY_S = 0.1

# DuckDB names the holder ("held in /usr/bin/python3 (PID 4242)"), or, when the holder let go between its
# try and its asking who holds the lock, only "held in PID 0": a store in use all the same, tried again.
_LOCK_HELD = re.compile(r"Conflicting lock is held in (?:(?P<exe>.*?) \(PID (?P<pid>\d+)\)|PID (?P<bare>\d+))")


def connect(
    path: Path, *, read_only: bool, lock_timeout: float, create: Callable[[Path], object] | None = None
) -> duckdb.DuckDBPyConnection:
    """Open ``path``, waiting up to ``lock_timeout`` seconds for another writer.

    ``create(path)`` makes the store when it is not there (checked before each try, so that DuckDB
    never makes it in place: a store taken away by another process meanwhile is made again whole).
    """
    _check_file(path, read_only)

    def attempt() -> duckdb.DuckDBPyConnection:
        if create is not None and not path.exists():
            create(path)
        with guarded(path, exclusive=not read_only):
            return opened()

    def opened() -> duckdb.DuckDBPyConnection:
        before = _identity(path)
        try:
            con = duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException:
            # DuckDB checks that the file exists, then opens it without creating it: a store moved aside in
            # between (birth.discard) is "No such file or directory". Open the path again.
            if before is not None and _identity(path) != before:
                raise _Replaced from None
            raise
        after = _identity(path)
        if before is not None and after != before:
            # The file at the path changed while DuckDB opened it: the process holding it moved it aside
            # (birth.discard: a store that stored nothing is removed) after DuckDB opened it and before
            # DuckDB had its lock, so what this connection wrote would be lost with that file; or DuckDB
            # found no file and made an empty database in its place, which is removed again (a creating
            # process links a whole store there; others see the path change and open it again).
            try:
                if after is not None and not read_only and _has_no_tables(con) and _identity(path) == after:
                    with suppress(OSError):
                        os.unlink(path)
            finally:
                con.close()
            raise _Replaced
        return con

    return waiting(path, lock_timeout, attempt)


def close(con: duckdb.DuckDBPyConnection, path: Path, *, writer: bool) -> None:
    """Close ``con``, the connection of the store at ``path``; a writer's close (its checkpoint and the release
    of DuckDB's lock) under the exclusive :func:`guarded` lock, so that no other process reads the store's
    headers in between."""
    if not writer:
        con.close()
        return
    with guarded(path, exclusive=True):
        con.close()


_held = threading.local()


@contextmanager
def guarded(path: Path, *, exclusive: bool) -> Iterator[None]:
    """The block under ood-store's advisory lock (``flock``) on the folder of the store at ``path``.

    DuckDB's opens of a store are made under it (shared), and a writer's open and close under it
    (exclusive); see the module's docstring. The lock is on the folder, not the store file: a
    descriptor of the store file closed by a process that holds DuckDB's lock on it would drop that
    lock (POSIX record locks belong to the process), and a lock file would be left beside the store.
    Nested blocks of one thread use the outermost block's lock. Where the folder cannot be opened, or
    the system or file system has no ``flock`` (Windows; some network file systems), the block runs
    without it.
    """
    if getattr(_held, "depth", 0):
        _held.depth += 1
        try:
            yield
        finally:
            _held.depth -= 1
        return
    fd = _lock_folder(path, exclusive)
    if fd is None:
        yield
        return
    _held.depth = 1
    try:
        yield
    finally:
        _held.depth = 0
        os.close(fd)  # lets the lock go


def _lock_folder(path: Path, exclusive: bool) -> int | None:
    """A descriptor of the folder of ``path``, locked with ``flock``; None where there is no such lock to take."""
    try:
        import fcntl
    except ImportError:  # Windows
        return None
    try:
        fd = os.open(os.path.dirname(os.path.realpath(path)) or ".", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    except OSError:  # a file system that has no flock (ENOLCK, EOPNOTSUPP): DuckDB's own lock only
        os.close(fd)
        return None
    return fd


class _Replaced(Exception):
    """The file a connection was opened on is no longer at the store's path."""


def _has_no_tables(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the database ``con`` opened is empty (one DuckDB just made), not a store."""
    row = con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()").fetchone()
    return row is not None and row[0] == 0


def _identity(path: Path) -> tuple[int, int] | None:
    """The file at ``path`` (device and inode), or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


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
        except _Replaced:
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"{path}: the store file was replaced by another process while it was opened, again for "
                    f"{lock_timeout:g}s: try again"
                ) from None
            continue
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
                pid = int(held.group("pid") or held.group("bare"))
                exe = held.group("exe") or "unknown"
                holder = f"process {pid} ({describe_process(pid, exe)})" if pid else "another process"
                raise StoreLockedError(
                    f"{path}: the store is in use by {holder}; "
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
    # An empty file is left to DuckDB: while another process holds it (a store being made in place by
    # an older ood-store, or by DuckDB itself), it is waited for like any store in use; otherwise DuckDB
    # refuses it, untouched, and damage.damaged names it ("it is empty (0 bytes)").
    if head and not has_duckdb_magic(head):
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
