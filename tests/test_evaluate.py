"""ood-store evaluate, end to end and offline: a tiny model's checkpoints on local tasks.

Expected values come from what lm-eval itself wrote (its results and samples
JSON, read here with json), from the toy task files, and from hand-written
expectations; never from ood-store's own output."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import sys
from pathlib import Path
from statistics import mean

import pytest

import ood_store
from conftest import TOY_RUN, TOY_STEPS, TOY_TASKS, table_dump, toy_evaluate_args
from ood_store._cli import main

REFUSED = os.strerror(errno.ECONNREFUSED)  # the OS's words, as the message quotes them

RUN = TOY_RUN

# The tests that read the `evaluated` store run on one xdist worker, so that it is built once.
shared_store = pytest.mark.xdist_group("evaluated")


evaluate_args = toy_evaluate_args


@pytest.fixture(scope="module")
def evaluated(toy_run, tmp_path_factory):
    """One store with the toy run evaluated through the CLI, shared by the tests that only read it."""
    from click.testing import CliRunner

    root = tmp_path_factory.mktemp("evaluated")
    db, out = root / "store.duckdb", root / "out"
    result = CliRunner().invoke(
        main,
        evaluate_args(db, toy_run, out, "--attr", "family=toy", "--attr", "seed=1", "--attr", "shots=16"),
    )
    assert result.exit_code == 0, result.output
    return {"db": db, "out": out, "output": result.output}


def results_files(out: Path) -> list[Path]:
    """lm-eval's results files in their documented place: OUTPUT_DIR/RUN/step-N/UNIT/MODEL/results_<ts>.json."""
    return sorted(out.glob("*/step-*/*/*/results_*.json"))


def step_of(results: Path) -> int:
    return int(results.parents[2].name.removeprefix("step-"))


@shared_store
def test_every_checkpoint_and_task_is_stored_with_lm_evals_values(evaluated):
    files = results_files(evaluated["out"])
    assert [f.relative_to(evaluated["out"]).parts[:2] for f in files] == [
        ("toy__opt-sim-s1", f"step-{s}") for s in sorted(TOY_STEPS, key=str)
    ]
    expected = {}
    for file in files:
        doc = json.loads(file.read_text())
        step = step_of(file)
        assert doc["config"]["model_args"]["pretrained"].endswith(f"/run/checkpoint-{step}")
        assert (file.parent.parent / "lm-eval.log").is_file()  # lm-eval's stderr, off the terminal
        for task in TOY_TASKS:
            expected[(step, task)] = doc["results"][task]["acc,none"]
    with ood_store.open(evaluated["db"], read_only=True) as store:
        rows = store.query("SELECT run, step, task, value FROM scores WHERE metric = 'acc'").rows()
        run = store.query("SELECT family, seed, attributes FROM runs WHERE run = $run", run=RUN).rows()
        evaluations = store.query("SELECT source_path, samples_files FROM evaluations ORDER BY step").rows()
    assert {(r, s, t): v for r, s, t, v in rows} == {(RUN, s, t): v for (s, t), v in expected.items()}
    assert len(rows) == len(TOY_STEPS) * len(TOY_TASKS)
    assert run == [("toy", 1, '{"shots":"16"}')]
    assert sorted(p for p, _ in evaluations) == sorted(str(f.resolve()) for f in files)
    assert all(len(samples) == len(TOY_TASKS) for _, samples in evaluations)


@shared_store
def test_stored_accuracy_is_the_mean_of_stored_per_sample_correctness(evaluated, toy_run):
    docs = {t: len((toy_run["tasks"] / f"{t}.jsonl").read_text().splitlines()) for t in TOY_TASKS}
    with ood_store.open(evaluated["db"], read_only=True) as store:
        per_sample = store.query(
            "SELECT step, task, count(*) AS n, avg(metrics['acc']) AS acc FROM samples_all GROUP BY step, task"
        ).rows()
        scores = dict(
            ((s, t), v) for s, t, v in store.query("SELECT step, task, value FROM scores WHERE metric = 'acc'").rows()
        )
    assert len(per_sample) == len(TOY_STEPS) * len(TOY_TASKS)
    for step, task, n, acc in per_sample:
        assert n == docs[task]
        assert acc == pytest.approx(scores[(step, task)], abs=1e-12)
    # and the same from lm-eval's samples files, read directly
    for file in results_files(evaluated["out"]):
        step = step_of(file)
        for task in TOY_TASKS:
            [samples] = file.parent.glob(f"samples_{task}_*.jsonl")
            lines = [json.loads(line) for line in samples.read_text().splitlines()]
            assert mean(line["acc"] for line in lines) == pytest.approx(scores[(step, task)], abs=1e-12)


@shared_store
def test_summary_names_what_was_done(evaluated, runner, toy_run, tmp_path):
    db = tmp_path / "store.duckdb"
    shutil.copyfile(evaluated["db"], db)
    args = [a for a in evaluate_args(db, toy_run, evaluated["out"]) if a != "-q"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"Evaluated 0 checkpoints of run {RUN} into {db}: 0 scores, 0 samples.",
        "Already in the store: 3 checkpoints (--force evaluates them again).",
    ]


def test_the_progress_bar_counts_checkpoints_times_tasks_with_the_time_left(runner, toy_run, tmp_path, monkeypatch):
    """One bar over 3 checkpoints x the 4 tasks of the toy_demo tag: 12 in all, never negative (it once showed
    -3/3: checkpoints counted, a tag counted as one task), lm-eval's own bars kept off the terminal."""
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    db = tmp_path / "store.duckdb"
    args = [a for a in toy_evaluate_args(db, toy_run, tmp_path / "out", tasks=("toy_demo",)) if a != "-q"]
    result = runner.invoke(main, [*args, "--limit", "4"], env={"TTY_COMPATIBLE": "1", "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    bar = [line for line in re.split(r"[\r\n]", result.output) if f"evaluating {RUN}" in line]
    counts = [tuple(map(int, m)) for line in bar for m in re.findall(r"(-?\d+)/(\d+)", line)]
    assert counts and {total for _, total in counts} == {12} and all(0 <= done <= 12 for done, _ in counts)
    assert counts[-1] == (12, 12) and {done for done, _ in counts} >= {4, 8, 12}
    assert any(re.search(r"\d:\d\d:\d\d", line) for line in bar)  # the time left
    assert "it/s" not in result.output  # no tqdm line of lm-eval's
    assert "TQDM_DISABLE" not in os.environ  # set for the workers while evaluating, not left to later commands


@shared_store
def test_the_store_can_be_rebuilt_from_the_kept_files(evaluated, runner, tmp_path):
    db = tmp_path / "rebuilt.duckdb"
    result = runner.invoke(main, ["--db", str(db), "ingest", str(evaluated["out"] / "toy__opt-sim-s1"), "--run", RUN])
    assert result.exit_code == 0, result.output
    query = "SELECT run, step, task, metric, value FROM scores ORDER BY ALL"
    with ood_store.open(db, read_only=True) as a, ood_store.open(evaluated["db"], read_only=True) as b:
        assert a.query(query).rows() == b.query(query).rows()
        count = "SELECT count(*) FROM samples"
        assert a.query(count).rows() == b.query(count).rows()


def _counting(monkeypatch, fail_on: int | None = None) -> list[list[str]]:
    """Wrap lm_eval.simple_evaluate: record each call's tasks; on call ``fail_on`` die after evaluating."""
    import lm_eval

    real = lm_eval.simple_evaluate
    calls: list[list[str]] = []

    def wrapper(*args, **kwargs):
        names = [getattr(t, "task_name", None) or getattr(t, "name", t) for t in kwargs["tasks"]]  # names or objects
        calls.append((kwargs["model_args"]["pretrained"].rsplit("-", 1)[-1], names))
        result = real(*args, **kwargs)
        if fail_on is not None and len(calls) == fail_on:
            raise KeyboardInterrupt("killed while checkpoint was in flight")
        return result

    monkeypatch.setattr(lm_eval, "simple_evaluate", wrapper)
    return calls


def test_an_interrupted_run_resumes_with_the_missing_checkpoints_only(toy_run, tmp_path, monkeypatch):
    db, out = tmp_path / "store.duckdb", tmp_path / "out"
    common = dict(run=RUN, tasks=list(TOY_TASKS), include_paths=[toy_run["tasks"]], output_dir=out, batch_size=8)
    calls = _counting(monkeypatch, fail_on=2)
    with ood_store.open(db) as store, pytest.raises(KeyboardInterrupt):
        store.evaluate([toy_run["run"]], **common)
    assert [c[0] for c in calls] == ["0", "4"]
    with ood_store.open(db, read_only=True) as store:
        assert store.query("SELECT DISTINCT step FROM scores").rows() == [(0,)]

    monkeypatch.undo()
    calls = _counting(monkeypatch)
    with ood_store.open(db) as store:
        report = store.evaluate([toy_run["run"]], **common)
        assert calls == [("4", list(TOY_TASKS)), ("8", list(TOY_TASKS))]
        assert [(c.step, c.status) for c in report.checkpoints] == [(0, "skipped"), (4, "evaluated"), (8, "evaluated")]
        keys = store.query("SELECT step, task, metric, count(*) AS n FROM scores_all GROUP BY ALL").rows()
        assert sorted({(s, t) for s, t, _, _ in keys}) == sorted((s, t) for s in TOY_STEPS for t in TOY_TASKS)
        assert {n for *_, n in keys} == {1}, "nothing is stored twice"
        samples = store.query("SELECT count(*), count(DISTINCT (evaluation_id, task, doc_id)) FROM samples").rows()
        assert samples == [(16 * 9, 16 * 9)]

        # A task added later is evaluated on every checkpoint, alone, also when asked for by its tag
        # (toy_demo: the three tasks above and toy_ood_reported); --force repeats one.
        calls.clear()
        store.evaluate([toy_run["run"]], **{**common, "tasks": ["toy_demo"]}, limit=4)
        assert calls == [(s, ["toy_ood_reported"]) for s in ("0", "4", "8")]
        calls.clear()
        store.evaluate([toy_run["run"] / "checkpoint-8"], **{**common, "tasks": ["toy_nli"]}, force=True)
        assert calls == [("8", ["toy_nli"])]
        assert store.query("SELECT count(*) FROM scores_all WHERE step = 8 AND task = 'toy_nli'").rows() == [(2,)]
        assert store.query("SELECT count(*) FROM scores WHERE step = 8 AND task = 'toy_nli'").rows() == [(1,)]


def test_a_peft_adapter_is_evaluated_on_its_base_model(toy_run, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = toy_run["run"] / "checkpoint-8"
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(base), LoraConfig(r=2, target_modules=["c_attn"], fan_in_fan_out=True)
    )
    model.save_pretrained(tmp_path / "lora" / "checkpoint-3")
    assert json.loads((tmp_path / "lora/checkpoint-3/adapter_config.json").read_text())["base_model_name_or_path"]
    db = tmp_path / "store.duckdb"
    with ood_store.open(db) as store:
        report = store.evaluate(
            [tmp_path / "lora"], run="lora", tasks=["toy_nli"], include_paths=[toy_run["tasks"]],
            output_dir=tmp_path / "out", base_model=str(base), limit=4, samples=False,
        )  # fmt: skip
        [outcome] = report.evaluated
        args = json.loads(Path(outcome.results_file).read_text())["config"]["model_args"]
        assert args == {"pretrained": str(base), "peft": str((tmp_path / "lora/checkpoint-3").resolve())}
        assert store.query("SELECT run, step, base_model FROM checkpoints JOIN runs USING (run)").rows() == [
            ("lora", 3, str(base))
        ]


TOY = ["{run}", "--run", "r", "--tasks", "toy_nli", "--include-path", "{tasks}", "--output-dir", "{tmp}/out"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope/", "--run", "r", "--tasks", "toy_nli"], "Error: nope/: no such checkpoint folder"),
        (["{run}", "--tasks", "toy_nli"], "Error: --run: name the run with --run NAME"),
        (["{run}", "--run", "r", "--tasks", "toy_nli", "--attr", "seed=x"], "Error: --attr: seed: expected an integer"),
        (
            ["{run}", "--run", "r", "--tasks", "toy_nli", "--attr", "family"],
            "Error: --attr: family: expected KEY=VALUE",
        ),
        (["{run}", "--run-file", "{tmp}/missing.toml", "--tasks", "toy_nli"], "Error: {tmp}/missing.toml: cannot read"),
        (
            ["{run}", "--run-file", "{tmp}/bad.toml", "--tasks", "toy_nli"],
            "Error: {tmp}/bad.toml: not a valid run file",
        ),
        (["{run}", "--run", "r", "--tasks", "toy_nli", "--include-path", "{tmp}/none"], "Error: {tmp}/none: no such"),
        (["{run}", "--run", "r", "--tasks", "toy_nli", "--batch-size", "big"], "Error: --batch-size: expected"),
        (["{tmp}", "--run", "r", "--tasks", "toy_nli"], "Error: {tmp}: neither a checkpoint"),
        (["--run", "r", "--tasks", "toy_nli"], "Error: CHECKPOINT: no checkpoints given"),
        (["{run}", "--run", "r"], "Error: --tasks: no task names given"),
        # Executors: options checked (and a Ray cluster tried) before anything is planned or submitted.
        (
            [*TOY, "--executor", "local", "--slurm-partition", "gpu"],
            "Error: --slurm-partition: only for the slurm executor, not --executor local",
        ),
        (
            [*TOY, "--executor", "slurm", "--slurm-param", "nope=1"],
            "Error: --slurm-param: nope: not an sbatch parameter that submitit knows",
        ),
        (
            [*TOY, "--executor", "slurm", "--slurm-param", "partition=gpu"],
            "Error: --slurm-param: partition: has an option of its own: --slurm-partition",
        ),
        ([*TOY, "--executor", "slurm", "--slurm-param", "qos"], "Error: --slurm-param: qos: expected KEY=VALUE"),
        (
            [*TOY, "--executor", "slurm", "--gpus-per-task", "0.5"],
            "Error: --gpus-per-task: expected a whole number of GPUs, 0 or more, got 0.5",
        ),
        (
            [*TOY, "--executor", "local", "--workers", "0"],
            "Error: --workers: expected a whole number, 1 or more, got 0",
        ),
        ([*TOY, "--detach"], "Error: --detach: the inline executor runs in this process: choose local, slurm or ray"),
        (
            [*TOY, "--executor", "ray", "--ray-address", "{dead}"],
            "Error: --ray-address: cannot connect to a Ray cluster at {dead}: " + REFUSED,
        ),
        (
            [*TOY, "--work-dir", "{tmp}/bad.toml/work"],
            "Error: {tmp}/bad.toml/work: cannot write the work folder: Not a directory",
        ),
    ],
)
def test_bad_input_is_one_line_and_leaves_the_store_unchanged(runner, toy_run, tmp_path, dead_address, args, message):
    db = tmp_path / "store.duckdb"
    runner.invoke(main, ["--db", str(db), "ingest", "-q", "tests/fixtures/lm-eval-real/v0.4/saucam-PowerBot-8B"])
    before = table_dump(db)
    (tmp_path / "bad.toml").write_text("family = \n")
    fill = {"run": str(toy_run["run"]), "tmp": str(tmp_path), "tasks": str(toy_run["tasks"]), "dead": dead_address}
    result = runner.invoke(main, ["--db", str(db), "evaluate", *[a.format(**fill) for a in args]])
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert result.output.startswith(message.format(**fill)), result.output
    assert len(result.output.strip().splitlines()) == 1
    assert table_dump(db) == before
    assert not (tmp_path / "out-work").exists() and not (tmp_path / "out").exists()  # nothing planned or written


def test_the_command_reads_ray_address_from_the_environment(runner, toy_run, tmp_path, dead_address):
    """As Ray's own tools do (``ray job submit`` sets RAY_ADDRESS): a dead one is one line, before anything runs."""
    db = tmp_path / "store.duckdb"
    args = [a.format(run=toy_run["run"], tasks=toy_run["tasks"], tmp=tmp_path) for a in TOY]
    result = runner.invoke(
        main, ["--db", str(db), "evaluate", *args, "--executor", "ray"], env={"RAY_ADDRESS": dead_address}
    )
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output == f"Error: --ray-address: cannot connect to a Ray cluster at {dead_address}: {REFUSED}\n"
    assert not db.exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize(("executor", "module", "extra"), [("slurm", "submitit", "slurm"), ("ray", "ray", "ray")])
def test_a_missing_extra_is_named(runner, toy_run, tmp_path, monkeypatch, executor, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # `import module` raises ImportError, as when not installed
    args = [a.format(run=toy_run["run"], tasks=toy_run["tasks"], tmp=tmp_path) for a in TOY]
    result = runner.invoke(main, ["--db", str(tmp_path / "s.duckdb"), "evaluate", *args, "--executor", executor])
    assert result.exit_code == 1
    assert result.output == (
        f'Error: --executor: the {executor} executor needs {module}: pip install -e ".[{extra}]"\n'
    )


def test_an_unknown_task_is_named_with_close_matches(runner, toy_run, tmp_path):
    db = tmp_path / "store.duckdb"
    args = [
        str(toy_run["run"]),
        "--run",
        "r",
        "--tasks",
        "toy_nli,ood_nli_snlli",
        "--include-path",
        str(toy_run["tasks"]),
    ]
    result = runner.invoke(main, ["--db", str(db), "evaluate", *args])
    assert result.exit_code == 1
    assert result.output == (
        "Error: ood_nli_snlli: unknown task (not built into lm-eval, the ood_nli suite or --include-path); "
        "did you mean ood_nli_snli, ood_nli_wnli, ood_nli_mnli?\n"
    )


def test_a_killed_process_loses_only_the_checkpoint_in_flight(toy_run, tmp_path):
    """SIGKILL `ood-store evaluate` while it evaluates the second checkpoint; the rerun does the rest."""
    import signal
    import subprocess
    import sys
    import time

    db, out = tmp_path / "store.duckdb", tmp_path / "out"
    command = [str(Path(sys.executable).parent / "ood-store"), *evaluate_args(db, toy_run, out)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    step_4 = out / "toy__opt-sim-s1" / "step-4"  # its temporary folder appears once step 0 is stored
    deadline = time.monotonic() + 300
    while not list(step_4.glob(".*.tmp/lm-eval.log")) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, "it finished before it could be killed"

    with ood_store.open(db) as store:
        assert store.query("SELECT DISTINCT step FROM scores").rows() == [(0,)]
        report = store.evaluate(
            [toy_run["run"]], run=RUN, tasks=list(TOY_TASKS), include_paths=[toy_run["tasks"]], output_dir=out,
            batch_size=8,
        )  # fmt: skip
        assert [(c.step, c.status) for c in report.checkpoints] == [(0, "skipped"), (4, "evaluated"), (8, "evaluated")]
        rows = store.query("SELECT step, task, count(*) AS n FROM scores_all WHERE metric = 'acc' GROUP BY ALL").rows()
    assert sorted(rows) == sorted((s, t, 1) for s in TOY_STEPS for t in TOY_TASKS)
