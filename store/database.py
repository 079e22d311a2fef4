"""An open store file: its connection and write lock, the sandbox for SQL that users write, damage named.

:class:`Database` is the store layer every stage works on; :class:`ood_store.Store`, the public facade,
is a :class:`Database` with a method for each stage (ingest, evaluate, analyses, exports). Stages never
reach into the object: they read ood-store's own SQL with :func:`read`, take the connection with
:func:`connection`, and let other processes in with :func:`released`.

A damaged store file is named in one line (:class:`~ood_store.StoreDamagedError`) wherever DuckDB
meets the damage: on open, in :func:`read`, in a query, and in every method of the facade, through
:func:`damage_named`.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import duckdb
import polars as pl

from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import StoreError, StoreLockedError
from ood_store._schema import latest_version
from ood_store._store import birth, lake, migrations, query, sandbox
from ood_store._store.connection import DEFAULT_LOCK_TIMEOUT, close, connect, fetch_one, fetch_value
from ood_store._store.damage import damaged

P = ParamSpec("P")
T = TypeVar("T")

_SQL = "ood_store._store"


class Database:
    """A store file or a lake, open (and, unless ``read_only``, created or migrated to the latest schema).

    Made by :func:`ood_store.open`, as a :class:`ood_store.Store`. A lake (:mod:`ood_store._store.lake`)
    is given as a :class:`~ood_store._store.lake.Lake`; ``path`` is then its URL, password left out, for
    messages. ``data_path`` is where a new lake keeps its data; ``snapshot`` opens a lake read-only as it
    was at that snapshot.
    """

    def __init__(
        self,
        path: Path | lake.Lake,
        read_only: bool = False,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        allow_files: Iterable[str | os.PathLike[str]] = (),
        *,
        data_path: str | os.PathLike[str] | None = None,
        snapshot: int | None = None,
    ):
        self.lake: lake.Lake | None = path if isinstance(path, lake.Lake) else None
        if self.lake is None and snapshot is not None:
            raise StoreError(f"{path}: a store file keeps no snapshots to go back to; `at` needs a lake (ducklake:...)")
        if self.lake is None and data_path is not None:
            raise StoreError(f"{path}: a data path is for a lake (ducklake:...), not a store file")
        self.path = Path(self.lake.shown) if self.lake is not None else Path(path)
        self.snapshot = snapshot
        self._data_path = None if data_path is None else os.fspath(data_path)
        self.read_only = read_only or snapshot is not None
        self.lock_timeout = lock_timeout
        self.allow_files = sandbox.folders(allow_files)
        self._created = False  # whether this object made the store file (birth.create)
        self._born: list[int] = []  # the migrations of the store it made
        self._discard_if_empty = False  # set by an ingest or evaluate that added nothing to the store it created
        self._user_sql = ExitStack()  # holds the sandbox of a read-only store between queries
        self._closed = False
        self._sandbox_con: duckdb.DuckDBPyConnection | None = None
        # The store's own connection; None while another process holds the store after released().
        self._live: duckdb.DuckDBPyConnection | None = self._connect()
        try:
            self.migrations_applied = self._born + self._prepare()
        except BaseException as exc:
            close(self._con, self.path, writer=not self.read_only)
            problem = damaged(path, exc)  # the schema's tables are the first thing read
            if problem is not None:
                raise problem from None
            raise

    # -- lifecycle ---------------------------------------------------------
    def _connect(self) -> duckdb.DuckDBPyConnection:
        """The store's connection, waiting up to ``lock_timeout``; a store that is not there (when opened
        for writing) is made first, whole (:func:`ood_store._store.birth.create`), and what a process killed
        while it made the store left beside it is removed."""
        if self.lake is not None:
            return self._connect_lake()
        if not self.read_only:
            birth.remove_leftovers(self.path)
        return connect(
            self.path,
            read_only=self.read_only,
            lock_timeout=self.lock_timeout,
            create=None if self.read_only else self._create,
        )

    def _connect_lake(self) -> duckdb.DuckDBPyConnection:
        assert self.lake is not None
        data_path = None
        if self._data_path is not None:
            data_path = lake.check_data_path(self._data_path, self.lake.shown)
        con = lake.connect(
            self.lake,
            read_only=self.read_only,
            create=data_path is not None,
            data_path=data_path,
            snapshot=self.snapshot,
        )
        if data_path is not None and not self.read_only and not migrations.current_version(con):
            try:
                self._born = lake.create_schema(con)
            except BaseException:
                con.close()
                raise
            self._created = bool(self._born)
        return con

    def _create(self, path: Path) -> None:
        applied = birth.create(path)
        if applied is not None:
            self._created, self._born = True, applied

    def _prepare(self) -> list[int]:
        version = migrations.current_version(self._con)
        migrations.check_supported(version, str(self.path))
        if self.lake is not None:
            if version == 0:
                raise StoreError(f"{self.path}: the lake holds no ood-store schema; lay it out with `ood-store init`")
            if version < latest_version():
                raise StoreError(
                    f"{self.path}: the lake has schema version {version}, older than this ood-store's "
                    f"{latest_version()}, and lakes are not migrated yet: dump it with the ood-store that made it "
                    "and load the dump into a new lake"
                )
            return []
        if version == 0 and fetch_value(self._con, sqlfiles.load(_SQL, "count_tables")):
            raise StoreError(f"{self.path}: a DuckDB database, but not an ood-store (no schema_version table)")
        if self.read_only:
            if version < latest_version():
                raise StoreError(
                    f"{self.path}: the store has schema version {version} and needs migrating to "
                    f"{latest_version()}; run `ood-store init` (it keeps all data)"
                )
            return []
        return migrations.migrate(self._con, str(self.path))

    def close(self) -> None:
        """Close the store. A store this object created for an ingest that added nothing, or for an
        evaluation that stopped before storing anything, is removed."""
        discard = self._discard_if_empty and self._live is not None and self._holds_nothing()
        self._closed = True
        self._user_sql.close()
        if self._live is not None:
            if self.lake is not None:
                self._live.close()
            elif discard:
                birth.discard(self._live, self.path)  # closes it
            else:
                close(self._live, self.path, writer=not self.read_only)

    @property
    def _con(self) -> duckdb.DuckDBPyConnection:
        """The store's own connection, opened again (waiting up to ``lock_timeout``) if another process
        took the store while it was released."""
        if self._live is None:
            if self._closed:
                raise StoreError(f"{self.path}: the store is closed")
            self._live = self._connect()
        return self._live

    def _holds_nothing(self) -> bool:
        try:
            return not fetch_value(self._con, sqlfiles.load(_SQL, "count_rows"))
        except duckdb.Error:
            return False

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else "read-write"
        at = "" if self.snapshot is None else f" at snapshot {self.snapshot}"
        return f"<ood_store.Store {str(self.path)!r} {mode}{at}>"

    @property
    def schema_version(self) -> int:
        """The schema version the store file is at (the latest, once opened for writing)."""
        return migrations.current_version(self._con)

    @property
    def location(self) -> str:
        """Where the store is, as provenance records it: the file's absolute path, or the lake's URL
        (its password left out)."""
        return self.lake.shown if self.lake is not None else str(self.path.resolve())

    def snapshot_marker(self) -> int | str:
        """What the store holds now, as a table's provenance records it: a lake's snapshot id (an ``int``,
        which ``--at`` opens again), or for a store file, which keeps no history, ``"content:<md5>"`` of
        the evaluations and runs it holds (equal markers: the same files, runs and attributes)."""
        with damage_reported(self.path):
            if self.lake is not None:
                return int(fetch_value(self._con, sqlfiles.load(_SQL, "lake_current_snapshot")))
            return "content:" + str(fetch_value(self._con, sqlfiles.load(_SQL, "store_fingerprint")))

    def snapshot_time(self, at: int | None = None) -> str | None:
        """When a lake's snapshot ``at`` (by default the one this store reads) was committed (UTC, ISO 8601,
        seconds); None for a store file, or a snapshot the lake no longer holds. Exports of a lake record it
        as the time they were made, so that one made again ``--at`` that snapshot is the same file byte for
        byte (and a saved analysis's export, dated by the snapshot it was computed at, whenever it is made)."""
        if self.lake is None:
            return None
        row = fetch_one(self._con, sqlfiles.load(_SQL, "lake_snapshot_time"), {"at": at})
        if row is None or row[0] is None:
            return None
        seconds = float(row[0])
        return _dt.datetime.fromtimestamp(seconds, _dt.UTC).replace(microsecond=0, tzinfo=None).isoformat()

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The underlying DuckDB connection, for advanced use; prefer :meth:`query`.

        Not a sandbox: SQL run on it can change the store. On a store opened for writing,
        :meth:`query` and :meth:`~ood_store.Store.evaluate` close it and open a new one: take it again
        after them.
        """
        return self._con

    # -- SQL that users write ------------------------------------------------
    def query(self, sql: str, /, **params: Any) -> pl.DataFrame:
        """Run one read-only SQL statement and return its rows as a Polars DataFrame.

        Named parameters are written ``$name`` in the SQL and passed as keywords:

        >>> pythia.query("SELECT count(*) AS n FROM scores WHERE task = $task", task="piqa")
        shape: (1, 1)
        ┌─────┐
        │ n   │
        │ --- │
        │ i64 │
        ╞═════╡
        │ 54  │
        └─────┘

        The statement runs in a sandbox: a connection of its own on which the store is attached
        read-only, no other file can be read or written (but those in the folders of ``allow_files``)
        and no setting can be changed. Statements that would change the store (INSERT, CREATE, COPY,
        ATTACH, a DELETE inside a WITH, ``nextval()``, ...) are refused with a
        :class:`~ood_store.QueryError`. On a store opened for writing, the store's own connection is
        closed while the query runs (DuckDB lets a process open a file read-only only when it does
        not have it open for writing), so other processes may take the store meanwhile; the query's
        rows come back all the same, and the store is opened again, waiting for them, when next used.
        """
        with self._sandbox() as con:
            return query.read_only(con, sql, params)

    @contextmanager
    def _sandbox(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """The sandbox for one query: kept between queries on a read-only store (no process can change
        the file while this one reads it) and on a lake (each query reads its latest snapshot), a fresh
        one each time on a store file opened for writing."""
        if self._closed:
            raise StoreError(f"{self.path}: the store is closed")
        with ExitStack() as stack:
            opened = (
                sandbox.lake_sandbox(self.lake, allow_files=self.allow_files, snapshot=self.snapshot)
                if self.lake is not None
                else sandbox.sandbox(self.path, allow_files=self.allow_files, lock_timeout=self.lock_timeout)
            )
            # DuckDB attaches a file once per process: a store file, or a lake's catalog in a DuckDB file, is
            # let go of while the query runs (a lake in PostgreSQL or SQLite is attached again beside it)
            shared_file = self.lake is None or self.lake.kind == "duckdb"
            if shared_file and (not self.read_only or self.lake is not None):
                stack.enter_context(released(self))
                con = stack.enter_context(opened)
            elif self._sandbox_con is None:
                con = self._sandbox_con = self._user_sql.enter_context(opened)
            else:
                con = self._sandbox_con
            with damage_reported(self.path):
                yield con

    def _require_writable(self, what: str) -> None:
        if self.read_only:
            raise StoreError(f"{self.path}: opened read-only; cannot {what}")


def target(where: str | os.PathLike[str]) -> Path | lake.Lake:
    """The store a string, path or URL names: a store file's path, or a :class:`~ood_store._store.lake.Lake`.

    >>> target("results.duckdb"), target("ducklake:sqlite:/data/lab.sqlite").kind
    (PosixPath('results.duckdb'), 'sqlite')
    """
    return lake.parse(where) if lake.is_lake(where) else Path(where)


# -- what the stages use -------------------------------------------------------------------------
def read(db: Database, sql: str, /, **params: Any) -> pl.DataFrame:
    """The rows of ood-store's own SQL (a ``.sql`` file of the package) on the store's connection.

    Not checked and not in the sandbox: never for SQL that a user wrote (that is
    :meth:`Database.query`). Damage met on the way is the store's one-line error.
    """
    with damage_reported(db.path):
        return query.rows(db._con, sql, params)


def connection(db: Database) -> duckdb.DuckDBPyConnection:
    """The store's own connection (opened again if it was released), for a stage that writes."""
    return db._con


@contextmanager
def released(db: Database) -> Iterator[None]:
    """Close the store's connection for the block (other processes may open the store), then open it again.

    For an evaluation, whose collector opens the store for each commit only, and for a query on a
    store opened for writing, whose sandbox attaches the file read-only.
    """
    if db.lake is not None:
        db._con.close()
    else:
        close(db._con, db.path, writer=not db.read_only)
    db._live = None
    try:
        yield
    finally:
        # Another process may have taken the store meanwhile: what the block did stands, and the
        # store is opened again when next used (the _con property), waiting for that process then.
        with suppress(StoreLockedError):
            db._live = db._connect()


def discard_if_empty(db: Database) -> None:
    """Remove the store file on close if this object created it and it still holds nothing (never a lake:
    others may be writing to it)."""
    if db._created and db.lake is None:
        db._discard_if_empty = True


@contextmanager
def damage_reported(path: str | os.PathLike[str]) -> Iterator[None]:
    """A block of the store that fails its checksum, met in the block, as the store's one-line error."""
    try:
        yield
    except duckdb.Error as exc:
        problem = damaged(path, exc)
        if problem is None:
            raise
        raise problem from None


def damage_named(method: Callable[P, T]) -> Callable[P, T]:
    """A method of :class:`Database` (or its facade) whose DuckDB damage errors become the one-line store error."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        db = args[0]
        assert isinstance(db, Database)
        with damage_reported(db.path):
            return method(*args, **kwargs)

    return wrapper
