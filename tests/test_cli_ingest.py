"""ood-store ingest: paths, globs, overrides and the summary."""

from __future__ import annotations

import json
import shutil

import ood_store
from conftest import PYTHIA, V04, V0413, pythia_files
from ood_store._cli import main


def test_summary(runner, db):
    result = runner.invoke(main, ["--db", str(db), "ingest", str(PYTHIA / "pythia-410m")])
    assert result.exit_code == 0, result.output
    scores = sum(
        1
        for f in pythia_files("410m")
        for e in json.loads(f.read_text())["results"].values()
        for k in e
        if not k.endswith("_stderr")
    )
    assert result.output == (
        f"Ingested 27 files into {db}: {scores:,} scores, 0 samples, 1 run.\n"
        "Already present: 0 files.\n"
        "Rejected: 0 files.\n"
    )
    again = runner.invoke(main, ["--db", str(db), "ingest", str(PYTHIA / "pythia-410m")])
    assert (
        again.output
        == f"Ingested 0 files into {db}: 0 scores, 0 samples, 0 runs.\nAlready present: 27 files.\nRejected: 0 files.\n"
    )


def test_quiet_prints_nothing_when_all_is_well(runner, db):
    result = runner.invoke(main, ["--db", str(db), "ingest", "-q", str(PYTHIA / "pythia-160m")])
    assert (result.exit_code, result.output) == (0, "")


def test_glob_with_double_star(runner, db):
    pattern = str(PYTHIA / "**" / "160m_step1*.json")
    expected = sorted(p for p in pythia_files("160m") if p.name.startswith("160m_step1"))
    result = runner.invoke(main, ["--db", str(db), "ingest", pattern])
    assert result.exit_code == 0, result.output
    with ood_store.open(db, read_only=True) as store:
        paths = store.query("SELECT source_path FROM evaluations ORDER BY source_path")["source_path"].to_list()
    assert paths == [str(p.resolve()) for p in expected]


def test_a_samples_file_stands_for_its_results_file(runner, db):
    samples = next(V0413.rglob("samples_toy_gen_*.jsonl"))
    result = runner.invoke(main, ["--db", str(db), "ingest", str(samples)])
    assert result.exit_code == 0, result.output
    with ood_store.open(db, read_only=True) as store:
        rows = store.query("SELECT source_path, len(samples_files) AS n FROM evaluations").rows()
    [(path, n)] = rows
    assert path.endswith(samples.name.replace("samples_toy_gen_", "results_").replace(".jsonl", ".json"))
    assert n == 3


def test_run_and_step_flags(runner, db):
    files = pythia_files("160m")[:2]
    result = runner.invoke(main, ["--db", str(db), "ingest", "--run", "my-run", "--step", "5", *map(str, files)])
    assert result.exit_code == 0, result.output
    with ood_store.open(db, read_only=True) as store:
        assert store.query("SELECT run, step, identity_from FROM evaluations").rows() == [("my-run", 5, "flags")] * 2


def test_model_flag_for_files_without_model_args(runner, db, tmp_path):
    doc = json.loads(pythia_files("160m")[0].read_text())
    doc["config"]["model_args"] = None
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    result = runner.invoke(main, ["--db", str(db), "ingest", "--model", "/ckpt/opt-mnli/checkpoint-250", str(path)])
    assert result.exit_code == 0, result.output
    with ood_store.open(db, read_only=True) as store:
        assert store.query("SELECT run, step FROM evaluations").rows() == [("/ckpt/opt-mnli", 250)]


def test_checkpoint_folders_are_searched(runner, db, tmp_path):
    """An lm-eval output folder inside a training run folder, with checkpoint files around it."""
    run = tmp_path / "opt-mnli"
    for step in (100, 200):
        ckpt = run / f"checkpoint-{step}"
        ckpt.mkdir(parents=True)
        (ckpt / "config.json").write_text("{}")
        (ckpt / "tokenizer.json").write_text("{not json at all")
    shutil.copytree(V0413, run / "evals")
    result = runner.invoke(main, ["--db", str(db), "ingest", str(run)])
    assert result.exit_code == 0, result.output
    assert "Ingested 2 files" in result.output and "Skipped" not in result.output


def test_store_path_must_be_a_file(runner, tmp_path):
    result = runner.invoke(main, ["--db", str(tmp_path), "ingest", str(V04)])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1].endswith(f"File '{tmp_path}' is a directory.")


def test_help_lists_every_command(runner):
    result = runner.invoke(main, ["--help"])
    assert result.exit_code == 0
    for command in ("init", "ingest", "query", "runs", "tasks", "demo"):
        assert f"  {command} " in result.output


def test_progress_bar_on_a_terminal(runner, db):
    files = pythia_files("160m")
    result = runner.invoke(main, ["--db", str(db), "ingest", *map(str, files)], env={"TTY_COMPATIBLE": "1"})
    assert result.exit_code == 0, result.output
    assert "ingesting" in result.output and f"{len(files)}/{len(files)}" in result.output
    quiet = runner.invoke(main, ["--db", str(db), "ingest", "-q", *map(str, files)], env={"TTY_COMPATIBLE": "1"})
    assert quiet.output == ""


def test_no_progress_bar_when_not_a_terminal(runner, db):
    result = runner.invoke(main, ["--db", str(db), "ingest", str(PYTHIA / "pythia-160m")], env={"TTY_COMPATIBLE": "0"})
    assert "ingesting" not in result.output


def test_an_ingest_that_adds_nothing_leaves_no_new_store(runner, tmp_path):
    db = tmp_path / "new.duckdb"
    result = runner.invoke(main, ["--db", str(db), "ingest", str(tmp_path / "missing.json")])
    assert result.exit_code == 1
    assert not db.exists() and not db.with_name("new.duckdb.wal").exists()
    with ood_store.open(db) as store:  # from Python too
        assert not store.ingest([tmp_path / "missing.json"]).ok
    assert not db.exists()


def test_a_store_that_existed_is_kept_whatever_an_ingest_adds(runner, tmp_path):
    db = tmp_path / "s.duckdb"
    assert runner.invoke(main, ["--db", str(db), "init"]).exit_code == 0
    runner.invoke(main, ["--db", str(db), "ingest", str(tmp_path / "missing.json")])
    assert db.exists()


def test_quiet_reports_problems_in_one_note_with_the_store_it_used(runner, tmp_path):
    source = pythia_files("160m")[0]
    doc = json.loads(source.read_text())
    doc["results"]["arc_easy"]["acc"] += 0.1
    (tmp_path / "rerun").mkdir()
    (tmp_path / "rerun" / source.name).write_text(json.dumps(doc))
    db = tmp_path / "my store.duckdb"
    assert runner.invoke(main, ["--db", str(db), "ingest", "-q", str(source)]).output == ""
    result = runner.invoke(main, ["--db", str(db), "ingest", "-q", str(tmp_path / "rerun")])
    assert result.exit_code == 0
    assert result.output == (
        f"Note: 1 run now mixes campaigns; evaluations disagree on 1 score in 1 run "
        f"(see ood-store --db '{db}' query \"SELECT * FROM score_conflicts\").\n"
    )


def test_paths_are_shown_as_they_were_given(runner, tmp_path, monkeypatch):
    folder = tmp_path / "evals" / "zero-shot"
    folder.mkdir(parents=True)
    (folder / "broken.json").write_text(
        '{"results": {"arc_easy": {"acc": "x"}}, "config": {"model_args": "pretrained=m"}}'
    )
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(main, ["--db", "s.duckdb", "ingest", "evals"])
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        '  evals/zero-shot/broken.json: results["arc_easy"]["acc"]: expected a number, got string "x"'
    )


def test_commands_are_imported_when_used():
    """`main.commands` names every command without importing it; MODULES says where each one lives."""
    import importlib
    import subprocess
    import sys

    from ood_store._cli import MODULES

    for name, module in MODULES.items():
        commands = importlib.import_module(f"ood_store._cli.{module}").COMMANDS
        assert name in [c.name for c in commands], (name, module)
    defined = {c.name for m in set(MODULES.values()) for c in importlib.import_module(f"ood_store._cli.{m}").COMMANDS}
    assert defined == set(MODULES)
    heavy = ("scipy", "matplotlib", "statsmodels", "lm_eval")
    probe = (
        "import sys; from ood_store._cli import main; main.commands['ingest']; "
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_the_summary_counts_one_of_each_in_the_singular(runner, db, tmp_path):
    # Pythia's step-0 file cut down to its one winogrande accuracy: 1 file, 1 score, 1 run.
    source = json.loads(pythia_files("160m")[0].read_text())
    source["results"] = {"winogrande": {"acc": source["results"]["winogrande"]["acc"]}}
    path = tmp_path / "160m_step0.json"
    path.write_text(json.dumps(source))
    result = runner.invoke(main, ["--db", str(db), "ingest", str(path)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == f"Ingested 1 file into {db}: 1 score, 0 samples, 1 run."
