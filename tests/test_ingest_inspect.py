"""inspect_ai logs, written by inspect_ai itself (conftest's inspect_logs), read through its evals_df.

Expected values come from the logs' JSON, read here with the json module: the .json log
directly, the .eval logs (zip archives) through their header.json."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import ood_store
from conftest import FIXTURES, table_dump
from ood_store._cli import main

pytestmark = pytest.mark.xdist_group("inspect")


def header(path) -> dict:
    if path.suffix == ".json":
        return json.loads(path.read_text())
    # .eval members are zstd-compressed; importing inspect_ai (the fixture did) teaches zipfile to read them
    with zipfile.ZipFile(path) as archive:
        return json.loads(archive.read("header.json"))


def expected_scores(doc: dict, run: str, step: int) -> set[tuple]:
    """(run, step, task, metric, filter, value, stderr, n) from a log's results, by this module's reading
    of the convention: every metric of every scorer, the scorer as the filter, stderr attached."""
    rows = set()
    for score in doc["results"]["scores"]:
        metrics = {key: metric["value"] for key, metric in score["metrics"].items()}
        stderr = metrics.pop("stderr", None)
        for metric, value in metrics.items():
            rows.add((run, step, doc["eval"]["task"], metric, score["name"], value, stderr, score["scored_samples"]))
    return rows


SCORES_SQL = "SELECT run, step, task, metric, filter, value, stderr, n_samples FROM scores"


def test_json_and_eval_logs_give_the_scores_the_logs_hold(db, inspect_logs):
    logs = [inspect_logs["step100"], inspect_logs["step200-json"]]
    with ood_store.open(db) as store:
        report = store.ingest(logs)
        assert report.ok, report.rejected
        got = set(store.query(SCORES_SQL).rows())
        evaluations = store.query(
            "SELECT step, source_format, model_type, model_name, identity_from FROM evaluations ORDER BY step"
        ).rows()
    run = "model"  # mockllm/model without its provider
    expected = expected_scores(json.loads(inspect_logs["step200-json"].read_text()), run, 200)
    expected |= expected_scores(header(inspect_logs["step100"]), run, 100)
    assert got == expected
    # the two scorers' accuracies, as planted by the answers: 3 and 5 of 6 right at the end of the answer
    match_accuracy = {(r[1], r[5]) for r in got if r[3] == "accuracy" and r[4] == "match"}
    assert match_accuracy == {(100, 0.5), (200, 5 / 6)}
    assert evaluations == [(step, "inspect", "mockllm", "mockllm/model", "revision") for step in (100, 200)]


def test_an_eval_log_and_its_json_twin_give_the_same_scores(tmp_path, inspect_logs):
    def scores(path, name):
        with ood_store.open(tmp_path / f"{name}.duckdb") as store:
            assert store.ingest([path]).ok
            return set(store.query(SCORES_SQL).rows())

    assert scores(inspect_logs["step200"], "eval") == scores(inspect_logs["step200-json"], "json")


def test_a_checkpoint_folder_as_the_model_gives_run_and_step(db, inspect_logs):
    with ood_store.open(db) as store:
        assert store.ingest([inspect_logs["checkpoint"]]).ok
        rows = store.query("SELECT run, step, identity_from, model_name FROM evaluations").rows()
    assert rows == [("runs/opt-mnli-s1", 500, "path", "mockllm/runs/opt-mnli-s1/checkpoint-500")]


def test_a_failed_evaluation_is_rejected_naming_its_status(runner, db, inspect_logs):
    with ood_store.open(db) as store:
        assert store.ingest([inspect_logs["step100"]]).ok
    before = table_dump(db)
    path = inspect_logs["failed"]
    result = runner.invoke(main, ["--db", str(db), "ingest", str(path)])
    assert result.exit_code == 1
    assert (
        f"  {path}: status: 'error', not 'success': the evaluation did not finish: "
        "RuntimeError('the model server went away')"
    ) in result.output.splitlines()
    assert table_dump(db) == before


def test_ingesting_a_log_again_adds_nothing(db, inspect_logs, runner):
    path = str(inspect_logs["step100"])
    first = runner.invoke(main, ["--db", str(db), "ingest", path])
    before = table_dump(db)
    again = runner.invoke(main, ["--db", str(db), "ingest", path])
    assert first.exit_code == again.exit_code == 0
    assert "Already present: 1 file." in again.output
    assert table_dump(db) == before


def test_a_log_inspect_ai_cannot_read_is_one_line(runner, db, tmp_path, inspect_logs):
    broken = tmp_path / "cut.eval"
    broken.write_bytes(inspect_logs["step100"].read_bytes()[:2000])
    result = runner.invoke(main, ["--db", str(db), "ingest", str(broken)])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.startswith(f"  {broken}: ")]
    assert len(lines) == 1 and "inspect_ai cannot read the log" in lines[0]
    assert "Traceback" not in result.output


def test_without_the_inspect_extra_a_log_is_one_line_naming_the_extra(runner, db, inspect_logs, monkeypatch):
    import sys

    path = inspect_logs["step200-json"]
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as if inspect_ai were not installed
    result = runner.invoke(main, ["--db", str(db), "ingest", str(path)])
    assert result.exit_code == 1
    written_by = json.loads(path.read_text())["eval"]["packages"]["inspect_ai"]
    expected = (
        f"  {path}: an inspect_ai log (log format version 2, written by inspect_ai {written_by}): reading it needs "
        'inspect_ai: pip install -e ".[inspect]"'
    )
    assert expected in result.output.splitlines()


# An inspect_ai task file, as the docs' ood_tasks.py stands for: one generation task, scored by `includes`.
TASK_FILE = """
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


@task
def toy_nli():
    prompts = [f"Premise: dog {i} runs. Hypothesis: an animal moves. Answer:" for i in range(4)]
    samples = [Sample(input=prompt, target="yes") for prompt in prompts]
    return Task(dataset=samples, solver=generate(), scorer=includes())
"""


def docs_example() -> list[str]:
    """The command lines of the inspect_ai example of docs/how-to/elsewhere.md (its sh block), comments left out."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "how-to" / "elsewhere.md").read_text()
    block = re.search(r"```sh\n(.*?)```", page.split("## inspect_ai logs", 1)[1], flags=re.DOTALL)[1]
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


def test_the_docs_example_runs_on_a_hugging_face_checkpoint(tmp_path, runner, monkeypatch):
    """The page's two commands as written, in a folder with a task file and a checkpoint-500 folder (the toy
    GPT-2 of tests/fixtures/toy-checkpoint), through inspect_ai's own command line and its hf provider."""
    evaluate, ingest = map(shlex.split, docs_example())
    assert evaluate[:2] == ["inspect", "eval"] and ingest[:2] == ["ood-store", "ingest"]
    (tmp_path / "ood_tasks.py").write_text(TASK_FILE)
    model = next(a.removeprefix("hf/") for a in evaluate if a.startswith("hf/"))
    shutil.copytree(FIXTURES / "toy-checkpoint", tmp_path / model, ignore=shutil.ignore_patterns("make.py"))
    command = [str(Path(sys.executable).parent / "inspect"), *evaluate[1:], "--max-tokens", "4", "--display", "none"]
    subprocess.run(command, cwd=tmp_path, check=True, capture_output=True, timeout=600)  # a short answer is enough
    (log,) = (tmp_path / "logs").glob("*.eval")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(main, ["--db", "inspect.duckdb", *ingest[1:]])
    assert result.exit_code == 0, result.output
    with ood_store.open(tmp_path / "inspect.duckdb", read_only=True) as store:
        got = set(store.query(SCORES_SQL).rows())
        runs = store.query("SELECT run, family, in_domain_task FROM runs").rows()
    assert got == expected_scores(header(log), "runs/opt-mnli-s1", 500)
    assert runs == [("runs/opt-mnli-s1", "OPT", "mnli")]


def with_header_literal(source, out, literal):
    """A copy of the .eval log ``source`` whose first metric value in header.json is written as ``literal``."""
    with zipfile.ZipFile(source) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    doc = json.loads(members["header.json"])
    first = doc["results"]["scores"][0]
    metric = next(iter(first["metrics"]))
    first["metrics"][metric]["value"] = 0.123456789
    members["header.json"] = json.dumps(doc).replace("0.123456789", literal).encode()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out, first["name"], metric


@pytest.mark.parametrize(
    ("literal", "expected"),
    [("Infinity", float("inf")), ("-Infinity", float("-inf")), ("NaN", None), ("1e999", "1e999 does not fit a DOUBLE")],
)
def test_the_non_finite_rule_in_an_eval_log(db, tmp_path, inspect_logs, literal, expected):
    """The rule of lm-eval files: NaN stored as NULL, ±Infinity as it is, a literal beyond a DOUBLE refused."""
    path, scorer, metric = with_header_literal(inspect_logs["step100"], tmp_path / "log.eval", literal)
    with ood_store.open(db) as store:
        report = store.ingest([path])
        got = store.query("SELECT value FROM scores WHERE filter = $f AND metric = $m", f=scorer, m=metric).rows()
    if isinstance(expected, str):
        [outcome] = report.rejected
        assert (
            outcome.reason == f'{path}: header.json: results["scores"][0]["metrics"]["{metric}"]["value"]: {expected}'
        )
        assert got == []
    else:
        assert report.ok, report.rejected
        assert got == [(expected,)]
