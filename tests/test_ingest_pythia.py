"""The three real Pythia v1.1 series (v0.3 format, step only in model_args' revision=)."""

from __future__ import annotations

import json
import math

import pytest

import ood_store
from conftest import PYTHIA, expected_pythia_rows, pythia_files, table_dump


@pytest.fixture(scope="module")
def pythia_store(tmp_path_factory):
    db = tmp_path_factory.mktemp("pythia") / "store.duckdb"
    with ood_store.open(db) as store:
        report = store.ingest([PYTHIA])
    return db, report


def test_every_file_is_ingested(pythia_store):
    _, report = pythia_store
    assert len(pythia_files()) == 81
    assert len(report.ingested) == 81
    assert not report.rejected and not report.present and not report.conflicts


def test_one_row_per_run_step_task_metric_with_the_files_values(pythia_store):
    db, _ = pythia_store
    expected = expected_pythia_rows(pythia_files())
    with ood_store.open(db, read_only=True) as store:
        rows = store.query("SELECT run, step, task, metric, filter, num_fewshot, value, stderr FROM scores").rows()
    got = {(run, step, task, metric): (value, stderr) for run, step, task, metric, _, _, value, stderr in rows}
    assert len(rows) == len(got) == len(expected)  # no duplicate keys
    assert got.keys() == expected.keys()
    for key, (value, stderr) in expected.items():
        assert got[key][0] == value, key
        assert got[key][1] == stderr, key
    assert {r[4] for r in rows} == {"none"}  # v0.3 has no filters: lm-eval's default name
    assert {r[5] for r in rows} == {0}  # config.num_fewshot


def test_steps_come_from_revision(pythia_store):
    db, _ = pythia_store
    with ood_store.open(db, read_only=True) as store:
        steps = store.query("SELECT run, list(step ORDER BY step) AS steps FROM checkpoints GROUP BY run ORDER BY run")
    expected_steps = sorted({int(p.stem.split("_step")[1]) for p in pythia_files("160m")})
    assert steps["run"].to_list() == [
        "EleutherAI/pythia-v1.1-1.4b",
        "EleutherAI/pythia-v1.1-160m",
        "EleutherAI/pythia-v1.1-410m",
    ]
    for row in steps["steps"].to_list():
        assert row == expected_steps
    assert expected_steps[:3] == [0, 1, 2] and expected_steps[-1] == 143000


def test_evaluations_record_provenance(pythia_store):
    db, _ = pythia_store
    file = PYTHIA / "pythia-160m" / "zero-shot" / "160m_step1000.json"
    doc = json.loads(file.read_text())
    with ood_store.open(db, read_only=True) as store:
        row = store.query("SELECT * FROM evaluations WHERE source_path = $p", p=str(file.resolve())).to_dicts()[0]
    import hashlib

    assert row["content_hash"] == hashlib.sha256(file.read_bytes()).hexdigest()
    assert (row["run"], row["step"], row["identity_from"]) == ("EleutherAI/pythia-v1.1-160m", 1000, "revision")
    assert row["format"] == "v0.3"
    assert row["model_type"] == "hf-causal"
    assert json.loads(row["model_args"]) == doc["config"]["model_args"]
    assert row["num_fewshot"] == 0 and row["sample_limit"] is None and row["date"] is None
    assert json.loads(row["config"]) == doc["config"]


def test_reingesting_changes_nothing(pythia_store, tmp_path):
    db, _ = pythia_store
    before = table_dump(db)
    with ood_store.open(db) as store:
        report = store.ingest([PYTHIA])
    assert len(report.present) == 81 and not report.ingested and not report.rejected
    assert table_dump(db) == before


def test_values_are_finite_and_stderr_known(pythia_store):
    db, _ = pythia_store
    with ood_store.open(db, read_only=True) as store:
        nulls = store.query("SELECT count(*) AS n FROM scores WHERE stderr IS NULL")["n"][0]
        values = store.query("SELECT value FROM scores")["value"].to_list()
    assert all(math.isfinite(v) for v in values)
    expected_nulls = sum(1 for value, stderr in expected_pythia_rows(pythia_files()).values() if stderr is None)
    assert nulls == expected_nulls
