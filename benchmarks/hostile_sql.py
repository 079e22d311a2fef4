"""Hostile SQL against a store: every attempt of issue 17, on a read-only and on a read-write open.

    python benchmarks/hostile_sql.py [--workdir DIR]

Each attempt runs on a fresh copy of a small store (five Pythia-160M files) three times: through
`ood-store query` (the store opened read-only), through `Store.query` on a store opened for
writing, and straight on the sandbox's connection (DuckDB's settings alone, without ood-store's
statement check). The working directory, the temporary folder and a planted secret file are all in the
attempt's own folder. An attempt holds when, the store closed again,

  - the store file's bytes are unchanged (SHA-256) and no file appeared or vanished in the folder;
  - neither the secret file's content nor /etc's (`root:`) appears in what it printed or raised,
    nor the secret's file name where the SQL does not name it (a directory listing);
  - no traceback came out.

Whether it was refused (exit status 1 with one line, a QueryError, a DuckDB error in the sandbox)
is reported too.

Printed: one row per attempt and open (refused or not, held or not, the first line it printed),
then tried / held / failed per class; the exit status is 1 when any failed. `trials(workdir)`
returns the rows, for benchmarks/reliability.py.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
from click.testing import CliRunner
from common import pythia_160m_store, sha256
from trial_table import collect, report

import ood_store
from ood_store._cli import main as cli
from ood_store._store.sandbox import sandbox

#: The planted secret's content; the file's name holds NAME_MARK. Neither may come out.
SECRET = "ood-store-secret-7d41"
NAME_MARK = "sesame"
#: Through `ood-store query` (read-only open), Store.query on a store opened for writing, and straight on
#: the sandbox's connection: DuckDB's settings alone, without the statement check of store/query.py.
MODES = ("read-only", "read-write", "sandbox alone")
#: Not a trial: the store opened with DuckDB alone, for writing, to show that the checks see an effect.
UNPROTECTED = "plain DuckDB"


@dataclass(frozen=True)
class Attempt:
    """One hostile statement. ``sql`` may name {secret} (a CSV outside the store), {secret_dir} (its
    folder), {out} and {outdir} (paths that must not appear), {other} (a database file that must not)."""

    name: str
    sql: str


ATTEMPTS = (
    # Reading files outside the store.
    Attempt("read_csv of a file outside the store", "SELECT * FROM read_csv('{secret}')"),
    Attempt("read_csv('/etc/passwd')", "SELECT * FROM read_csv('/etc/passwd')"),
    Attempt("read_text", "SELECT content FROM read_text('{secret}')"),
    Attempt("read_blob('/etc/shadow')", "SELECT content FROM read_blob('/etc/shadow')"),
    Attempt("read_blob", "SELECT content FROM read_blob('{secret}')"),
    Attempt("glob('/home/*')", "SELECT * FROM glob('/home/*')"),
    Attempt("glob of the secret's folder", "SELECT * FROM glob('{secret_dir}/*')"),
    Attempt("a file path as a table", "SELECT * FROM '{secret}'"),
    Attempt("sniff_csv", "SELECT * FROM sniff_csv('{secret}')"),
    Attempt("read_csv inside query()", "SELECT * FROM query('SELECT * FROM read_csv(''{secret}'')')"),
    Attempt("LOAD a file as an extension", "LOAD '{secret}'"),
    Attempt("persistent secrets (~/.duckdb)", "SELECT * FROM duckdb_secrets()"),
    # Writing files.
    Attempt("COPY table TO", "COPY evaluations TO '{out}'"),
    Attempt("EXPLAIN ANALYZE COPY (SELECT) TO", "EXPLAIN ANALYZE COPY (SELECT * FROM runs) TO '{out}'"),
    Attempt("EXPLAIN ANALYZE COPY table TO", "EXPLAIN ANALYZE COPY evaluations TO '{out}'"),
    Attempt("EXPORT DATABASE", "EXPORT DATABASE '{outdir}'"),
    Attempt("ATTACH a new database file", "ATTACH '{other}' AS other"),
    Attempt("SET profiling_output", "SET profiling_output = '{out}'"),
    Attempt("PRAGMA enable_profiling", "PRAGMA enable_profiling = 'json'"),
    # Changing the store.
    Attempt(
        "data-modifying CTE: DELETE", "WITH d AS (DELETE FROM evaluation_scores RETURNING *) SELECT count(*) FROM d"
    ),
    Attempt(
        "data-modifying CTE: INSERT",
        "WITH d AS (INSERT INTO runs (run, attributes, created_at) VALUES ('x', '{{}}', now()) RETURNING *) "
        "SELECT * FROM d",
    ),
    Attempt(
        "data-modifying CTE: UPDATE",
        "WITH d AS (UPDATE evaluation_scores SET value = 0 RETURNING *) SELECT count(*) FROM d",
    ),
    Attempt("EXPLAIN ANALYZE DELETE", "EXPLAIN ANALYZE DELETE FROM evaluation_scores"),
    Attempt(
        "EXPLAIN ANALYZE INSERT",
        "EXPLAIN ANALYZE INSERT INTO runs (run, attributes, created_at) VALUES ('x', '{{}}', now())",
    ),
    Attempt("EXPLAIN ANALYZE UPDATE", "EXPLAIN ANALYZE UPDATE evaluation_scores SET value = 0"),
    Attempt("EXPLAIN ANALYZE DROP", "EXPLAIN ANALYZE DROP VIEW scores"),
    Attempt("EXPLAIN ANALYZE ALTER", "EXPLAIN ANALYZE ALTER TABLE runs ADD COLUMN hacked INTEGER"),
    Attempt("EXPLAIN ANALYZE CREATE TABLE AS", "EXPLAIN ANALYZE CREATE TABLE hacked AS SELECT 1 AS x"),
    Attempt("DELETE", "DELETE FROM evaluations"),
    Attempt("a second statement", "SELECT 1; DELETE FROM evaluations"),
    Attempt("nextval() on the id sequence", "SELECT nextval('evaluation_id_seq')"),
    Attempt("nextval() inside query()", "SELECT * FROM query('SELECT nextval(''evaluation_id_seq'')')"),
    Attempt("SELECT * FROM checkpoint()", "SELECT * FROM checkpoint()"),
    Attempt("SELECT * FROM force_checkpoint()", "SELECT * FROM force_checkpoint()"),
    Attempt("CHECKPOINT", "CHECKPOINT"),
    Attempt("CALL checkpoint()", "CALL checkpoint()"),
    Attempt("VACUUM", "VACUUM"),
    # Extensions, settings, other databases.
    Attempt("INSTALL", "INSTALL httpfs"),
    Attempt("LOAD", "LOAD httpfs"),
    Attempt("SET enable_external_access", "SET enable_external_access = true"),
    Attempt("RESET enable_external_access", "RESET enable_external_access"),
    Attempt("SET allowed_directories", "SET allowed_directories = ['/']"),
    Attempt("SET lock_configuration", "SET lock_configuration = false"),
    Attempt("DETACH the store", "DETACH store"),
    Attempt("USE another database", "USE memory"),
)


@dataclass(frozen=True)
class Outcome:
    """What an attempt did: its output (or the error it raised) and its effects."""

    refused: bool  # exit status 1 with one line, or an OodStoreError
    output: str
    store_changed: bool
    files_changed: list[str]  # appeared or vanished under the attempt's folder
    leaked: list[str]  # the secret, /etc's content or the secret's name, found in the output
    traceback: bool

    @property
    def held(self) -> bool:
        """Refused or without effect: nothing changed, nothing leaked, no traceback."""
        return not (self.store_changed or self.files_changed or self.leaked or self.traceback)

    @property
    def detail(self) -> str:
        problems = [
            *(["the store file changed"] if self.store_changed else []),
            *([f"files changed: {', '.join(self.files_changed)}"] if self.files_changed else []),
            *([f"leaked: {', '.join(self.leaked)}"] if self.leaked else []),
            *(["a traceback"] if self.traceback else []),
            *([] if self.refused else ["ran"]),
        ]
        first = self.output.strip().splitlines()[0] if self.output.strip() else "(no output)"
        return "; ".join([*problems, first])


def make_store(folder: Path) -> Path:
    """A small store to attack (five Pythia-160M files), made once and copied for each attempt."""
    return pythia_160m_store(folder, files=5)


def run(attempt: Attempt, mode: str, pristine: Path, folder: Path) -> Outcome:
    """Run ``attempt`` on a copy of ``pristine`` in the empty folder ``folder`` (``mode`` from MODES)."""
    db = folder / "store.duckdb"
    shutil.copyfile(pristine, db)
    secret_dir = folder / "elsewhere"
    secret_dir.mkdir()
    secret = secret_dir / f"{NAME_MARK}.csv"
    secret.write_text(f"name,value\n{SECRET},1\n")
    (folder / "tmp").mkdir()  # the temporary folder: whatever goes there must be gone again
    sql = attempt.sql.format(
        secret=secret, secret_dir=secret_dir, out=folder / "out.csv", outdir=folder / "export", other=folder / "o.db"
    )
    before, digest = _files(folder), sha256(db)
    with contextlib.chdir(folder), _temporary_folder(folder / "tmp"):
        refused, output, traceback = _run_sql(db, sql, mode)
    markers = [SECRET, "root:"] + ([NAME_MARK] if NAME_MARK not in sql else [])
    return Outcome(
        refused=refused,
        output=output,
        store_changed=sha256(db) != digest,
        files_changed=sorted(set(_files(folder)) ^ set(before)),
        leaked=[marker for marker in markers if marker in output],
        traceback=traceback,
    )


def _run_sql(db: Path, sql: str, mode: str) -> tuple[bool, str, bool]:
    """(refused, what it printed or raised, whether a traceback came out)."""
    if mode in ("sandbox alone", UNPROTECTED):
        opened = sandbox(db, lock_timeout=0) if mode == "sandbox alone" else contextlib.closing(duckdb.connect(db))
        with opened as con:
            try:
                rows = con.execute(sql).fetchall()
            except duckdb.Error as exc:  # DuckDB refused it: what the sandbox is for
                return True, f"{type(exc).__name__}: {exc}", False
        return False, repr(rows), False
    if mode == "read-only":
        result = CliRunner().invoke(cli, ["--db", str(db), "query", sql, "-f", "csv"])
        output = result.output
        unexpected = result.exception is not None and not isinstance(result.exception, SystemExit)
        one_line = len(output.strip().splitlines()) == 1 and output.startswith("Error: ")
        return result.exit_code == 1 and one_line, output, unexpected or "Traceback" in output
    with ood_store.open(db) as store:
        try:
            frame = store.query(sql)
        except ood_store.OodStoreError as exc:
            return "\n" not in str(exc), f"{type(exc).__name__}: {exc}", False
        except Exception as exc:  # a raw DuckDB or Python error: what the attempt must not get to
            return False, f"{type(exc).__name__}: {exc}", True
    return False, frame.write_csv(), False


@contextlib.contextmanager
def _temporary_folder(folder: Path) -> Iterator[None]:
    saved = tempfile.tempdir
    tempfile.tempdir = str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = saved


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def trials(workdir: Path) -> list[tuple[str, str, bool, str]]:
    """(class, attempt, held, detail) for every attempt on both opens, in folders under ``workdir``."""
    pristine = make_store(Path(tempfile.mkdtemp(prefix="pristine-", dir=workdir)))
    rows = []
    for mode in MODES:
        for number, attempt in enumerate(ATTEMPTS):
            folder = workdir / f"{mode}-{number:02d}"
            folder.mkdir()
            outcome = run(attempt, mode, pristine, folder)
            rows.append((f"hostile SQL ({mode})", attempt.name, outcome.held, outcome.detail))
    return rows


def main() -> None:
    sys.exit(report(collect(trials, __doc__.splitlines()[0])))


if __name__ == "__main__":
    main()
