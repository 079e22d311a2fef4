"""What a Slurm array task runs: :func:`ood_store._evaluate.worker.work`, with Slurm's signals handled.

- ``SIGTERM`` (``scancel``; Slurm at the time limit): the worker takes no new
  unit. The one it is evaluating goes on: if it ends within Slurm's
  ``KillWait`` its results are kept (the driver stores them), else Slurm kills
  the task and the unit is evaluated by the next run.
- ``SIGUSR2``, which submitit asks Slurm to send ``signal_delay_s`` before the
  time limit (and Slurm sends before preempting a job): the worker takes no
  new unit, and the one it is evaluating may go on until :data:`MARGIN_S`
  before the limit. Then, or as soon as that unit ends, the task is requeued
  through submitit (:class:`submitit.helpers.Checkpointable`) if units are
  left: when it runs again it takes them. A unit still running at that point
  is given back (its claim removed), not failed: the requeued task evaluates
  it. Where submitit may not requeue the task again (it has been requeued
  ``max_num_timeout`` times), the task ends and the units left stay pending
  for the next run.

Under submitit's local executor (no Slurm) the worker runs as it is.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from datetime import datetime
from types import FrameType
from typing import Any

from submitit.helpers import Checkpointable

from ood_store._evaluate import worker
from ood_store._evaluate.executors.slurm_queue import run
from ood_store._evaluate.workdir import WorkDir, this_host

#: Seconds before the time limit at which a unit still running is given back and the task requeued.
MARGIN_S = 10.0


class OutOfTime(BaseException):
    """Raised in the worker when its time is up: a BaseException, so that no unit records it as its failure."""


def signal_delay_s(timeout_min: int) -> int:
    """How long before the time limit SIGUSR2 comes: a tenth of the limit, 30 s to 10 min, at most half of it."""
    limit = timeout_min * 60
    return max(1, min(600, max(30, limit // 10), limit // 2))


class SlurmWorker(Checkpointable):
    """The callable each array task runs (``worker(work_dir, attempt, max_units)``); requeued as it is."""

    def __init__(self, signal_delay: int):
        self.signal_delay = signal_delay
        self._stop = self._near_limit = self._terminated = False

    def __call__(self, work_dir: str, attempt: str, max_units: int) -> int:
        if os.environ.get("SUBMITIT_EXECUTOR") != "slurm":  # submitit's local executor: no Slurm signals to handle
            return worker.work(work_dir, attempt, max_units)
        self._stop = self._near_limit = self._terminated = False
        if not _STDERR:
            _STDERR.append(os.dup(2))
        requeue = signal.getsignal(signal.SIGUSR2)  # submitit's: checkpoint, scontrol requeue, exit
        signal.signal(signal.SIGTERM, self._on_term)
        signal.signal(signal.SIGCONT, signal.SIG_DFL)  # scancel sends it first: nothing to do (nor to log)
        signal.signal(signal.SIGUSR2, self._on_usr2)
        signal.signal(signal.SIGALRM, self._on_alarm)
        count = 0
        try:
            count = worker.work(work_dir, attempt, max_units, stop=lambda: self._stop)
        except OutOfTime:
            _give_back(WorkDir(work_dir), attempt)
        finally:
            signal.alarm(0)
        if self._near_limit and not self._terminated and _units_left(WorkDir(work_dir), attempt):
            _say("requeueing this task for the units left")
            try:
                if callable(requeue):
                    requeue(signal.SIGUSR2, None)  # exits the process once the task is requeued
            except Exception as exc:  # submitit will not requeue it (again)
                _say(f"not requeued ({str(exc).strip()}); the units left stay pending for the next run")
        return count

    def __getstate__(self) -> dict[str, Any]:  # what a requeued task gets: no signal state
        return {"signal_delay": self.signal_delay}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.signal_delay = state["signal_delay"]
        self._stop = self._near_limit = self._terminated = False

    # -- signals -------------------------------------------------------------
    def _on_term(self, signum: int, frame: FrameType | None) -> None:
        self._stop = self._terminated = True
        _say("SIGTERM (cancelled, or at the time limit): taking no new unit")

    def _on_usr2(self, signum: int, frame: FrameType | None) -> None:
        self._stop = self._near_limit = True
        left = _seconds_left(self.signal_delay)
        _say(f"SIGUSR2, {left:.0f} s before the time limit: taking no new unit")
        signal.alarm(max(1, int(left - MARGIN_S)))

    def _on_alarm(self, signum: int, frame: FrameType | None) -> None:
        raise OutOfTime


_STDERR: list[int] = []  # the task's own standard error, kept: lm-eval's output goes to a log file meanwhile


def _say(message: str) -> None:
    """A line on the task's own standard error (Slurm's stderr file), even while lm-eval's output is redirected."""
    line = f"ood-store worker {os.getpid()}: {message}\n".encode()
    if _STDERR:
        os.write(_STDERR[0], line)
    else:
        sys.stderr.write(line.decode())
        sys.stderr.flush()


def _seconds_left(default: float) -> float:
    """Seconds until this job's end time (squeue's %e), or ``default`` when squeue does not say."""
    code, out, _ = run(["squeue", "-h", "-j", os.environ.get("SLURM_JOB_ID", ""), "-o", "%e"])
    try:
        end = datetime.strptime(out.strip(), "%Y-%m-%dT%H:%M:%S").timestamp()
    except ValueError:
        return default
    return end - time.time() if code == 0 else default


def _give_back(work: WorkDir, attempt: str) -> None:
    """Remove this process's claims on units it did not finish: the requeued task (or the next run) takes them."""
    for unit_id, claim in work.claims(attempt).items():
        if claim.pid == os.getpid() and claim.host == this_host() and work.done(unit_id) is None:
            work.release(attempt, unit_id)
            _say(f"gave back {unit_id} (not finished before the time limit)")


def _units_left(work: WorkDir, attempt: str) -> bool:
    """Whether units of ``attempt`` are neither finished nor taken by a worker."""
    taken = work.marked("done") | work.claimed(attempt)
    return any(unit_id not in taken for unit_id in work.attempt(attempt).units)
