"""User SQL reads the store and nothing else: `ood-store query`, `export --sql` and `Store.query`.

The hostile statements are those of issue 17, listed in benchmarks/hostile_sql.py with the way
their effect is observed (the store file's SHA-256 after closing, every file under the attempt's
folder, a planted secret's content in the output); the reliability script runs the same trials.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import duckdb
import pytest

import ood_store
from conftest import benchmark, pythia_files, sql_rows
from ood_store._cli import main

hostile_sql = benchmark("hostile_sql")
SECRET = hostile_sql.SECRET


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """Five Pythia-160M files; never changed (each test copies it)."""
    return hostile_sql.make_store(tmp_path_factory.mktemp("pristine"))


@pytest.fixture
def db(pristine, tmp_path) -> Path:
    copy = tmp_path / "store.duckdb"
    shutil.copyfile(pristine, copy)
    return copy


def query(runner, db, *args):
    result = runner.invoke(main, ["--db", str(db), "query", *args])
    assert "Traceback" not in result.output
    return result


# The attempts that DuckDB runs, without effect, in the sandbox without ood-store's statement check
# (a CHECKPOINT of a read-only attached store writes nothing); every other attempt is refused there too.
RUN_WITHOUT_EFFECT = {"SELECT * FROM checkpoint()", "CHECKPOINT", "CALL checkpoint()", "VACUUM", "USE another database"}


@pytest.mark.parametrize("mode", hostile_sql.MODES)
@pytest.mark.parametrize("attempt", hostile_sql.ATTEMPTS, ids=lambda attempt: attempt.name)
def test_hostile_sql_changes_nothing_and_reads_nothing(attempt, mode, pristine, tmp_path):
    outcome = hostile_sql.run(attempt, mode, pristine, tmp_path)
    assert not outcome.store_changed, outcome.output
    assert outcome.files_changed == [], outcome.output
    assert outcome.leaked == [], outcome.output
    assert not outcome.traceback, outcome.output
    if not (mode == "sandbox alone" and attempt.name in RUN_WITHOUT_EFFECT):
        assert outcome.refused, outcome.output


@pytest.mark.parametrize(
    "name",
    [
        "data-modifying CTE: DELETE",
        "data-modifying CTE: UPDATE",
        "EXPLAIN ANALYZE DELETE",
        "nextval() on the id sequence",
        "EXPLAIN ANALYZE COPY table TO",
        "read_csv of a file outside the store",
        "glob of the secret's folder",
    ],
)
def test_the_same_statements_on_plain_duckdb_do_what_the_sandbox_stops(name, pristine, tmp_path):
    """The observations above can fail: on a connection of DuckDB's own, opened for writing, they do."""
    attempt = next(attempt for attempt in hostile_sql.ATTEMPTS if attempt.name == name)
    outcome = hostile_sql.run(attempt, hostile_sql.UNPROTECTED, pristine, tmp_path)
    assert not outcome.refused
    assert outcome.store_changed or outcome.files_changed or outcome.leaked


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "WITH d AS (DELETE FROM evaluation_scores RETURNING *) SELECT count(*) FROM d",
            "queries are read-only: DELETE statements are not allowed, inside a query either",
        ),
        (
            "EXPLAIN ANALYZE COPY evaluations TO 'x.csv'",
            "queries are read-only: EXPLAIN of COPY statements is not allowed",
        ),
        ("SELECT nextval('evaluation_id_seq')", "queries are read-only: nextval() advances a sequence"),
        ("SELECT * FROM checkpoint()", "queries are read-only: checkpoint() writes the store file"),
        ("SELECT * FROM read_csv('/etc/passwd')", 'Permission Error: Cannot access file "/etc/passwd"'),
    ],
)
def test_refusals_say_why(runner, db, sql, message):
    result = query(runner, db, sql)
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {message}") and result.output.count("\n") == 1


@pytest.mark.parametrize(
    "sql",
    [
        "EXPLAIN SELECT count(*) FROM scores",
        "EXPLAIN ANALYZE SELECT count(*) FROM scores",
        "EXPLAIN ANALYZE (SELECT 1) UNION (SELECT 2)",
        "EXPLAIN (FORMAT json) SELECT 1",
        "WITH s AS (SELECT * FROM scores) SELECT count(*) FROM s",
        "SELECT * FROM query('SELECT count(*) FROM runs')",
    ],
)
def test_reading_statements_still_run(runner, db, sql):
    result = query(runner, db, sql)
    assert result.exit_code == 0, result.output


def test_a_store_opened_for_writing_stays_writable_between_queries(db):
    """Store.query closes the store's own connection while the sandbox reads the file, then opens it again."""
    more = pythia_files("410m")[:2]
    with ood_store.open(db) as store:
        assert store.query("SELECT count(*) AS n FROM evaluations")["n"].to_list() == [5]
        assert store.ingest(more).ok
        assert store.query("SELECT count(*) AS n FROM evaluations")["n"].to_list() == [7]
        store.set_run_attributes("EleutherAI/pythia-v1.1-410m", {"size": "410m"})
    assert sql_rows(db, "SELECT run, size FROM runs WHERE size IS NOT NULL") == [
        ("EleutherAI/pythia-v1.1-410m", "410m")
    ]


def test_duckdb_will_not_attach_a_file_this_process_has_open_for_writing(tmp_path):
    """Why the store's own connection is closed while a query runs on a store opened for writing."""
    path = tmp_path / "x.duckdb"
    writer = duckdb.connect(str(path))
    writer.execute("CREATE TABLE t AS SELECT 1 AS x")
    with pytest.raises(duckdb.Error, match="Unique file handle conflict"):
        duckdb.connect(":memory:").execute("ATTACH $path AS s (READ_ONLY)", {"path": str(path)})
    with pytest.raises(duckdb.ConnectionException):
        duckdb.connect(str(path), read_only=True)
    writer.close()
    reader = duckdb.connect(":memory:")
    reader.execute("ATTACH $path AS s (READ_ONLY)", {"path": str(path)})
    assert reader.execute("SELECT x FROM s.t").fetchall() == [(1,)]


def test_a_read_only_store_keeps_its_sandbox_and_cleans_up(db, tmp_path, monkeypatch):
    spill = tmp_path / "tmp"
    spill.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(spill))
    with ood_store.open(db, read_only=True) as store:
        counts = [store.query("SELECT count(*) AS n FROM evaluations")["n"].item() for _ in range(3)]
        assert len(list(spill.iterdir())) == 1  # one sandbox for the three queries, its spill folder
    assert counts == [5, 5, 5]
    assert list(spill.iterdir()) == []
    with pytest.raises(ood_store.StoreError, match="the store is closed"):
        store.query("SELECT 1")


# -- --allow-files DIR ----------------------------------------------------------------------------
@pytest.fixture
def folders(tmp_path) -> dict[str, Path]:
    """data/steps.csv (allowed), a secret beside it (not), and a link in data/ to the secret."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "steps.csv").write_text("step,phase\n0,early\n1000,early\n143000,late\n")
    secret = tmp_path / "secret.csv"
    secret.write_text(f"name,value\n{SECRET},1\n")
    (data / "link.csv").symlink_to(secret)
    return {"data": data, "secret": secret}


def test_allow_files_reads_a_csv_in_that_folder(runner, db, folders):
    steps = folders["data"] / "steps.csv"
    wanted = {int(row["step"]): row["phase"] for row in csv.DictReader(steps.open())}
    stored = {step for (step,) in sql_rows(db, "SELECT DISTINCT step FROM checkpoints")}
    sql = f"SELECT DISTINCT c.step, f.phase FROM checkpoints c JOIN read_csv('{steps}') f USING (step) ORDER BY c.step"
    result = query(runner, db, "--allow-files", str(folders["data"]), sql, "-f", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"step": s, "phase": p} for s, p in sorted(wanted.items()) if s in stored]
    assert json.loads(result.output)  # the files share steps: the join is not empty
    result = query(runner, db, sql)
    assert result.exit_code == 1 and "Permission Error" in result.output


@pytest.mark.parametrize(
    "path",
    ["{secret}", "{data}/../secret.csv", "{data}/link.csv"],
    ids=["a file outside", "a path with ..", "a link out of the folder"],
)
def test_allow_files_reads_nothing_outside_that_folder(runner, db, folders, path):
    sql = f"SELECT * FROM read_csv('{path.format(**folders)}')"
    result = query(runner, db, "--allow-files", str(folders["data"]), sql, "-f", "csv")
    assert result.exit_code == 1 and "Permission Error: Cannot access file" in result.output
    assert SECRET not in result.output


@pytest.mark.parametrize(
    "sql",
    ["COPY (SELECT 1) TO '{data}/out.csv'", "EXPLAIN ANALYZE COPY (SELECT 1) TO '{data}/out.csv'"],
)
def test_allow_files_writes_nothing_there(runner, db, folders, sql):
    before = sorted(folders["data"].iterdir())
    result = query(runner, db, "--allow-files", str(folders["data"]), sql.format(**folders))
    assert result.exit_code == 1 and "queries are read-only" in result.output
    assert sorted(folders["data"].iterdir()) == before


def test_allow_files_relative_to_the_working_directory(runner, db, folders, monkeypatch):
    monkeypatch.chdir(folders["data"].parent)
    result = query(runner, db, "--allow-files", "data", "SELECT count(*) AS n FROM read_csv('data/steps.csv')")
    assert result.exit_code == 0, result.output
    assert result.output.split() == ["n", "---", "3"]


def test_allow_files_in_python_on_a_store_opened_for_writing(db, folders):
    steps = folders["data"] / "steps.csv"
    with ood_store.open(db, allow_files=[folders["data"]]) as store:
        assert store.query(f"SELECT phase FROM read_csv('{steps}') ORDER BY step")["phase"].to_list() == [
            "early",
            "early",
            "late",
        ]
        with pytest.raises(ood_store.QueryError, match="Permission Error"):
            store.query(f"SELECT * FROM read_csv('{folders['secret']}')")
    with pytest.raises(ood_store.InputError, match="allow_files: .*steps.csv: not a folder"):
        ood_store.open(db, allow_files=[steps])


def test_allow_files_must_be_a_folder(runner, db, tmp_path):
    result = query(runner, db, "--allow-files", str(tmp_path / "missing"), "SELECT 1")
    assert (result.exit_code, result.output) == (1, f"Error: --allow-files: {tmp_path / 'missing'}: no such folder\n")
    result = query(runner, db, "--allow-files", str(db), "SELECT 1")  # the same words and exit status for a file
    assert (result.exit_code, result.output) == (1, f"Error: --allow-files: {db}: not a folder\n")


def test_reading_a_file_outside_the_store_names_allow_files(runner, db):
    result = query(runner, db, "SELECT * FROM read_csv('/etc/passwd')")
    assert result.exit_code == 1 and result.output.startswith("Error: Permission Error: ")
    assert result.output.endswith("; SQL reads the store, and files only in the folders of --allow-files\n")


def test_export_sql_runs_in_the_sandbox_too(runner, db, folders):
    steps = folders["data"] / "steps.csv"
    sql = f"SELECT step, phase FROM read_csv('{steps}') ORDER BY step"
    args = ["--db", str(db), "export", "--sql", sql, "-f", "csv"]
    result = runner.invoke(main, args)
    assert result.exit_code == 1 and "Permission Error" in result.output and "Traceback" not in result.output
    result = runner.invoke(main, [*args, "--allow-files", str(folders["data"])])
    assert result.exit_code == 0, result.output
    table = "".join(line for line in io.StringIO(result.output) if not line.startswith("#"))  # less provenance
    assert list(csv.reader(io.StringIO(table))) == list(csv.reader(steps.open()))
    result = runner.invoke(main, ["--db", str(db), "export", "--sql", "SELECT * FROM checkpoint()"])
    assert result.exit_code == 1 and "checkpoint() writes the store file" in result.output
    result = runner.invoke(main, ["--db", str(db), "export", "--analysis", "x", "--allow-files", str(folders["data"])])
    assert result.exit_code == 2 and "--allow-files needs --sql" in result.output
