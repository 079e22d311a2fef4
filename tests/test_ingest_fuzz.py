"""Randomly broken real files (fixed seed): every one is either stored or rejected with a
message naming it, never an exception, and rejected files leave no rows behind."""

from __future__ import annotations

import copy
import json
import random

import ood_store
from conftest import V04, V0413, pythia_files

SOURCES = [pythia_files("160m")[3], *sorted(V04.rglob("*.json")), *sorted(V0413.rglob("results_*.json"))]
ODD_VALUES = [None, True, "N/A", "", "x", 0, -1, 1.5, 10**30, float("nan"), float("inf"), [], [1, "a"], {}, {"a": 1}]


def mutate(doc, rng: random.Random):
    """Replace or delete one value somewhere in the document."""
    node = doc
    for _ in range(rng.randint(1, 4)):
        if isinstance(node, dict) and node:
            key = rng.choice(list(node))
            if rng.random() < 0.4 or not isinstance(node[key], dict | list):
                if rng.random() < 0.3:
                    del node[key]
                else:
                    node[key] = copy.deepcopy(rng.choice(ODD_VALUES))
                return
            node = node[key]
        elif isinstance(node, list) and node:
            index = rng.randrange(len(node))
            if not isinstance(node[index], dict | list):
                node[index] = copy.deepcopy(rng.choice(ODD_VALUES))
                return
            node = node[index]
        else:
            return


def test_random_breakage_is_reported_not_raised(tmp_path, seed=20261202):
    rng = random.Random(seed)
    paths = []
    for i in range(150):
        source = rng.choice(SOURCES)
        doc = json.loads(source.read_text())
        for _ in range(rng.randint(1, 3)):
            mutate(doc, rng)
        folder = tmp_path / f"f{i}"
        folder.mkdir()
        path = folder / source.name
        path.write_text(json.dumps(doc))
        paths.append(path)
    with ood_store.open(tmp_path / "s.duckdb") as store:
        report = store.ingest(paths)
        stored = set(store.query("SELECT source_path FROM evaluations")["source_path"].to_list())
        orphans = store.query(
            "SELECT count(*) AS n FROM evaluation_scores "
            "WHERE evaluation_id NOT IN (SELECT evaluation_id FROM evaluations)"
        )["n"][0]
    assert len(report.files) == len(paths)
    assert report.ingested and report.rejected  # the mutations hit both kinds
    for outcome in report.rejected:
        assert outcome.reason.startswith(f"{outcome.path}: ")
        assert str((tmp_path / outcome.path).resolve()) not in stored
    assert {str(p.resolve()) for p in paths} >= stored
    assert len(stored) == len(report.ingested)
    assert orphans == 0


def test_random_breakage_of_samples_files(tmp_path, seed=7):
    rng = random.Random(seed)
    folders = sorted(V0413.iterdir())
    paths = []
    for i in range(40):
        source = rng.choice(folders)
        folder = tmp_path / f"f{i}"
        folder.mkdir()
        for file in source.iterdir():
            text = file.read_text()
            if file.name.startswith("samples_") and rng.random() < 0.5:
                lines = text.splitlines()
                k = rng.randrange(len(lines))
                sample = json.loads(lines[k])
                mutate(sample, rng)
                lines[k] = json.dumps(sample)
                text = "\n".join(lines) + "\n"
            elif file.name.startswith("results_"):
                doc = json.loads(text)
                doc["date"] += i  # a distinct results file per folder, so none is "already present"
                text = json.dumps(doc)
            (folder / file.name).write_text(text)
        paths.append(folder)
    with ood_store.open(tmp_path / "s.duckdb") as store:
        report = store.ingest(paths)
        stored = store.query("SELECT count(*) AS n FROM evaluations")["n"][0]
        sample_evaluations = store.query("SELECT count(DISTINCT evaluation_id) AS n FROM samples")["n"][0]
    assert stored == len(report.ingested) == sample_evaluations
    assert report.ingested and report.rejected and not report.present
    for outcome in report.rejected:
        assert outcome.reason.startswith(str(tmp_path))
