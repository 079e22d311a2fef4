"""The SQL box: one statement through the sandbox of ``ood-store query``, with a row cap and a time limit.

The statement runs on a sandbox of its own (:func:`ood_store._store.sandbox.sandbox`:
the store attached read-only to an in-memory database, no file but the store,
no setting that can be changed) after the same check as ``ood-store query``
(:func:`ood_store._store.query.check`: one statement, reading only). DuckDB
computes at most ``rows + 1`` rows (to tell whether there were more), the
query is interrupted (``DuckDBPyConnection.interrupt``) when it runs past the
time limit, and it may hold no more than ``memory_limit`` in memory.
"""

from __future__ import annotations

import io
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ood_store._errors import QueryError
from ood_store._export import formats
from ood_store._export import rows as row_formats
from ood_store._store import lake, query, sandbox

#: The rows the box shows (and downloads) at most, by default.
ROWS = 1000
#: Seconds a statement may run, by default.
SECONDS = 10.0
#: What a statement may hold in memory (DuckDB's memory_limit).
MEMORY = "2GB"
#: The download formats: those ``ood-store query --format`` writes.
FORMATS = formats.ROWS
MEDIA_TYPES = {
    "table": "text/plain; charset=utf-8",
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
    "jsonl": "application/x-ndjson",
    "markdown": "text/markdown; charset=utf-8",
    "latex": "application/x-tex; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
}


@dataclass(frozen=True)
class Limits:
    rows: int = ROWS
    seconds: float = SECONDS
    memory: str = MEMORY


@dataclass(frozen=True)
class Answer:
    """A statement's first rows, whether it had more, and how long it took."""

    frame: pl.DataFrame
    truncated: bool
    seconds: float


def run(path: Path | str, sql: str, limits: Limits, *, lock_timeout: float) -> Answer:
    """Run ``sql`` on the store at ``path`` in the sandbox; a refused, failed or interrupted statement is a
    :class:`~ood_store._errors.QueryError` with one line saying why."""
    started = time.monotonic()
    opened = (
        sandbox.lake_sandbox(lake.parse(path), memory_limit=limits.memory)
        if lake.is_lake(path)
        else sandbox.sandbox(Path(path), lock_timeout=lock_timeout, memory_limit=limits.memory)
    )
    with opened as con:
        stopped = threading.Event()

        def stop() -> None:
            stopped.set()
            con.interrupt()

        timer = threading.Timer(limits.seconds, stop)
        timer.start()
        try:
            frame = query.read_only(con, sql, limit=limits.rows + 1)
        except QueryError:
            if stopped.is_set():
                raise QueryError(
                    f"stopped after {limits.seconds:g} s, the time limit of the viewer's SQL box "
                    "(`ood-store query` has none)"
                ) from None
            raise
        finally:
            timer.cancel()
    truncated = frame.height > limits.rows
    return Answer(frame.head(limits.rows), truncated, time.monotonic() - started)


def download(frame: pl.DataFrame, fmt: str) -> bytes:
    """The rows in ``fmt``, one of :data:`FORMATS`, as ``ood-store query --format FMT`` writes them."""
    if fmt == "parquet":
        buffer = io.BytesIO()
        frame.write_parquet(buffer)
        return buffer.getvalue()
    return row_formats.render(frame, fmt).encode("utf-8")
