"""Limits of what a file may hold (ingest/limits.py): past them one line names the file and the field.

One bad file per class beside good ones: the good ones are stored, the bad one is
named with its field, the exit status is 1, and nothing raises. Each bad file is a
real one with one thing broken; the expected messages are spelled out here.
"""

from __future__ import annotations

import json
import shutil

import pytest

import ood_store
from conftest import V0413, pythia_files
from ood_store._cli import main

SOURCE = pythia_files("160m")[4]
GOOD = pythia_files("410m")[:3]


def ingest_beside_good_files(runner, tmp_path, bad) -> list[str]:
    """Ingest ``bad`` with three good files; returns the lines naming rejected files."""
    db = tmp_path / "s.duckdb"
    result = runner.invoke(main, ["--db", str(db), "ingest", str(bad), *map(str, GOOD)])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 1
    with ood_store.open(db, read_only=True) as store:
        stored = sorted(store.query("SELECT source_path FROM evaluations")["source_path"])
    assert stored == sorted(str(p.resolve()) for p in GOOD)
    lines = result.output.splitlines()
    start = lines.index("Rejected: 1 file:")
    return [line.strip() for line in lines[start + 1 :]]


def broken(tmp_path, change, text=None):
    """A copy of SOURCE with ``change`` applied to its JSON (and ``text`` to its text)."""
    doc = json.loads(SOURCE.read_text())
    change(doc)
    raw = json.dumps(doc)
    path = tmp_path / "bad" / SOURCE.name
    path.parent.mkdir()
    path.write_text(text(raw) if text else raw)
    return path


@pytest.mark.parametrize(
    ("depth", "where"),
    [
        (150, 'config["deep"][0]: '),  # orjson reads it, and the walk names where it is too deep
        (300, 'config["deep"][0]: '),  # 300 to 900 levels: the depths of issue 17 (RecursionError once)
        (900, 'config["deep"][0]: '),
        (5000, ""),  # past orjson's limit, and the standard library's recursion stops before a field is known
    ],
)
def test_nesting_depth(runner, tmp_path, depth, where):
    deep = "[" * depth + "]" * depth
    bad = broken(tmp_path, lambda d: d["config"].update({"deep": "DEEP"}), lambda t: t.replace('"DEEP"', deep))
    assert ingest_beside_good_files(runner, tmp_path, bad) == [f"{bad}: {where}JSON nested more than 100 levels deep"]


def test_string_length_of_a_task_name(runner, tmp_path):
    bad = broken(tmp_path, lambda d: d["results"].update({"t" * 1500: {"acc": 0.5}}))
    assert ingest_beside_good_files(runner, tmp_path, bad) == [
        f"{bad}: results: a task name is longer than 1,000 characters"
    ]


MARK = 0.123456789


@pytest.mark.parametrize(
    ("literal", "shown"),
    [
        ("1e999", "1e999"),
        ("-1e999", "-1e999"),
        ("1" + "0" * 400, "1" + "0" * 19 + "... (401 characters)"),  # 10**400
        ("9" * 4301, "9" * 20 + "... (4,301 characters)"),  # past Python's 4,300-digit limit for int()
    ],
)
def test_a_number_that_does_not_fit_a_double_is_a_bad_value(runner, tmp_path, literal, shown):
    bad = broken(
        tmp_path, lambda d: d["results"]["arc_easy"].update({"acc": MARK}), lambda t: t.replace(str(MARK), literal)
    )
    assert ingest_beside_good_files(runner, tmp_path, bad) == [
        f'{bad}: results["arc_easy"]["acc"]: {shown} does not fit a DOUBLE'
    ]


def test_an_overflowing_stderr_is_a_bad_value_too(runner, tmp_path):
    bad = broken(
        tmp_path,
        lambda d: d["results"]["piqa"].update({"acc_stderr": MARK}),
        lambda t: t.replace(str(MARK), "1e400"),
    )
    assert ingest_beside_good_files(runner, tmp_path, bad) == [
        f'{bad}: results["piqa"]["acc_stderr"]: 1e400 does not fit a DOUBLE'
    ]


def test_digits_of_a_step(runner, tmp_path):
    digits = "7" * 5000
    bad = broken(
        tmp_path, lambda d: d["config"].update({"model_args": f"pretrained=EleutherAI/x,revision=step{digits}"})
    )
    assert ingest_beside_good_files(runner, tmp_path, bad) == [
        f"{bad}: config.model_args: step {'7' * 20}... (5,000 digits) is out of range; pass --step"
    ]


def test_a_lone_surrogate_in_a_task_name(runner, tmp_path):
    bad = broken(tmp_path, lambda d: d["results"].update({"arc\ud800": {"acc": 0.5}}))
    assert '"arc\\ud800"' in bad.read_text()  # escaped, as json writes it
    assert ingest_beside_good_files(runner, tmp_path, bad) == [
        f'{bad}: results: invalid Unicode in a key: "arc\\ud800"'
    ]


def test_a_lone_surrogate_in_a_model_name(runner, tmp_path):
    bad = broken(tmp_path, lambda d: d["config"].update({"model_args": "pretrained=org/m\udc00,revision=step3"}))
    assert ingest_beside_good_files(runner, tmp_path, bad) == [
        f'{bad}: config["model_args"]: invalid Unicode: "pretrained=org/m\\udc00,revision=step3"'
    ]


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("target", lambda line: line.update({"target": "sat\ud83d"})),
        ("filtered_resps[0]", lambda line: line.update({"filtered_resps": ["\udfff"]})),
    ],
)
def test_a_lone_surrogate_in_a_sample(runner, tmp_path, field, change):
    folder = tmp_path / "bad"
    shutil.copytree(next(V0413.glob("toy-run__checkpoint-10")), folder)
    samples = next(folder.glob("samples_toy_gen_*.jsonl"))
    lines = samples.read_text().splitlines()
    line = json.loads(lines[2])
    change(line)
    lines[2] = json.dumps(line)
    samples.write_text("\n".join(lines) + "\n")
    [message] = ingest_beside_good_files(runner, tmp_path, folder)
    shown = json.dumps(line["target"] if field == "target" else line["filtered_resps"][0])
    assert message == f"{samples}: line 3: {field}: invalid Unicode: {shown}"


@pytest.mark.parametrize("depth", [150, 5000])
@pytest.mark.parametrize("line_number", [1, 5])
def test_nesting_in_a_samples_line_is_left_to_duckdbs_reader(tmp_path, depth, line_number):
    """DuckDB's JSON reader, which streams samples files, takes any nesting: a deep ``doc`` is no limit
    there, whichever line holds it (the first line, which Python reads to plan the insert, included)."""
    folder = tmp_path / "deep"
    shutil.copytree(next(V0413.glob("toy-run__checkpoint-10")), folder)
    samples = next(folder.glob("samples_toy_gen_2026*.jsonl"))
    lines = samples.read_text().splitlines()
    line = json.loads(lines[line_number - 1])
    line["doc"] = "DEEP"
    lines[line_number - 1] = json.dumps(line).replace('"DEEP"', "[" * depth + "]" * depth)
    samples.write_text("\n".join(lines) + "\n")
    with ood_store.open(tmp_path / "s.duckdb") as store:
        report = store.ingest([folder])
        rows = store.query("SELECT count(*) AS n FROM samples WHERE task = 'toy_gen'")["n"][0]
    assert report.ok, report.rejected
    assert rows == len(lines)
