"""The Python API: ood_store.open, Store.query/runs/tasks/ingest/set_run_attributes."""

from __future__ import annotations

import json

import polars as pl
import pytest

import ood_store
from conftest import pythia_files


def test_default_path_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("OOD_STORE_DB", str(tmp_path / "env.duckdb"))
    assert ood_store.default_path() == tmp_path / "env.duckdb"
    with ood_store.open() as store:
        assert store.path == tmp_path / "env.duckdb"
        assert repr(store) == f"<ood_store.Store {str(tmp_path / 'env.duckdb')!r} read-write>"
    monkeypatch.delenv("OOD_STORE_DB")
    monkeypatch.chdir(tmp_path)
    assert str(ood_store.default_path()) == "ood_store.duckdb"


def test_query_returns_polars_with_parameters(db):
    files = pythia_files("1.4b")
    doc = json.loads(files[-1].read_text())
    step = int(doc["config"]["model_args"].rsplit("revision=step", 1)[1])
    with ood_store.open(db) as store:
        store.ingest(files)
        frame = store.query(
            "SELECT value FROM scores WHERE step = $step AND task = $task AND metric = $metric",
            step=step,
            task="winogrande",
            metric="acc",
        )
    assert isinstance(frame, pl.DataFrame)
    assert frame["value"].to_list() == [doc["results"]["winogrande"]["acc"]]


def test_set_run_attributes(db):
    with ood_store.open(db) as store:
        store.ingest(pythia_files("160m")[:1])
        store.set_run_attributes("EleutherAI/pythia-v1.1-160m", {"family": "pythia", "seed": "3", "note": "v1.1"})
        row = store.runs().to_dicts()[0]
        with pytest.raises(ood_store.InputError, match="no such run"):
            store.set_run_attributes("nope", {"family": "x"})
    assert (row["family"], row["seed"], json.loads(row["attributes"])) == ("pythia", 3, {"note": "v1.1"})


def test_attribute_names_mean_the_same_at_ingest_and_in_comparisons(db):
    from ood_store._store.runs import run_attributes

    with ood_store.open(db) as store:
        store.ingest(pythia_files("160m")[:1])
        store.set_run_attributes("EleutherAI/pythia-v1.1-160m", {"model": "pythia-base", "in_domain": "lambada"})
        row = store.runs().to_dicts()[0]
        grouped = run_attributes(store, ["model", "base_model", "in_domain", "in_domain_task"]).to_dicts()
    assert (row["base_model"], row["in_domain_task"], json.loads(row["attributes"])) == ("pythia-base", "lambada", {})
    assert grouped == [
        {"run": "EleutherAI/pythia-v1.1-160m", "model": "pythia-base", "base_model": "pythia-base",
         "in_domain": "lambada", "in_domain_task": "lambada"}
    ]  # fmt: skip


def test_read_only_store_refuses_to_ingest(db):
    ood_store.open(db).close()
    with (
        ood_store.open(db, read_only=True) as store,
        pytest.raises(ood_store.StoreError, match="opened read-only; cannot ingest"),
    ):
        store.ingest(pythia_files("160m")[:1])


def test_closed_after_the_with_block(db):
    with ood_store.open(db) as store:
        pass
    with pytest.raises(Exception, match="closed"):
        store.query("SELECT 1")


def test_store_evaluate_spells_out_the_runner_keywords(db):
    import inspect
    import typing

    from ood_store._evaluate.options import EvaluateOptions
    from ood_store._evaluate.runner import evaluate

    runner = inspect.signature(evaluate).parameters
    method = inspect.signature(ood_store.Store.evaluate).parameters
    files_and_prompt = ["run_file", "attribute_file", "pattern", "verbalizer", "neutral"]
    assert list(method) == ["self", "checkpoints", "run", "tasks", *files_and_prompt, "options"]
    assert list(runner) == ["store", "checkpoints", "run", "tasks", "keywords"]
    assert [method[name].kind for name in ("run", "tasks")] == [inspect.Parameter.KEYWORD_ONLY] * 2
    assert {name: method[name].default for name in ("checkpoints", "run", "tasks")} == {
        name: runner[name].default for name in ("checkpoints", "run", "tasks")
    }
    # Both take the keywords of EvaluateOptions, typed once there; the runner's docstring describes each.
    assert method["options"].annotation == runner["keywords"].annotation == "Unpack[EvaluateOptions]"
    documented = {
        name.strip()
        for line in (evaluate.__doc__ or "").split("Parameters")[1].split("Returns")[0].splitlines()
        if line.startswith("    ") and not line.startswith("     ")
        for name in line.split(",")
    }
    assert set(typing.get_type_hints(EvaluateOptions)) <= documented
    with ood_store.open(db) as store, pytest.raises(TypeError, match="unexpected keyword argument 'num_few_shot'"):
        store.evaluate(["x"], run="r", tasks=["t"], num_few_shot=1)  # type: ignore[call-arg]
    # The command is a thin layer: each of its options is a keyword of Store.evaluate (by the same name,
    # --no-samples as samples=False), but for how it prints (-q, -v).
    from ood_store._cli.evaluate import evaluate as command

    cli = {p.name for p in command.params} - {"quiet", "verbose"}
    cli = {"samples" if name == "no_samples" else name for name in cli}
    library = set(method) | set(typing.get_type_hints(EvaluateOptions))
    assert cli <= library, sorted(cli - library)
