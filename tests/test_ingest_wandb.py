"""W&B run histories (tests/fixtures/wandb/, logged with the real wandb library offline: see make.py there).

Expected values are read from the files here with the csv module and pyarrow, not ood-store."""

from __future__ import annotations

import csv
import json

import pyarrow.parquet as pq
import pytest
import yaml

import ood_store
from conftest import FIXTURES, table_dump
from ood_store._cli import main
from ood_store._errors import InputError

WANDB = FIXTURES / "wandb"
RUN1 = WANDB / "opt-125m-mnli-s1" / "history.csv"
RUN2 = WANDB / "opt-125m-mnli-s2.parquet"
SCORES_SQL = "SELECT run, step, task, metric, value FROM scores"
# Run 1's config as attributes: nested keys joined with ".", lists as JSON, keys starting with "_" left out, the
# seed in its own column (written out by hand from config.yaml).
RUN1_ATTRIBUTES = {
    "model_name_or_path": "facebook/opt-125m",
    "learning_rate": 2e-05,
    "per_device_train_batch_size": 16,
    "lora.r": 8,
    "lora.alpha": 16,
    "eval_sets": '["mnli", "hans", "anli_r1"]',
}


def csv_rows(path=RUN1) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def trainer_scores(run: str, suffixes: tuple[str, ...] = ("_accuracy",)) -> set[tuple]:
    """(run, global step, task, metric, value) of every eval/<set>_accuracy cell (and of other suffixes)."""
    out = set()
    for row in csv_rows():
        for column, cell in row.items():
            if cell and column.startswith("eval/") and column.endswith(suffixes):
                task, _, metric = column.removeprefix("eval/").rpartition("_")
                out.add((run, int(row["train/global_step"]), task, metric, float(cell)))
    return out


def test_a_trainer_history_by_global_step_with_its_config(db, runner):
    result = runner.invoke(
        main, ["--db", str(db), "ingest", str(RUN1), "--run", "opt-125m-mnli-s1", "--wandb-step", "train/global_step"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == f"Ingested 1 file into {db}: 18 scores, 0 samples, 1 run."
    with ood_store.open(db, read_only=True) as store:
        got = set(store.query(SCORES_SQL).rows())
        evaluations = store.query("SELECT step, source_format, format, identity_from FROM evaluations ORDER BY step")
        run = store.query("SELECT seed, attributes FROM runs").rows()
    expected = trainer_scores("opt-125m-mnli-s1")
    assert len(expected) == 6 * 3  # steps 50..300, three accuracies
    assert got == expected  # the Trainer's loss, runtime and throughput columns are not scores
    assert evaluations["step"].to_list() == [50, 100, 150, 200, 250, 300]
    # the step is the history's own field, the run given by --run
    assert set(evaluations["source_format"]) == {"wandb"} and set(evaluations["identity_from"]) == {"field+flags"}
    seed, attributes = run[0]
    assert seed == 1
    assert json.loads(attributes) == RUN1_ATTRIBUTES  # from config.yaml beside the history


def run_config() -> dict:
    """Run 1's config as W&B's public API gives it (``run.config``, wandb/apis/public/runs.py): each
    ``{desc, value}`` of config.yaml unwrapped, W&B's internal keys (``_wandb``, ``wandb_version``) left out."""
    raw = yaml.safe_load((RUN1.parent / "config.yaml").read_text())
    return {key: entry["value"] for key, entry in raw.items() if key not in ("_wandb", "wandb_version")}


def test_a_config_json_beside_the_history_or_named_by_wandb_config_gives_the_attributes(db, runner, tmp_path):
    beside = tmp_path / "run1"
    beside.mkdir()
    (beside / "history.csv").write_bytes(RUN1.read_bytes())
    (beside / "config.json").write_text(json.dumps(run_config()))  # json.dump(run.config, ...)
    args = ["--db", str(db), "ingest", "--wandb-step", "train/global_step"]
    result = runner.invoke(main, [*args, str(beside / "history.csv"), "--run", "s1"])
    assert result.exit_code == 0, result.output
    elsewhere = tmp_path / "configs" / "s2.json"
    elsewhere.parent.mkdir()
    elsewhere.write_text(json.dumps({"seed": 2, "learning_rate": 3e-5, "optimizer": {"name": "adamw", "eps": 1e-8}}))
    result = runner.invoke(main, ["--db", str(db), "ingest", str(RUN2), "--wandb-map", "eval/{task}/{metric}",
                                  "--wandb-config", str(elsewhere)])  # fmt: skip
    assert result.exit_code == 0, result.output
    with ood_store.open(db, read_only=True) as store:
        runs = {
            run: (seed, json.loads(a)) for run, seed, a in store.query("SELECT run, seed, attributes FROM runs").rows()
        }
    assert runs == {
        "s1": (1, RUN1_ATTRIBUTES),
        "opt-125m-mnli-s2": (2, {"learning_rate": 3e-5, "optimizer.name": "adamw", "optimizer.eps": 1e-8}),
    }
    with ood_store.open(db) as store, pytest.raises(InputError, match="no such file") as raised:
        store.ingest([RUN2], wandb_config=tmp_path / "no.json")
    assert raised.value.parameter == "wandb_config"


def test_a_parquet_history_by_step_with_nested_and_slashed_keys(db):
    table = pq.read_table(RUN2).to_pylist()
    with ood_store.open(db) as store:
        report = store.ingest([RUN2], wandb_map=["eval.{task}.{metric}", "eval/{task}/{metric}"])
        assert report.ok, report.rejected
        got = set(store.query(SCORES_SQL).rows())
    expected = {("opt-125m-mnli-s2", row["_step"], "mnli", "accuracy", row["eval.mnli.accuracy"]) for row in table}
    expected |= {("opt-125m-mnli-s2", row["_step"], "hans", "accuracy", row["eval/hans/accuracy"]) for row in table}
    assert got == expected and len(got) == 8  # the run is the file's name


def test_patterns_map_columns_to_a_task_and_metric_of_ones_choosing(db):
    with ood_store.open(db) as store:
        mapping = ["eval/hans_accuracy=hans:acc", "eval/{task}_accuracy={task}:acc"]
        assert store.ingest([RUN1], overrides=ood_store._ingest.Overrides(run="r"), wandb_map=mapping).ok
        got = store.query("SELECT DISTINCT task, metric FROM scores ORDER BY task").rows()
        steps = store.query("SELECT DISTINCT step FROM scores ORDER BY step")["step"].to_list()
    assert got == [("anli_r1", "acc"), ("hans", "acc"), ("mnli", "acc")]  # no loss: no pattern names it
    # _step is W&B's own counter: the evaluation rows are the ones logged after each 50th training step
    assert steps == [int(row["_step"]) for row in csv_rows() if row["eval/hans_accuracy"]]


def test_a_history_exported_again_with_more_steps_adds_only_the_new_ones(db, tmp_path, runner):
    rows = RUN1.read_text().splitlines(keepends=True)
    cut = tmp_path / "early" / "opt-125m-mnli-s1.csv"
    cut.parent.mkdir()
    cut.write_text("".join(rows[:17]))  # up to global step 160: evaluations at 50, 100, 150
    args = ["--db", str(db), "ingest", "--wandb-step", "train/global_step"]
    assert runner.invoke(main, [*args, str(cut)]).exit_code == 0
    full = tmp_path / "later" / "opt-125m-mnli-s1.csv"
    full.parent.mkdir()
    full.write_bytes(RUN1.read_bytes())
    result = runner.invoke(main, [*args, str(full)])
    assert result.exit_code == 0
    with ood_store.open(db, read_only=True) as store:
        per_step = store.query("SELECT step, count(*) AS n FROM evaluations GROUP BY step ORDER BY step").rows()
    assert per_step == [(step, 1) for step in (50, 100, 150, 200, 250, 300)]
    before = table_dump(db)
    again = runner.invoke(main, [*args, str(full)])
    assert "Already present: 1 file." in again.output and table_dump(db) == before


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace(",50,0.6251", ",50.5,0.6251"),
            "train/global_step, row 6: expected an integer",
        ),
        (lambda t: t.replace("0.6251,0.5241", "high,0.5241"), "eval/mnli_accuracy, row 6: expected a number"),
    ],
)
def test_a_bad_cell_rejects_the_file_naming_row_and_column(db, tmp_path, runner, edit, message):
    path = tmp_path / "h.csv"
    path.write_text(edit(RUN1.read_text()))
    with ood_store.open(db) as store:  # a store with a history in it already
        assert store.ingest([RUN2], wandb_map=["eval/{task}/{metric}"]).ok
    before = table_dump(db)
    result = runner.invoke(main, ["--db", str(db), "ingest", str(path), "--wandb-step", "train/global_step"])
    assert result.exit_code == 1
    assert any(line.startswith(f"  {path}: {message}") for line in result.output.splitlines()), result.output
    assert "Ingested 0 files" in result.output
    assert table_dump(db) == before  # the rows before the bad one did not go in either


def test_two_values_for_one_step_are_refused(db, tmp_path, runner):
    rows = csv_rows()
    double = [dict(rows[5]), {**rows[5], "": "99", "_step": "99", "eval/hans_accuracy": "0.1"}]
    path = tmp_path / "h.csv"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(double)
    result = runner.invoke(main, ["--db", str(db), "ingest", str(path), "--wandb-step", "train/global_step"])
    assert result.exit_code == 1
    assert f"  {path}: eval/hans_accuracy: step 50 has two different values (0.5241, 0.1)" in result.output


def test_a_bad_pattern_is_a_one_line_error_before_anything_is_read(db, runner):
    result = runner.invoke(main, ["--db", str(db), "ingest", str(RUN1), "--wandb-map", "eval/{task}={task}"])
    assert (result.exit_code, result.output) == (
        1,
        "Error: --wandb-map: 'eval/{task}={task}': expected PATTERN or PATTERN=TASK:METRIC\n",
    )


def test_a_csv_without_the_step_column_is_not_a_history(db, runner, tmp_path):
    path = tmp_path / "table.csv"
    path.write_text("task,acc\nhans,0.5\n")
    result = runner.invoke(main, ["--db", str(db), "ingest", str(path)])
    assert result.exit_code == 1
    assert (
        f'  {path}: not a results file ood-store reads: a CSV file without the step column "_step" (a W&B history '
        "has it; --wandb-step names another)"
    ) in result.output.splitlines()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "table.csv").write_text("task,acc\nhans,0.5\n")
    (tmp_path / "run" / "h.csv").write_bytes(RUN1.read_bytes())
    found = runner.invoke(main, ["--db", str(db), "ingest", str(tmp_path / "run"), "--run", "r"])
    skipped = tmp_path / "run" / "table.csv"
    assert found.exit_code == 0
    assert f"Skipped 1 file (not results in a format ood-store reads): {skipped}." in found.output
