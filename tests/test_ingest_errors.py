"""Bad input: one clear line naming the file and the field, exit status 1, store unchanged.

Each case copies a real lm-eval file and breaks one thing in it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ood_store
from conftest import V04, V0413, pythia_files, table_dump
from ood_store._cli import main

PYTHIA_FILE = pythia_files("160m")[0]
LEADERBOARD = next((V04 / "csabakecskemeti").rglob("results_*.json"))
MEDNLI = next((V04 / "araag2-MedNLI").rglob("results_*.json"))


@pytest.fixture
def seeded_db(db):
    """A store that already holds one Pythia series, so 'unchanged' means something."""
    with ood_store.open(db) as store:
        assert store.ingest(pythia_files("160m")).ok
    return db


def edit_json(copy_file, source: Path, change) -> Path:
    path = copy_file(source)
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    return path


def run_ingest(runner, db, *args):
    result = runner.invoke(main, ["--db", str(db), "ingest", "-q", *map(str, args)])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def rejected_lines(result) -> list[str]:
    lines = result.output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Rejected:"))
    return [line.strip() for line in lines[start + 1 :] if line.startswith("  ")]


def assert_rejected(runner, db, path, expected: str):
    before = table_dump(db)
    result = run_ingest(runner, db, path)
    assert result.exit_code == 1
    assert rejected_lines(result) == [expected]
    assert table_dump(db) == before


def test_truncated_json(runner, seeded_db, copy_file):
    path = copy_file(PYTHIA_FILE)
    text = path.read_text()[:1000]
    path.write_text(text)
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        expected = (
            f"{path}: truncated JSON at line {exc.lineno}, column {exc.colno}: {exc.msg.removesuffix(' starting at')}"
        )
    assert_rejected(runner, seeded_db, path, expected)


def test_truncated_json_message(runner, seeded_db, copy_file):
    path = copy_file(PYTHIA_FILE)
    path.write_text('{"results": {"arc_easy": {"acc": 0.5')
    assert_rejected(runner, seeded_db, path, f"{path}: truncated JSON at line 1, column 37: Expecting ',' delimiter")


def test_invalid_json(runner, seeded_db, copy_file):
    path = copy_file(PYTHIA_FILE)
    path.write_text('{"results": {"arc_easy": {"acc": 0.5,, }}}')
    assert_rejected(
        runner,
        seeded_db,
        path,
        f"{path}: invalid JSON at line 1, column 38: Expecting property name enclosed in double quotes",
    )


def test_empty_file(runner, seeded_db, copy_file):
    path = copy_file(PYTHIA_FILE)
    path.write_text("")
    assert_rejected(runner, seeded_db, path, f"{path}: empty file")


def test_not_utf8(runner, seeded_db, copy_file):
    path = copy_file(PYTHIA_FILE)
    path.write_bytes(b'{"results": "\xff\xfe"}')
    assert_rejected(runner, seeded_db, path, f"{path}: not UTF-8 text (byte 13)")


def test_wrong_type_value(runner, seeded_db, copy_file):
    path = edit_json(copy_file, LEADERBOARD, lambda d: d["results"]["hellaswag"].update({"acc,none": "0.59"}))
    assert_rejected(
        runner, seeded_db, path, f'{path}: results["hellaswag"]["acc,none"]: expected a number, got string "0.59"'
    )


def test_boolean_value(runner, seeded_db, copy_file):
    path = edit_json(copy_file, PYTHIA_FILE, lambda d: d["results"]["arc_easy"].update({"acc": True}))
    assert_rejected(runner, seeded_db, path, f'{path}: results["arc_easy"]["acc"]: expected a number, got boolean true')


def test_null_value(runner, seeded_db, copy_file):
    path = edit_json(copy_file, LEADERBOARD, lambda d: d["results"]["hellaswag"].update({"acc_norm,none": None}))
    assert_rejected(
        runner, seeded_db, path, f'{path}: results["hellaswag"]["acc_norm,none"]: expected a number, got null'
    )


def test_wrong_type_stderr(runner, seeded_db, copy_file):
    path = edit_json(copy_file, LEADERBOARD, lambda d: d["results"]["hellaswag"].update({"acc_stderr,none": [0.1]}))
    assert_rejected(
        runner,
        seeded_db,
        path,
        f'{path}: results["hellaswag"]["acc_stderr,none"]: expected a number or "N/A", got a list',
    )


# NaN and Infinity values are data, not errors: tests/test_ingest_nonfinite.py. Numeric
# literals that do not fit a DOUBLE (1e999) are: tests/test_ingest_limits.py.


def test_nan_stderr_is_stored_as_null(db, copy_file):
    """lm-eval writes NaN when it cannot estimate a stderr: same as "N/A", not an error."""
    path = copy_file(PYTHIA_FILE)
    doc = json.loads(path.read_text())
    doc["results"]["arc_easy"]["acc_stderr"] = float("nan")
    path.write_text(json.dumps(doc))
    with ood_store.open(db) as store:
        assert store.ingest([path]).ok
        row = store.query("SELECT value, stderr FROM scores WHERE task = 'arc_easy' AND metric = 'acc'").rows()
    assert row == [(doc["results"]["arc_easy"]["acc"], None)]


def test_missing_results_key(runner, seeded_db, copy_file):
    path = edit_json(copy_file, PYTHIA_FILE, lambda d: d.pop("results"))
    assert_rejected(
        runner,
        seeded_db,
        path,
        f'{path}: not a results file ood-store reads: JSON with none of a top-level "results" object (lm-eval), '
        '"schema_version", "model_info" and "evaluation_results" (Every Eval Ever), an "eval" object naming a '
        '"task" (inspect_ai)',
    )


def test_missing_model(runner, seeded_db, copy_file):
    path = edit_json(copy_file, PYTHIA_FILE, lambda d: d["config"].pop("model_args"))
    assert_rejected(
        runner,
        seeded_db,
        path,
        f"{path}: config.model_args: names no model (no pretrained=, no model_name): "
        "cannot tell which run it is; pass --run",
    )


def test_missing_model_is_fine_with_run_flag(runner, db, copy_file):
    path = edit_json(copy_file, PYTHIA_FILE, lambda d: d["config"].pop("model_args"))
    result = runner.invoke(main, ["--db", str(db), "ingest", "--run", "mine", "--step", "7", str(path)])
    assert result.exit_code == 0, result.output
    with ood_store.open(db, read_only=True) as store:
        assert store.query("SELECT DISTINCT run, step FROM scores").rows() == [("mine", 7)]


def test_model_args_of_wrong_type(runner, seeded_db, copy_file):
    path = edit_json(copy_file, PYTHIA_FILE, lambda d: d["config"].update({"model_args": 42}))
    assert_rejected(
        runner, seeded_db, path, f"{path}: config.model_args: expected a string, an object or null, got int"
    )


def test_entry_not_an_object(runner, seeded_db, copy_file):
    path = edit_json(copy_file, PYTHIA_FILE, lambda d: d["results"].update({"arc_easy": 0.5}))
    assert_rejected(runner, seeded_db, path, f'{path}: results["arc_easy"]: expected an object of metrics, got float')


def test_bad_n_shot(runner, seeded_db, copy_file):
    path = edit_json(copy_file, LEADERBOARD, lambda d: d["n-shot"].update({"hellaswag": "zero"}))
    assert_rejected(runner, seeded_db, path, f'{path}: n-shot["hellaswag"]: expected an integer, got string "zero"')


def test_section_of_wrong_type(runner, seeded_db, copy_file):
    path = edit_json(copy_file, LEADERBOARD, lambda d: d.update({"n-samples": []}))
    assert_rejected(runner, seeded_db, path, f"{path}: n-samples: expected an object, got a list")


def test_no_metric_values(runner, seeded_db, copy_file):
    def only_placeholders(doc):
        doc["results"] = {k: v for k, v in doc["results"].items() if v.get(" ") == " "}

    path = edit_json(copy_file, LEADERBOARD, only_placeholders)
    assert_rejected(runner, seeded_db, path, f"{path}: results: holds no metric values")


def test_folder_without_lm_eval_files(runner, seeded_db, tmp_path):
    folder = tmp_path / "checkpoint-100"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "opt"}')
    (folder / "notes.json").write_text('{"hello": 1}')
    (folder / "README.md").write_text("hi")
    assert_rejected(
        runner,
        seeded_db,
        folder,
        f"{folder}: no results files found (lm-eval, Every Eval Ever, inspect_ai or W&B history); it holds "
        'notes.json: JSON with none of a top-level "results" object (lm-eval), "schema_version", "model_info" and '
        '"evaluation_results" (Every Eval Ever), an "eval" object naming a "task" (inspect_ai)',
    )


def test_empty_folder(runner, seeded_db, tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    assert_rejected(
        runner,
        seeded_db,
        folder,
        f"{folder}: no results files found (lm-eval, Every Eval Ever, inspect_ai or W&B history)",
    )


def test_missing_path(runner, seeded_db, tmp_path):
    path = tmp_path / "nope.json"
    assert_rejected(runner, seeded_db, path, f"{path}: no such file or directory")


def test_glob_without_matches(runner, seeded_db, tmp_path):
    pattern = str(tmp_path / "*.json")
    assert_rejected(runner, seeded_db, pattern, f"{pattern}: no files match this pattern")


def test_truncated_samples_file_rejects_the_whole_evaluation(runner, seeded_db, tmp_path):
    folder = tmp_path / "out"
    source = next(V0413.glob("toy-run__checkpoint-10"))
    folder.mkdir()
    for f in source.iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    samples = next(folder.glob("samples_toy_nli_2*.jsonl"))
    lines = samples.read_text().splitlines()
    samples.write_text("\n".join(lines[:5]) + "\n" + lines[5][:40])
    with pytest.raises(json.JSONDecodeError) as error:
        json.loads(lines[5][:40])
    assert error.value.msg == "Unterminated string starting at"
    assert_rejected(
        runner,
        seeded_db,
        folder,
        f"{samples}: line 6: truncated JSON at column {error.value.colno}: Unterminated string",
    )


def test_samples_with_bad_doc_id(runner, seeded_db, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    for f in next(V0413.glob("toy-run__checkpoint-10")).iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    samples = next(folder.glob("samples_toy_gen_*.jsonl"))
    lines = samples.read_text().splitlines()
    bad = json.loads(lines[2])
    bad["doc_id"] = "third"
    lines[2] = json.dumps(bad)
    samples.write_text("\n".join(lines) + "\n")
    assert_rejected(
        runner, seeded_db, folder, f'{samples}: line 3: doc_id: expected a document index, got string "third"'
    )


def test_samples_file_without_its_results(runner, seeded_db, copy_file):
    samples = copy_file(next(V0413.rglob("samples_toy_gen_*.jsonl")))
    expected_results = "results_" + samples.name.rsplit("_", 1)[1].removesuffix(".jsonl") + ".json"
    assert_rejected(
        runner,
        seeded_db,
        samples,
        f"{samples}: a samples file without its results file ({expected_results} is not beside it)",
    )


def test_good_files_go_in_and_bad_ones_are_named(runner, db, copy_file):
    bad = edit_json(copy_file, LEADERBOARD, lambda d: d["results"]["hellaswag"].update({"acc,none": "x"}))
    good = pythia_files("410m")[:3]
    result = run_ingest(runner, db, bad, *good)
    assert result.exit_code == 1
    assert rejected_lines(result) == [f'{bad}: results["hellaswag"]["acc,none"]: expected a number, got string "x"']
    with ood_store.open(db, read_only=True) as store:
        assert store.query("SELECT count(*) AS n FROM evaluations")["n"][0] == 3


def test_non_lm_eval_json_in_a_folder_is_skipped(runner, db, tmp_path):
    folder = tmp_path / "run"
    (folder / "checkpoint-5").mkdir(parents=True)
    (folder / "checkpoint-5" / "trainer_state.json").write_text("{broken")  # never read: a checkpoint file
    (folder / "all_results.json").write_text('{"eval_loss": 1.0}')
    (folder / "evals").mkdir()
    (folder / "evals" / "r.json").write_bytes(PYTHIA_FILE.read_bytes())
    result = runner.invoke(main, ["--db", str(db), "ingest", str(folder)])
    assert result.exit_code == 0, result.output
    assert "Ingested 1 file" in result.output
    skipped = folder / "all_results.json"
    assert f"Skipped 1 file (not results in a format ood-store reads): {skipped}." in result.output


def test_python_api_reports_instead_of_raising(db, copy_file):
    bad = edit_json(copy_file, PYTHIA_FILE, lambda d: d["results"]["arc_easy"].update({"acc": "high"}))
    with ood_store.open(db) as store:
        report = store.ingest([bad])
    assert not report.ok
    [outcome] = report.rejected
    assert outcome.path == str(bad)
    assert outcome.reason == f'{bad}: results["arc_easy"]["acc"]: expected a number, got string "high"'


def test_counts_out_of_range(runner, seeded_db, copy_file):
    path = edit_json(copy_file, LEADERBOARD, lambda d: d["n-samples"]["hellaswag"].update({"effective": 10**30}))
    # 10**30 does not fit a 64-bit integer, so JSON parsers read it as the float 1e+30
    assert_rejected(runner, seeded_db, path, f'{path}: n-samples["hellaswag"]["effective"]: 1e+30 is out of range')


def test_step_out_of_range(runner, seeded_db, copy_file):
    big = "9" * 25
    path = edit_json(
        copy_file, PYTHIA_FILE, lambda d: d["config"].update({"model_args": f"pretrained=x/y,revision=step{big}"})
    )
    assert_rejected(runner, seeded_db, path, f"{path}: config.model_args: step {big} is out of range; pass --step")


def test_a_file_duckdb_refuses_is_rejected_alone(db, monkeypatch):
    """Should DuckDB refuse a batch, its files are retried one by one and only the culprit is named."""
    import duckdb

    from ood_store._ingest import write

    real = write.write_batch
    files = pythia_files("160m")[:4]
    culprit = str(files[2].resolve())

    def refusing(con, records, attributes=None):
        if any(r.path == culprit for r in records):
            raise duckdb.ConstraintException("Constraint Error: simulated")
        return real(con, records, attributes)

    monkeypatch.setattr("ood_store._ingest.pipeline.write_batch", refusing)
    with ood_store.open(db) as store:
        report = store.ingest(files)
        assert len(report.ingested) == 3
        assert [f.reason for f in report.rejected] == [f"{files[2]}: could not be stored: Constraint Error: simulated"]
        assert store.query("SELECT count(*) AS n FROM evaluations")["n"][0] == 3


def test_bad_group_sample_count(runner, seeded_db, copy_file):
    source = next(V0413.rglob("results_*.json"))
    path = edit_json(
        copy_file, source, lambda d: d["results"]["toy_suite"]["sample_count"].update({"acc,none": "many"})
    )
    assert_rejected(
        runner,
        seeded_db,
        path,
        f'{path}: results["toy_suite"]["sample_count"]["acc,none"]: expected an integer, got string "many"',
    )
