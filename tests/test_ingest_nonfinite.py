"""Non-finite values are data (NaN stored as NULL, ±Infinity as is) and a literal beyond a DOUBLE
(``1e999``) is a bad value, for values and stderrs alike and in every format; analyses leave
non-finite scores out and say so; a list-valued ``config.num_fewshot`` maps to the tasks in order.

Each case copies a real lm-eval file and writes the values with Python's json module,
as lm-eval does (it writes NaN and Infinity as those bare tokens).
"""

from __future__ import annotations

import csv
import json
import math
import shutil

import numpy as np
import pingouin as pg
import polars as pl
import pytest

import ood_store
from conftest import FIXTURES, V04, V0413, pythia_files
from ood_store._analysis import partial_correlations
from ood_store._cli import main

LEADERBOARD = next((V04 / "csabakecskemeti").rglob("results_*.json"))


def write(path, doc):
    path.write_text(json.dumps(doc))  # allow_nan: NaN, Infinity, -Infinity as lm-eval writes them
    return path


def test_infinity_and_nan_beside_valid_scores_are_stored(tmp_path, runner):
    """The case of the issue: "mae,none": Infinity and "mae_stderr,none": NaN in a real 0.4 file."""
    doc = json.loads(LEADERBOARD.read_text())
    doc["results"]["mae_task"] = {"alias": "mae_task", "mae,none": math.inf, "mae_stderr,none": math.nan}
    doc["results"]["leaderboard_ifeval"]["prompt_level_loose_acc,none"] = -math.inf
    doc["results"]["leaderboard_musr_murder_mysteries"]["acc_norm,none"] = math.nan
    path = write(tmp_path / LEADERBOARD.name, doc)
    assert "Infinity" in path.read_text() and "NaN" in path.read_text()
    db = tmp_path / "s.duckdb"
    result = runner.invoke(main, ["--db", str(db), "ingest", str(path)])
    assert result.exit_code == 0, result.output
    expected = {
        (task, *key.rsplit(",", 1)): value
        for task, entry in doc["results"].items()
        for key, value in entry.items()
        if "," in key and "_stderr," not in key
    }
    assert f"{len(expected):,} scores (3 of them NaN or infinite)" in result.output.splitlines()[0]
    with ood_store.open(db, read_only=True) as store:
        rows = store.query("SELECT task, metric, filter, value, stderr FROM scores").rows()
    got = {(t, m, f): v for t, m, f, v, _ in rows}
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        if math.isnan(value):
            assert got[key] is None, key  # NaN is stored as NULL
        else:
            assert got[key] == value, key  # finite values and ±inf as the file says
    stderr = {(t, m): e for t, m, _, _, e in rows}
    assert got[("mae_task", "mae", "none")] == math.inf and stderr[("mae_task", "mae")] is None


def test_a_nan_value_differs_from_a_number_in_the_conflict_report(tmp_path):
    source = pythia_files("160m")[0]
    doc = json.loads(source.read_text())
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    first = write(tmp_path / "a" / source.name, doc)
    doc["results"]["arc_easy"]["acc"] = math.nan
    second = write(tmp_path / "b" / source.name, doc)
    with ood_store.open(tmp_path / "s.duckdb") as store:
        report = store.ingest([first, second])
        conflicts = store.query("SELECT task, metric, value_list FROM score_conflicts").rows()
    original = json.loads(source.read_text())["results"]["arc_easy"]["acc"]
    assert conflicts == [("arc_easy", "acc", [original, None])]
    assert [(c.task, c.metric) for c in report.conflicts] == [("arc_easy", "acc")]


def test_analyses_leave_non_finite_scores_out_and_say_so(tmp_path, copy_file):
    """Two steps of arc_easy are +Infinity and NaN: pairs with arc_easy use the other 25 checkpoints."""
    files = pythia_files("160m")
    copies = [copy_file(f) for f in files]
    docs = [json.loads(f.read_text()) for f in copies]
    docs[5]["results"]["arc_easy"]["acc"] = math.inf
    docs[9]["results"]["arc_easy"]["acc"] = math.nan
    for path, doc in zip(copies, docs, strict=True):
        write(path, doc)
    with ood_store.open(tmp_path / "s.duckdb") as store:
        assert store.ingest(copies).ok
        table = partial_correlations(store, "lambada_openai", ["arc_easy", "piqa", "sciq"]).table
    rows = {(r["task_x"], r["task_y"]): r for r in table.to_dicts()}
    assert rows[("arc_easy", "piqa")]["n"] == 25 and rows[("piqa", "sciq")]["n"] == 27
    assert rows[("arc_easy", "piqa")]["note"] == "non-finite scores treated as missing: 2 of arc_easy"
    assert rows[("arc_easy", "piqa")]["reason"] is None
    assert rows[("piqa", "sciq")]["reason"] is None and rows[("piqa", "sciq")]["note"] is None
    # the same partial correlation by pingouin, on the JSON with those two checkpoints left out
    kept = [d for i, d in enumerate(docs) if i not in (5, 9)]
    frame = pl.DataFrame(
        {t: [d["results"][t]["acc"] for d in kept] for t in ("lambada_openai", "arc_easy", "piqa")}
    ).to_pandas()
    expected = pg.partial_corr(frame, x="arc_easy", y="piqa", covar="lambada_openai")["r"].iloc[0]
    assert rows[("arc_easy", "piqa")]["r"] == pytest.approx(expected, abs=1e-12)


def test_list_valued_num_fewshot_maps_to_the_tasks_in_order(tmp_path):
    source = pythia_files("410m")[0]
    doc = json.loads(source.read_text())
    tasks = list(doc["results"])
    doc["config"]["num_fewshot"] = [i % 3 for i in range(len(tasks))]
    path = write(tmp_path / source.name, doc)
    with ood_store.open(tmp_path / "s.duckdb") as store:
        report = store.ingest([path])
        shots = dict(store.query("SELECT DISTINCT task, num_fewshot FROM scores").rows())
        evaluation = store.query("SELECT num_fewshot FROM evaluations").rows()
    assert report.ok and not report.file_warnings
    assert shots == {task: i % 3 for i, task in enumerate(tasks)}
    assert evaluation == [(None,)]  # not one count for every task


def test_a_list_of_shots_that_does_not_match_the_tasks_stores_null_with_a_warning(tmp_path, runner):
    source = pythia_files("410m")[0]
    doc = json.loads(source.read_text())
    doc["config"]["num_fewshot"] = [0, 5]
    path = write(tmp_path / source.name, doc)
    db = tmp_path / "s.duckdb"
    result = runner.invoke(main, ["--db", str(db), "ingest", str(path)])
    assert result.exit_code == 0, result.output
    tasks = len(doc["results"])
    warning = f"Warning: {path}: config.num_fewshot: 2 shot counts for {tasks} tasks; shots stored as NULL"
    assert warning in result.output.splitlines()
    with ood_store.open(db, read_only=True) as store:
        assert store.query("SELECT DISTINCT num_fewshot FROM scores").rows() == [(None,)]


def test_numbers_are_the_same_whichever_parser_reads_the_file(tmp_path):
    """A file with NaN is read by the standard library, one without by orjson: the scores agree."""
    source = pythia_files("1.4b")[3]
    doc = json.loads(source.read_text())
    plain = write(tmp_path / "plain.json", doc)
    doc["results"]["extra"] = {"acc": math.nan}
    with_nan = write(tmp_path / "with_nan.json", doc)
    with ood_store.open(tmp_path / "s.duckdb") as store:
        assert store.ingest([plain, with_nan]).ok
        rows = store.query(
            "SELECT e.source_path, s.task, s.metric, s.value, s.stderr FROM scores_all s "
            "JOIN evaluations e USING (evaluation_id) WHERE s.task <> 'extra'"
        ).rows()
    by_file: dict[str, dict] = {}
    for path, *key, value, stderr in rows:
        by_file.setdefault(path, {})[tuple(key)] = (value, stderr)
    first, second = by_file.values()
    assert first == second and len(first) == sum(
        1 for e in json.loads(source.read_text())["results"].values() for k in e if not k.endswith("_stderr")
    )
    assert np.isnan(doc["results"]["extra"]["acc"])


def test_a_pair_left_with_too_few_checkpoints_says_why_in_reason(tmp_path, copy_file):
    """Six checkpoints, two of them NaN for arc_easy: four are left, fewer than a line needs."""
    copies = [copy_file(f) for f in pythia_files("410m")[:6]]
    for path in (copies[1], copies[4]):
        doc = json.loads(path.read_text())
        doc["results"]["arc_easy"]["acc"] = math.nan
        write(path, doc)
    with ood_store.open(tmp_path / "s.duckdb") as store:
        assert store.ingest(copies).ok
        [row] = partial_correlations(store, "lambada_openai", ["arc_easy", "piqa"]).table.to_dicts()
    assert row["n"] == 4 and math.isnan(row["r"])
    assert row["reason"] == (
        "too few checkpoints: n=4, the linear residualizer needs at least 5; "
        "non-finite scores treated as missing: 2 of arc_easy"
    )
    assert row["note"] is None


# One rule for values and stderrs, whatever the format: the literal as written in the file, and what is
# stored for it (None: NULL; a float: that value), or the rejection's message for a literal beyond a DOUBLE.
LITERALS = [
    ("NaN", None),
    ("Infinity", math.inf),
    ("-Infinity", -math.inf),
    ("1e999", "1e999 does not fit a DOUBLE"),
    ("-1e999", "-1e999 does not fit a DOUBLE"),
    ("1" + "0" * 400, "1" + "0" * 19 + "... (401 characters) does not fit a DOUBLE"),  # the integer 10**400
]
MARK = 0.123456789  # written where the literal goes, then replaced in the text


@pytest.mark.parametrize("key", ["acc", "acc_stderr"])
@pytest.mark.parametrize(("literal", "expected"), LITERALS)
def test_one_rule_for_values_and_stderrs(runner, tmp_path, key, literal, expected):
    """A value or a stderr written as ``literal``, in a real file ingested beside two good ones."""
    source, good = pythia_files("160m")[6], pythia_files("410m")[:2]
    doc = json.loads(source.read_text())
    doc["results"]["arc_easy"][key] = MARK
    path = tmp_path / "bad" / source.name
    path.parent.mkdir()
    path.write_text(json.dumps(doc).replace(str(MARK), literal))
    db = tmp_path / "s.duckdb"
    result = runner.invoke(main, ["--db", str(db), "ingest", str(path), *map(str, good)])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    with ood_store.open(db, read_only=True) as store:
        stored = dict(store.query("SELECT source_path, evaluation_id FROM evaluations").rows())
        rows = store.query(
            "SELECT value, stderr FROM evaluation_scores WHERE evaluation_id = $id AND task = 'arc_easy' "
            "AND metric = 'acc'",
            id=stored.get(str(path.resolve()), -1),
        ).rows()
    assert {str(g.resolve()) for g in good} <= stored.keys()
    if isinstance(expected, str):  # a bad value: the file is named with the field, the others go in
        assert result.exit_code == 1
        assert f'  {path}: results["arc_easy"]["{key}"]: {expected}' in result.output.splitlines()
        assert len(stored) == 2 and rows == []
        return
    assert result.exit_code == 0, result.output
    original = json.loads(source.read_text())["results"]["arc_easy"]
    value, stderr = rows[0]
    assert (value, stderr) == ((expected, original["acc_stderr"]) if key == "acc" else (original["acc"], expected))


WANDB_HISTORY = FIXTURES / "wandb" / "opt-125m-mnli-s1" / "history.csv"


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("inf", math.inf),  # as pandas writes it
        ("Infinity", math.inf),  # as W&B's JSON writes it
        ("-Infinity", -math.inf),
        ("-inf", -math.inf),
        ("NaN", "no score"),  # a W&B history's NaN (like an empty cell) is a key not logged at that step
        ("1e999", "1e999 does not fit a DOUBLE"),
        ("-1e400", "-1e400 does not fit a DOUBLE"),
    ],
)
def test_the_same_rule_in_a_wandb_history(tmp_path, cell, expected):
    rows = list(csv.reader(WANDB_HISTORY.read_text().splitlines()))
    column = rows[0].index("eval/hans_accuracy")
    at = next(i for i, row in enumerate(rows[1:], start=1) if row[column])  # the first row with a hans score
    step = int(rows[at][rows[0].index("_step")])
    rows[at][column] = cell
    path = tmp_path / "opt-s1.csv"
    with path.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    with ood_store.open(tmp_path / "s.duckdb") as store:
        report = store.ingest([path])
        got = store.query("SELECT value FROM scores WHERE task = 'hans' AND step = $step", step=step).rows()
    if isinstance(expected, str) and expected != "no score":
        [outcome] = report.rejected
        assert outcome.reason == f"{path}: eval/hans_accuracy, row {at}: {expected}"
        return
    assert report.ok, report.rejected
    assert got == ([] if expected == "no score" else [(expected,)])


@pytest.mark.parametrize(
    ("literal", "expected"),
    [("NaN", math.nan), ("Infinity", math.inf), ("-Infinity", -math.inf), ("1e999", math.inf)],
)
@pytest.mark.parametrize(("task", "metric"), [("toy_nli", "acc"), ("toy_gen", "exact_match")])
def test_per_sample_metrics_keep_what_duckdbs_reader_reads(tmp_path, task, metric, literal, expected):
    """A per-sample metric (in both layouts: log-likelihood pairs, generated text) is kept as DuckDB's
    JSON reader reads it: NaN and ±Infinity are data, and so is a literal beyond a DOUBLE, as ±Infinity."""
    folder = tmp_path / "e"
    shutil.copytree(V0413 / "toy-run__checkpoint-10", folder)
    samples = next(folder.glob(f"samples_{task}_2026*.jsonl"))
    lines = samples.read_text().splitlines()
    line = json.loads(lines[0])
    line[metric] = 0.123456789
    lines[0] = json.dumps(line).replace("0.123456789", literal)
    samples.write_text("\n".join(lines) + "\n")
    with ood_store.open(tmp_path / "s.duckdb") as store:
        assert store.ingest([folder]).ok
        [(got,)] = store.query(
            f"SELECT metrics['{metric}'] FROM samples WHERE task = $task AND doc_id = $doc",
            task=task,
            doc=line["doc_id"],
        ).rows()
    assert got == expected or (math.isnan(expected) and math.isnan(got))
