"""The same checkpoints through every executor give the same store: inline, 2 local workers, a Slurm job array
(submitit's local executor: no Slurm here) and Ray (a local Ray instance).

The reference is the inline evaluation, whose scores and per-sample rows tests/test_evaluate.py checks
against lm-eval's own files; here every executor must reproduce it row for row (scores, samples, runs,
checkpoints), with no duplicates. The completion markers are checked against the files they describe
(SHA-256 computed here, lm-eval's installed version, this host's name).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path

import pytest

import ood_store
from conftest import TOY_RUN, TOY_STEPS, TOY_TASKS, evaluation_rows, toy_evaluate_args
from ood_store._cli import main

# One xdist worker runs these one after another: each starts worker processes of its own.
pytestmark = pytest.mark.xdist_group("executors")

ATTRS = {"family": "toy", "seed": 1}


def _evaluate(db: Path, toy_run, root: Path, **options):
    with ood_store.open(db) as store:
        return store.evaluate(
            [toy_run["run"]], run=TOY_RUN, tasks=list(TOY_TASKS), include_paths=[toy_run["tasks"]],
            output_dir=root / "out", work_dir=root / "work", batch_size=8, attributes=ATTRS, **options,
        )  # fmt: skip


@contextmanager
def counting_lm_eval():
    """lm-eval's task loads and evaluations while the block runs (its own methods, wrapped): yields
    ``{"loads": [[spec, ...] per TaskManager.load call], "evaluations": [checkpoint per simple_evaluate call]}``."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    seen: dict[str, list] = {"loads": [], "evaluations": []}
    real_load, real_evaluate = TaskManager.load, lm_eval.simple_evaluate

    def load(self, task_list):
        seen["loads"].append(list(task_list) if isinstance(task_list, list) else [task_list])
        return real_load(self, task_list)

    def simple_evaluate(*args, **kwargs):
        seen["evaluations"].append(kwargs["model_args"]["pretrained"])
        return real_evaluate(*args, **kwargs)

    TaskManager.load, lm_eval.simple_evaluate = load, simple_evaluate
    try:
        yield seen
    finally:
        TaskManager.load, lm_eval.simple_evaluate = real_load, real_evaluate


def built_from_names(loads: list[list]) -> list[str]:
    """The tasks built from their YAML (given by name); objects passed back in are built already."""
    return sorted(spec for specs in loads for spec in specs if isinstance(spec, str))


@pytest.fixture(scope="module")
def inline(toy_run, tmp_path_factory):
    """The inline evaluation, counting lm-eval's task loads and evaluations."""
    root = tmp_path_factory.mktemp("inline")
    with counting_lm_eval() as seen:
        report = _evaluate(root / "store.duckdb", toy_run, root)
    return {"root": root, "report": report, "rows": evaluation_rows(root / "store.duckdb"), **seen}


def test_inline_builds_each_task_once_for_all_checkpoints(inline):
    assert len(inline["evaluations"]) == len(TOY_STEPS)  # one lm-eval call per checkpoint
    # Each task is built from its YAML once, although three checkpoints were evaluated on it: simple_evaluate
    # was given the built objects (it passes them through TaskManager.load) and built none itself.
    assert built_from_names(inline["loads"]) == sorted(TOY_TASKS)
    assert len(inline["loads"]) == len(TOY_TASKS) + len(TOY_STEPS)
    rows = inline["rows"]
    assert len(rows["scores"]) == len(TOY_STEPS) * len(TOY_TASKS)
    assert len(rows["samples"]) == len(TOY_STEPS) * len(TOY_TASKS) * 16
    assert [(c.step, c.status) for c in inline["report"].checkpoints] == [(s, "evaluated") for s in TOY_STEPS]


def test_a_worker_process_builds_each_task_once_for_all_its_units(toy_run, tmp_path):
    """What every executor runs in its worker processes (``worker.work``), here in this process: three units
    (checkpoints) of a planned work folder, each task built from its YAML once and reused for all three."""
    from ood_store._evaluate import worker
    from ood_store._evaluate.plan import RunRequest, plan
    from ood_store._evaluate.workdir import WorkDir

    db = tmp_path / "store.duckdb"
    request = RunRequest(
        run=TOY_RUN, checkpoints=[str(toy_run["run"])], tasks=list(TOY_TASKS), include_paths=[str(toy_run["tasks"])],
        batch_size=8, limit=4,
    )  # fmt: skip
    with ood_store.open(db) as store:
        planned = plan(store.connection, [request], store=db.resolve(), output_dir=tmp_path / "out")
    assert [u.step for u in planned.units] == list(TOY_STEPS)
    work = WorkDir(tmp_path / "work").create()
    work.add_units(planned.units)
    attempt = work.start_attempt([u.id for u in planned.units], "test")
    with counting_lm_eval() as seen:
        assert worker.work(work.path, attempt) == len(TOY_STEPS)
    assert [Path(p).name for p in seen["evaluations"]] == [f"checkpoint-{s}" for s in TOY_STEPS]
    assert built_from_names(seen["loads"]) == sorted(TOY_TASKS)
    assert len(seen["loads"]) == len(TOY_TASKS) + len(TOY_STEPS)  # the rest: simple_evaluate passing objects
    assert work.marked("done") == {u.id for u in planned.units} and not work.marked("failed")


@pytest.mark.parametrize(
    ("executor", "options", "jobs"),
    [
        ("local", {"workers": 2}, "2 local workers"),
        # One unit per array task: every checkpoint in a fresh process that builds its own tasks,
        # so equal rows also show that reusing task objects changes nothing.
        ("slurm", {"units_per_task": 1, "timeout_min": 30}, "submitit's local executor (no Slurm here): 3 tasks"),
        ("ray", {"workers": 2}, "2 Ray workers on a Ray instance on this machine"),
    ],
)
def test_every_executor_stores_the_same_rows(
    inline, toy_run, tmp_path, monkeypatch, dead_address, executor, options, jobs
):
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    if executor == "slurm":  # submitit's local executor, as on a machine without Slurm (CI installs Slurm)
        from ood_store._evaluate.executors.slurm import SlurmExecutor

        monkeypatch.setattr(SlurmExecutor, "cluster", property(lambda self: "local"))
    # Without --ray-address the workers run on a Ray of their own, here: never on a cluster that RAY_ADDRESS
    # (or an earlier `ray start` on this machine) names. One that answers nothing shows it.
    monkeypatch.setenv("RAY_ADDRESS", dead_address)
    db = tmp_path / "store.duckdb"
    report = _evaluate(db, toy_run, tmp_path, executor=executor, **options)
    assert report.executor == executor and report.jobs.startswith(jobs), report.jobs
    assert [(c.step, c.status) for c in report.checkpoints] == [(s, "evaluated") for s in TOY_STEPS]
    assert evaluation_rows(db) == inline["rows"]

    work = tmp_path / "work"
    markers = [json.loads(p.read_text()) for p in sorted((work / "done").glob("*.json"))]
    assert len(markers) == len(TOY_STEPS)
    for marker in markers:
        results = Path(marker["results"])
        assert results.is_relative_to(tmp_path / "out") and results.parts[-4].startswith("step-")
        assert marker["sha256"] == hashlib.sha256(results.read_bytes()).hexdigest()
        assert marker["lm_eval_version"] == version("lm_eval")
        assert marker["host"] == socket.gethostname() and marker["seconds"] > 0
        assert marker["pid"] != os.getpid()  # evaluated by a worker process, not by this one
    pids = {m["pid"] for m in markers}
    assert len(pids) == 3 if executor == "slurm" else 1 <= len(pids) <= 2
    [attempt] = (work / "claims").iterdir()
    assert sorted(p.stem for p in attempt.glob("*.json")) == sorted(m["unit"] for m in markers)  # one claim each
    with ood_store.open(db, read_only=True) as store:
        source = store.query("SELECT source_path FROM evaluations ORDER BY step")["source_path"].to_list()
        campaigns = store.query("SELECT DISTINCT campaign FROM evaluations").rows()
    assert sorted(source) == sorted(m["results"] for m in markers)
    assert campaigns == [(None,)]  # evaluate's own layout (RUN/step-N/unit-HASH/MODEL/) names no campaign


def test_detach_returns_at_once_and_collect_stores_what_the_workers_finished(inline, toy_run, tmp_path, runner):
    db, out, work = tmp_path / "store.duckdb", tmp_path / "out", tmp_path / "work"
    args = toy_evaluate_args(db, toy_run, out, "--attr", "family=toy", "--attr", "seed=1")
    args = [a for a in args if a != "-q"] + ["--work-dir", str(work), "--executor", "local", "--workers", "2"]
    result = runner.invoke(main, [*args, "--detach"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"Submitted 3 checkpoints (9 tasks) to 2 local workers (processes {_pids(work)}).",
        f"Watch them: ood-store status {work}",
        f"Store what has finished (again as often as you like): ood-store --db {db} collect {work}",
    ]
    # While the workers run, the store is free: another process reads it.
    listed = subprocess.run(
        [str(Path(sys.executable).parent / "ood-store"), "--db", str(db), "--lock-timeout", "0", "runs", "-f", "csv"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        states = json.loads(runner.invoke(main, ["status", str(work), "-f", "json"]).output)
        if all(s["state"] == "done" for s in states):
            break
        assert {s["state"] for s in states} <= {"pending", "running", "done"}, states
        time.sleep(0.5)
    assert [s["step"] for s in sorted(states, key=lambda s: s["step"])] == list(TOY_STEPS)

    collected = runner.invoke(main, ["collect", str(work)])  # into the store the units were planned for
    assert collected.exit_code == 0, collected.output
    assert collected.output.splitlines() == [
        f"Stored 3 units into {db.resolve()}: 9 scores, 144 samples.",
        "3 units: 3 stored.",
    ]
    again = runner.invoke(main, ["collect", str(work)])
    assert again.output.splitlines() == ["Stored 0 units: 0 scores, 0 samples.", "3 units: 3 stored."]
    assert evaluation_rows(db) == inline["rows"]
    shown = runner.invoke(main, ["status", str(work)]).output.splitlines()
    assert shown[0] == "3 units: 3 stored." and shown[1].startswith("Time of 3 units (")
    assert len(shown) == 2 + 2 + 3  # the count, where the time went, a header and rule, 3 units


def _pids(work: Path) -> str:
    [log] = (work / "attempts").glob("*.json")
    return json.loads(log.read_text())["jobs"].split("(processes ")[1].rstrip(")")


def test_slurm_gets_one_job_array_with_the_sbatch_directives_asked_for(toy_run, tmp_path, monkeypatch):
    """With Slurm's commands on the PATH (stand-ins that keep the script), submitit writes the array's sbatch file;
    ``sbatch --test-only`` of the same directives comes first (tests/test_evaluate_cluster.py has a real Slurm)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "sbatch").write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --test-only ]; then cp "$2" {tmp_path}/tested.sh; echo "sbatch: Job 4241 to start at now" >&2;'
        f' exit 0; fi\ncp "$1" {tmp_path}/submitted.sh\necho "Submitted batch job 4242"\n'
    )
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    report = _evaluate(
        tmp_path / "store.duckdb", toy_run, tmp_path, executor="slurm", detach=True, units_per_task=1,
        slurm_partition="gpu", gpus_per_task=1, timeout_min=90, max_parallel=2, slurm_params=["qos=high", "mem=32G"],
    )  # fmt: skip
    assert report.jobs == "Slurm job array 4242: 3 tasks of up to 1 unit"
    assert [c.status for c in report.checkpoints] == ["submitted"] * len(TOY_STEPS)
    directives = [line for line in (tmp_path / "submitted.sh").read_text().splitlines() if line.startswith("#SBATCH")]
    # SIGUSR2 9 minutes (a tenth of the limit) before it: the worker gives its unit back and the task is requeued.
    for expected in ("--partition=gpu", "--gpus-per-node=1", "--time=90", "--array=0-2%2", "--qos=high", "--mem=32G",
                     "--ntasks-per-node=1", "--job-name=ood-store", "--signal=USR2@540"):  # fmt: skip
        assert f"#SBATCH {expected}" in directives, (expected, directives)
    tested = [line for line in (tmp_path / "tested.sh").read_text().splitlines() if line.startswith("#SBATCH")]
    assert {line for line in tested if "--array" not in line and "--output" not in line and "--error" not in line} == {
        line for line in directives if "--array" not in line and "--output" not in line and "--error" not in line
    }


def test_local_workers_each_see_their_own_gpus_or_a_share_of_the_cores(monkeypatch):
    """The README's rule: by default one worker per visible GPU, each seeing its own (CUDA_VISIBLE_DEVICES,
    --gpus-per-task each); without GPUs, the cores shared out between the workers (unless set already)."""
    from ood_store._evaluate.executors import settings
    from ood_store._evaluate.executors.local import LocalExecutor

    def environments(**options):
        return LocalExecutor(settings("local", **options)).worker_environments()

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")  # the GPUs this machine gives us, by its numbers
    assert [e["CUDA_VISIBLE_DEVICES"] for e in environments()] == ["4", "5", "6", "7"]
    assert [e["CUDA_VISIBLE_DEVICES"] for e in environments(gpus_per_task=2)] == ["4,5", "6,7"]
    assert [e["CUDA_VISIBLE_DEVICES"] for e in environments(workers=2)] == ["4", "5"]
    assert [e["CUDA_VISIBLE_DEVICES"] for e in environments(gpus_per_task=0, workers=2)] == ["", ""]  # CPUs only

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.delenv("MKL_NUM_THREADS")
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    shared = environments(workers=2)
    assert [(e["OMP_NUM_THREADS"], e["MKL_NUM_THREADS"]) for e in shared] == [("4", "4"), ("4", "4")]
    assert [e["CUDA_VISIBLE_DEVICES"] for e in shared] == ["", ""]
    assert len(environments()) == 1  # one worker where there is no GPU and no --workers
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # set already: kept
    assert {e["OMP_NUM_THREADS"] for e in environments(workers=2)} == {"1"}
