"""``slurm``: one Slurm job array through submitit, several units per array task.

``submitit.AutoExecutor`` submits :func:`ood_store._evaluate.worker.work` with
``map_array``: ``ceil(units / units_per_task)`` array tasks, each evaluating
up to ``units_per_task`` units (whichever no other task has taken), at most
``max_parallel`` at a time (``slurm_array_parallelism``). Where Slurm is not
installed (no ``srun``), submitit's local executor runs the same array on this
machine, which is how the tests run it. Needs the ``slurm`` extra (submitit).
"""

from __future__ import annotations

import math
import shutil
from typing import Any

from ood_store._counts import n
from ood_store._errors import InputError, OodStoreError, first_line
from ood_store._evaluate.executors import WORKER, ExecutorSettings, require_extra, worker_function
from ood_store._evaluate.workdir import WorkDir
from ood_store._names import did_you_mean

DEFAULT_UNITS_PER_TASK = 4
DEFAULT_TIMEOUT_MIN = 240


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
        """``slurm`` where ``srun`` is on the PATH, else ``local`` (submitit's local executor)."""
        return "slurm" if shutil.which("srun") else "local"

    def check(self) -> None:
        pass

    def parameters(self) -> dict[str, Any]:
        """What ``AutoExecutor.update_parameters`` gets."""
        s = self.settings
        params: dict[str, Any] = {
            "name": "ood-store",
            "timeout_min": s.timeout_min or DEFAULT_TIMEOUT_MIN,
            "gpus_per_node": None if s.gpus_per_task is None else int(s.gpus_per_task),
            "tasks_per_node": 1,
            "slurm_partition": s.slurm_partition,
            "slurm_array_parallelism": s.max_parallel,
            **{f"slurm_{key}": value for key, value in s.slurm_params.items()},
        }
        return {k: v for k, v in params.items() if v is not None}

    def submit(self, work: WorkDir, attempt: str, units: int, detach: bool, worker: str = WORKER) -> SubmititJobs:
        per_task = self.settings.units_per_task or DEFAULT_UNITS_PER_TASK
        tasks = max(1, math.ceil(units / per_task))
        cluster = self.cluster
        executor = self.submitit.AutoExecutor(folder=work.jobs / "submitit", cluster=cluster)
        try:
            executor.update_parameters(**self.parameters())
            function = worker_function(worker, "slurm")  # requeued at a time limit where the worker says how
            jobs = executor.map_array(function, [str(work.path)] * tasks, [attempt] * tasks, [per_task] * tasks)
        except Exception as exc:  # sbatch refused the array, or submitit refused a parameter
            raise OodStoreError(f"the Slurm job array could not be submitted: {first_line(exc)}") from None
        array = str(jobs[0].job_id).split("_")[0] if jobs else "?"
        where = f"Slurm job array {array}" if cluster == "slurm" else "submitit's local executor (no Slurm here)"
        units_each = f"{n(per_task, 'unit')}"
        return SubmititJobs(jobs, f"{where}: {n(tasks, 'task')} of up to {units_each}")


class SubmititJobs:
    def __init__(self, jobs: list[Any], description: str):
        self.jobs, self.description = jobs, description

    def finished(self) -> bool:
        return all(job.done() for job in self.jobs)

    def cancel(self) -> None:
        for job in self.jobs:
            if not job.done():
                job.cancel(check=False)

    def errors(self) -> list[str]:
        out = []
        for job in self.jobs:
            if not job.done():
                continue
            error = job.exception()
            if error is not None:
                lines = [line for line in str(error).strip().splitlines() if line.strip()]
                out.append(f"job {job.job_id}: {lines[-1] if lines else type(error).__name__}")
        return out

    def close(self) -> None:
        pass
