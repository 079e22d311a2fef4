"""Run attributes at scale: `ood-store runs set RUN|--match GLOB KEY=VALUE...` and attribute files
(CSV, TOML, YAML) at ingest, evaluate and `runs set`, each applied in one transaction."""

from __future__ import annotations

import json

import pytest

import ood_store
from conftest import PYTHIA_SIZES, pythia_files, table_dump
from ood_store._cli import main
from ood_store._errors import InputError
from ood_store._store.attribute_rules import for_run, read_attribute_file

RUNS = [f"EleutherAI/pythia-v1.1-{size}" for size in PYTHIA_SIZES]


@pytest.fixture
def three_runs(tmp_path):
    db = tmp_path / "s.duckdb"
    with ood_store.open(db) as store:
        assert store.ingest([f for size in PYTHIA_SIZES for f in pythia_files(size)[:2]]).ok
    return db


def attributes(db) -> dict[str, tuple]:
    with ood_store.open(db, read_only=True) as store:
        rows = store.runs().select("run", "family", "size", "seed", "attributes").rows()
    return {run: (family, size, seed, json.loads(extra)) for run, family, size, seed, extra in rows}


def test_runs_set_one_run(runner, three_runs):
    result = runner.invoke(
        main, ["--db", str(three_runs), "runs", "set", RUNS[0], "size=160m", "family=pythia", "lr=3e-4"]
    )
    assert result.exit_code == 0, result.output
    assert result.output == f"Set attributes of 1 run in {three_runs}.\n"
    assert attributes(three_runs)[RUNS[0]] == ("pythia", "160m", None, {"lr": "3e-4"})
    assert attributes(three_runs)[RUNS[1]] == (None, None, None, {})


def test_runs_set_every_run_a_glob_matches(runner, three_runs):
    result = runner.invoke(
        main, ["--db", str(three_runs), "runs", "set", "--match", "EleutherAI/pythia-*", "family=pythia"]
    )
    assert result.output == f"Set attributes of 3 runs in {three_runs}.\n"
    assert {run: got[0] for run, got in attributes(three_runs).items()} == dict.fromkeys(RUNS, "pythia")


def test_a_run_name_is_never_read_as_a_glob(three_runs):
    with ood_store.open(three_runs) as store, pytest.raises(InputError, match="no such run in the store"):
        store.set_run_attributes("EleutherAI/pythia-*", {"family": "x"})


CSV = """run,size,family,seed
EleutherAI/pythia-v1.1-160m,160m,,1
EleutherAI/pythia-v1.1-410m,410m,,2
EleutherAI/pythia-*,,pythia,
"""
TOML = """
["EleutherAI/pythia-v1.1-160m"]
size = "160m"
seed = 1

["EleutherAI/pythia-v1.1-410m"]
size = "410m"
seed = 2

["EleutherAI/pythia-*"]
family = "pythia"
"""
YAML = """
runs:
  EleutherAI/pythia-v1.1-160m: {size: 160m, seed: 1}
  EleutherAI/pythia-v1.1-410m: {size: 410m, seed: 2}
  EleutherAI/pythia-*: {family: pythia}
"""
# What each file says, written out by hand.
EXPECTED = {
    RUNS[0]: ("pythia", "160m", 1, {}),
    RUNS[1]: ("pythia", "410m", 2, {}),
    RUNS[2]: ("pythia", None, None, {}),
}


@pytest.mark.parametrize(("suffix", "text"), [(".csv", CSV), (".toml", TOML), (".yaml", YAML)])
def test_attribute_files(runner, three_runs, tmp_path, suffix, text):
    path = tmp_path / f"runs{suffix}"
    path.write_text(text)
    result = runner.invoke(main, ["--db", str(three_runs), "runs", "set", "--attr-file", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output == f"Set attributes of 3 runs in {three_runs}.\n"
    assert attributes(three_runs) == EXPECTED


def test_one_transaction_an_unknown_run_changes_nothing(runner, three_runs, tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text(CSV + "EleutherAI/pythia-v1.1-7b,7b,,\n")
    before = table_dump(three_runs)
    result = runner.invoke(main, ["--db", str(three_runs), "runs", "set", "--attr-file", str(path)])
    assert result.exit_code == 1
    assert result.output == (
        f"Error: EleutherAI/pythia-v1.1-7b: no such run in the store ({path}: line 5) (see `ood-store runs`)\n"
    )
    assert table_dump(three_runs) == before


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("size,run\n160m,x\n", "line 1: expected a header row whose first column is `run`"),
        ("run,seed\nEleutherAI/pythia-v1.1-160m,one\n", "line 2: seed: expected an integer, got 'one'"),
        ("run,size\nx,1,2\n", "line 2: 3 cells for 2 columns"),
    ],
)
def test_bad_csv_attribute_files(tmp_path, text, message):
    path = tmp_path / "runs.csv"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        read_attribute_file(path)
    assert str(error.value) == f"{path}: {message}"


def test_bad_toml_attribute_file(tmp_path):
    path = tmp_path / "runs.toml"
    path.write_text('["EleutherAI/pythia-*"]\nsize = [1, 2]\n')
    with pytest.raises(InputError) as error:
        read_attribute_file(path)
    assert str(error.value) == f"{path}: ['EleutherAI/pythia-*']: size: expected a string, number or boolean, got list"


def test_ingest_with_an_attribute_file(runner, tmp_path):
    path = tmp_path / "runs.toml"
    path.write_text(TOML + '\n["EleutherAI/pythia-v1.1-12b"]\nsize = "12b"\n')
    db = tmp_path / "s.duckdb"
    files = [f for size in PYTHIA_SIZES for f in pythia_files(size)[:2]]
    result = runner.invoke(
        main, ["--db", str(db), "ingest", "--attr-file", str(path), "--attr", "seed=7", *map(str, files)]
    )
    assert result.exit_code == 0, result.output
    assert (
        f"Warning: {path}: ['EleutherAI/pythia-v1.1-12b']: 'EleutherAI/pythia-v1.1-12b' matches no run of these files"
        in (result.output.splitlines())
    )
    # --attr wins over the file, for every run
    assert attributes(db) == {run: (family, size, 7, extra) for run, (family, size, _, extra) in EXPECTED.items()}


def test_evaluate_takes_the_attributes_its_run_matches(tmp_path):
    path = tmp_path / "runs.yaml"
    path.write_text(YAML)
    rules = read_attribute_file(path)
    assert for_run("EleutherAI/pythia-v1.1-410m", rules) == {"size": "410m", "seed": 2, "family": "pythia"}
    with pytest.raises(InputError) as error:
        for_run("opt-mnli-s1", rules)
    assert str(error.value) == f"{path}: no run or glob here matches run 'opt-mnli-s1'"


def test_evaluate_checks_the_attribute_file_before_anything_runs(runner, tmp_path):
    path = tmp_path / "runs.yaml"
    path.write_text(YAML)
    (tmp_path / "ckpt" / "checkpoint-1").mkdir(parents=True)
    (tmp_path / "ckpt" / "checkpoint-1" / "config.json").write_text("{}")
    db = tmp_path / "s.duckdb"
    args = ["--db", str(db), "evaluate", str(tmp_path / "ckpt"), "--run", "opt-mnli-s1", "--tasks", "x"]
    result = runner.invoke(main, [*args, "--attr-file", str(path)])
    assert result.exit_code == 1
    assert result.output == f"Error: {path}: no run or glob here matches run 'opt-mnli-s1'\n"
    assert not db.exists()
