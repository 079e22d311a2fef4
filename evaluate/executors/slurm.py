"""``slurm``: one Slurm job array through submitit, several units per array task.

``submitit.AutoExecutor`` submits
:class:`~ood_store._evaluate.executors.slurm_worker.SlurmWorker` (which runs
:func:`ood_store._evaluate.worker.work` and handles Slurm's signals: no new
unit after ``scancel`` or near the time limit, a requeue for the units left)
with ``map_array``: ``ceil(units / units_per_task)`` array tasks, each
evaluating up to ``units_per_task`` units (whichever no other task has taken),
at most ``max_parallel`` at a time (``slurm_array_parallelism``).

Before anything is planned, ``sbatch --test-only`` of the array's own
directives asks Slurm whether it would take them (partition, account, QoS,
time limit, GPUs): a refusal is one line, and no work folder is left behind.
While the array runs, :class:`~ood_store._evaluate.executors.slurm_queue.ArrayQueue`
polls every task at once with ``squeue`` (``sacct`` only for tasks that have
left the queue, and only where accounting is on), so that a cancelled,
timed-out or failed task is seen within seconds.

Where Slurm is not installed (no ``sbatch``), submitit's local executor runs
the same array on this machine, which is how the fast tests run it. Needs the
``slurm`` extra (submitit).
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from ood_store._counts import n
from ood_store._errors import InputError, Note, OodStoreError, first_line
from ood_store._evaluate.executors import WORKER, ExecutorSettings, JobEnd, require_extra, worker_function
from ood_store._evaluate.executors.slurm_queue import FINAL, ArrayQueue, Poll, run
from ood_store._evaluate.workdir import WorkDir
from ood_store._names import did_you_mean

DEFAULT_UNITS_PER_TASK = 4
DEFAULT_TIMEOUT_MIN = 240
#: How often the driver asks the scheduler how the array's tasks stand (one squeue call for all of them).
POLL_S = 3.0


class SlurmExecutor:
    def __init__(self, settings: ExecutorSettings):
        self.settings = settings
        self.submitit = require_extra("submitit", "slurm", "slurm")
        valid = self.submitit.SlurmExecutor._valid_parameters()
        for key in settings.slurm_params:
            if key not in valid:
                hint = did_you_mean(key, sorted(valid))
                raise InputError(
                    None, key, f"not an sbatch parameter that submitit knows{hint}", parameter="slurm_params"
                )

    @property
    def cluster(self) -> str:
        """``slurm`` where ``sbatch`` is on the PATH, else ``local`` (submitit's local executor)."""
        return "slurm" if shutil.which("sbatch") else "local"

    def preflight(self) -> None:
        """``sbatch --test-only`` of the array's directives: Slurm's refusal (a partition, account or QoS it does
        not know or allow, a time limit over the partition's) as one line, before anything is planned."""
        if self.cluster != "slurm":
            return
        from submitit.slurm.slurm import _make_sbatch_string

        with tempfile.TemporaryDirectory(prefix="ood-store-sbatch-") as folder:
            auto = self.submitit.AutoExecutor(folder=folder, cluster="slurm")
            auto.update_parameters(**self.parameters())  # submitit's names for sbatch's, as submit() has them
            script = Path(folder) / "test.sh"
            directives = auto._executor.parameters
            script.write_text(_make_sbatch_string(command="true", folder=folder, map_count=1, **directives))
            code, _, error = run(["sbatch", "--test-only", str(script)])
        if code != 0:
            lower = error.lower()
            parameter = "executor"
            if any(word in lower for word in ("account", "qos", "association")):
                parameter = "slurm_params"
            elif "partition" in lower:
                parameter = "slurm_partition"
            raise InputError(None, None, f"Slurm refuses the job array: {error or f'exit status {code}'}",
                             parameter=parameter)  # fmt: skip

    def check(self) -> None:
        pass

    def parameters(self) -> dict[str, Any]:
        """What ``AutoExecutor.update_parameters`` gets."""
        from ood_store._evaluate.executors.slurm_worker import signal_delay_s

        s = self.settings
        timeout = s.timeout_min or DEFAULT_TIMEOUT_MIN
        params: dict[str, Any] = {
            "name": "ood-store",
            "timeout_min": timeout,
            "gpus_per_node": None if s.gpus_per_task is None else int(s.gpus_per_task),
            "tasks_per_node": 1,
            "slurm_partition": s.slurm_partition,
            "slurm_array_parallelism": s.max_parallel,
            "slurm_signal_delay_s": signal_delay_s(timeout),
            **{f"slurm_{key}": value for key, value in s.slurm_params.items()},
        }
        return {k: v for k, v in params.items() if v is not None}

    def submit(
        self, work: WorkDir, attempt: str, units: int, detach: bool, worker: str = WORKER
    ) -> SlurmArrayJobs | SubmititJobs:
        from ood_store._evaluate.executors.slurm_worker import SlurmWorker

        per_task = self.settings.units_per_task or DEFAULT_UNITS_PER_TASK
        tasks = max(1, math.ceil(units / per_task))
        cluster = self.cluster
        executor = self.submitit.AutoExecutor(folder=work.jobs / "submitit", cluster=cluster)
        parameters = self.parameters()
        try:
            executor.update_parameters(**parameters)
            # evaluate's worker handles Slurm's signals (SlurmWorker); another stage's worker module (finetune)
            # brings its own requeueing callable (its slurm_work)
            function = (
                SlurmWorker(parameters["slurm_signal_delay_s"])
                if worker == WORKER
                else worker_function(worker, "slurm")
            )
            jobs = executor.map_array(function, [str(work.path)] * tasks, [attempt] * tasks, [per_task] * tasks)
        except Exception as exc:  # sbatch refused the array, or submitit refused a parameter
            raise OodStoreError(f"the Slurm job array could not be submitted: {first_line(exc)}") from None
        units_each = f"{n(tasks, 'task')} of up to {n(per_task, 'unit')}"
        if cluster != "slurm":
            return SubmititJobs(jobs, f"submitit's local executor (no Slurm here): {units_each}")
        array = str(jobs[0].job_id).split("_")[0]
        stderr = {str(job.job_id): Path(job.paths.stderr) for job in jobs}
        queue = ArrayQueue(array, list(stderr), stderr.__getitem__)
        slurm_jobs = SlurmArrayJobs(queue, f"Slurm job array {array}: {units_each}")
        if not detach:
            slurm_jobs.say_how_states_are_known()
        return slurm_jobs


class SlurmArrayJobs:
    """A Slurm job array, as squeue (and sacct, where accounting is on) sees its tasks."""

    def __init__(self, queue: ArrayQueue, description: str):
        self.queue, self.description = queue, description
        self._last: Poll | None = None
        self._polled = -math.inf
        self._all_ended = 0  # polls in a row that found every task ended
        self._said_squeue_fails = False

    def say_how_states_are_known(self) -> None:
        """One note when accounting is off: then squeue and the work folder decide how tasks ended."""
        why = self.queue.accounting_off()
        if why is not None:
            warnings.warn(
                Note(f"Slurm accounting is off here ({why}): squeue and the work folder tell how the array's "
                     "tasks end"),
                stacklevel=2,
            )  # fmt: skip

    def _poll(self) -> Poll:
        if self._last is None or time.monotonic() - self._polled >= POLL_S:
            self._polled = time.monotonic()
            poll = self.queue.poll()
            if poll.states is None:
                if not self._said_squeue_fails:
                    warnings.warn(Note(f"{poll.error}; asking again every {POLL_S:g} s"), stacklevel=3)
                    self._said_squeue_fails = True
                self._all_ended = 0
                return poll
            self._all_ended = self._all_ended + 1 if all(s in FINAL for s in poll.states.values()) else 0
            self._last = poll
        return self._last

    def finished(self) -> bool:
        """Whether every task has ended, seen in two polls in a row (a requeued task passes through ended
        states for a moment on its way back to the queue)."""
        self._poll()
        return self._all_ended >= 2

    def ended(self) -> dict[str, JobEnd]:
        last = self._last.states if self._last is not None else None
        return self.queue.ended(last or {})

    def cancel(self) -> None:
        self.queue.cancel()

    def errors(self) -> list[str]:
        return [end.describe() for end in self.ended().values()]

    def close(self) -> None:
        pass


class SubmititJobs:
    """The array on submitit's local executor (no Slurm): processes on this machine."""

    def __init__(self, jobs: list[Any], description: str):
        self.jobs, self.description = jobs, description

    def finished(self) -> bool:
        return all(job.done() for job in self.jobs)

    def ended(self) -> dict[str, JobEnd]:
        return {}

    def cancel(self) -> None:
        for job in self.jobs:
            if not job.done():
                job.cancel(check=False)

    def errors(self) -> list[str]:
        """Why tasks failed: the exception each one's result file holds; a task without one (it was killed)
        is not waited for (submitit would wait 15 s for each)."""
        out = []
        for job in self.jobs:
            if not job.done() or not job.paths.result_pickle.exists():
                continue
            error = job.exception()
            if error is not None:
                lines = [line for line in str(error).strip().splitlines() if line.strip()]
                out.append(f"job {job.job_id}: {lines[-1] if lines else type(error).__name__}")
        return out

    def close(self) -> None:
        pass
