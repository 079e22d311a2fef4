"""The grid through evaluate's executors: the slurm path (submitit's local executor: no Slurm here), preempted in
the middle of a run and requeued, ends with the weights of the same run trained inline; one progress bar over
runs x steps with its time left.

The preemption is the signal Slurm sends a job's processes before a time limit or a preemption (USR2,
submitit's), sent to the worker process that holds the run (its pid from its claim); submitit then calls
the worker's ``checkpoint`` and runs the job again. (submitit's ``LocalJob._interrupt`` sends it to the
local executor's controller process instead, which does not forward it.) The reference weights are those
of the inline run (read with safetensors).
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from ood_store._cli import main

STUDY = """
base_model = "{base}"
in_domain = "toy_nli"
data_dir = "{data}"
tasks = ["toy_nli"]
include_path = ["{tasks}"]
shots = [24]
method = "full"
schedule = {{ kind = "manual", steps = [4, 8] }}
name = "toy-{{method}}"
[training]
max_steps = 60
per_device_train_batch_size = 8
learning_rate = 3e-3
warmup_steps = 0
full_determinism = true
"""

pytestmark = pytest.mark.xdist_group("executors")


@pytest.fixture
def study(tmp_path, finetune_inputs) -> Path:
    path = tmp_path / "study.toml"
    path.write_text(
        STUDY.format(base=finetune_inputs["base"], data=finetune_inputs["data"], tasks=finetune_inputs["tasks"]),
        "utf-8",
    )
    return path


def test_slurm_through_submitit_preempted_and_requeued_ends_as_the_inline_run(study, tmp_path, runner, monkeypatch):
    from safetensors.numpy import load_file

    from ood_store._evaluate.executors.slurm import SlurmExecutor
    from ood_store._finetune.folder import MARKER

    inline, slurm = tmp_path / "inline", tmp_path / "slurm"
    assert runner.invoke(main, ["finetune", str(study), "--output-dir", str(inline), "-q"]).exit_code == 0

    submit, interrupted = SlurmExecutor.submit, []

    def preempting_submit(self, *args, **kwargs):
        jobs = submit(self, *args, **kwargs)

        def preempt() -> None:  # once step 4 is saved: the signal Slurm sends the job's processes before the end
            deadline = time.monotonic() + 300
            while not (slurm / "toy-full" / "checkpoint-4" / MARKER).is_file() and time.monotonic() < deadline:
                time.sleep(0.05)
            [claim] = (slurm / "finetune-work" / "claims").glob("*/toy-full.json")
            os.kill(json.loads(claim.read_text())["pid"], signal.SIGUSR2)
            interrupted.append(time.monotonic())

        threading.Thread(target=preempt, daemon=True).start()
        return jobs

    monkeypatch.setattr(SlurmExecutor, "submit", preempting_submit)
    # submitit's local executor even where a Slurm client is installed (it needs no cluster to answer)
    monkeypatch.setattr(SlurmExecutor, "cluster", property(lambda self: "local"))
    result = runner.invoke(
        main, ["finetune", str(study), "--output-dir", str(slurm), "--executor", "slurm", "--timeout-min", "30"]
    )
    assert result.exit_code == 0, result.output
    assert interrupted
    marker = json.loads((slurm / "finetune-work" / "done" / "toy-full.json").read_text())
    assert marker["resumed_from"] in (4, 8)  # the requeued job went on from the last checkpoint the first one saved
    logs = "".join(p.read_text() for p in (slurm / "finetune-work" / "jobs" / "submitit").glob("*_log.*"))
    assert "Requeued job" in logs
    for step in (0, 4, 8, 60):
        a = load_file(inline / "toy-full" / f"checkpoint-{step}" / "model.safetensors")
        b = load_file(slurm / "toy-full" / f"checkpoint-{step}" / "model.safetensors")
        assert max(float(np.abs(a[k] - b[k]).max()) for k in a) <= 1e-6, step
    assert (slurm / "study.toml").is_file()


def test_requeueing_gives_back_the_run_this_worker_holds(tmp_path):
    from submitit.helpers import DelayedSubmission

    from ood_store._evaluate.workdir import WorkDir
    from ood_store._finetune import worker

    work = WorkDir(tmp_path / "work").create()
    attempt = work.start_attempt(["run-a"], "slurm")
    claim = work.claim(attempt, "run-a")
    assert claim is not None and work.claim(attempt, "run-a") is None  # taken
    worker._HELD.append(claim)
    try:
        again = worker.slurm_work.checkpoint(str(work.path), attempt, 1)
    finally:
        worker._HELD.remove(claim)
    assert isinstance(again, DelayedSubmission)
    assert (again.function, again.args) == (worker.slurm_work, (str(work.path), attempt, 1))
    assert work.claim(attempt, "run-a") is not None  # the requeued job can take it again


def test_one_progress_bar_over_runs_and_steps_with_the_time_left(study, tmp_path, runner):
    out = tmp_path / "runs"
    result = runner.invoke(
        main,
        ["finetune", str(study), "--output-dir", str(out), "--training", "max_steps=5", "--seed", "0", "--seed",
         "1", "--schedule", "manual:2", "--name", "toy-s{seed}"],
        env={"TTY_COMPATIBLE": "1", "COLUMNS": "200"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", result.output)  # rich's colors and cursor moves
    drawn = [line.strip() for line in re.split(r"[\r\n]", plain) if "finetuning 2 runs" in line]
    assert drawn, result.output
    # One bar over 2 runs x 5 steps; each step of each run moves it, with the time left and where it is.
    counts = {m for line in drawn for m in re.findall(r"\b\d+/\d+\b", line)}
    assert counts >= {f"{k}/10" for k in range(1, 11)} and all(c.endswith("/10") for c in counts), drawn
    assert any(line.endswith("toy-s0: step 3 of 5") for line in drawn)
    assert any(line.endswith("toy-s1: step 5 of 5") for line in drawn)
    assert all(re.search(r" (-:--:--|\d:\d\d:\d\d)( |$)", line) for line in drawn), drawn


def test_local_worker_processes_train_the_runs(study, tmp_path, runner):
    """``python -m ood_store._finetune.worker`` in a process of its own (the local executor), its log kept."""
    out = tmp_path / "runs"
    args = ["finetune", str(study), "--output-dir", str(out), "--executor", "local", "--workers", "1", "--training",
            "max_steps=3", "--schedule", "manual:1", "-q"]  # fmt: skip
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    done = json.loads((out / "finetune-work" / "done" / "toy-full.json").read_text())
    assert (done["steps"], done["checkpoints"]) == (3, [0, 1, 3])
    assert done["pid"] != os.getpid()
    [log] = (out / "finetune-work" / "jobs" / "local").glob("*-worker-0.log")
    assert log.read_text().strip().endswith("trained 1 run")
