"""What executors run for ``ood-store finetune``: the runs of an attempt, one at a time, each resumed where it stopped.

The work folder is evaluate's (:class:`~ood_store._evaluate.workdir.WorkDir`):
attempts, claims (so that no two workers train one run), completion and
failure markers, executors' logs. A unit is one run; ``runs/<unit>.json``
names its folder, and ``progress/<unit>.json`` says how far it is (for the
driver's progress bar). Every executor runs :func:`work`; the ``local`` one as
``python -m ood_store._finetune.worker WORK_DIR ATTEMPT``, the ``slurm`` one
:data:`slurm_work`, which submitit requeues at a time limit or preemption: the
run resumes from its last checkpoint, losing at most one schedule interval.
"""

from __future__ import annotations

import argparse
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ood_store._counts import n
from ood_store._evaluate.workdir import FORMAT, Failure, WorkDir, read_json, this_host, write_json
from ood_store._evaluate.worker import UnitResult, _heartbeat

#: How often a worker writes how far its run is (seconds).
PROGRESS_EVERY_S = 1.0
TAIL_LINES = 12
#: The claims this process holds: given back when submitit requeues it.
_HELD: list[Path] = []


#: pydantic's settings of the marker, as evaluate's records have them: strict types, no unknown fields.
_STRICT: Any = {"strict": True, "extra": "forbid"}


@dataclass(frozen=True)
class Trained:
    """The completion marker of a finetuning unit (one run), typed and versioned as evaluate's records are."""

    __pydantic_config__ = _STRICT

    unit: str
    run: str
    steps: int  # optimizer steps the run has taken
    checkpoints: list[int]  # the steps of the checkpoints it saved
    resumed_from: int | None  # the checkpoint step this worker resumed from (None: from the start)
    host: str
    pid: int
    attempt: str
    seconds: float
    finished: float  # seconds since the epoch
    format: int = FORMAT


class TrainingWorkDir(WorkDir):
    """finetune's work folder: evaluate's layout (attempts, claims, markers), with :class:`Trained` markers."""

    DONE = Trained


def spec_file(work: WorkDir, unit_id: str) -> Path:
    return work.path / "runs" / f"{unit_id}.json"


def progress_file(work: WorkDir, unit_id: str) -> Path:
    return work.path / "progress" / f"{unit_id}.json"


def work(work_dir: str | os.PathLike[str], attempt: str, max_units: int | None = None) -> int:
    """Train the runs of ``attempt`` that no other worker has taken, at most ``max_units``; returns how many."""
    folder = TrainingWorkDir(work_dir)
    count = 0
    for unit_id in folder.attempt(attempt).units:
        if max_units is not None and count >= max_units:
            break
        if folder.done(unit_id) is not None:
            continue
        claim = folder.claim(attempt, unit_id)
        if claim is None:
            continue
        _HELD.append(claim)
        try:
            run_unit(folder, unit_id, attempt, claim)
        finally:
            _HELD.remove(claim)
        count += 1
    return count


def run_unit(
    work_dir: WorkDir,
    unit_id: str,
    attempt: str,
    claim: Path | None,
    progress: Callable[[int, int], None] | None = None,
    callbacks: list[Any] | None = None,
) -> UnitResult:
    """Train one run (resuming it), then write its completion marker; an error goes to its failure marker.

    ``progress`` (default: the unit's progress file) hears (step, max_steps).
    """
    from ood_store._finetune.trainer import train

    started = time.monotonic()
    spec = read_json(spec_file(work_dir, unit_id)) or {}
    try:
        with _heartbeat(claim):
            hear = progress or _ProgressFile(progress_file(work_dir, unit_id))
            result = train(spec["folder"], hear, spec.get("keep"), callbacks or [], spec.get("in_loop"))
        seconds = time.monotonic() - started
        work_dir.mark_done(
            Trained(unit=unit_id, run=result.run, steps=result.steps, checkpoints=list(result.checkpoints),
                    resumed_from=result.resumed_from, host=this_host(), pid=os.getpid(), attempt=attempt,
                    seconds=round(seconds, 3), finished=time.time())
        )  # fmt: skip
        return UnitResult(unit_id, True, seconds)
    except Exception as exc:
        seconds = time.monotonic() - started
        error = _describe(exc)
        tail = "".join(traceback.format_exception(exc)).rstrip("\n").splitlines()[-TAIL_LINES:]
        work_dir.mark_failed(
            Failure(unit=unit_id, error=error, tail=tail, host=this_host(), pid=os.getpid(), attempt=attempt,
                    seconds=round(seconds, 3), finished=time.time())
        )  # fmt: skip
        return UnitResult(unit_id, False, seconds, error)


class _ProgressFile:
    """Writes (step, max_steps) to a unit's progress file, at most every PROGRESS_EVERY_S and at the last step."""

    def __init__(self, path: Path):
        self.path, self.last = path, 0.0

    def __call__(self, step: int, max_steps: int) -> None:
        now = time.monotonic()
        if now - self.last >= PROGRESS_EVERY_S or step >= max_steps:
            write_json(self.path, {"step": step, "max_steps": max_steps, "host": this_host(), "time": time.time()})
            self.last = now


def _describe(exc: BaseException) -> str:
    from ood_store._errors import OodStoreError

    if isinstance(exc, OodStoreError):
        return str(exc)
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class RequeuedWork:
    """:func:`work` as submitit runs it on Slurm: at a time limit or preemption submitit calls :meth:`checkpoint`,
    which gives back the run this process holds and submits the same call again, which resumes it."""

    def __call__(self, work_dir: str, attempt: str, max_units: int | None = None) -> int:
        return work(work_dir, attempt, max_units)

    def checkpoint(self, work_dir: str, attempt: str, max_units: int | None = None) -> Any:
        from submitit.helpers import DelayedSubmission

        for claim in list(_HELD):  # the requeued job takes the run again
            claim.unlink(missing_ok=True)
        return DelayedSubmission(self, work_dir, attempt, max_units)


#: What the Slurm executor submits (see :func:`ood_store._evaluate.executors.worker_function`).
slurm_work = RequeuedWork()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ood_store._finetune.worker", description=__doc__.splitlines()[0])
    parser.add_argument("work_dir")
    parser.add_argument("attempt")
    parser.add_argument("--max-units", type=int)
    args = parser.parse_args(argv)
    threads = os.environ.get("OMP_NUM_THREADS")
    if threads and threads.isdigit():  # the local executor shares the CPUs out between workers
        import torch

        torch.set_num_threads(int(threads))
    done = work(args.work_dir, args.attempt, args.max_units)
    print(f"trained {n(done, 'run')}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
