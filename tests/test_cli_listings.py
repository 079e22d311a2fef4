"""ood-store runs and ood-store tasks."""

from __future__ import annotations

import json

import pytest

from conftest import PYTHIA, PYTHIA_SIZES, pythia_files
from ood_store._cli import main


@pytest.fixture(scope="module")
def store_db(tmp_path_factory):
    from click.testing import CliRunner

    db = tmp_path_factory.mktemp("listings") / "store.duckdb"
    runner = CliRunner()
    for size in PYTHIA_SIZES:
        result = runner.invoke(
            main,
            [
                "--db",
                str(db),
                "ingest",
                "-q",
                str(PYTHIA / f"pythia-{size}"),
                "--attr",
                "family=pythia",
                "--attr",
                f"size={size}",
                "--attr",
                "seed=1234",
                "--attr",
                "dedup=no",
            ],
        )
        assert result.exit_code == 0, result.output
    return db


def test_runs(runner, store_db):
    result = runner.invoke(main, ["--db", str(store_db), "runs", "-f", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["run"] for r in rows] == sorted(f"EleutherAI/pythia-v1.1-{s}" for s in PYTHIA_SIZES)
    for row in rows:
        size = row["run"].rsplit("-", 1)[1]
        files = pythia_files(size)
        steps = [int(json.loads(f.read_text())["config"]["model_args"].rsplit("step", 1)[1]) for f in files]
        tasks = {t for f in files for t in json.loads(f.read_text())["results"]}
        assert row["family"] == "pythia" and row["size"] == size and row["seed"] == 1234
        assert json.loads(row["attributes"]) == {"dedup": "no"}
        assert row["checkpoints"] == row["evaluations"] == len(files)
        assert (row["first_step"], row["last_step"]) == (min(steps), max(steps))
        assert row["tasks"] == len(tasks)
        assert row["base_model"] == row["run"]


def test_tasks(runner, store_db):
    result = runner.invoke(main, ["--db", str(store_db), "tasks", "-f", "json"])
    rows = json.loads(result.output)
    expected = {
        (task, key)
        for f in pythia_files()
        for task, entry in json.loads(f.read_text())["results"].items()
        for key in entry
        if not key.endswith("_stderr")
    }
    assert {(r["task"], r["metric"]) for r in rows} == expected
    for row in rows:
        assert (row["filter"], row["num_fewshot"], row["is_group"], row["runs"], row["scores"]) == (
            "none",
            0,
            False,
            3,
            81,
        )


def test_tasks_of_one_run(runner, store_db):
    result = runner.invoke(main, ["--db", str(store_db), "tasks", "--run", "EleutherAI/pythia-v1.1-410m", "-f", "json"])
    rows = json.loads(result.output)
    assert rows and all(r["runs"] == 1 and r["scores"] == 27 for r in rows)
    result = runner.invoke(main, ["--db", str(store_db), "tasks", "--run", "no-such-run", "-f", "json"])
    assert json.loads(result.output) == []


def test_attributes_can_be_set_again_on_files_already_present(runner, store_db):
    result = runner.invoke(
        main, ["--db", str(store_db), "ingest", "-q", str(PYTHIA / "pythia-160m"), "--attr", "in_domain=lambada_openai"]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(runner.invoke(main, ["--db", str(store_db), "runs", "-f", "json"]).output)
    by_run = {r["run"]: r for r in rows}
    assert by_run["EleutherAI/pythia-v1.1-160m"]["in_domain_task"] == "lambada_openai"
    assert by_run["EleutherAI/pythia-v1.1-160m"]["size"] == "160m"  # kept
    assert by_run["EleutherAI/pythia-v1.1-410m"]["in_domain_task"] is None


def test_bad_attribute(runner, tmp_path):
    result = runner.invoke(
        main, ["--db", str(tmp_path / "s.duckdb"), "ingest", str(pythia_files("160m")[0]), "--attr", "seed=one"]
    )
    assert result.exit_code == 1
    assert result.output == "Error: --attr: seed: expected an integer, got 'one'\n"
    result = runner.invoke(
        main, ["--db", str(tmp_path / "s.duckdb"), "ingest", str(pythia_files("160m")[0]), "--attr", "family"]
    )
    assert result.output == "Error: --attr: family: expected KEY=VALUE\n"
    assert not (tmp_path / "s.duckdb").exists()


def test_listings_of_an_empty_store(runner, tmp_path):
    db = tmp_path / "s.duckdb"
    assert runner.invoke(main, ["--db", str(db), "init"]).exit_code == 0
    result = runner.invoke(main, ["--db", str(db), "runs", "-f", "csv"])
    assert result.exit_code == 0
    assert result.output.splitlines()[0].startswith("run,base_model,family,size,in_domain_task,seed,checkpoints")
    assert len(result.output.splitlines()) == 1


def test_the_same_file_twice_in_one_call_with_attributes(runner, tmp_path):
    source = pythia_files("160m")[0]
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / source.name).write_bytes(source.read_bytes())
    db = tmp_path / "s.duckdb"
    result = runner.invoke(
        main, ["--db", str(db), "ingest", str(tmp_path / "a"), str(tmp_path / "b"), "--attr", "family=pythia"]
    )
    assert result.exit_code == 0, result.output
    assert "Ingested 1 file" in result.output and "Already present: 1 file." in result.output
    rows = json.loads(runner.invoke(main, ["--db", str(db), "runs", "-f", "json"]).output)
    assert [(r["run"], r["family"], r["evaluations"]) for r in rows] == [("EleutherAI/pythia-v1.1-160m", "pythia", 1)]
