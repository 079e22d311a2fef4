"""The ood_nli suite on data in each dataset's own schema, loaded by lm-eval itself, offline.

The fixtures (tests/fixtures/nli-suite, nli-layouts; provenance in their
README) go through the real task loading: the suite's config dicts, lm-eval's
TaskManager and ConfigurableTask, the `json` builder of `datasets`. Expected
answers are written here by hand from the dataset cards' label names (an
entailed pair answers Yes, a contradiction No, a neutral pair is dropped or
answers No), not computed with ood-store's label maps.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from ood_store._cli import main
from ood_store._errors import InputError, OodStoreError

SUITE_DATA = FIXTURES / "nli-suite"
LAYOUTS = FIXTURES / "nli-layouts"
README = (Path(__file__).resolve().parents[1] / "docs" / "how-to" / "suite.md").read_text()  # the suite's page
Y, N = "Yes", "No"

# Per task: the native label of each row of the fixture, in file order, and its answer under the
# neutral schemes `drop` and `no` (None: the row is left out).
EXPECTED = {
    "ood_nli_snli": [(0, Y, Y), (1, None, N), (2, N, N), (-1, None, None), (0, Y, Y)],
    "ood_nli_mnli": [(0, Y, Y), (1, None, N), (2, N, N), (2, N, N)],
    "ood_nli_scitail": [("entails", Y, Y), ("neutral", N, N), ("neutral", N, N)],  # two-way: neutral = not entailed
    "ood_nli_rte": [(0, Y, Y), (1, N, N), (0, Y, Y)],
    "ood_nli_hans": [(1, N, N), (0, Y, Y), (1, N, N), (0, Y, Y), (1, N, N), (0, Y, Y), (1, N, N)],
    "ood_nli_anli_r1": [(0, Y, Y), (1, None, N), (2, N, N)],
    "ood_nli_anli_r2": [(2, N, N), (1, None, N)],
    "ood_nli_anli_r3": [(0, Y, Y), (2, N, N), (1, None, N), (0, Y, Y)],
    "ood_nli_wnli": [(1, Y, Y), (0, N, N)],  # WNLI: 1 is entailment
    "ood_nli_paws": [(1, Y, Y), (0, N, N), (0, N, N)],  # 1 paraphrase
}
# The same testsets in other copies' layouts (folder, task, label column, rows as above).
LAYOUT_EXPECTED = {
    "tasksource-hans": ("ood_nli_hans", "labels", [(1, N, N), (0, Y, Y), (1, N, N), (0, Y, Y)]),
    "hans-original": (
        "ood_nli_hans", "gold_label", [("non-entailment", N, N), ("entailment", Y, Y), ("non-entailment", N, N)],
    ),
    "snli-original": (
        "ood_nli_snli", "gold_label",
        [("entailment", Y, Y), ("neutral", None, N), ("contradiction", N, N), ("-", None, None)],
    ),
    "anli-original": ("ood_nli_anli_r1", "label", [("e", Y, Y), ("n", None, N), ("c", N, N)]),
    "scitail-snli-format": ("ood_nli_scitail", "gold_label", [("entailment", Y, Y), ("neutral", N, N)]),
    "superglue-rte": ("ood_nli_rte", "label", [(0, Y, Y), (1, N, N)]),
}  # fmt: skip
PAIR = {  # (premise, hypothesis) columns of each layout, from the dataset cards
    "premise": ("premise", "hypothesis"), "sentence1": ("sentence1", "sentence2"), "context": ("context", "hypothesis"),
}  # fmt: skip


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def pair(row: dict) -> tuple[str, str]:
    first, second = next(PAIR[key] for key in PAIR if key in row)
    return row[first].strip(), row[second].strip()


def loaded_tasks(names, data_dir, **variant):
    """lm-eval's Task objects of the suite tasks ``names`` under a variant, read from ``data_dir``."""
    from ood_store._evaluate.suite.variant import Variant
    from ood_store._evaluate.tasklist import task_list

    with task_list(names, data_dir=data_dir, variant=Variant.of(**variant)) as catalogue:
        assert not catalogue.built_in
        leaves = [leaf for name in names for leaf in catalogue.leaves[name]]
        return catalogue.manager.load(catalogue.task_specs(leaves))["tasks"]


def rendered(task) -> list[tuple[str, str]]:
    """(prompt, gold continuation) of every evaluated document, as lm-eval renders them."""
    out = []
    for doc in task.test_docs():
        choices = task.doc_to_choice(doc)
        out.append((task.doc_to_text(doc), task.config.target_delimiter + choices[task.doc_to_target(doc)]))
    return out


@pytest.mark.parametrize("neutral", ["drop", "no"])
def test_every_testset_in_its_hub_schema_loads_through_lm_eval(neutral):
    column = 1 if neutral == "drop" else 2
    loaded = loaded_tasks(["ood_nli"], SUITE_DATA, neutral=neutral)
    suffix = "" if neutral == "drop" else "__neutral-no"
    assert sorted(loaded) == sorted(name + suffix for name in EXPECTED)
    for name, expected in EXPECTED.items():
        rows = rows_of(SUITE_DATA / f"{name}.jsonl")
        label = "label"
        assert [row[label] for row in rows] == [e[0] for e in expected], f"{name}: the fixture's labels"
        kept = [(row, e[column]) for row, e in zip(rows, expected, strict=True) if e[column] is not None]
        task = loaded[name + suffix]
        want = [(f"{p} Question: {h} Yes or No?", f" {answer}") for (p, h), answer in ((pair(r), a) for r, a in kept)]
        assert rendered(task) == want, name
        assert len(want) + sum(e[column] is None for e in expected) == len(rows)  # kept + dropped = all


def test_counts_of_kept_and_dropped_rows_per_testset():
    # Hand-counted from the fixture files: rows kept under drop / under no, of all rows.
    counts = {
        "ood_nli_snli": (3, 4, 5), "ood_nli_mnli": (3, 4, 4), "ood_nli_scitail": (3, 3, 3), "ood_nli_rte": (3, 3, 3),
        "ood_nli_hans": (7, 7, 7), "ood_nli_anli_r1": (2, 3, 3), "ood_nli_anli_r2": (1, 2, 2),
        "ood_nli_anli_r3": (3, 4, 4), "ood_nli_wnli": (2, 2, 2), "ood_nli_paws": (3, 3, 3),
    }  # fmt: skip
    drop, no = loaded_tasks(["ood_nli"], SUITE_DATA), loaded_tasks(["ood_nli"], SUITE_DATA, neutral="no")
    for name, (kept_drop, kept_no, total) in counts.items():
        assert len(rows_of(SUITE_DATA / f"{name}.jsonl")) == total
        assert (len(list(drop[name].test_docs())), len(list(no[f"{name}__neutral-no"].test_docs()))) == (
            kept_drop,
            kept_no,
        )


@pytest.mark.parametrize("folder", sorted(LAYOUT_EXPECTED))
@pytest.mark.parametrize("neutral", ["drop", "no"])
def test_other_copies_column_layouts(folder, neutral):
    name, label, expected = LAYOUT_EXPECTED[folder]
    rows = rows_of(LAYOUTS / folder / f"{name}.jsonl")
    assert [row[label] for row in rows] == [e[0] for e in expected]
    column = 1 if neutral == "drop" else 2
    task = next(iter(loaded_tasks([name], LAYOUTS / folder, neutral=neutral).values()))
    want = [(pair(row)[0], pair(row)[1], e[column]) for row, e in zip(rows, expected, strict=True) if e[column]]
    got = [(d["premise"], d["hypothesis"], (Y, N)[task.doc_to_target(d)]) for d in task.test_docs()]
    assert got == want


def test_hans_keeps_heuristic_subcase_and_template_in_each_doc():
    rows = rows_of(SUITE_DATA / "ood_nli_hans.jsonl")
    task = loaded_tasks(["ood_nli_hans"], SUITE_DATA)["ood_nli_hans"]
    docs = list(task.test_docs())
    for key in ("heuristic", "subcase", "template", "parse_premise", "binary_parse_hypothesis"):
        assert [d[key] for d in docs] == [r[key] for r in rows], key


def test_hans_heuristic_by_label_subtasks():
    rows = rows_of(SUITE_DATA / "ood_nli_hans.jsonl")
    loaded = loaded_tasks(["ood_nli_hans_heuristics"], SUITE_DATA)
    assert len(loaded) == 6
    for heuristic in ("lexical_overlap", "subsequence", "constituent"):
        for subset, label in (("entailed", 0), ("non_entailed", 1)):  # HANS: 0 entailment, 1 non-entailment
            docs = list(loaded[f"ood_nli_hans_{heuristic}_{subset}"].test_docs())
            wanted = [r["premise"] for r in rows if r["heuristic"] == heuristic and r["label"] == label]
            assert [d["premise"] for d in docs] == wanted and wanted
            assert {d["answer"] for d in docs} == {label}


def copy_data(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "data"
    folder.mkdir(exist_ok=True)
    for name in names:
        shutil.copyfile(SUITE_DATA / name, folder / name)
    return folder


def test_an_unknown_label_names_dataset_column_and_value(tmp_path):
    folder = copy_data(tmp_path)
    rows = rows_of(SUITE_DATA / "ood_nli_snli.jsonl")
    rows[2]["label"] = 7
    (folder / "ood_nli_snli.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(OodStoreError) as info:
        loaded_tasks(["ood_nli_snli"], folder)
    assert str(info.value) == (
        f"{folder / 'ood_nli_snli.jsonl'}: unknown SNLI label 7 in column 'label' "
        "(known labels: 0, 1, 2, 'entailment', 'neutral', 'contradiction', -1, '-')"
    )


def test_a_string_label_of_another_dataset_is_an_error_not_a_drop(tmp_path):
    folder = copy_data(tmp_path)
    rows = rows_of(SUITE_DATA / "ood_nli_scitail.jsonl")
    rows[1]["label"] = "contradiction"  # not a SciTail label
    (folder / "ood_nli_scitail.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(OodStoreError, match=r"unknown SciTail label 'contradiction' in column 'label'"):
        loaded_tasks(["ood_nli_scitail"], folder)


def test_an_unknown_layout_and_a_null_premise_are_named(tmp_path):
    folder = copy_data(tmp_path)
    rows = rows_of(SUITE_DATA / "ood_nli_rte.jsonl")
    (folder / "ood_nli_rte.jsonl").write_text(
        "".join(json.dumps({"text": r["sentence1"], "y": 0}) + "\n" for r in rows)
    )
    with pytest.raises(OodStoreError) as info:
        loaded_tasks(["ood_nli_rte"], folder)
    assert str(info.value) == (
        f"{folder / 'ood_nli_rte.jsonl'}: no RTE column layout: expected columns sentence1/sentence2/label or "
        "premise/hypothesis/label, found text, y"
    )
    rows[1]["sentence1"] = None
    (folder / "ood_nli_rte.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(OodStoreError, match=r"ood_nli_rte\.jsonl: column 'sentence1' holds None, not text$"):
        loaded_tasks(["ood_nli_rte"], folder)


def test_a_missing_export_is_named(tmp_path):
    from ood_store._evaluate.tasklist import task_list

    folder = copy_data(tmp_path, "ood_nli_snli.jsonl")
    with task_list(["ood_nli_snli"], data_dir=folder) as catalogue:
        assert catalogue.leaves == {"ood_nli_snli": ["ood_nli_snli"]}
    with pytest.raises(InputError, match=r"/ood_nli_mnli\.jsonl: missing: export the suite on a connected machine"):
        task_list(["ood_nli"], data_dir=folder).__enter__()
    with pytest.raises(
        InputError, match=r"ood_nli_snli\.train\.jsonl: missing: export the training splits, with `fewshot`"
    ):
        task_list(["ood_nli_snli"], data_dir=folder, num_fewshot=2).__enter__()
    with pytest.raises(InputError, match="no such data folder"):
        task_list(["ood_nli"], data_dir=tmp_path / "nope").__enter__()


def test_the_suite_page_documents_every_suite_task_and_its_data_file(runner):
    from ood_store._evaluate.suite.testsets import testsets

    rows = {}
    for line in README.splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if cells and cells[0].startswith("ood_nli_") and len(cells) == 7:
            rows[cells[0]] = cells
    assert sorted(rows) == sorted(EXPECTED)
    for task in testsets():
        _, display, dataset, split, fewshot, _ = rows[task.name][:6]
        assert (display, dataset, split, fewshot) == (task.display, task.source(), task.split, task.fewshot_split)
    # The offline-data table: file name, columns, and an example line that is a line of the fixture.
    for name in EXPECTED:
        match = re.search(rf"^\| `{name}\.jsonl` \| (.*?) \| `(\{{.*\}})` \|$", README, flags=re.MULTILINE)
        assert match, name
        example = json.loads(match.group(2))
        assert example in rows_of(SUITE_DATA / f"{name}.jsonl"), name
        assert [c.strip("` ") for c in match.group(1).split(",")] == list(example), name
    listed = runner.invoke(main, ["suite", "list", "--format", "csv"]).output.splitlines()
    assert listed[0] == "task,display,dataset,split,fewshot_split,rows"
    assert len(listed) == 1 + len(EXPECTED)
