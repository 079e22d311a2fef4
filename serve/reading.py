"""How the viewer reads the store: opened read-only for one request at a time, never held in between.

DuckDB lets one process write a store file, and while any process has it open
(read-only too) no other may start writing. The viewer therefore opens the
store (:func:`ood_store.open`, read-only) only to compute a page, and closes
it before the page is sent: a ``collect`` or an ``ingest`` waits at most for
one page. What a page computed is kept, keyed by the store file's identity,
size and modification time (and its write-ahead log's): the same request on
an unchanged file is answered without opening the store at all; any write
changes the key, and the page is computed afresh.

A store that another process is writing makes the open wait ``lock_timeout``
seconds and then fail with :class:`~ood_store.StoreLockedError`: the app shows
that in one line and tries again.

A lake (``ducklake:...``) has no file to stat and no single writer to wait for:
each request opens it read-only, and what a page computed is kept per snapshot,
so that a commit by any writer, on any host, makes pages afresh.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import polars as pl

import ood_store
from ood_store import _sqlfiles as sqlfiles
from ood_store._store import lake
from ood_store._store.database import read

if TYPE_CHECKING:
    from ood_store._api import Store

T = TypeVar("T")

#: Seconds a page waits for a store that another process is writing before it says the store is busy.
LOCK_TIMEOUT = 2.0
#: Pages (and figures) kept for the current state of the file.
CACHE_SIZE = 128

Signature = tuple[tuple[int, int, int] | None, ...]


def signature(path: Path) -> Signature | None:
    """The identity (inode), size and modification time of the store file and of its WAL; None without a file."""
    parts: list[tuple[int, int, int] | None] = []
    for file in (path, path.with_name(path.name + ".wal")):
        try:
            st = os.stat(file)
        except FileNotFoundError:
            if file == path:
                return None
            parts.append(None)
            continue
        parts.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(parts)


class Reader:
    """Opens the store at ``path`` read-only for each computation, and keeps what it computed per file state."""

    def __init__(self, path: Path | str, *, lock_timeout: float = LOCK_TIMEOUT, cache_size: int = CACHE_SIZE):
        self.lake = lake.is_lake(path)
        self.path: Path | str = os.fspath(path) if self.lake else Path(path)
        #: The store as pages name it (a lake's password left out).
        self.shown = lake.shown(self.path)
        self.lock_timeout = lock_timeout
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[Signature, Hashable], Any] = OrderedDict()
        self._lock = threading.Lock()

    @contextmanager
    def opened(self) -> Iterator[Store]:
        """The store, opened read-only for the block and closed after it."""
        with ood_store.open(self.path, read_only=True, lock_timeout=self.lock_timeout) as store:
            yield store

    def cached(self, key: Hashable, compute: Callable[[Store], T]) -> T:
        """``compute(store)``, or what it returned before for ``key`` while the file has not changed since.

        A result is kept only when the file did not change while it was computed; a lake's, per snapshot.
        """
        if self.lake:
            return self._cached_per_snapshot(key, compute)
        assert isinstance(self.path, Path)
        before = signature(self.path)
        if before is not None:
            found = self._recall(before, key)
            if found is not _MISSING:
                return found
        with self.opened() as store:
            value = compute(store)
        if before is not None and signature(self.path) == before:
            self._remember(before, key, value)
        return value

    def _cached_per_snapshot(self, key: Hashable, compute: Callable[[Store], T]) -> T:
        with self.opened() as store:
            state: Signature = ((store.snapshot_marker(), 0, 0),)  # type: ignore[assignment]
            found = self._recall(state, key)
            if found is not _MISSING:
                return found
            value = compute(store)
        self._remember(state, key, value)
        return value

    def _recall(self, state: Signature, key: Hashable) -> Any:
        with self._lock:
            if (state, key) not in self._cache:
                return _MISSING
            self._cache.move_to_end((state, key))
            return self._cache[(state, key)]

    def _remember(self, state: Signature, key: Hashable, value: Any) -> None:
        """Keep ``value`` for ``key`` at ``state``; pages of other states (the store has changed) go."""
        with self._lock:
            for stale in [k for k in self._cache if k[0] != state]:
                del self._cache[stale]
            self._cache[(state, key)] = value
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)


_MISSING = object()


def rows(store: Store, name: str, /, **params: Any) -> pl.DataFrame:
    """The rows of the viewer's own SQL ``serve/NAME.sql`` on ``store`` (read-only, not user SQL)."""
    return read(store, sqlfiles.load("ood_store._serve", name), **params)


def sql_text(name: str) -> str:
    """The text of ``serve/NAME.sql`` without its leading comment lines: what the viewer's links put in the SQL box."""
    lines = sqlfiles.load("ood_store._serve", name).splitlines()
    while lines and lines[0].startswith("--"):
        lines.pop(0)
    return "\n".join(lines).strip().rstrip(";")
