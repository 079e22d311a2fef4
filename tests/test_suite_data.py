"""Offline data for the ood_nli suite: ``suite check`` finds each kind of problem, one line each, and
``suite export`` writes exactly the format that check and ``--data-dir`` read.

A good folder is built from the fixture rows (tests/fixtures/nli-suite, in each
dataset's hub schema) repeated to the size each split has on the hub, as the
dataset cards give it (written out here, not read from ood-store).
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from ood_store._cli import main

SUITE_DATA = FIXTURES / "nli-suite"
# The evaluated split of each task and its size, from the dataset cards.
SIZES = {
    "ood_nli_snli": ("test", 10000), "ood_nli_mnli": ("validation_matched", 9815), "ood_nli_scitail": ("test", 2126),
    "ood_nli_rte": ("validation", 277), "ood_nli_hans": ("validation", 30000), "ood_nli_anli_r1": ("test_r1", 1000),
    "ood_nli_anli_r2": ("test_r2", 1000), "ood_nli_anli_r3": ("test_r3", 1200), "ood_nli_wnli": ("validation", 71),
    "ood_nli_paws": ("test", 8000),
}  # fmt: skip


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def write_rows(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("good")
    for task, (_, size) in SIZES.items():
        rows = rows_of(SUITE_DATA / f"{task}.jsonl")
        write_rows(folder / f"{task}.jsonl", itertools.islice(itertools.cycle(rows), size))
    return folder


def test_a_good_folder_passes(good, runner):
    result = runner.invoke(main, ["suite", "check", str(good)])
    assert result.exit_code == 0, result.output
    assert (
        result.output == f"{good}: 10 files, {sum(n for _, n in SIZES.values()):,} rows: ready for --data-dir {good}.\n"
    )


def test_each_kind_of_problem_is_one_line(good, tmp_path, runner):
    folder = tmp_path / "data"
    shutil.copytree(good, folder)
    (folder / "ood_nli_wnli.jsonl").unlink()  # missing
    lines = (folder / "ood_nli_rte.jsonl").read_text().splitlines()
    lines[4] = '{"sentence1": "cut off'  # not JSON
    lines[9] = "[1, 2]"  # not an object
    (folder / "ood_nli_rte.jsonl").write_text("\n".join(lines) + "\n")
    write_rows(folder / "ood_nli_paws.jsonl", [{"text_a": "a", "text_b": "b", "y": 1}] * 8000)  # no known layout
    snli = rows_of(folder / "ood_nli_snli.jsonl")
    snli[2]["label"], snli[6]["label"], snli[7]["label"] = 7, 7, "maybe"  # unknown labels
    snli[3]["premise"] = None  # not text
    del snli[8]["hypothesis"]  # a row without a column
    write_rows(folder / "ood_nli_snli.jsonl", snli)
    write_rows(folder / "ood_nli_scitail.jsonl", rows_of(folder / "ood_nli_scitail.jsonl")[:-5])  # short
    # A tasksource-style HANS validation split: the right layout, too few rows.
    write_rows(folder / "ood_nli_hans.jsonl", [{"sentence1": "a .", "sentence2": "b .", "labels": 0}] * 1000)
    write_rows(
        folder / "ood_nli_rte.train.jsonl", rows_of(SUITE_DATA / "ood_nli_rte.train.jsonl")
    )  # a short train file

    result = runner.invoke(main, ["suite", "check", str(folder)])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"{folder}/ood_nli_snli.jsonl:3: unknown SNLI label 7 in column 'label' "
        "(known labels: 0, 1, 2, 'entailment', 'neutral', 'contradiction', -1, '-') (2 rows; this is the first)",
        f"{folder}/ood_nli_snli.jsonl:4: column 'premise' is not text",
        f"{folder}/ood_nli_snli.jsonl:8: unknown SNLI label 'maybe' in column 'label' "
        "(known labels: 0, 1, 2, 'entailment', 'neutral', 'contradiction', -1, '-')",
        f"{folder}/ood_nli_snli.jsonl:9: no column 'hypothesis'",
        f"{folder}/ood_nli_scitail.jsonl: 2,121 rows; the SciTail test split has 2,126",
        f"{folder}/ood_nli_rte.jsonl:5: not JSON: Unterminated string starting at: line 1 column 15 (char 14)",
        f"{folder}/ood_nli_rte.jsonl:10: not a JSON object but list",
        f"{folder}/ood_nli_rte.train.jsonl: 3 rows; the RTE train split has 2,490",
        f"{folder}/ood_nli_hans.jsonl: 1,000 rows; the HANS validation split has 30,000",
        f"{folder}/ood_nli_wnli.jsonl: missing: WNLI validation split (71 rows from nyu-mll/glue/wnli)",
        f"{folder}/ood_nli_paws.jsonl:1: no PAWS column layout: expected columns sentence1/sentence2/label, "
        "found text_a, text_b, y",
    ]
    fewshot = runner.invoke(main, ["suite", "check", str(good), "--fewshot"])
    assert fewshot.exit_code == 1
    assert fewshot.output.splitlines()[0] == (
        f"{good}/ood_nli_snli.train.jsonl: missing: SNLI train split (550,152 rows from stanfordnlp/snli/plain_text)"
    )
    assert len(fewshot.output.splitlines()) == 10
    missing = runner.invoke(main, ["suite", "check", str(tmp_path / "nope")])
    assert (missing.exit_code, missing.output) == (1, f"Error: {tmp_path / 'nope'}: no such data folder\n")


@pytest.fixture
def hub(monkeypatch):
    """``datasets.load_dataset`` answering from the fixture files for the suite's hub datasets (the hub
    cannot be reached here); records the calls. Everything after it is real."""
    import datasets

    from ood_store._evaluate.suite.testsets import testsets

    calls = []
    real = datasets.load_dataset

    def load_dataset(path, name=None, split=None, **kwargs):
        calls.append((path, name, split, kwargs))
        for task in testsets():
            if (task.dataset_path, task.dataset_name) == (path, name) and split in (task.split, task.fewshot_split):
                file = SUITE_DATA / f"{task.name}{'' if split == task.split else '.train'}.jsonl"
                return real("json", data_files={split: str(file)}, split=split)
        raise AssertionError(f"unexpected dataset {path} {name} {split}")

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls


def test_export_writes_the_format_check_and_data_dir_read(hub, tmp_path, runner, monkeypatch):
    target = tmp_path / "export"
    result = runner.invoke(main, ["suite", "export", str(target), "--fewshot"])
    assert result.exit_code == 0, result.output
    # Our lines go to stdout; the `datasets` loader's own progress bars (a cold cache) go to stderr.
    assert result.stdout.splitlines()[-1] == f"Exported 20 files to {target}; evaluate with --data-dir {target}."
    # Where each split comes from: the README's table (checked against it in test_suite).
    assert sorted((p, n, s) for p, n, s, _ in hub) == sorted(
        [
            ("stanfordnlp/snli", "plain_text", "test"), ("stanfordnlp/snli", "plain_text", "train"),
            ("nyu-mll/glue", "mnli", "validation_matched"), ("nyu-mll/glue", "mnli", "train"),
            ("allenai/scitail", "tsv_format", "test"), ("allenai/scitail", "tsv_format", "train"),
            ("nyu-mll/glue", "rte", "validation"), ("nyu-mll/glue", "rte", "train"),
            ("jhu-cogsci/hans", None, "validation"), ("jhu-cogsci/hans", None, "train"),
            *[("facebook/anli", "plain_text", f"{s}_r{n}") for n in (1, 2, 3) for s in ("test", "train")],
            ("nyu-mll/glue", "wnli", "validation"), ("nyu-mll/glue", "wnli", "train"),
            ("google-research-datasets/paws", "labeled_final", "test"),
            ("google-research-datasets/paws", "labeled_final", "train"),
        ]
    )  # fmt: skip
    hans = next(kwargs for path, _, split, kwargs in hub if path == "jhu-cogsci/hans" and split == "validation")
    assert hans["revision"] == "refs/convert/parquet"
    assert hans["data_files"]["validation"] == "plain_text/validation/0000.parquet"
    for source in sorted(SUITE_DATA.glob("*.jsonl")):
        assert rows_of(target / source.name) == rows_of(source), source.name
    # check reads it: only the sizes differ from the hub's (the fixtures are small)
    checked = runner.invoke(main, ["suite", "check", str(target), "--fewshot"])
    assert all(" rows; the " in line for line in checked.output.splitlines())
    assert len(checked.output.splitlines()) == 20
    monkeypatch.undo()  # lm-eval loads the export with the real datasets.load_dataset
    from ood_store._evaluate.tasklist import task_list

    with task_list(["ood_nli_wnli"], data_dir=target, num_fewshot=1) as catalogue:
        task = catalogue.manager.load(catalogue.task_specs(["ood_nli_wnli"]))["tasks"]["ood_nli_wnli"]
        assert [task.doc_to_target(d) for d in task.test_docs()] == [0, 1]  # WNLI 1 entailment -> Yes


def test_export_names_unknown_tasks_and_an_unreachable_hub(runner, tmp_path, monkeypatch):
    import datasets

    result = runner.invoke(main, ["suite", "export", str(tmp_path), "--task", "ood_nli_nope"])
    assert result.exit_code == 1
    assert result.output.startswith("Error: ood_nli_nope: not a task of the suite")

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach the Hugging Face Hub\nmore lines")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    result = runner.invoke(main, ["suite", "export", str(tmp_path), "--task", "ood_nli_rte"])
    assert result.exit_code == 1
    assert result.output == (
        "Error: ood_nli_rte: cannot load nyu-mll/glue/rte split validation: Couldn't reach the Hugging Face Hub\n"
    )
    assert not list(tmp_path.iterdir())


def test_export_into_an_impossible_folder_is_one_line(runner, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = runner.invoke(main, ["suite", "export", str(blocker / "nli-data"), "--task", "ood_nli_rte"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert result.output.startswith(f"Error: {blocker / 'nli-data'}: cannot create the export folder: ")
    assert blocker.read_text() == "not a folder"
