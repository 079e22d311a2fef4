"""An Every Eval Ever file of schema 0.1.0 shaped as EEE's HELM converter writes them (tests/fixtures/eee-helm):
metrics named in ``evaluation_description``, HELM perturbations, every result written twice.

Expected values are read from the file with the json module: the metric from each result's description,
the filter from its perturbation's name and what it was computed on, the distinct results by their text."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

import ood_store
from conftest import FIXTURES, table_dump
from ood_store._cli import main

HELM = next((FIXTURES / "eee-helm").rglob("*.json"))
JOSIE_010 = next((FIXTURES / "eee-real" / "0.1.0").rglob("7c2cc003-*.json"))
SCORES = "SELECT run, step, task, metric, filter, value FROM scores_all"


def _doc() -> dict:
    return json.loads(HELM.read_text())


def _expected(doc: dict) -> set[tuple]:
    rows = set()
    for result in doc["evaluation_results"]:
        perturbation = result["score_details"]["details"]["perturbation"]
        filt = "none" if perturbation is None else f"{perturbation['name']}:{perturbation['computed_on']}"
        metric = result["metric_config"]["evaluation_description"]
        rows.add((doc["model_info"]["id"], None, result["evaluation_name"], metric, filt,
                  result["score_details"]["score"]))  # fmt: skip
    return rows


def _write(tmp_path: Path, doc: dict, name: str = "helm.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_the_fixture_has_the_shape_of_the_refused_file():
    doc = _doc()
    jsonschema.Draft7Validator(json.loads((FIXTURES.parents[1] / "ingest" / "eee-eval-0.1.0.schema.json")
                                          .read_text())).validate(doc)  # fmt: skip
    results = doc["evaluation_results"]
    texts = [json.dumps(r, sort_keys=True) for r in results]
    assert len(results) == 24 and len(set(texts)) == 12 and all(texts.count(t) == 2 for t in texts)
    assert {r["metric_config"]["evaluation_description"] for r in results} == {
        "exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match"}  # fmt: skip
    assert {json.dumps(r["score_details"]["details"]["perturbation"]) for r in results} == {
        "null",
        '{"name": "robustness", "robustness": true, "fairness": false, "computed_on": "worst"}',
        '{"name": "fairness", "robustness": false, "fairness": true, "computed_on": "worst"}',
    }


def test_it_goes_in_as_twelve_measurements_its_repeats_stored_once(tmp_path):
    with ood_store.open(tmp_path / "store.duckdb") as store:
        report = store.ingest([HELM])
        got = store.query(SCORES).rows()
    assert report.ok, report.rejected
    assert len(got) == 12
    assert set(got) == _expected(_doc())
    assert report.collapsed == 12 == report.ingested[0].collapsed
    assert report.frame()["collapsed"].to_list() == [12]
    assert report.collapsed_note() in report.summary().notes


def test_the_command_line_says_how_many_it_stored_once(runner, tmp_path):
    db = tmp_path / "store.duckdb"
    for args, first in ((["--dry-run"], "Would ingest 1 file"), ([], "Ingested 1 file")):
        result = runner.invoke(main, ["--db", str(db), "ingest", str(HELM), *args])
        assert result.exit_code == 0, result.output
        lines = result.output.splitlines()
        assert lines[-4].startswith(first) and "12 scores" in lines[-4]
        assert lines[-3] == f"Stored once: 12 results repeated byte for byte in 1 file ({HELM})."


def test_a_repeat_with_another_value_is_refused_naming_both_and_nothing_is_stored(runner, tmp_path):
    db = tmp_path / "store.duckdb"
    assert runner.invoke(main, ["--db", str(db), "ingest", str(JOSIE_010)]).exit_code == 0
    before = table_dump(db)
    doc = _doc()
    second = doc["evaluation_results"][13]  # the repeat of evaluation_results[1]
    assert second == doc["evaluation_results"][1]
    second["score_details"]["score"] = 0.5
    path = _write(tmp_path, doc)
    result = runner.invoke(main, ["--db", str(db), "ingest", str(path)])
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        f"  {path}: evaluation_results[13]: repeats task 'multiple_choice_joint', metric 'exact_match', filter "
        "'robustness:worst' of evaluation_results[1] with another score_details.score (0.5, not 0.198) "
        "(EEE schema 0.1.0)"
    )
    assert "Traceback" not in result.output
    assert table_dump(db) == before


def test_a_repeat_that_differs_elsewhere_is_refused_too(tmp_path):
    doc = _doc()
    doc["evaluation_results"][12]["score_details"]["details"]["count"] = 2
    with ood_store.open(tmp_path / "store.duckdb") as store:
        report = store.ingest([_write(tmp_path, doc)])
    assert report.rejected[0].reason.endswith(
        "evaluation_results[12]: repeats task 'multiple_choice_joint', metric 'exact_match', filter 'none' of "
        "evaluation_results[0] with another score_details.details.count (2, not 1) (EEE schema 0.1.0)"
    )


def test_a_perturbation_s_parameters_are_part_of_its_identity(tmp_path):
    doc = _doc()
    results = doc["evaluation_results"][:2]
    results[1] = copy.deepcopy(results[1])
    for result, prob in zip(results, (0.05, 0.1), strict=True):
        result["score_details"]["details"]["perturbation"] = {"name": "typos", "robustness": True, "fairness": False,
                                                              "computed_on": "perturbed", "prob": prob}  # fmt: skip
    doc["evaluation_results"] = results
    with ood_store.open(tmp_path / "store.duckdb") as store:
        assert store.ingest([_write(tmp_path, doc)]).ok
        filters = [f for (f,) in store.query("SELECT filter FROM scores ORDER BY filter").rows()]
    assert filters == ["typos(prob=0.05):perturbed", "typos(prob=0.1):perturbed"]


@pytest.mark.parametrize(
    ("perturbation", "message"),
    [({"robustness": True}, 'expected a perturbation with a name, got an object'),
     (3, "expected a perturbation with a name, got int")],
)  # fmt: skip
def test_a_perturbation_without_a_name_is_one_line(runner, tmp_path, perturbation, message):
    doc = _doc()
    doc["evaluation_results"][4]["score_details"]["details"]["perturbation"] = perturbation
    path = _write(tmp_path, doc)
    db = tmp_path / "store.duckdb"
    result = runner.invoke(main, ["--db", str(db), "ingest", str(path)])
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        f"  {path}: evaluation_results[4].score_details.details.perturbation: {message} (EEE schema 0.1.0)"
    )


def test_a_description_names_the_metric_only_in_0_1_x_and_only_when_it_is_a_name(tmp_path):
    """Leaderboards wrote prose in 0.1.0's evaluation_description (metric ``score``); from 0.2.0 on, a
    metric is named in metric_name or metric_id only."""
    prose = _doc()
    prose["evaluation_results"] = prose["evaluation_results"][:1]
    prose["evaluation_results"][0]["metric_config"]["evaluation_description"] = "Exact match on HellaSwag"
    later = json.loads(next((FIXTURES / "eee-real" / "0.2.0").rglob("0b1c6aa6-*.json")).read_text())
    later["evaluation_results"] = later["evaluation_results"][:1]
    later["evaluation_results"][0]["metric_config"]["evaluation_description"] = "exact_match"
    with ood_store.open(tmp_path / "store.duckdb") as store:
        assert store.ingest([_write(tmp_path, prose, "prose.json"), _write(tmp_path, later, "later.json")]).ok
        metrics = dict(store.query("SELECT run, metric FROM scores").rows())
    assert metrics == {prose["model_info"]["id"]: "score", later["model_info"]["id"]: "score"}
