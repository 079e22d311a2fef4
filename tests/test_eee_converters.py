"""Every Eval Ever's own converters, run here on real lm-eval files and on real and inspect_ai-written logs,
and what ingest makes of their output: the step, shots, filters and standard errors the originals have, and
one evaluation, not two, when the same evaluation arrives both ways (ingest or merge, in either order).

Expected values come from the original files (read with the json module), and from ingesting the originals
themselves (the direct readers, tested against those files elsewhere)."""

from __future__ import annotations

import hashlib
import json
import shutil
import uuid
from pathlib import Path

import pytest

import ood_store
from conftest import FIXTURES, PYTHIA, V04, expected_pythia_rows
from ood_store._ingest import Overrides

pytestmark = pytest.mark.xdist_group("inspect")

SERIES = [PYTHIA / "pythia-160m" / "zero-shot" / f"160m_step{step}.json" for step in (1000, 13000, 143000)]
LEADERBOARD = next((V04 / "csabakecskemeti").rglob("results_*.json"))
INSPECT_REAL = FIXTURES / "inspect-real"
SCORES = "SELECT run, step, task, num_fewshot, metric, filter, value, stderr FROM scores_all"


def file_uuid(name: str) -> str:
    """A UUID4-shaped name (EEE's publisher requires one), fixed by ``name`` so that runs of the test agree."""
    return str(uuid.UUID(bytes=hashlib.sha256(name.encode()).digest()[:16], version=4))


def publish(logs, folder: Path, key: str) -> Path:
    """The converter's logs written by EEE's own publisher, in the datastore's layout under ``folder``/data."""
    from every_eval_ever.converters.common.publication import publish_evaluation_logs

    publish_evaluation_logs(logs, folder / "data", [file_uuid(f"{key}/{i}") for i in range(len(logs))])
    return folder


@pytest.fixture(scope="module")
def converted_series(tmp_path_factory) -> Path:
    """EEE's lm-eval converter's files for three checkpoints of Pythia-160M (one file per task each)."""
    from every_eval_ever.converters.lm_eval.adapter import LMEvalAdapter

    logs = [
        log
        for path in SERIES
        for log in LMEvalAdapter().transform_from_file(path, {"source_organization_name": "EleutherAI"})
    ]
    return publish(logs, tmp_path_factory.mktemp("converted-pythia"), "pythia")


@pytest.fixture(scope="module")
def series_stores(converted_series, tmp_path_factory) -> dict[str, Path]:
    """A store of the converter's files and one of the lm-eval files themselves."""
    folder = tmp_path_factory.mktemp("series-stores")
    stores = {"converted": folder / "converted.duckdb", "lm-eval": folder / "lm-eval.duckdb"}
    with ood_store.open(stores["converted"]) as store:
        report = store.ingest([converted_series])
        assert report.ok and len(report.ingested) == 3 * 87, report.rejected
    with ood_store.open(stores["lm-eval"]) as store:
        assert store.ingest(SERIES).ok
    return stores


def test_the_lm_eval_converter_keeps_the_step_and_the_standard_errors(series_stores):
    """Three checkpoints stay three steps (the converter keeps revision=stepN in model_args only), and each
    v0.3 acc_stderr, a result of its own in the converter's files, is acc's standard error again."""
    with ood_store.open(series_stores["converted"], read_only=True) as store:
        got = {(r[0], r[1], r[2], r[4]): (r[6], r[7]) for r in store.query(SCORES).rows()}
        steps = store.query("SELECT DISTINCT step, identity_from FROM evaluations ORDER BY step").rows()
        filters = set(store.query("SELECT DISTINCT filter FROM scores_all").rows())
    assert steps == [(1000, "revision"), (13000, "revision"), (143000, "revision")]
    assert got == expected_pythia_rows(SERIES)
    assert filters == {("none",)}


def test_its_loglikelihood_results_have_no_shots_unless_given(series_stores, converted_series, tmp_path):
    """The converter keeps shots for generation tasks only: these have none (NULL). `shots` says them, and
    the scores are then the lm-eval files' own, key for key."""
    with ood_store.open(series_stores["converted"], read_only=True) as store:
        assert store.query("SELECT DISTINCT num_fewshot FROM scores_all").rows() == [(None,)]
    with ood_store.open(tmp_path / "shots.duckdb") as store:
        assert store.ingest([converted_series], overrides=Overrides(shots=0)).ok
        given = sorted(store.query(SCORES).rows(), key=repr)
    with ood_store.open(series_stores["lm-eval"], read_only=True) as store:
        direct = sorted(store.query(SCORES).rows(), key=repr)
    assert given == direct
    assert {row[3] for row in direct} == {0}  # config.num_fewshot of the v0.3 files


def test_one_evaluation_arriving_both_ways_is_stored_once_in_either_order(converted_series, tmp_path):
    with ood_store.open(tmp_path / "a.duckdb") as store:
        assert store.ingest([converted_series]).ok
        report = store.ingest(SERIES)
        count = store.query("SELECT count(*) FROM evaluations").rows()
    assert len(report.present) == 3 and not report.ingested and not report.conflicts
    assert count == [(3 * 87,)]
    reason = report.present[0].reason or ""
    assert reason.startswith("the same evaluation as ") and reason.endswith(
        "(it holds every score, read from another format)"
    )
    with ood_store.open(tmp_path / "b.duckdb") as store:
        assert store.ingest(SERIES).ok
        report = store.ingest([converted_series])
        count = store.query("SELECT count(*) FROM evaluations").rows()
    assert len(report.present) == 3 * 87 and not report.ingested
    assert count == [(3,)]


def test_merging_a_converted_store_with_the_lm_eval_store_does_not_double(series_stores, tmp_path):
    for ours, theirs, evaluations in (("lm-eval", "converted", 3), ("converted", "lm-eval", 3 * 87)):
        target = tmp_path / f"{ours}.duckdb"
        shutil.copy(series_stores[ours], target)
        with ood_store.open(target) as store:
            report = store.merge(series_stores[theirs])
            count = store.query("SELECT count(*) FROM evaluations").rows()
        assert report.evaluations_added == 0 and report.evaluations_equivalent == report.evaluations_present
        assert count == [(evaluations,)]


def test_a_converted_file_that_disagrees_is_stored_and_a_conflict(converted_series, tmp_path):
    """Equivalence needs every score equal: one changed value makes the file an evaluation of its own, whose
    disagreement is a conflict where the keys are the same (shots given: the converter's files have none)."""
    folder = tmp_path / "changed"
    shutil.copytree(converted_series, folder)
    path = next(p for p in sorted(folder.rglob("*.json")) if "lambada_openai" in p.read_text())
    doc = json.loads(path.read_text())
    result = next(r for r in doc["evaluation_results"] if r["metric_config"]["metric_name"] == "acc")
    result["score_details"]["score"] += 0.001
    path.write_text(json.dumps(doc))
    with ood_store.open(tmp_path / "store.duckdb") as store:
        assert store.ingest(SERIES).ok
        report = store.ingest([folder], overrides=Overrides(shots=0))
    assert [f.path for f in report.ingested] == [str(path)]
    assert len(report.present) == 3 * 87 - 1
    assert {(c.task, c.metric) for c in report.conflicts} == {("lambada_openai", "acc")}


def test_the_converter_on_an_open_llm_leaderboard_file(tmp_path):
    """v0.4 output through the converter: filters from 'task/filter' names, shots of generation tasks from
    generation_config (4-shot MATH), NULL for the others; values and standard errors as the file has them."""
    from every_eval_ever.converters.lm_eval.adapter import LMEvalAdapter

    logs = LMEvalAdapter().transform_from_file(LEADERBOARD, {"source_organization_name": "csabakecskemeti"})
    folder = publish(logs, tmp_path / "converted", "leaderboard")
    with ood_store.open(tmp_path / "eee.duckdb") as store:
        assert store.ingest([folder]).ok
        converted = store.query(SCORES).rows()
    doc = json.loads(LEADERBOARD.read_text())
    generation = {task for task, config in doc["configs"].items() if config.get("generation_kwargs")}
    for run, step, task, shots, metric, filt, value, stderr in converted:
        entry = doc["results"][task]
        assert (run, step) == ("meta-llama/Llama-3.1-8B-Instruct", None)
        assert value == entry[f"{metric},{filt}"]
        raw_stderr = entry.get(f"{metric}_stderr,{filt}")
        assert stderr == (raw_stderr if isinstance(raw_stderr, float) else None)
        assert shots == (doc["n-shot"][task] if task in generation else None)
    assert ("leaderboard_math_algebra_hard", 4) in {(r[2], r[3]) for r in converted}
    assert {r[5] for r in converted} == {
        key.rpartition(",")[2] for e in doc["results"].values() for key in e if "," in key
    }


# -- inspect_ai: a log ingested itself and through EEE's inspect_ai converter ----------------------------------

INSPECT_SCORES = "SELECT run, step, task, metric, filter, value, stderr, n_samples FROM scores_all"


@pytest.fixture(scope="module")
def hf_log(tmp_path_factory) -> Path:
    """A log inspect_ai writes for a checkpoint folder through its hf provider (the toy GPT-2 of
    tests/fixtures/toy-checkpoint as runs/opt-mnli-s1/checkpoint-500): a provider EEE's converter knows."""
    import os

    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes, match
    from inspect_ai.solver import generate

    root = tmp_path_factory.mktemp("hf-log")
    shutil.copytree(FIXTURES / "toy-checkpoint", root / "runs/opt-mnli-s1/checkpoint-500",
                    ignore=shutil.ignore_patterns("make.py"))  # fmt: skip
    samples = [Sample(input=f"What is {i} + {i}?", target=str(2 * i)) for i in range(1, 4)]
    task = Task(dataset=samples, solver=generate(), scorer=[match(), includes()], name="toy_add")
    here = os.getcwd()
    os.chdir(root)  # the model path as a user gives it, relative to where inspect runs
    try:
        (log,) = inspect_eval(task, model="hf/runs/opt-mnli-s1/checkpoint-500", log_dir="logs", display="none",
                              max_tokens=4)  # fmt: skip
    finally:
        os.chdir(here)
    assert log.status == "success"
    return Path(log.location)


def converted_log(path: Path, folder: Path) -> Path:
    from every_eval_ever.converters.inspect.adapter import InspectAIAdapter

    log = InspectAIAdapter().transform_from_file(str(path), {"source_organization_name": "tests"})
    out = folder / f"{path.stem}.json"
    out.write_text(log.model_dump_json(exclude_none=True))
    return out


@pytest.mark.parametrize("name", ["data_pubmedqa_gpt4o_mini.json", "log_formats.json", "hf"])
def test_an_inspect_log_and_the_converters_file_of_it_give_the_same_scores(tmp_path, hf_log, name):
    """Same run (the model as the provider answered, less the provider), task (without its package), metric,
    filter (the scorer), value, standard error and count; and stored once, whichever arrives first."""
    log = hf_log if name == "hf" else INSPECT_REAL / name
    converted = converted_log(log, tmp_path)
    rows = {}
    for what, path in (("direct", log), ("converted", converted)):
        with ood_store.open(tmp_path / f"{what}.duckdb") as store:
            assert store.ingest([path]).ok
            rows[what] = set(store.query(INSPECT_SCORES).rows())
    assert rows["direct"] == rows["converted"] and rows["direct"]
    for first, second in ((log, converted), (converted, log)):
        with ood_store.open(tmp_path / f"both-{first.suffix}{first.stem}.duckdb") as store:
            assert store.ingest([first]).ok
            report = store.ingest([second])
            assert len(report.present) == 1 and store.query("SELECT count(*) FROM evaluations").rows() == [(1,)]


def test_what_the_two_ways_agree_on_is_the_logs_own(tmp_path, hf_log):
    """The real pubmedqa log: run gpt-4o-mini-2024-07-18 (eval.model openai/azure/gpt-4o-mini, answered as the
    dated model), task pubmedqa (inspect_evals/pubmedqa), the choice scorer's accuracy with its stderr; the hf
    log: run and step from its checkpoint folder."""
    doc = json.loads((INSPECT_REAL / "data_pubmedqa_gpt4o_mini.json").read_text())
    score = doc["results"]["scores"][0]
    with ood_store.open(tmp_path / "store.duckdb") as store:
        assert store.ingest([INSPECT_REAL / "data_pubmedqa_gpt4o_mini.json", hf_log]).ok
        rows = store.query(INSPECT_SCORES + " ORDER BY run, filter").rows()
    assert rows[0] == (doc["samples"][0]["output"]["model"], None, doc["eval"]["task"].split("/")[-1], "accuracy",
                        score["name"], score["metrics"]["accuracy"]["value"], score["metrics"]["stderr"]["value"],
                        doc["results"]["completed_samples"])  # fmt: skip
    assert {r[:3] for r in rows[1:]} == {("runs/opt-mnli-s1", 500, "toy_add")}
    assert {r[4] for r in rows[1:]} == {"match", "includes"}
