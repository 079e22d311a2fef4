"""Repeated evaluations of one checkpoint: all kept, one shown by a documented rule, disagreements named."""

from __future__ import annotations

import json

import ood_store
from conftest import V04, pythia_files
from ood_store._cli import main

MEDNLI = next((V04 / "araag2-MedNLI").rglob("results_*.json"))


def rerun(tmp_path, source, name, change):
    """A copy of ``source`` as if lm-eval had run again (a new file, some values changed)."""
    doc = json.loads(source.read_text())
    change(doc)
    folder = tmp_path / name
    folder.mkdir()
    path = folder / source.name
    path.write_text(json.dumps(doc))
    return path, doc


def test_newest_date_wins_whatever_the_ingest_order(tmp_path):
    original = json.loads(MEDNLI.read_text())

    def newer(doc):
        doc["date"] += 3600
        doc["results"]["MedNLI_0-shot"]["acc,none"] = 0.7

    path, doc = rerun(tmp_path, MEDNLI, "rerun", newer)
    with ood_store.open(tmp_path / "s.duckdb") as store:
        first = store.ingest([path])  # the newer evaluation goes in first
        second = store.ingest([MEDNLI])
        assert first.ok and second.ok
        all_rows = store.query(
            "SELECT value FROM scores_all WHERE task = 'MedNLI_0-shot' AND metric = 'acc' ORDER BY value"
        )["value"].to_list()
        shown = store.query("SELECT value FROM scores WHERE task = 'MedNLI_0-shot' AND metric = 'acc'")[
            "value"
        ].to_list()
    assert all_rows == sorted([original["results"]["MedNLI_0-shot"]["acc,none"], 0.7])
    assert shown == [0.7]
    [conflict] = second.conflicts
    assert (conflict.task, conflict.metric, conflict.filter) == ("MedNLI_0-shot", "acc", "none")
    assert sorted(conflict.values) == sorted(
        [(0.7, str(path.resolve())), (original["results"]["MedNLI_0-shot"]["acc,none"], str(MEDNLI.resolve()))]
    )
    assert conflict.chosen == str(path.resolve())


def test_without_dates_the_last_ingested_wins(tmp_path):
    source = pythia_files("160m")[5]

    def other_value(doc):
        doc["results"]["arc_easy"]["acc"] = 0.123

    path, _ = rerun(tmp_path, source, "rerun", other_value)
    with ood_store.open(tmp_path / "s.duckdb") as store:
        store.ingest([source])
        report = store.ingest([path])
        shown = store.query("SELECT value FROM scores WHERE task = 'arc_easy' AND metric = 'acc'").rows()
        count = store.query("SELECT count(*) AS n FROM evaluations")["n"][0]
    assert count == 2 and shown == [(0.123,)]
    assert [(c.task, c.metric, c.chosen) for c in report.conflicts] == [("arc_easy", "acc", str(path.resolve()))]


def test_equal_values_are_not_a_conflict(tmp_path):
    path, _ = rerun(tmp_path, MEDNLI, "rerun", lambda doc: doc.update(date=doc["date"] + 60))
    with ood_store.open(tmp_path / "s.duckdb") as store:
        report = store.ingest([MEDNLI, path])
        assert len(report.ingested) == 2 and not report.conflicts
        assert store.query("SELECT count(*) AS n FROM scores")["n"][0] == 2  # acc and f1, once each
        assert store.query("SELECT count(*) AS n FROM scores_all")["n"][0] == 4


def test_zero_and_five_shot_are_two_rows(tmp_path):
    def five_shot(doc):
        doc["n-shot"]["MedNLI_0-shot"] = 5
        doc["results"]["MedNLI_0-shot"]["acc,none"] = 0.8

    path, _ = rerun(tmp_path, MEDNLI, "five", five_shot)
    with ood_store.open(tmp_path / "s.duckdb") as store:
        report = store.ingest([MEDNLI, path])
        rows = store.query("SELECT num_fewshot, value FROM scores WHERE metric = 'acc' ORDER BY num_fewshot").rows()
    assert not report.conflicts
    assert rows == [(0, json.loads(MEDNLI.read_text())["results"]["MedNLI_0-shot"]["acc,none"]), (5, 0.8)]


def test_cli_groups_the_scores_that_disagree_by_run_and_campaign(tmp_path, runner):
    """One line per run and pair of campaigns, and a hint that names the store it was given."""

    def newer(doc):
        doc["date"] += 10
        doc["results"]["MedNLI_0-shot"]["f1,none"] = 0.5

    path, _ = rerun(tmp_path, MEDNLI, "rerun", newer)
    db = tmp_path / "s.duckdb"
    assert runner.invoke(main, ["--db", str(db), "ingest", str(MEDNLI)]).exit_code == 0
    result = runner.invoke(main, ["--db", str(db), "ingest", "--campaign", "rerun", str(path)])
    assert result.exit_code == 0
    run = json.loads(MEDNLI.read_text())["model_name"]
    first = MEDNLI.parent.parent.name  # the folder above lm-eval's model folder names the first campaign
    lines = result.output.splitlines()
    assert (
        "Evaluations of the same checkpoint disagree on 1 score; `scores` shows the newest evaluation's value:" in lines
    )
    assert f"  run {run}: 1 score at 1 step differ between campaigns {first} and rerun" in lines
    assert f"  See them: ood-store --db {db} query \"SELECT * FROM score_conflicts WHERE run = '{run}'\"" in lines
    quiet = runner.invoke(main, ["--db", str(db), "ingest", "-q", "--campaign", "rerun", str(path)])
    assert quiet.output == ""  # nothing new: already present
