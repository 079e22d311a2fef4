"""An analysis naming a task that the chosen runs lack: the message says which runs have it, and never
suggests the name that was typed (issue 38: `analyze --run saucam/PowerBot-8B --in-domain lambada_openai`
said "did you mean lambada_openai?")."""

from __future__ import annotations

import pytest

import ood_store
from conftest import V04, _lm_eval_file, pythia_files, table_dump
from ood_store._cli import main

POWERBOT = V04 / "saucam-PowerBot-8B"


@pytest.fixture(scope="module")
def store_db(tmp_path_factory):
    """The 27 Pythia-160M files and PowerBot's mmlu (no lambada_openai), as a user's store would hold them."""
    db = tmp_path_factory.mktemp("missing") / "store.duckdb"
    with ood_store.open(db) as store:
        assert store.ingest([*pythia_files("160m"), POWERBOT / "mmlu.json"]).ok
    return db


def _last_line(runner, db, *args: str) -> str:
    result = runner.invoke(main, ["--db", str(db), *args])
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    return result.output.strip().splitlines()[-1]


def test_the_runs_that_have_the_task_are_named(runner, store_db):
    before = table_dump(store_db)
    line = _last_line(runner, store_db, "analyze", "--run", "saucam/PowerBot-8B", "--in-domain", "lambada_openai",
                      "--ood", "arc_easy,piqa")  # fmt: skip
    assert line == ("Error: --in-domain: no task 'lambada_openai' in the chosen runs; runs that have it: "
                    "EleutherAI/pythia-v1.1-160m (see `ood-store runs`)")  # fmt: skip
    assert "did you mean" not in line
    assert table_dump(store_db) == before


def test_a_few_are_named_and_the_rest_counted(runner, tmp_path):
    runs = [f"lab/model-{i}" for i in range(5)]
    for i, run in enumerate(runs):
        _lm_eval_file(tmp_path / "files" / f"{i}.json", run, 100, {"lambada_openai": 0.5, "piqa": 0.6}, 1.7e9 + i)
    _lm_eval_file(tmp_path / "files" / "other.json", "lab/other", 100, {"mmlu": 0.3}, 1.7e9)
    db = tmp_path / "store.duckdb"
    with ood_store.open(db) as store:
        assert store.ingest([tmp_path / "files"]).ok
    line = _last_line(runner, db, "analyze", "--run", "lab/other", "--in-domain", "lambada_openai", "--ood", "piqa")
    # the runs in name order: the first three, and 5 - 3 more
    assert line == ("Error: --in-domain: no task 'lambada_openai' in the chosen runs; runs that have it: "
                    "lab/model-0, lab/model-1, lab/model-2 and 2 more (see `ood-store runs`)")  # fmt: skip


def test_a_misspelling_still_gets_its_suggestions(runner, store_db):
    line = _last_line(runner, store_db, "analyze", "--run", "saucam/PowerBot-8B", "--in-domain", "lambada_opnai",
                      "--ood", "piqa")  # fmt: skip
    assert line == ("Error: --in-domain: no task 'lambada_opnai' in the store in the chosen runs; did you mean "
                    "lambada_openai? (see `ood-store tasks`)")  # fmt: skip
