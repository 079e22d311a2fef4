"""A store as a folder of Parquet files with a manifest: for moving results between stores and publishing them.

Layout of a dump (``ood-store dump DIR``)::

    DIR/manifest.json                  schema version, ood-store version, per table: rows and files with sha256
    DIR/runs.parquet                   one file per small table (runs, checkpoints, analyses, partial_correlations)
    DIR/evaluations/run=<run>/data_0.parquet
    DIR/evaluation_scores/run=<run>/data_0.parquet   tables with an evaluation_id, partitioned by run
    DIR/samples/run=<run>/data_0.parquet             (the run is in the folder name, URL-encoded)
    DIR/scores/run=<run>/data_0.parquet              the `scores` view, for readers without ood-store

Every file is plain Parquet that DuckDB, Polars or pandas read directly. ``load`` (:mod:`ood_store._store.merge`)
checks the manifest before it reads anything.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import duckdb

from ood_store import __version__
from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import InputError, StoreError, first_line
from ood_store._progress import progress_bar
from ood_store._store import migrations
from ood_store._store.connection import fetch_value
from ood_store._store.damage import is_store_problem
from ood_store._summary import Presented, Summary

#: The manifest's own format; a dump with a newer one is refused.
DUMP_FORMAT = 1
MANIFEST = "manifest.json"
#: Views dumped for readers of the dump; loading ignores them.
DERIVED = ("scores",)


@dataclass
class TableDump:
    """One table of a dump: its row count and files (relative paths and their sha256), as the manifest lists it."""

    rows: int
    partitioned_by: list[str]
    added_columns: list[str]  # columns the dump adds (the run of per-evaluation rows)
    files: dict[str, str]


@dataclass(repr=False)
class DumpReport(Presented):
    """The folder a dump wrote, and each table's rows and files (``derived``: tables made from others)."""

    folder: Path
    schema_version: int
    tables: dict[str, TableDump]
    derived: dict[str, TableDump]

    def summary(self) -> Summary:
        """The folder and schema version in the title; one row per table: its rows and Parquet files."""
        import polars as pl

        rows = [
            (name, t.rows, len(t.files), name in self.derived) for name, t in {**self.tables, **self.derived}.items()
        ]
        frame = pl.DataFrame(
            rows, schema={"table": pl.String, "rows": pl.Int64, "files": pl.Int64, "derived": pl.Boolean},
            orient="row",
        )  # fmt: skip
        total = sum(t.rows for t in self.tables.values())
        return Summary(f"DumpReport: {self.folder} (schema version {self.schema_version}, {total:,} rows)", frame)


def _sql(name: str) -> str:
    return sqlfiles.load("ood_store._store", name)


def quoted(identifier: str) -> str:
    """An SQL identifier in double quotes."""
    return '"' + identifier.replace('"', '""') + '"'


def dump(con: duckdb.DuckDBPyConnection, folder: str | os.PathLike[str], *, progress: bool = False) -> DumpReport:
    """Write every table of the store on ``con`` to ``folder`` as Parquet, with a manifest.

    Parameters
    ----------
    con
        A connection to a store at the current schema version (read-only is enough).
    folder
        A folder that does not exist yet, or an empty one.
    progress
        Show a progress bar over the tables on standard error when it is a terminal.

    Returns
    -------
    DumpReport
        The schema version and, per table, its rows and files.
    """
    folder = Path(folder)
    _check_folder(folder)
    tables = con.execute(_sql("own_tables")).fetchall()
    version = migrations.current_version(con)
    report = DumpReport(folder, version, {}, {})
    with progress_bar(progress, len(tables) + len(DERIVED), "dumping") as advance:
        for name, _, per_evaluation, has_run in tables:
            if per_evaluation:
                query = _sql("dump_table" if has_run else "dump_per_evaluation").format(table=quoted(name))
                report.tables[name] = _write(con, folder, name, query, by_run=True, added=[] if has_run else ["run"])
            else:
                report.tables[name] = _write(con, folder, name, _sql("dump_table").format(table=quoted(name)))
            advance(1, name)
        for name in DERIVED:
            report.derived[name] = _write(con, folder, name, _sql(f"dump_{name}"), by_run=True)
            advance(1, name)
    manifest = {
        "ood_store_dump": DUMP_FORMAT,
        "schema_version": version,
        "ood_store_version": __version__,
        "created_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tables": {name: asdict(t) for name, t in report.tables.items()},
        "derived": {name: asdict(t) for name, t in report.derived.items()},
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    return report


def _check_folder(folder: Path) -> None:
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise StoreError(f"{folder}: exists and is not an empty folder; dump into a new one")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"{folder}: cannot create the folder: {exc.strerror}") from None


def _write(
    con: duckdb.DuckDBPyConnection,
    folder: Path,
    name: str,
    query: str,
    by_run: bool = False,
    added: list[str] | None = None,
) -> TableDump:
    target = folder / (name if by_run else f"{name}.parquet")
    try:
        con.execute(
            _sql("copy_parquet_by_run" if by_run else "copy_parquet").format(query=query), {"path": str(target)}
        )
    except duckdb.IOException as exc:
        if is_store_problem(exc):  # reading the store failed, not writing the dump
            raise
        raise StoreError(f"{target}: cannot write: {first_line(exc)}") from None
    files = sorted(target.rglob("*.parquet")) if by_run else [target]
    hashes = {f.relative_to(folder).as_posix(): sha256_of(f) for f in files}
    rows = int(fetch_value(con, _sql("parquet_rows"), {"files": [str(f) for f in files]})) if files else 0
    return TableDump(rows, ["run"] if by_run else [], added or [], hashes)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class Manifest:
    """A dump's manifest, checked: every file is there, with the bytes and rows it lists."""

    folder: Path
    schema_version: int
    ood_store_version: str
    tables: dict[str, TableDump]


def read_manifest(folder: str | os.PathLike[str]) -> Manifest:
    """The manifest of the dump in ``folder``, after checking every file it lists (sha256 and row count)."""
    folder = Path(folder)
    path = folder / MANIFEST
    if not folder.is_dir():
        raise InputError(folder, None, "no such folder")
    try:
        doc = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise InputError(folder, None, f"not an ood-store dump (no {MANIFEST})") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(path, None, f"cannot read the manifest: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("ood_store_dump"), int):
        raise InputError(path, "ood_store_dump", "missing: not an ood-store dump manifest")
    if doc["ood_store_dump"] > DUMP_FORMAT:
        raise InputError(path, "ood_store_dump", f"dump format {doc['ood_store_dump']} is newer than this ood-store's")
    version = doc.get("schema_version")
    if not isinstance(version, int) or version < 1:
        raise InputError(path, "schema_version", f"expected a positive integer, got {version!r}")
    migrations.check_supported(version, str(path))
    raw_tables = doc.get("tables")
    if not isinstance(raw_tables, dict):
        raise InputError(path, "tables", "expected an object")
    tables = {name: _table(path, folder, name, entry) for name, entry in raw_tables.items()}
    return Manifest(folder, version, str(doc.get("ood_store_version")), tables)


def _table(path: Path, folder: Path, name: str, entry: Any) -> TableDump:
    where = f"tables.{name}"
    if (
        not isinstance(entry, dict)
        or not isinstance(entry.get("files"), dict)
        or not isinstance(entry.get("rows"), int)
    ):
        raise InputError(path, where, "expected an object with rows and files")
    files: dict[str, str] = entry["files"]
    con = duckdb.connect()
    try:
        for relative, digest in files.items():
            file = folder / relative
            if not file.is_file():
                raise InputError(file, None, f"listed in {MANIFEST} but missing")
            if sha256_of(file) != digest:
                raise InputError(file, None, f"its sha256 differs from {MANIFEST}'s: the dump was changed or damaged")
        rows = int(fetch_value(con, _sql("parquet_rows"), {"files": [str(folder / f) for f in files]})) if files else 0
    except duckdb.Error as exc:
        raise InputError(folder / name, None, f"not readable as Parquet: {first_line(exc)}") from None
    finally:
        con.close()
    if rows != entry["rows"]:
        raise InputError(path, f"{where}.rows", f"says {entry['rows']}, the files hold {rows}")
    return TableDump(rows, list(entry.get("partitioned_by") or []), list(entry.get("added_columns") or []), files)
