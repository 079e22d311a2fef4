"""The ood_nli suite: label maps on rows in each dataset's own schema, the YAMLs loaded by
lm-eval itself (offline, from --data-dir JSONL fixtures), export, and the README table.

Expected answers are written here by hand from the dataset cards' label names,
not computed with ood-store's label maps."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import FIXTURES
from ood_store.cli import main
from ood_store.errors import InputError

SUITE_DATA = FIXTURES / "nli-suite"
README = (Path(__file__).resolve().parents[1] / "README.md").read_text()

# (premise, hypothesis, answer) of every row that survives, per task, in file order.
EXPECTED = {
    "ood_nli_snli": [  # entailment -> Yes, contradiction -> No; neutral (1) and no gold label (-1) dropped
        ("A man plays a guitar on stage.", "A man is playing music.", "Yes"),
        ("A man plays a guitar on stage.", "A man is sleeping at home.", "No"),
    ],
    "ood_nli_mnli": [  # neutral dropped
        ("The office closes at five.", "The office is not open at six.", "Yes"),
        ("The office closes at five.", "The office never closes.", "No"),
    ],
    "ood_nli_scitail": [  # entails -> Yes, neutral -> No
        ("Water boils at 100 degrees Celsius at sea level.", "At sea level water boils at 100 C.", "Yes"),
        ("Plants need light to grow.", "The moon orbits the earth.", "No"),
    ],
    "ood_nli_rte": [  # 0 entailment -> Yes, 1 not_entailment -> No
        ("Paris is the capital of France.", "France has a capital called Paris.", "Yes"),
        ("Paris is the capital of France.", "Paris is in Spain.", "No"),
    ],
    "ood_nli_hans": [  # 1 non-entailment -> No, 0 entailment -> Yes
        ("The doctor saw the lawyer.", "The lawyer saw the doctor.", "No"),
        ("The doctor near the actor danced.", "The doctor danced.", "Yes"),
    ],
    "ood_nli_anli_r1": [("The river is 300 km long.", "The river is longer than 100 km.", "Yes")],
    "ood_nli_anli_r2": [("She was born in 1990.", "She was born in the 1980s.", "No")],
    "ood_nli_anli_r3": [
        ("The shop sells bread.", "Bread can be bought at the shop.", "Yes"),
        ("The shop sells bread.", "The shop sells no food.", "No"),
    ],
    "ood_nli_wnli": [  # 1 entailment -> Yes, 0 -> No
        ("The trophy did not fit in the case because it was too big.", "The trophy was too big.", "Yes"),
        ("The trophy did not fit in the case because it was too big.", "The case was too big.", "No"),
    ],
    "ood_nli_paws": [  # 1 paraphrase -> Yes
        ("The film was shot in Rome in 1950.", "In 1950 the film was shot in Rome.", "Yes"),
        ("Anna met Tom in London.", "Tom met Anna in Paris.", "No"),
    ],
}


def test_label_maps_on_native_rows():
    from datasets import Dataset

    from ood_store.evaluate.suite import labels, tasks

    for task in tasks():
        rows = [json.loads(line) for line in (SUITE_DATA / f"{task.name}.jsonl").read_text().splitlines()]
        cast = getattr(labels, task.labels)(Dataset.from_list(rows))
        got = [(d["premise"], d["hypothesis"], ("Yes", "No")[d["answer"]]) for d in cast]
        assert got == EXPECTED[task.name], task.name
        assert set(cast.column_names) >= set(rows[0]), "the dataset's own columns are kept"


def test_string_labels_of_other_exports():
    from ood_store.evaluate.suite.labels import answer

    assert [answer("hans", x) for x in ("entailment", "non-entailment", " Entailment ")] == [0, 1, 0]
    assert [answer("scitail", x) for x in ("entails", "neutral", "contradiction")] == [0, 1, None]
    assert [answer("snli", x) for x in (0, 1, 2, -1)] == [0, None, 1, None]


def test_lm_eval_loads_every_suite_task_offline_from_data_dir():
    from ood_store.evaluate.tasklist import task_list

    with task_list(["ood_nli"], data_dir=SUITE_DATA) as catalogue:
        assert not catalogue.built_in
        assert sorted(catalogue.leaves["ood_nli"]) == sorted(EXPECTED)
        loaded = catalogue.manager.load(["ood_nli"])["tasks"]
    assert sorted(loaded) == sorted(EXPECTED)
    for name, task in loaded.items():
        assert task.OUTPUT_TYPE == "multiple_choice"
        docs = list(task.test_docs())
        prompts = [task.doc_to_text(d) for d in docs]
        answers = [task.config.target_delimiter + task.doc_to_choice(d)[task.doc_to_target(d)] for d in docs]
        assert prompts == [f"{p} Question: {h} Yes or No?" for p, h, _ in EXPECTED[name]], name
        assert answers == [f" {a}" for _, _, a in EXPECTED[name]], name
        assert [task.config.target_delimiter + c for c in task.doc_to_choice(docs[0])] == [" Yes", " No"]


def test_a_missing_export_is_named(tmp_path):
    from ood_store.evaluate.tasklist import task_list

    (tmp_path / "ood_nli_snli.jsonl").write_text((SUITE_DATA / "ood_nli_snli.jsonl").read_text())
    with task_list(["ood_nli_snli"], data_dir=tmp_path) as catalogue:
        assert catalogue.leaves == {"ood_nli_snli": ["ood_nli_snli"]}
    with (
        pytest.raises(InputError, match=r"/ood_nli_anli_r1\.jsonl: missing: export the suite"),
        task_list(["ood_nli"], data_dir=tmp_path),
    ):
        pass
    with pytest.raises(InputError, match="no such data folder"), task_list(["ood_nli"], data_dir=tmp_path / "nope"):
        pass


def test_export_writes_each_split_in_its_own_schema(tmp_path, monkeypatch):
    import datasets

    from ood_store.evaluate.suite import tasks
    from ood_store.evaluate.suite.export import export
    from ood_store.evaluate.tasklist import task_list

    calls = []

    def fake_load_dataset(path, name=None, split=None):
        calls.append((path, name, split))
        task = next(t for t in tasks() if (t.dataset_path, t.dataset_name, t.split) == (path, name, split))
        lines = (SUITE_DATA / f"{task.name}.jsonl").read_text().splitlines()
        return datasets.Dataset.from_list([json.loads(line) for line in lines])

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    written = export(tmp_path / "export")
    # Where each task comes from, as the README's table documents it (checked below).
    assert sorted(calls) == sorted(
        [
            ("stanfordnlp/snli", "plain_text", "test"),
            ("nyu-mll/glue", "mnli", "validation_matched"),
            ("allenai/scitail", "tsv_format", "test"),
            ("nyu-mll/glue", "rte", "validation"),
            ("tasksource/hans", None, "validation"),
            ("facebook/anli", "plain_text", "test_r1"),
            ("facebook/anli", "plain_text", "test_r2"),
            ("facebook/anli", "plain_text", "test_r3"),
            ("nyu-mll/glue", "wnli", "validation"),
            ("google-research-datasets/paws", "labeled_final", "test"),
        ]
    )
    assert {w.task: w.rows for w in written} == {
        name: len((SUITE_DATA / f"{name}.jsonl").read_text().splitlines()) for name in EXPECTED
    }
    for name in EXPECTED:
        exported = [json.loads(x) for x in (tmp_path / "export" / f"{name}.jsonl").read_text().splitlines()]
        original = [json.loads(x) for x in (SUITE_DATA / f"{name}.jsonl").read_text().splitlines()]
        assert exported == original, name
    monkeypatch.undo()  # lm-eval loads the exported JSONL with the real datasets.load_dataset
    with task_list(["ood_nli_wnli"], data_dir=tmp_path / "export") as catalogue:
        task = catalogue.manager.load(["ood_nli_wnli"])["tasks"]["ood_nli_wnli"]
        assert [task.doc_to_target(d) for d in task.test_docs()] == [0, 1]


def test_export_command_names_unknown_tasks_and_unreachable_hub(runner, tmp_path, monkeypatch):
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


def test_readme_table_documents_every_suite_task(runner):
    from ood_store.evaluate.suite import tasks

    rows = {}
    for line in README.splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if cells and cells[0].startswith("ood_nli_"):
            rows[cells[0]] = cells
    assert sorted(rows) == sorted(EXPECTED)
    for task in tasks():
        _, _testset, dataset, config, split, _labels = rows[task.name]
        assert (dataset, config, split) == (task.dataset_path, task.dataset_name or "—", task.split)
    listed = runner.invoke(main, ["suite", "list", "--format", "csv"]).output.splitlines()
    assert listed[0] == "task,dataset,config,split"
    assert len(listed) == 1 + len(EXPECTED)
    assert all(re.match(r"ood_nli_\w+,[\w/-]+,", line) for line in listed[1:])
