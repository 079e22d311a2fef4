"""The connection user SQL runs on: the store file attached read-only to a database of its own.

DuckDB's own settings do the work, not a list of forbidden words:

- the store is attached ``READ_ONLY``, so nothing that runs can change it: not a
  data-modifying common table expression, not ``nextval()``, not ``EXPLAIN
  ANALYZE`` of a write, not ``CHECKPOINT`` (DuckDB opens the file for reading only);
- ``enable_external_access = false``: no file but the store can be read or written
  (``read_csv``, ``read_text``, ``read_blob``, ``glob``, ``COPY``, ``ATTACH``,
  ``INSTALL``, ``EXPORT DATABASE``), except inside the folders the caller allows
  (DuckDB's ``allowed_directories``, which resolves ``..`` and symbolic links);
- no extension is installed or loaded, and ``lock_configuration = true`` keeps a
  query from setting any of this back (``SET``, ``RESET``, ``PRAGMA``).

The settings are global to a DuckDB database, and one process may not attach a
file that it has open for writing, so the sandbox is a database of its own: an
in-memory one with the store attached. A store opened for writing closes its own
connection while a query runs (:meth:`ood_store._store.Store.query`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import InputError
from ood_store._store.connection import guarded, waiting

if TYPE_CHECKING:
    from ood_store._store.lake import Lake

# Set when the database starts: DuckDB refuses them later. Spilling goes to a folder of the sandbox's own
# (DuckDB lets queries read its temporary folder): not one in the working directory, shared with others.
_CONFIG = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
    "python_enable_replacements": False,  # a query naming a Python variable would read it
}


def folders(allow_files: Iterable[str | os.PathLike[str]]) -> tuple[Path, ...]:
    """The folders of ``allow_files`` as absolute paths, symbolic links resolved; each must be a folder."""
    found = []
    for given in [allow_files] if isinstance(allow_files, str | os.PathLike) else allow_files:
        folder = Path(given).expanduser()
        if not folder.is_dir():
            what = "not a folder" if folder.exists() else "no such folder"
            raise InputError(None, None, f"{folder}: {what}", parameter="allow_files")
        found.append(folder.resolve())
    return tuple(found)


@contextmanager
def sandbox(
    path: Path, *, allow_files: Sequence[Path] = (), lock_timeout: float, memory_limit: str | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection on which the store at ``path`` can be read, and nothing else but files in ``allow_files``.

    Waits up to ``lock_timeout`` seconds for another process that writes the store. ``memory_limit``
    (DuckDB's, such as ``"1GB"``) caps what a query may hold in memory (the viewer's SQL box sets one);
    by default DuckDB's own, 80 % of the machine's memory.
    """
    spill = tempfile.mkdtemp(prefix="ood-store-sql-")
    limits = {} if memory_limit is None else {"memory_limit": memory_limit}
    con = duckdb.connect(":memory:", config={**_CONFIG, **limits, "temp_directory": spill})
    try:
        waiting(
            path,
            lock_timeout,
            lambda: _attach(con, path),
        )
        sqlfiles.execute(
            con, sqlfiles.load("ood_store._store", "sandbox_lock"), {"folders": [str(f) for f in allow_files]}
        )
        yield con
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


@contextmanager
def lake_sandbox(
    lake: Lake, *, allow_files: Sequence[Path] = (), snapshot: int | None = None, memory_limit: str | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """The sandbox on a lake: attached read-only (at ``snapshot`` if given), the same settings locked as on a
    file, with the lake's data path among the folders that may be read (DuckLake reads its Parquet files
    there). The catalog's own database is attached read-only with it: a query can neither write through it
    (``postgres_execute`` runs in a read-only transaction) nor attach another (tests/test_lake.py)."""
    from ood_store._store import lake as lakes

    spill = tempfile.mkdtemp(prefix="ood-store-sql-")
    limits = {} if memory_limit is None else {"memory_limit": memory_limit}
    con = lakes.connect(lake, read_only=True, snapshot=snapshot, config={**limits, "temp_directory": spill})
    try:
        data = lakes.data_path_of(con)
        sqlfiles.execute(
            con,
            sqlfiles.load("ood_store._store", "sandbox_lock"),
            {"folders": [data, *(str(f) for f in allow_files)]},
        )
        yield con
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


def _attach(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Attach the store at ``path`` read-only, while no writer of it lets go
    (:func:`~ood_store._store.connection.guarded`)."""
    with guarded(path, exclusive=False):
        con.execute(sqlfiles.load("ood_store._store", "sandbox_attach").format(path=sqlfiles.literal(str(path))))
