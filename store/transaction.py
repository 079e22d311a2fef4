"""One transaction on a store connection: committed when the block ends, rolled back if it raises;
and a DataFrame registered for the statements of a block.

A Polars frame reaches DuckDB 2 through the Arrow PyCapsule stream it exports itself
(``__arrow_c_stream__``, :class:`_Stream`): DuckDB would otherwise turn it into a pyarrow Table
(``to_arrow()``), which imports pyarrow and numpy, about 0.15 s of every command that stores rows
(tests/test_registered_frames.py shows both: the same values, and neither module loaded).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

import duckdb


@contextmanager
def transaction(
    con: duckdb.DuckDBPyConnection, note: Mapping[str, Any] | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """``with transaction(con): ...`` runs the block in one DuckDB transaction.

    The block's statements are committed together when it ends, or rolled back
    when it raises (the exception then propagates). Not reentrant: DuckDB has no
    nested transactions. On a lake, the transaction is a write that conflicts with
    any other writer's that overlaps it (:func:`ood_store._store.lake.begin_write`;
    run it again with :func:`~ood_store._store.lake.retried`), and ``note`` (what is
    written: ``{"command": "ingest", "files": 3}``, which the block may add to) is its
    commit's message, which ``ood-store snapshots`` shows.

    Examples
    --------
    >>> import duckdb
    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE t (x INTEGER)")
    >>> try:
    ...     with transaction(con):
    ...         _ = con.execute("INSERT INTO t VALUES (1)")
    ...         raise KeyboardInterrupt
    ... except KeyboardInterrupt:
    ...     pass
    >>> con.execute("SELECT count(*) FROM t").fetchone()[0]
    0
    """
    from ood_store._store import lake

    con.execute("BEGIN TRANSACTION")
    try:
        on_lake = lake.is_lake_connection(con)
        if on_lake:
            lake.begin_write(con)
        yield con
        if on_lake:  # last: the block may have added to the note (rows written)
            lake.commit_message(con, note)
    except BaseException:
        with suppress(duckdb.Error):  # an unusable connection cannot roll back: the original error says why
            con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


@contextmanager
def registered(con: duckdb.DuckDBPyConnection, name: str, frame: Any) -> Iterator[None]:
    """``frame`` (a Polars or Arrow table) readable as view ``name`` on ``con`` for the block.

    When a statement of the block fails inside a transaction, DuckDB refuses every later one,
    the unregister too ("Current transaction is aborted"); that second error is dropped, so that
    the first, which says what went wrong (a damaged store, a bad value), is the one raised.
    """
    con.register(name, _Stream(frame) if _STREAMS and hasattr(frame, "__arrow_c_stream__") else frame)
    try:
        yield
    except BaseException:
        with suppress(duckdb.Error):
            con.unregister(name)
        raise
    con.unregister(name)


#: DuckDB 2 reads an object with ``__arrow_c_stream__`` as an Arrow stream, asking for a new stream for each
#: scan; an older DuckDB, which the requirement admits, gets the frame itself.
_STREAMS = int(duckdb.__version__.split(".")[0]) >= 2


class _Stream:
    """A frame as DuckDB reads an Arrow PyCapsule stream: a fresh stream of it each time one is asked for
    (a statement may scan a registered view several times, and a stream is read once)."""

    def __init__(self, frame: Any):
        self.frame = frame

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.frame.__arrow_c_stream__(requested_schema)
