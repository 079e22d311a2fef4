"""A damaged store file gives one line naming it and what to do, whatever the command; never a traceback,
and never blame put on an input file.

The damaged copies are made as benchmarks/damaged_stores.py makes them (the blocks found with
DuckDB's own pragma_storage_info); the first tests check that DuckDB itself fails on each the
way the rest expect.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import polars as pl
import pytest

import ood_store
from conftest import benchmark, pythia_files
from ood_store._cli import main
from ood_store._errors import StoreDamagedError
from ood_store._store.damage import store_problem
from ood_store._store.transaction import registered, transaction

damaged_stores = benchmark("damaged_stores")

REMEDY = (
    "move it aside, then restore the store from a dump (`ood-store load DIR`) "
    "or rebuild it from the lm-eval files (`ood-store ingest`)"
)
# The damages the command tests use, and what the line says of each.
DAMAGES = {
    "zero bytes": "it is empty (0 bytes)",
    "truncated at the evaluations block": "it is shorter than DuckDB expects (truncated?) (IO Error: Could not read",
    "flipped: the evaluations block": "a checksum fails (Corrupt database file: computed checksum",
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    return damaged_stores.make_store(tmp_path_factory.mktemp("pristine"))


def damaged(pristine: Path, name: str, folder: Path) -> Path:
    return damaged_stores.damage(pristine, name, folder / "store.duckdb")


def read_evaluations(path: Path) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("SELECT * FROM evaluations").fetchall()
    finally:
        con.close()


def test_the_pristine_store_reads_whole(pristine):
    assert len(read_evaluations(pristine)) == 27


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        ("zero bytes", duckdb.IOException, "not a valid DuckDB database file"),
        ("truncated in the file header", duckdb.IOException, "Could not read enough bytes"),
        ("truncated at the evaluations block", duckdb.IOException, "Could not read enough bytes"),
        ("flipped: a database header", duckdb.Error, "Corrupt database file"),
        ("flipped: the evaluations block", duckdb.Error, r"Corrupt database file: computed checksum \d+ does not"),
    ],
)
def test_duckdb_itself_fails_on_each_damage(pristine, tmp_path, name, error, message):
    store = damaged(pristine, name, tmp_path)
    with pytest.raises(error, match=message):
        read_evaluations(store)


COMMANDS = ["query", "runs", "tasks", "ingest", "analyze", "export --sql", "dump", "export-eee", "runs set"]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("name", DAMAGES)
def test_each_command_names_the_damaged_store_in_one_line(runner, pristine, tmp_path, name, command):
    store = damaged(pristine, name, tmp_path)
    status, output = damaged_stores.run(command, store, tmp_path, pristine)
    assert "Traceback" not in output
    assert status == 1
    assert output.startswith(f"Error: {store}: the store file is damaged: {DAMAGES[name]}"), output
    assert output.endswith(f"; {REMEDY}\n") and output.count("\n") == 1, output


def test_init_on_an_empty_file(runner, pristine, tmp_path):
    store = damaged(pristine, "zero bytes", tmp_path)
    result = runner.invoke(main, ["--db", str(store), "init"])
    assert (result.exit_code, result.output) == (
        1,
        f"Error: {store}: the store file is damaged: it is empty (0 bytes); {REMEDY}\n",
    )
    assert store.read_bytes() == b""


def test_ingest_into_a_damaged_store_blames_the_store_not_the_files(runner, pristine, tmp_path):
    """It used to reject every good file: "could not be stored: ... Current transaction is aborted"."""
    store = damaged(pristine, "flipped: the runs block", tmp_path)
    # A checkpoint of a run the store holds, at a step it lacks: the write must read the run's row (ON CONFLICT
    # ... DO UPDATE). A new run's row alone need not read the damaged block, and whether DuckDB did varied.
    source = pythia_files("160m")[0]
    new_step = tmp_path / "160m_step999999.json"
    new_step.write_text(source.read_text().replace("revision=step0", "revision=step999999"))
    files = [str(new_step)]
    result = runner.invoke(main, ["--db", str(store), "ingest", *files])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.startswith(f"Error: {store}: the store file is damaged: a checksum fails")
    assert result.output.count("\n") == 1
    assert not any(f in result.output for f in files)


def test_merge_from_a_damaged_store_names_it(runner, pristine, tmp_path):
    store = damaged(pristine, "zero bytes", tmp_path)
    result = runner.invoke(main, ["--db", str(tmp_path / "into.duckdb"), "merge", str(store)])
    assert result.exit_code == 1 and result.output.count("\n") == 1
    assert result.output.startswith(f"Error: {store}: the store file is damaged: ")
    store = damaged(pristine, "flipped: the evaluations block", tmp_path)
    result = runner.invoke(main, ["--db", str(tmp_path / "into.duckdb"), "merge", str(store)])
    assert result.exit_code == 1 and result.output.count("\n") == 1
    # DuckDB's message does not say which of the two files failed: both are named
    assert result.output.startswith(f"Error: {store} (or the store {tmp_path / 'into.duckdb'}): the store file")


@pytest.mark.parametrize("read_only", [True, False])
def test_python_api_raises_store_damaged_error(pristine, tmp_path, read_only):
    store = damaged(pristine, "zero bytes", tmp_path)
    with pytest.raises(StoreDamagedError, match="it is empty"):
        ood_store.open(store, read_only=read_only)
    store = damaged(pristine, "flipped: the evaluations block", tmp_path)
    with ood_store.open(store, read_only=read_only) as opened:
        with pytest.raises(
            StoreDamagedError, match=f"^{re.escape(str(store))}: the store file is damaged: a checksum fails"
        ):
            opened.query("SELECT * FROM evaluations")
        with pytest.raises(
            StoreDamagedError, match=f"^{re.escape(str(store))}: the store file is damaged: a checksum fails"
        ):
            opened.tasks()  # ood-store's own SQL, outside the sandbox, names the damage too
        assert opened.query("SELECT count(*) AS n FROM runs")["n"].item() == 1  # the rest still reads


def test_a_failed_transaction_is_a_store_problem():
    con = duckdb.connect()
    con.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
    con.execute("BEGIN TRANSACTION")
    with pytest.raises(duckdb.ConstraintException):
        con.execute("INSERT INTO t VALUES (1), (1)")
    with pytest.raises(duckdb.TransactionException) as aborted:
        con.execute("SELECT 1")
    problem = store_problem("s.duckdb", aborted.value)
    assert problem is not None and str(problem).startswith(
        "s.duckdb: a transaction on the store failed (TransactionContext Error: Current transaction is aborted"
    )
    assert str(problem).endswith(REMEDY)
    assert store_problem("s.duckdb", duckdb.ConstraintException("Constraint Error: duplicate key")) is None


def test_a_failing_statement_keeps_its_own_error_inside_a_transaction():
    """Unregistering a frame after a failed statement fails too ("transaction is aborted"); that error
    would hide the first, and a bad file would then be taken for a broken store."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
    rows = pl.DataFrame({"x": [1, 1]})
    with pytest.raises(duckdb.ConstraintException), transaction(con), registered(con, "rows", rows):
        con.execute("INSERT INTO t SELECT x FROM rows")
    assert con.execute("SELECT count(*) FROM t").fetchall() == [(0,)]
    con.execute("BEGIN TRANSACTION")  # what registered() avoids: the unregister's error replaces the first
    con.register("rows", rows)
    with pytest.raises(duckdb.TransactionException, match="Current transaction is aborted"):
        try:
            con.execute("INSERT INTO t SELECT x FROM rows")
        finally:
            con.unregister("rows")


def test_a_file_duckdb_refuses_inside_the_transaction_is_still_rejected_alone(db, monkeypatch):
    """A real constraint violation inside the write (a NULL task): the file is rejected, the others stored."""
    from ood_store._ingest import write

    files = pythia_files("160m")[:4]
    culprit = str(files[2].resolve())
    real = write._scores_frame

    def without_a_task(records, ids):  # what the readers never let through
        frame = real(records, ids)
        position = next((i for i, r in enumerate(records) if r.path == culprit), None)
        if position is None:
            return frame
        return frame.with_columns(task=pl.when(pl.col("evaluation_id") == ids[position]).then(None).otherwise("task"))

    monkeypatch.setattr(write, "_scores_frame", without_a_task)
    monkeypatch.setattr(write, "_check_unique", lambda *args: None)  # it would see the NULL tasks as twins
    with ood_store.open(db) as store:
        report = store.ingest(files)
        assert len(report.ingested) == 3
        [rejected] = report.rejected
        assert rejected.reason.startswith(f"{files[2]}: could not be stored: Constraint Error: NOT NULL")
        assert store.query("SELECT count(*) AS n FROM evaluations")["n"].item() == 3
