"""Versioned schema: migrations in order, each atomic; newer stores refused, older ones migrated."""

from __future__ import annotations

import zipfile

import duckdb
import pytest

import ood_store
from conftest import FIXTURES, pythia_files, store_of_version, table_dump
from ood_store import _schema as schema
from ood_store._cli import main

PUBLIC_SCORE_COLUMNS = ["run", "step", "task", "num_fewshot", "metric", "filter", "value", "stderr"]


def test_new_store_has_the_latest_schema(db):
    with ood_store.open(db) as store:
        assert store.migrations_applied == [m.version for m in schema.migrations()]
        versions = store.query("SELECT version, name FROM schema_version ORDER BY version").rows()
        objects = store.query("SELECT table_name, table_type FROM information_schema.tables ORDER BY 1").rows()
    assert versions == [(m.version, m.name) for m in schema.migrations()]
    assert versions[0] == (1, "0001_init.sql")
    assert dict(objects) == {
        "analyses": "BASE TABLE",
        "partial_correlations": "BASE TABLE",
        "checkpoints": "BASE TABLE",
        "evaluation_scores": "BASE TABLE",
        "evaluations": "BASE TABLE",
        "runs": "BASE TABLE",
        "samples": "BASE TABLE",
        "documents": "BASE TABLE",
        "schema_version": "BASE TABLE",
        "campaign_scores": "VIEW",
        "samples_all": "VIEW",
        "score_conflicts": "VIEW",
        "scores": "VIEW",
        "scores_all": "VIEW",
    }


def test_scores_columns_are_the_public_contract(db):
    with ood_store.open(db) as store:
        columns = store.query("SELECT * FROM scores LIMIT 0").columns
        all_columns = store.query("SELECT * FROM scores_all LIMIT 0").columns
    assert columns[:8] == PUBLIC_SCORE_COLUMNS
    assert all_columns[:8] == PUBLIC_SCORE_COLUMNS


def test_migrations_are_numbered_files_in_the_package():
    found = schema.migrations()
    assert [m.version for m in found] == list(range(1, len(found) + 1))
    assert all(m.name.startswith(f"{m.version:04d}_") and m.name.endswith(".sql") for m in found)


def _with_extra_migration(monkeypatch, sql: str):
    extra = schema.Migration(len(schema.migrations()) + 1, f"{len(schema.migrations()) + 1:04d}_extra.sql", sql)
    shipped = schema.migrations()
    monkeypatch.setattr(schema, "migrations", lambda: (*shipped, extra))
    return extra


def test_older_store_is_migrated_on_open_and_keeps_its_data(db, monkeypatch):
    with ood_store.open(db) as store:
        assert store.ingest(pythia_files("160m")[:2]).ok
    before = table_dump(db)
    extra = _with_extra_migration(monkeypatch, "ALTER TABLE runs ADD COLUMN notes VARCHAR;")
    with ood_store.open(db) as store:
        assert store.migrations_applied == [extra.version]
        assert store.schema_version == extra.version
        assert "notes" in store.query("SELECT * FROM runs").columns
    after = table_dump(db)
    assert after["evaluation_scores"] == before["evaluation_scores"]
    assert len(after["schema_version"]) == len(before["schema_version"]) + 1


def test_read_only_open_of_an_older_store_asks_for_init(db, monkeypatch, runner):
    ood_store.open(db).close()
    extra = _with_extra_migration(monkeypatch, "ALTER TABLE runs ADD COLUMN notes VARCHAR;")
    with pytest.raises(ood_store.StoreError, match="run `ood-store init`"):
        ood_store.open(db, read_only=True)
    result = runner.invoke(main, ["--db", str(db), "query", "SELECT 1"])
    assert result.exit_code == 1
    assert result.output == (
        f"Error: {db}: the store has schema version {extra.version - 1} and needs migrating to "
        f"{extra.version}; run `ood-store init` (it keeps all data)\n"
    )
    result = runner.invoke(main, ["--db", str(db), "init"])
    assert result.exit_code == 0
    assert result.output == f"Migrated {db} to schema version {extra.version} (applied {extra.version}).\n"
    assert runner.invoke(main, ["--db", str(db), "query", "SELECT 1"]).exit_code == 0


def test_a_failing_migration_changes_nothing(db, monkeypatch):
    ood_store.open(db).close()
    before = table_dump(db)
    _with_extra_migration(monkeypatch, "CREATE TABLE half_done (x INTEGER); SELEC broken;")
    with pytest.raises(duckdb.ParserException):
        ood_store.open(db)
    assert table_dump(db) == before
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'half_done'").fetchall() == [(0,)]
    con.close()


def test_newer_store_is_refused(db, runner):
    ood_store.open(db).close()
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO schema_version VALUES (99, '0099_future.sql', now()::TIMESTAMP)")
    con.close()
    before = table_dump(db)
    message = (
        f"{db}: the store has schema version 99, but ood-store {ood_store.__version__} understands versions up to "
        f"{schema.latest_version()}; upgrade ood-store to open it"
    )
    for read_only in (False, True):
        with pytest.raises(ood_store.StoreError) as error:
            ood_store.open(db, read_only=read_only)
        assert str(error.value) == message
    for command in (["init"], ["query", "SELECT 1"], ["ingest", str(pythia_files("160m")[0])]):
        result = runner.invoke(main, ["--db", str(db), *command])
        assert (result.exit_code, result.output) == (1, f"Error: {message}\n")
    assert table_dump(db) == before


def test_a_foreign_duckdb_file_is_left_alone(tmp_path, runner):
    db = tmp_path / "other.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE mine AS SELECT 1 AS x")
    con.close()
    result = runner.invoke(main, ["--db", str(db), "init"])
    assert result.exit_code == 1
    assert result.output == f"Error: {db}: a DuckDB database, but not an ood-store (no schema_version table)\n"
    con = duckdb.connect(str(db), read_only=True)
    assert [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()] == ["mine"]
    con.close()


def test_init_creates_then_reports(tmp_path, runner):
    db = tmp_path / "new.duckdb"
    first = runner.invoke(main, ["--db", str(db), "init"])
    assert (first.exit_code, first.output) == (0, f"Created {db} (schema version {schema.latest_version()}).\n")
    again = runner.invoke(main, ["--db", str(db), "init"])
    latest = schema.latest_version()
    assert again.output == f"{db} is at schema version {latest}, the latest ({latest}).\n"


def test_store_in_a_missing_folder(tmp_path, runner):
    db = tmp_path / "no" / "such" / "store.duckdb"
    result = runner.invoke(main, ["--db", str(db), "init"])
    assert (result.exit_code, result.output) == (1, f"Error: {db}: folder {db.parent} does not exist\n")


def _store_of_schema(db, version: int, *statements: str) -> list[int]:
    """A store at schema ``version`` holding what ``statements`` insert (as ood-store then wrote it: today's
    writer fills columns of later versions), opened again with every migration; returns those applied."""
    store_of_version(db, version, *statements)
    before = table_dump(db)
    with ood_store.open(db) as store:
        applied = store.migrations_applied
    assert table_dump(db)["evaluation_scores"] == before["evaluation_scores"]
    return applied


def test_a_store_of_schema_2_gains_campaign_and_source_format(db):
    applied = _store_of_schema(
        db,
        2,
        "INSERT INTO evaluations (content_hash, source_path, run, identity_from, format, samples_files, "
        "ingested_at, ood_store_version) VALUES ('h', '/x.json', 'r', 'model', 'v0.3', [], now()::TIMESTAMP, '0')",
    )
    assert 3 in applied
    with ood_store.open(db, read_only=True) as store:
        assert store.query("SELECT campaign, source_format FROM evaluations").rows() == [(None, "lm-eval")]


def test_a_store_before_campaigns_keeps_its_scores_and_gains_campaign_views(db):
    """0005 makes `value` nullable (NaN is stored as NULL) and adds campaigns to the views; rows are kept."""
    campaigns_version = next(m.version for m in schema.migrations() if m.name == "0005_campaigns.sql")
    applied = _store_of_schema(
        db,
        campaigns_version - 1,
        "INSERT INTO evaluations (content_hash, source_path, run, step, identity_from, format, samples_files, "
        "ingested_at, ood_store_version, campaign) VALUES ('h', '/zero-shot/x.json', 'r', 1000, 'revision', "
        "'v0.3', [], now()::TIMESTAMP, '0', 'zero-shot')",
        "INSERT INTO evaluation_scores (evaluation_id, task, metric, filter, value, is_group) "
        "SELECT evaluation_id, 'arc_easy', 'acc', 'none', 0.5, false FROM evaluations",
    )
    assert applied == list(range(campaigns_version, schema.latest_version() + 1))
    with ood_store.open(db, read_only=True) as store:
        nullable = store.query(
            "SELECT is_nullable FROM information_schema.columns WHERE table_name = 'evaluation_scores' "
            "AND column_name = 'value'"
        ).rows()
        campaigns = store.query("SELECT DISTINCT campaign, value FROM scores").rows()
    assert nullable == [("YES",)]
    assert campaigns == [("zero-shot", 0.5)]


def test_a_store_of_schema_5_keeps_its_samples_and_gains_an_empty_documents_table(db):
    """0006 adds `documents` (task, doc_hash, doc); the samples a store held are kept, without documents."""
    applied = _store_of_schema(
        db,
        5,
        "INSERT INTO evaluations (content_hash, source_path, run, step, identity_from, format, samples_files, "
        "ingested_at, ood_store_version) VALUES ('h', '/x.json', 'r', 1000, 'revision', 'v0.4', [], "
        "now()::TIMESTAMP, '0')",
        "INSERT INTO samples (evaluation_id, task, doc_id, filter, metrics, doc_hash) "
        "SELECT evaluation_id, 'hans', 7, 'none', MAP {'acc': 1.0}, 'abc' FROM evaluations",
    )
    assert applied == [6]
    with ood_store.open(db, read_only=True) as store:
        columns = store.query(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'documents' "
            "ORDER BY ordinal_position"
        ).rows()
        documents = store.query("SELECT count(*) FROM documents").rows()
        samples = store.query("SELECT run, step, task, doc_id, doc_hash FROM samples_all").rows()
    assert columns == [("task", "VARCHAR"), ("doc_hash", "VARCHAR"), ("doc", "JSON")]
    assert documents == [(0,)]
    assert samples == [("r", 1000, "hans", 7, "abc")]


def _views(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    return dict(con.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall())


def test_views_come_from_one_file_whatever_the_version_a_store_starts_at(db, tmp_path):
    """Migrations hold tables; views.sql is made again with the latest migration. A store that an earlier
    ood-store left at version 4, with the views its 0001 made (tests/fixtures/store-schema-4), ends with the
    same views as a new store, and they read its rows as the views of today define them."""
    with zipfile.ZipFile(FIXTURES / "store-schema-4" / "store.duckdb.zip") as archive:
        archive.extract("store.duckdb", tmp_path)
    old = tmp_path / "store.duckdb"
    con = duckdb.connect(str(old), read_only=True)
    before, old_views = table_dump(old), _views(con)
    assert "campaign" not in [c[0] for c in con.execute("SELECT * FROM scores LIMIT 0").description]
    con.close()
    assert set(old_views) == {"scores_all", "scores", "score_conflicts", "samples_all"}  # 0001's, before 0005
    with ood_store.open(old) as store:
        assert store.migrations_applied == [5, 6]
        upgraded = _views(store.connection)
        scores = store.query("SELECT task, value, campaign FROM scores ORDER BY task").rows()
        per_campaign = store.query("SELECT campaign, value FROM campaign_scores WHERE task = 'arc_easy' ORDER BY 1")
        conflicts = store.query("SELECT task, value_list, campaigns FROM score_conflicts").rows()
        samples = store.query("SELECT run, step, task, doc_id FROM samples_all").rows()
    ood_store.open(db).close()
    con = duckdb.connect(str(db), read_only=True)
    fresh = _views(con)
    con.close()
    assert set(fresh) == {"scores_all", "scores", "campaign_scores", "score_conflicts", "samples_all"}
    assert upgraded == fresh
    for name in ("runs", "checkpoints", "evaluations", "evaluation_scores", "samples"):
        assert table_dump(old)[name] == before[name], name
    # what make.py inserted: arc_easy 0.25 (zero-shot, 2023-01) and 0.375 (baseline, 2023-06), piqa 0.5
    assert scores == [("arc_easy", 0.375, "baseline"), ("piqa", 0.5, "zero-shot")]
    assert per_campaign.rows() == [("baseline", 0.375), ("zero-shot", 0.25)]
    assert conflicts == [("arc_easy", [0.25, 0.375], ["zero-shot", "baseline"])]
    assert samples == [("r", 1000, "piqa", 0)]


def test_a_store_staged_at_an_older_version_has_tables_only(tmp_path):
    """migrate(upto=...) (staging an older dump) stops before the views, which are the latest version's."""
    db = tmp_path / "v2.duckdb"
    store_of_version(db, 2)
    con = duckdb.connect(str(db), read_only=True)
    assert _views(con) == {}
    tables = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    con.close()
    assert tables == {"schema_version", "runs", "checkpoints", "evaluations", "evaluation_scores", "samples",
                      "analyses", "partial_correlations"}  # fmt: skip
