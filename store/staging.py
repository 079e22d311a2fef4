"""A temporary DuckDB file at the current schema, holding what is about to be merged into a store.

A dump (or a store) made by an older ood-store is brought up to date here first: the staging
database is created at the dump's schema version with ood-store's own migrations, filled, and
then migrated the way an old store is when it is opened, so that the merge only ever compares
stores of one schema version.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import InputError, StoreError, first_line
from ood_store._progress import progress_bar
from ood_store._store import lake, migrations
from ood_store._store.connection import guarded
from ood_store._store.dump import Manifest, quoted


def _sql(name: str) -> str:
    return sqlfiles.load("ood_store._store", name)


@contextmanager
def staged(
    near: Path, version: int, fill: Callable[[duckdb.DuckDBPyConnection, dict[str, list[str]]], None]
) -> Iterator[Path]:
    """A staging database built at schema ``version``, filled by ``fill`` and migrated to the latest.

    ``fill(con, tables)`` gets the staging connection and its tables (name → columns). The file
    lives in a temporary folder beside ``near`` (the target store; for a lake, in the system's temporary
    folder) and is removed afterwards.
    """
    beside = None if lake.is_lake(near) or not near.parent.exists() else near.parent  # a lake: the system's temp
    try:
        folder = tempfile.TemporaryDirectory(prefix=".ood-store-merge-", dir=beside)
    except OSError as exc:
        raise StoreError(f"{near.parent}: cannot create a temporary folder: {exc.strerror}") from None
    with folder as tmp:
        path = Path(tmp) / "incoming.duckdb"
        con = duckdb.connect(str(path))
        try:
            migrations.migrate(con, str(path), upto=version)
            tables = {name: columns for name, columns, _, _ in con.execute(_sql("own_tables")).fetchall()}
            fill(con, tables)  # no transaction: the file is thrown away on error
            migrations.migrate(con, str(path))
        finally:
            con.close()
        yield path


def fill_from_dump(
    manifest: Manifest, progress: bool = False
) -> Callable[[duckdb.DuckDBPyConnection, dict[str, list[str]]], None]:
    """A ``fill`` for :func:`staged` that reads the dump's Parquet files, table by table
    (with a progress bar over them on a terminal when ``progress``)."""

    def fill(con: duckdb.DuckDBPyConnection, tables: dict[str, list[str]]) -> None:
        missing = sorted(set(tables) - set(manifest.tables))
        if missing:
            raise InputError(
                manifest.folder / "manifest.json",
                "tables",
                f"lists no {', '.join(missing)}: a dump of schema version {manifest.schema_version} has them",
            )
        unknown = sorted(set(manifest.tables) - set(tables))
        if unknown:
            raise InputError(
                manifest.folder / "manifest.json",
                "tables",
                f"{', '.join(unknown)}: not tables of schema version {manifest.schema_version}",
            )
        with progress_bar(progress, len(tables), "loading") as advance:
            for name in tables:
                _load_table(con, manifest, name)
                advance(1, name)

    return fill


def _load_table(con: duckdb.DuckDBPyConnection, manifest: Manifest, name: str) -> None:
    dumped = manifest.tables[name]
    if not dumped.files:
        return
    exclude = f"EXCLUDE ({', '.join(map(quoted, dumped.added_columns))})" if dumped.added_columns else ""
    files = [str(manifest.folder / f) for f in dumped.files]
    try:
        con.execute(_sql("load_parquet").format(table=quoted(name), exclude=exclude), {"files": files})
    except duckdb.Error as exc:
        raise InputError(manifest.folder / name, None, f"does not fit table {name}: {first_line(exc)}") from None


def fill_from_store(path: Path) -> Callable[[duckdb.DuckDBPyConnection, dict[str, list[str]]], None]:
    """A ``fill`` for :func:`staged` that copies every table of the (older) store at ``path``."""

    def fill(con: duckdb.DuckDBPyConnection, tables: dict[str, list[str]]) -> None:
        with guarded(path, exclusive=False):  # DuckDB reads the headers before its lock: not while a writer lets go
            con.execute(_sql("attach_source").format(path=sqlfiles.literal(str(path))))
        try:
            for name in tables:
                con.execute(_sql("copy_attached_table").format(table=quoted(name)))
        finally:
            con.execute(_sql("detach_source"))

    return fill
