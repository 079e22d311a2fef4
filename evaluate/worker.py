"""The worker: evaluates units of a work folder with lm-eval; never opens the store.

For each unit it takes (a claim file, so that no two workers take one unit;
the units of one run in a row, :mod:`ood_store._evaluate.grouping`), it runs
lm-eval on the checkpoint (:mod:`ood_store._evaluate.harness`), writes
lm-eval's standard files into a hidden temporary folder beside the unit's
output folder, renames that folder into place, and then writes the unit's
completion marker (unit id, results file and its SHA-256, lm-eval version,
host, seconds, and where they went: :mod:`ood_store._evaluate.timings`). A
worker that dies leaves a temporary folder and no marker: the unit counts as
not evaluated. An error in one unit (CUDA out of memory, a broken checkpoint)
is written to the unit's failure marker and the worker goes on with the next
one. Task objects are built once per worker and reused for every checkpoint;
the model of a run is loaded once and each checkpoint's weights put into it
(:mod:`ood_store._evaluate.series`), the next one read while one is scored.

Every executor runs :func:`work`; the ``local`` one as
``python -m ood_store._evaluate.worker WORK_DIR ATTEMPT``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from ood_store._errors import OodStoreError
from ood_store._evaluate.checkpoints import Checkpoint
from ood_store._evaluate.grouping import UnitQueue
from ood_store._evaluate.harness import output_to, require_eval_extra, run_lm_eval
from ood_store._evaluate.series import ModelSession, NotOfRun, unit_model
from ood_store._evaluate.tasklist import TaskObjects
from ood_store._evaluate.timings import Timings
from ood_store._evaluate.workdir import HEARTBEAT_S, Done, Failure, Unit, WorkDir, this_host

TAIL_LINES = 12


@dataclass(frozen=True)
class UnitResult:
    unit: str
    ok: bool
    seconds: float
    error: str | None = None


def work(
    work_dir: str | os.PathLike[str],
    attempt: str,
    max_units: int | None = None,
    *,
    stop: Callable[[], bool] | None = None,
) -> int:
    """Evaluate the units of ``attempt`` that no other worker has taken, at most ``max_units``; returns how many.

    ``stop``, asked before each unit is taken: when it says true, no further unit is (the worker's job
    was cancelled, or is near its time limit).
    """
    require_eval_extra("a worker")
    work = WorkDir(work_dir)
    count = 0
    queue = UnitQueue(work, attempt, work.attempt(attempt).units)
    with TaskObjects() as tasks, ModelSession() as session:
        while max_units is None or count < max_units:
            if stop is not None and stop():  # Slurm asked the worker to take no new unit
                break
            taken = queue.take()
            if taken is None:
                break
            unit, claim = taken
            count += 1
            upcoming = queue.upcoming() if max_units is None or count < max_units else None
            run_unit(work, unit, tasks, attempt, claim, session=session, upcoming=upcoming)
    return count


def run_unit(
    work_dir: WorkDir,
    unit: Unit,
    tasks: TaskObjects,
    attempt: str,
    claim: Path | None,
    *,
    session: ModelSession | None = None,
    upcoming: Unit | None = None,
) -> UnitResult:
    """Evaluate one unit: lm-eval's files renamed into ``unit.output``, then its completion marker.

    ``session`` holds the model of the unit's run between units (default: a
    fresh load, let go afterwards); ``upcoming`` is the unit this worker
    expects to take next, whose checkpoint is read while this one is scored.
    Returns how it went; an error of the evaluation is written to the unit's
    failure marker, not raised (interrupts and exits are).
    """
    started = time.monotonic()
    timings = Timings()
    own_session = session is None
    session = ModelSession(enabled=False) if session is None else session
    final = Path(unit.output)
    tmp = final.parent / f".{final.name}.{this_host()}.{os.getpid()}.tmp"
    try:
        with _heartbeat(claim):
            _remove_leftovers(final)
            tmp.mkdir(parents=True)
            with output_to(tmp / "lm-eval.log" if unit.log_to_file else None):  # building tasks prints too
                catalogue = tasks.task_list(unit.task_source)
                objects = tasks.objects(unit.task_source, unit.tasks, unit.options)
                checkpoint = Checkpoint(**unit.checkpoint)
                lm = unit_model(session, unit, checkpoint, objects, timings)
                session.prefetch(None if upcoming is None else Checkpoint(**upcoming.checkpoint))
                results = run_lm_eval(
                    checkpoint,
                    objects,
                    catalogue.manager,
                    tmp,
                    unit.options,
                    unit.dtype,
                    catalogue.suite_record(unit.tasks),
                    lm=lm,
                    timings=timings,
                    max_length=unit.max_length,
                    truncation=unit.truncation,
                    cache_dir=work_dir.path / "prepared",
                )
                session.keep_batch_size()
            writing = time.monotonic()
            relative = results.relative_to(tmp)
            if work_dir.done(unit.id) is not None:  # another worker finished it meanwhile: keep theirs
                shutil.rmtree(tmp, ignore_errors=True)
                return UnitResult(unit.id, True, time.monotonic() - started)
            if final.exists():  # renamed by a worker that died before writing its marker
                shutil.rmtree(final)
            os.rename(tmp, final)
            digest = _sha256(final / relative)
            timings.write_s += time.monotonic() - writing
            seconds = time.monotonic() - started
            work_dir.mark_done(
                Done(
                    unit=unit.id,
                    results=str(final / relative),
                    sha256=digest,
                    lm_eval_version=_version("lm_eval"),
                    host=this_host(),
                    pid=os.getpid(),
                    attempt=attempt,
                    seconds=round(seconds, 3),
                    finished=time.time(),
                    scorer=unit.scorer,
                    timings=timings.close(seconds).record(),
                )
            )
            return UnitResult(unit.id, True, seconds)
    except Exception as exc:
        seconds = time.monotonic() - started
        error = _describe(exc)
        log = tmp / "lm-eval.log"
        tail = _tail_lines("".join(traceback.format_exception(exc)))
        logged = _tail_lines(log.read_text("utf-8", "replace")) if log.is_file() else []
        if logged:
            tail += ["-- the end of lm-eval.log --", *logged]
            work_dir.failed_log(unit.id).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(log, work_dir.failed_log(unit.id))
        shutil.rmtree(tmp, ignore_errors=True)
        work_dir.mark_failed(
            Failure(
                unit=unit.id,
                error=error,
                tail=[line.rstrip("\n") for line in tail],
                host=this_host(),
                pid=os.getpid(),
                attempt=attempt,
                seconds=round(seconds, 3),
                finished=time.time(),
            )
        )
        if not _model_untouched(exc):
            session.release()  # the model's state is not known: the run's next unit loads it afresh
        elif upcoming is not None:
            session.prefetch(Checkpoint(**upcoming.checkpoint))
        return UnitResult(unit.id, False, seconds, error)
    finally:
        if own_session:
            session.close()  # a model let go gives its memory back (ModelSession.release); a kept one is reused


def _model_untouched(exc: BaseException) -> bool:
    """Whether a unit failed before anything changed the model its worker holds (a checkpoint not of its run, a
    task the verbalizer scorer refuses): the run's next unit can use that model."""
    from ood_store._evaluate.scorer import ScorerRefused

    return isinstance(exc, NotOfRun | ScorerRefused)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OodStoreError):
        return str(exc)
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _tail_lines(text: str, n: int = TAIL_LINES) -> list[str]:
    return text.rstrip("\n").splitlines()[-n:]


def _remove_leftovers(final: Path) -> None:
    """Temporary folders of workers that died while evaluating this unit (hidden, never ingested)."""
    if final.parent.is_dir():
        for leftover in final.parent.glob(f".{final.name}.*.tmp"):
            shutil.rmtree(leftover, ignore_errors=True)


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


@contextmanager
def _heartbeat(claim: Path | None) -> Iterator[None]:
    """Touch the claim file every HEARTBEAT_S seconds while the block runs: other hosts see the worker is alive."""
    if claim is None:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_S):
            with suppress(OSError):
                os.utime(claim)

    thread = threading.Thread(target=beat, name="ood-store-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ood_store._evaluate.worker", description=__doc__.splitlines()[0])
    parser.add_argument("work_dir")
    parser.add_argument("attempt")
    parser.add_argument("--max-units", type=int)
    args = parser.parse_args(argv)
    _threads_from_environment()
    done = work(args.work_dir, args.attempt, args.max_units)
    print(f"evaluated {done} units", flush=True)
    return 0


def _threads_from_environment() -> None:
    """Honour OMP_NUM_THREADS for torch's intra-op threads (the local executor splits the CPUs between workers)."""
    threads = os.environ.get("OMP_NUM_THREADS")
    if threads and threads.isdigit():
        import torch

        torch.set_num_threads(int(threads))


if __name__ == "__main__":
    raise SystemExit(main())
