"""Which format a file is taken for, and messages that name it: inspect_ai logs by content under any name,
known binary files named as what they are, files a folder search skips named, W&B's Trainer bookkeeping never
a score unless a pattern names it, W&B campaigns by run, not by folder."""

from __future__ import annotations

import csv
import io
import json
import shutil
import struct
from pathlib import Path

import pytest

import ood_store
from conftest import FIXTURES, V04, table_dump
from ood_store._cli import main
from ood_store._ingest import Overrides

pytestmark = pytest.mark.xdist_group("inspect")

INSPECT_REAL = FIXTURES / "inspect-real"
RESULTS = V04 / "saucam-PowerBot-8B" / "mmlu.json"
HISTORY = FIXTURES / "wandb" / "opt-125m-mnli-s1" / "history.csv"
# A W&B run's binary file starts with this header (wandb/sdk/internal/datastore.py: ident ":W&B", magic
# 0xBEE1, version 0, packed "<4sHB"), then its records.
WANDB_HEADER = struct.pack("<4sHB", b":W&B", 0xBEE1, 0)


def scores(db: Path) -> set[tuple]:
    with ood_store.open(db, read_only=True) as store:
        return set(store.query("SELECT run, step, task, metric, filter, value, stderr FROM scores_all").rows())


def test_inspect_logs_under_any_name_are_read_by_content(tmp_path, inspect_logs):
    """Logs inspect_ai itself writes under names of the user's choosing (write_eval_log), as .json, as .eval,
    and a .eval archive under another ending, give what the log under its default name gives."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(inspect_logs["step200"]))
    folder = tmp_path / "named"
    folder.mkdir()
    write_eval_log(log, str(folder / "opt-mnli step200.json"))
    write_eval_log(log, str(folder / "results.eval"))
    shutil.copy(folder / "results.eval", tmp_path / "archive.zip")
    with ood_store.open(tmp_path / "default.duckdb") as store:
        assert store.ingest([inspect_logs["step200"]]).ok
    for path in (folder / "opt-mnli step200.json", folder / "results.eval", tmp_path / "archive.zip"):
        db = tmp_path / f"{path.name}.duckdb"
        with ood_store.open(db) as store:
            report = store.ingest([path])
        assert report.ok, report.rejected
        assert scores(db) == scores(tmp_path / "default.duckdb")


def test_inspect_ais_own_test_logs_and_a_log_without_a_version(tmp_path):
    """inspect_ai's log_formats test log (.json and .eval) and an inspect log without "version", which was
    reported as an lm-eval file naming no model: each gives the scores its JSON holds."""
    with ood_store.open(tmp_path / "store.duckdb") as store:
        report = store.ingest([INSPECT_REAL])
        got = store.query("SELECT source_path, task, metric, filter, value, stderr FROM scores_all").rows()
    assert report.ok and len(report.ingested) == 4, report.rejected
    by_file: dict[str, set] = {}
    for path, *row in got:
        by_file.setdefault(Path(path).name, set()).add(tuple(row))
    for name in ("log_formats.json", "data_with_llm_scoring.json"):
        doc = json.loads((INSPECT_REAL / name).read_text())
        expected = set()
        for score in doc["results"]["scores"]:
            metrics = {m["name"]: m["value"] for m in score["metrics"].values()}
            stderr = metrics.pop("stderr", None)
            expected |= {(doc["eval"]["task"].split("/")[-1], metric, score["name"], value, stderr)
                         for metric, value in metrics.items()}  # fmt: skip
        assert by_file[name] == expected
    assert "version" not in json.loads((INSPECT_REAL / "data_with_llm_scoring.json").read_text())
    assert by_file["log_formats.eval"] == by_file["log_formats.json"]


def test_a_w_and_b_run_file_is_named_with_what_reads_it(runner, tmp_path):
    run_file = tmp_path / "run-20240101_120000-abc123" / "run-abc123.wandb"
    run_file.parent.mkdir()
    run_file.write_bytes(WANDB_HEADER + bytes(range(256)))
    result = runner.invoke(main, ["--db", str(tmp_path / "store.duckdb"), "ingest", str(run_file)])
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        f"  {run_file}: not a results file ood-store reads: a W&B run file (binary records wandb writes while a run "
        "logs), not a history: `wandb sync` the run folder, then ingest its history as W&B exports it "
        "(`run.history().to_csv(...)`)"
    )
    assert "UTF-8" not in result.output
    # found by searching a folder beside a history: skipped, and named
    shutil.copy(HISTORY, run_file.parent / "history.csv")
    result = runner.invoke(main, ["--db", str(tmp_path / "store.duckdb"), "ingest", str(run_file.parent)])
    assert result.exit_code == 0, result.output
    assert f"Skipped 1 file (not results in a format ood-store reads): {run_file}." in result.output.splitlines()


def test_skipped_files_are_named(runner, tmp_path):
    """The first few by name, each (with -v) with what it is instead; a folder of nothing but such files names
    them in its rejection."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(RESULTS, folder / "mmlu.json")
    names = ["a-notes.json", "b-metadata.json", "c-summary.json", "d-other.json"]
    for name in names:
        (folder / name).write_text(json.dumps({"note": name}))
    db = tmp_path / "store.duckdb"
    result = runner.invoke(main, ["--db", str(db), "ingest", str(folder)])
    assert result.exit_code == 0, result.output
    listed = ", ".join(str(folder / n) for n in names[:3])
    assert f"Skipped 4 files (not results in a format ood-store reads): {listed} and 1 more (-v names them)." in (
        result.output.splitlines()
    )
    result = runner.invoke(main, ["--db", str(db), "ingest", str(folder), "-v"])
    lines = result.output.splitlines()
    at = lines.index("Skipped 4 files (not results in a format ood-store reads):")
    why = (
        'JSON with none of a top-level "results" object (lm-eval), "schema_version", "model_info" and '
        '"evaluation_results" (Every Eval Ever), an "eval" object naming a "task" (inspect_ai)'
    )
    assert lines[at + 1 : at + 5] == [f"  {folder / n}: {why}" for n in names]
    (folder / "mmlu.json").unlink()
    result = runner.invoke(main, ["--db", str(tmp_path / "other.duckdb"), "ingest", str(folder)])
    assert result.exit_code == 1
    named = "; ".join(f"{n}: {why}" for n in names[:3])
    expected = f"  {folder}: no results files found (lm-eval, Every Eval Ever, inspect_ai or W&B history); it holds "
    assert f"{expected}{named}; and 1 other file" in result.output


def test_a_rejected_file_says_what_it_was_read_as(runner, tmp_path):
    doc = json.loads(RESULTS.read_text())
    doc["config"]["model_args"] = None
    del doc["model_name"]
    path = tmp_path / "mmlu.json"
    path.write_text(json.dumps(doc))
    result = runner.invoke(main, ["--db", str(tmp_path / "store.duckdb"), "ingest", str(path), "-v"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    at = lines.index(f"  {path}: config.model_args: names no model (no pretrained=, no model_name): cannot tell "
                     "which run it is; pass --run")  # fmt: skip
    assert lines[at + 1] == '    read as lm-eval results (JSON with a top-level "results" object)'


def test_a_zip_archive_of_something_else_is_named(runner, tmp_path):
    import zipfile

    path = tmp_path / "results.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("results.json", RESULTS.read_text())
    result = runner.invoke(main, ["--db", str(tmp_path / "store.duckdb"), "ingest", str(path)])
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        f"  {path}: not a results file ood-store reads: a zip archive without an inspect_ai log's header.json"
    )


def renamed_history(tmp_path: Path, renames: dict[str, str]) -> Path:
    """Run 1's history with some columns renamed as the Trainer names them for a single eval set."""
    rows = list(csv.reader(io.StringIO(HISTORY.read_text())))
    rows[0] = [renames.get(column, column) for column in rows[0]]
    path = tmp_path / "history" / "run1.csv"
    path.parent.mkdir(exist_ok=True)
    with path.open("w", newline="") as file:
        csv.writer(file).writerows(rows)
    return path


def test_trainer_bookkeeping_is_never_a_score_unless_a_pattern_names_it(tmp_path):
    """With `wandb_map` eval/{metric}, the Trainer's eval/runtime, eval/samples_per_second, eval/steps_per_second,
    eval/loss and train/epoch are not scores; a pattern that names one (eval/loss=mnli:loss) takes it."""
    path = renamed_history(tmp_path, {"eval/hans_runtime": "eval/runtime", "eval/hans_samples_per_second":
                                      "eval/samples_per_second", "eval/hans_steps_per_second": "eval/steps_per_second",
                                      "eval/mnli_loss": "eval/loss"})  # fmt: skip
    options = {"wandb_step": "train/global_step"}
    with ood_store.open(tmp_path / "a.duckdb") as store:
        assert store.ingest(
            [path], wandb_map=["eval/{metric}=mnli:{metric}", "train/{metric}=mnli:{metric}"], **options
        ).ok
        metrics = {row[0] for row in store.query("SELECT DISTINCT metric FROM scores").rows()}
    assert metrics == {"mnli_accuracy", "hans_accuracy", "anli_r1_accuracy", "learning_rate"}
    with ood_store.open(tmp_path / "b.duckdb") as store:
        assert store.ingest([path], wandb_map=["eval/loss=mnli:loss", "eval/{task}_{metric}"], **options).ok
        got = set(store.query("SELECT DISTINCT task, metric FROM scores").rows())
    assert got == {("mnli", "loss"), ("mnli", "accuracy"), ("hans", "accuracy"), ("anli_r1", "accuracy")}


def test_one_history_exported_into_two_folders_is_one_campaign(runner, tmp_path):
    """Exported early (three evaluations) into one folder and later (all six) into another: the campaign is the
    run, not the folder, so the later export adds steps to the same campaign instead of mixing two."""
    rows = list(csv.reader(io.StringIO(HISTORY.read_text())))
    header, body = rows[0], rows[1:]
    step = header.index("train/global_step")
    early = [r for r in body if int(r[step]) <= 150]
    for folder, part in (("exported-june", early), ("exported-july", body)):
        (tmp_path / folder).mkdir()
        with (tmp_path / folder / "opt-125m-mnli-s1.csv").open("w", newline="") as file:
            csv.writer(file).writerows([header, *part])
    db = tmp_path / "store.duckdb"
    for folder in ("exported-june", "exported-july"):
        result = runner.invoke(
            main, ["--db", str(db), "ingest", str(tmp_path / folder), "--wandb-step", "train/global_step"]
        )
        assert result.exit_code == 0, result.output
        assert "campaign" not in result.output.lower()  # no campaigns mixed
    with ood_store.open(db, read_only=True) as store:
        rows_ = store.query("SELECT campaign, count(*) FROM evaluations GROUP BY campaign").rows()
    assert rows_ == [("opt-125m-mnli-s1", 6)]
    # a history in W&B's own run folder: the run id its name holds
    inside = tmp_path / "wandb" / "run-20240601_101500-k3x9q2zt" / "files" / "history.csv"
    inside.parent.mkdir(parents=True)
    shutil.copy(HISTORY, inside)
    with ood_store.open(tmp_path / "runfolder.duckdb") as store:
        report = store.ingest([inside], wandb_step="train/global_step", dry_run=True)
    assert [(f.campaign, f.campaign_from) for f in report.planned] == [("k3x9q2zt", "W&B run id")]


def test_a_dry_run_stores_nothing(runner, tmp_path, inspect_logs):
    db = tmp_path / "store.duckdb"
    with ood_store.open(db) as store:
        assert store.ingest([RESULTS]).ok
    before = table_dump(db)
    result = runner.invoke(
        main, ["--db", str(db), "ingest", "--dry-run", str(RESULTS), str(inspect_logs["checkpoint"])]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    at = lines.index(str(inspect_logs["checkpoint"]))
    assert lines[at + 2 : at + 4] == ["  run       runs/opt-mnli-s1", "  step      500"]
    assert lines[at + 4] == ("  from      path: checkpoint folder checkpoint-500 of runs/opt-mnli-s1/checkpoint-500")
    assert "Already present: 1 file." in lines
    assert table_dump(db) == before


def test_a_dry_run_names_the_flags_that_gave_run_model_and_campaign(runner, tmp_path):
    """The library says which parameter gave what (`run`, `model`, `campaign`); the command line names its flags."""
    args = ["--run", "my-run", "--step", "7", "--model", "org/my-model", "--campaign", "mine"]
    result = runner.invoke(main, ["--db", str(tmp_path / "s.duckdb"), "ingest", "--dry-run", str(RESULTS), *args])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    at = lines.index(str(RESULTS))
    assert lines[at + 2 : at + 6] == [
        "  run       my-run",
        "  step      7",
        "  from      flags: --run my-run --step 7",
        "  campaign  mine (--campaign)",
    ]
    history = runner.invoke(main, ["--db", str(tmp_path / "s.duckdb"), "ingest", "--dry-run", str(HISTORY),
                                   "--run", "opt-s1", "--wandb-step", "train/global_step"])  # fmt: skip
    assert history.exit_code == 0, history.output
    assert "  from      field+flags: --run opt-s1, step column train/global_step" in history.output.splitlines()
    model = runner.invoke(main, ["--db", str(tmp_path / "s.duckdb"), "ingest", "--dry-run", str(RESULTS),
                                 "--model", "org/my-model"])  # fmt: skip
    assert "  from      model: --model org/my-model" in model.output.splitlines(), model.output


def test_shots_given_fill_only_what_the_files_lack(tmp_path, inspect_logs):
    """`shots` is the count of scores whose file gives none (an inspect_ai log, a W&B history); an lm-eval
    file's own counts (3-shot BBH, 5-shot MMLU-Pro, as its n-shot says) are kept."""
    leaderboard = next((V04 / "csabakecskemeti").rglob("results_*.json"))
    with ood_store.open(tmp_path / "store.duckdb") as store:
        report = store.ingest([leaderboard, inspect_logs["step100"], HISTORY], overrides=Overrides(shots=0))
        assert report.ok, report.rejected
        rows = store.query("SELECT e.source_format, s.task, s.num_fewshot FROM evaluation_scores s "
                           "JOIN evaluations e USING (evaluation_id) WHERE NOT s.is_group").rows()  # fmt: skip
    n_shot = json.loads(leaderboard.read_text())["n-shot"]
    assert {(task, shots) for fmt, task, shots in rows if fmt == "lm-eval"} == {
        (task, n_shot[task]) for fmt, task, _ in rows if fmt == "lm-eval"
    }
    assert {shots for fmt, _, shots in rows if fmt != "lm-eval"} == {0}
    assert {fmt for fmt, _, _ in rows} == {"lm-eval", "inspect", "wandb"}
