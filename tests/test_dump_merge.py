"""ood-store dump / load / merge: stores as Parquet folders, merged by content hash, conflicts reported."""

from __future__ import annotations

import hashlib
import json
import shutil

import duckdb
import pandas as pd
import polars as pl
import pytest

import ood_store
from conftest import FIXTURES, V0413, pythia_files, store_of_version, table_dump
from ood_store import _schema as schema
from ood_store._cli import main

# Every table of a store but schema_version (whose applied_at says when each store was made).
DATA_TABLES = (
    "runs", "checkpoints", "evaluations", "evaluation_scores", "samples", "documents", "analyses",
    "partial_correlations",
)  # fmt: skip
OLD_DUMP = FIXTURES / "dump-schema-2" / "store"
PREVIOUS_DUMP = FIXTURES / "dump-schema-4" / "store"  # written by the ood-store of schema 4 itself (make.py there)
SCORES = "SELECT run, step, task, num_fewshot, metric, filter, value, stderr FROM scores"


def nan_spelled(found: list[tuple]) -> list[tuple]:
    """Rows sorted, NaN spelled out (NaN is not equal to itself)."""
    return sorted((tuple("NaN" if v != v else v for v in row) for row in found), key=repr)


def rows(db) -> dict[str, list[tuple]]:
    """Every row of every data table, sorted, NaN spelled out."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: nan_spelled(con.execute(f"SELECT * FROM {t}").fetchall()) for t in DATA_TABLES}
    finally:
        con.close()


@pytest.fixture
def full_store(analysis_db, tmp_path):
    """The three Pythia runs with a saved analysis, plus the lm-eval 0.4.13 toy run with its samples."""
    db = tmp_path / "full.duckdb"
    shutil.copyfile(analysis_db, db)
    with ood_store.open(db) as store:
        assert store.ingest([V0413], attributes={"seed": 3, "lr": 0.001}).ok
        assert store.query("SELECT count(*) AS n FROM samples")["n"][0] > 0
    return db


def test_dump_then_load_into_an_empty_store_reproduces_every_table(full_store, tmp_path, runner):
    result = runner.invoke(main, ["--db", str(full_store), "dump", str(tmp_path / "dump"), "-q"])
    assert (result.exit_code, result.output) == (0, "")
    loaded = tmp_path / "loaded.duckdb"
    result = runner.invoke(main, ["--db", str(loaded), "load", str(tmp_path / "dump")])
    assert result.exit_code == 0, result.output
    assert rows(loaded) == rows(full_store)


def test_the_manifest_counts_and_hashes_what_the_files_hold(full_store, tmp_path):
    with ood_store.open(full_store, read_only=True) as store:
        store.dump(tmp_path / "dump")
    manifest = json.loads((tmp_path / "dump" / "manifest.json").read_text())
    con = duckdb.connect(str(full_store), read_only=True)
    assert manifest["schema_version"] == schema.latest_version()
    assert manifest["ood_store_version"] == ood_store.__version__
    assert set(manifest["tables"]) == set(DATA_TABLES)
    for name, table in manifest["tables"].items():
        assert table["rows"] == con.execute(f"SELECT count(*) FROM {name}").fetchone()[0], name
        for relative, digest in table["files"].items():
            assert hashlib.sha256((tmp_path / "dump" / relative).read_bytes()).hexdigest() == digest
    runs = {r for (r,) in con.execute("SELECT run FROM runs").fetchall()}
    assert {p.split("/")[1] for p in manifest["tables"]["evaluation_scores"]["files"]} == {
        "run=" + r.replace("/", "%2F") for r in runs
    }
    con.close()


def test_a_dump_reads_without_ood_store_in_duckdb_polars_and_pandas(full_store, tmp_path):
    with ood_store.open(full_store, read_only=True) as store:
        store.dump(tmp_path / "dump")
        expected = sorted(store.query(SCORES).rows(), key=repr)
    folder = tmp_path / "dump" / "scores"
    columns = ["run", "step", "task", "num_fewshot", "metric", "filter", "value", "stderr"]
    con = duckdb.connect()
    by_duckdb = con.execute(
        f"SELECT {', '.join(columns)} FROM read_parquet('{folder}/*/*.parquet', hive_partitioning = false)"
    ).fetchall()
    by_polars = pl.read_parquet(folder / "**" / "*.parquet", hive_partitioning=False).select(columns).rows()
    frame = pd.read_parquet(folder, partitioning=None)[columns]
    by_pandas = [
        tuple(None if pd.isna(v) else v for v in row) for row in frame.astype(object).itertuples(index=False, name=None)
    ]
    for got in (by_duckdb, by_polars, by_pandas):
        assert sorted(got, key=repr) == expected


def test_loading_twice_adds_nothing_the_second_time(full_store, tmp_path, runner):
    with ood_store.open(full_store, read_only=True) as store:
        store.dump(tmp_path / "dump")
    target = tmp_path / "target.duckdb"
    assert runner.invoke(main, ["--db", str(target), "load", str(tmp_path / "dump")]).exit_code == 0
    before = table_dump(target)
    again = runner.invoke(main, ["--db", str(target), "load", str(tmp_path / "dump")])
    assert again.exit_code == 0
    n = len(before["evaluations"])
    assert again.output.splitlines() == [
        f"Loaded {tmp_path / 'dump'} into {target}: 0 evaluations (0 scores, 0 samples), 0 runs, 0 checkpoints, "
        "0 analyses.",
        f"Already present: {n} evaluations, 1 analysis.",
    ]
    assert table_dump(target) == before


def two_stores(tmp_path):
    """Store A: Pythia-160M steps of the first 15 files, size 160m, seed 1. Store B: files 10 onwards,
    size 0.16b (the planted conflict), seed 1 too, and a family that A lacks."""
    files = pythia_files("160m")
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    with ood_store.open(a) as store:
        assert store.ingest(files[:15], attributes={"size": "160m", "seed": 1}).ok
    with ood_store.open(b) as store:
        assert store.ingest(files[10:], attributes={"size": "0.16b", "seed": 1, "family": "pythia"}).ok
    return a, b, files


def test_merging_stores_that_share_evaluations_gives_each_once_and_reports_the_conflict(tmp_path, runner):
    a, b, files = two_stores(tmp_path)
    result = runner.invoke(main, ["--db", str(a), "merge", str(b)])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"Merged {b} into {a}: 12 evaluations (2,064 scores, 0 samples), 0 runs, 12 checkpoints, 0 analyses.",
        "Already present: 5 evaluations, 0 analyses.",
        "Updated the attributes of 1 run.",
        "Conflicts: 1 (this store's values kept; choose with --prefer theirs|ours):",
        f"  run EleutherAI/pythia-v1.1-160m: size: 160m here, 0.16b in {b}; kept ours",
    ]
    reference = tmp_path / "all.duckdb"
    with ood_store.open(reference) as store:
        assert store.ingest(files).ok
        expected = sorted(store.query(SCORES).rows(), key=repr)
    with ood_store.open(a, read_only=True) as store:
        hashes = store.query("SELECT content_hash FROM evaluations")["content_hash"].to_list()
        assert sorted(store.query(SCORES).rows(), key=repr) == expected
        assert store.query("SELECT size, family, seed FROM runs").rows() == [("160m", "pythia", 1)]
    assert len(hashes) == len(set(hashes)) == 27
    assert sorted(hashes) == sorted(hashlib.sha256(f.read_bytes()).hexdigest() for f in files)


@pytest.mark.parametrize(("prefer", "size"), [("theirs", "0.16b"), ("ours", "160m")])
def test_prefer_settles_the_conflict(tmp_path, runner, prefer, size):
    a, b, _ = two_stores(tmp_path)
    result = runner.invoke(main, ["--db", str(a), "merge", str(b), "--prefer", prefer])
    assert result.exit_code == 0, result.output
    took = "took theirs" if prefer == "theirs" else "kept ours"
    assert f"  run EleutherAI/pythia-v1.1-160m: size: 160m here, 0.16b in {b}; {took}" in result.output
    with ood_store.open(a, read_only=True) as store:
        assert store.query("SELECT size FROM runs").rows() == [(size,)]


def test_a_saved_analysis_that_differs_is_a_clash(analysis_db, tmp_path, runner):
    ours, theirs = tmp_path / "ours.duckdb", tmp_path / "theirs.duckdb"
    shutil.copyfile(analysis_db, ours)
    shutil.copyfile(analysis_db, theirs)
    con = duckdb.connect(str(theirs))
    con.execute("UPDATE partial_correlations SET r = 0.5 WHERE task_x = 'arc_easy' AND task_y = 'piqa'")
    con.close()
    before = table_dump(ours)
    result = runner.invoke(main, ["--db", str(ours), "merge", str(theirs)])
    assert result.exit_code == 1
    assert f"  analysis pythia-linear: rows (6 of them) differ from {theirs}'s; kept ours" in result.output
    assert table_dump(ours) == before
    assert runner.invoke(main, ["--db", str(ours), "merge", str(theirs), "--prefer", "theirs"]).exit_code == 0
    with ood_store.open(ours, read_only=True) as store:
        table = store.analysis("pythia-linear").table
        assert set(table.filter(pl.col("task_y") == "piqa", pl.col("task_x") == "arc_easy")["r"]) == {0.5}


def test_a_dump_of_schema_version_2_loads(tmp_path):
    manifest = json.loads((OLD_DUMP / "manifest.json").read_text())
    assert manifest["schema_version"] == 2 < schema.latest_version()
    with ood_store.open(tmp_path / "new.duckdb") as store:
        report = store.load(OLD_DUMP)
        assert report.ok and report.evaluations_added == 6 and report.analyses_added == ["schema2-linear"]
        got = sorted(store.query(SCORES).rows(), key=repr)
        provenance = set(store.query("SELECT campaign, source_format FROM evaluations").rows())
        runs = store.query("SELECT family, size FROM runs").rows()
        analysis = store.analysis("schema2-linear").table
    with ood_store.open(tmp_path / "direct.duckdb") as store:
        assert store.ingest(pythia_files("160m")[:6]).ok
        assert got == sorted(store.query(SCORES).rows(), key=repr)
    assert provenance == {(None, "lm-eval")}  # what migration 0003 gives every older evaluation
    assert runs == [("pythia", "160m")] and analysis.height == 3


def test_a_dump_written_by_the_previous_schema_versions_ood_store_loads(tmp_path, runner):
    """Every row the schema-4 dump holds, read from its Parquet files by DuckDB alone, is in the store it loads
    into, with the columns schema 4 had; its scores are those of ingesting the same files today."""
    manifest = json.loads((PREVIOUS_DUMP / "manifest.json").read_text())
    assert manifest["schema_version"] == 4 < schema.latest_version()
    db = tmp_path / "new.duckdb"
    result = runner.invoke(main, ["--db", str(db), "load", str(PREVIOUS_DUMP)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        f"Loaded {PREVIOUS_DUMP} into {db}: 13 evaluations (1,054 scores, 92 samples), 4 runs, 13 checkpoints, "
        "1 analysis."
    )
    con = duckdb.connect(str(db), read_only=True)
    try:
        for table, entry in manifest["tables"].items():
            files = [str(PREVIOUS_DUMP / f) for f in entry["files"]]
            added = f"EXCLUDE ({', '.join(entry['added_columns'])})" if entry["added_columns"] else ""
            dumped = duckdb.execute(f"SELECT * {added} FROM read_parquet($files, hive_partitioning = false)",
                                    {"files": files})  # fmt: skip
            columns = [c[0] for c in dumped.description]
            expected = nan_spelled(dumped.fetchall())
            got = nan_spelled(con.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall())
            assert len(got) == entry["rows"] and got == expected, table
        sources = dict(con.execute("SELECT source_format, count(*) FROM evaluations GROUP BY ALL").fetchall())
    finally:
        con.close()
    assert sources == {"lm-eval": 8, "eee": 1, "wandb": 4}
    # The same evaluations as the files give today: same content hashes, so the load adds nothing to a store
    # that ingested them, and the same scores.
    direct = tmp_path / "direct.duckdb"
    with ood_store.open(direct) as store:
        assert store.ingest([*pythia_files("160m")[:6], V0413, FIXTURES / "eee"]).ok
        assert store.ingest([FIXTURES / "wandb" / "opt-125m-mnli-s2.parquet"],
                            wandb_map=["eval.{task}.{metric}", "eval/{task}/{metric}"]).ok  # fmt: skip
        report = store.load(PREVIOUS_DUMP)
        assert (report.evaluations_added, report.evaluations_present) == (0, 13)
        assert report.analyses_added == ["schema4-linear"]
        expected_scores = sorted(store.query(SCORES).rows(), key=repr)
    with ood_store.open(db, read_only=True) as store:
        assert sorted(store.query(SCORES).rows(), key=repr) == expected_scores


def test_a_store_of_schema_version_2_merges(tmp_path):
    """The store: one made at schema 2 (migrations cut to two), filled with the schema-2 dump's rows by SQL."""
    old = tmp_path / "old.duckdb"
    manifest = json.loads((OLD_DUMP / "manifest.json").read_text())
    inserts, files = [], {}
    for table, entry in manifest["tables"].items():
        if entry["files"]:
            files[table] = [str(OLD_DUMP / f) for f in entry["files"]]
            extra = f"EXCLUDE ({', '.join(entry['added_columns'])})" if entry["added_columns"] else ""
            source = f"read_parquet($files_{table}, hive_partitioning = false)"
            inserts.append(f"INSERT INTO {table} BY NAME SELECT * {extra} FROM {source}")
    store_of_version(old, 2, *inserts, params={f"files_{table}": f for table, f in files.items()})
    before = old.read_bytes()
    with ood_store.open(tmp_path / "new.duckdb") as store:
        report = store.merge(old)
        assert report.evaluations_added == 6 and report.scores_added == 6 * 172
        assert report.analyses_added == ["schema2-linear"]
        assert set(store.query("SELECT source_format FROM evaluations")["source_format"]) == {"lm-eval"}
    assert old.read_bytes() == before  # opened read-only: not migrated in place


def test_a_damaged_dump_is_refused_naming_the_file(full_store, tmp_path, runner):
    with ood_store.open(full_store, read_only=True) as store:
        store.dump(tmp_path / "dump")
    victim = next((tmp_path / "dump" / "evaluation_scores").rglob("*.parquet"))
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    target = tmp_path / "target.duckdb"
    with ood_store.open(target) as store:
        assert store.ingest(pythia_files("160m")[:1]).ok
    before = table_dump(target)
    result = runner.invoke(main, ["--db", str(target), "load", str(tmp_path / "dump")])
    assert (result.exit_code, result.output) == (
        1,
        f"Error: {victim}: its sha256 differs from manifest.json's: the dump was changed or damaged\n",
    )
    assert table_dump(target) == before


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m.update(schema_version=99), "the store has schema version 99, but ood-store"),
        (lambda m: m["tables"]["runs"].update(rows=7), "tables.runs.rows: says 7, the files hold 1"),
        (lambda m: m.pop("ood_store_dump"), "ood_store_dump: missing: not an ood-store dump manifest"),
    ],
)
def test_a_bad_manifest_is_one_line(tmp_path, runner, edit, message):
    dump = tmp_path / "dump"
    shutil.copytree(OLD_DUMP, dump)
    manifest = json.loads((dump / "manifest.json").read_text())
    edit(manifest)
    (dump / "manifest.json").write_text(json.dumps(manifest))
    result = runner.invoke(main, ["--db", str(tmp_path / "t.duckdb"), "load", str(dump)])
    assert result.exit_code == 1 and result.output.startswith("Error: ") and len(result.output.splitlines()) == 1
    assert message in result.output


def test_dump_refuses_a_folder_with_files_and_merge_refuses_the_store_itself(tmp_path, runner, analysis_db):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("x")
    result = runner.invoke(main, ["--db", str(analysis_db), "dump", str(tmp_path / "busy")])
    assert (result.exit_code, result.output) == (
        1,
        f"Error: {tmp_path / 'busy'}: exists and is not an empty folder; dump into a new one\n",
    )
    db = tmp_path / "s.duckdb"
    shutil.copyfile(analysis_db, db)
    result = runner.invoke(main, ["--db", str(db), "merge", str(db)])
    assert (result.exit_code, result.output) == (1, f"Error: {db}: is the store itself; give another store to merge\n")
    result = runner.invoke(main, ["--db", str(db), "load", str(tmp_path / "busy")])
    assert (result.exit_code, result.output) == (
        1,
        f"Error: {tmp_path / 'busy'}: not an ood-store dump (no manifest.json)\n",
    )


def test_merging_a_file_that_is_no_store_is_one_line(tmp_path, runner):
    foreign, text = tmp_path / "foreign.duckdb", tmp_path / "notes.duckdb"
    con = duckdb.connect(str(foreign))
    con.execute("CREATE TABLE mine AS SELECT 1 AS x")
    con.close()
    text.write_text("not a database")
    db = tmp_path / "incoming.duckdb"  # a store whose own name is what a careless merge would attach the other as
    with ood_store.open(db) as store:
        assert store.ingest(pythia_files("160m")[:1]).ok
    before = table_dump(db)
    result = runner.invoke(main, ["--db", str(db), "merge", str(foreign)])
    assert (result.exit_code, result.output) == (1, f"Error: {foreign}: not an ood-store (no schema_version table)\n")
    result = runner.invoke(main, ["--db", str(db), "merge", str(text)])
    assert result.exit_code == 1 and result.output.startswith(f"Error: {text}: cannot open the store to merge: ")
    assert len(result.output.splitlines()) == 1 and table_dump(db) == before
