"""``local``: N worker processes on this machine, e.g. one per GPU.

Each worker is ``python -m ood_store._evaluate.worker WORK_DIR ATTEMPT`` (or the module ``submit`` is given) in a
session of its own (Ctrl-C reaches the driver, which stops them; with
``detach`` they outlive it). With GPUs visible, each worker sees its own
(``CUDA_VISIBLE_DEVICES``, ``gpus_per_task`` each, round robin); on CPUs the
cores are shared out (``OMP_NUM_THREADS``, unless it is set already).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ood_store._counts import n
from ood_store._evaluate.executors import WORKER, ExecutorSettings, JobEnd
from ood_store._evaluate.workdir import WorkDir


def visible_gpus() -> list[str]:
    """The GPUs this process may use: ``CUDA_VISIBLE_DEVICES`` if set, else every one torch sees."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        return [g.strip() for g in given.split(",") if g.strip() and g.strip() != "-1"]
    try:
        import torch
    except ImportError:
        return []
    return [str(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []


class LocalExecutor:
    def __init__(self, settings: ExecutorSettings):
        self.settings = settings

    def preflight(self) -> None:
        pass

    def check(self) -> None:
        pass

    def worker_environments(self) -> list[dict[str, str]]:
        """The environment of each worker: its GPUs, or its share of the CPU cores."""
        gpus = visible_gpus()
        per = int(self.settings.gpus_per_task) if self.settings.gpus_per_task is not None else (1 if gpus else 0)
        workers = self.settings.workers or (max(1, len(gpus) // per) if gpus and per else 1)
        envs = []
        for index in range(workers):
            env = dict(os.environ)
            if gpus and per:
                env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus[(index * per + k) % len(gpus)] for k in range(per))
            else:
                if per == 0 and gpus:
                    env["CUDA_VISIBLE_DEVICES"] = ""
                threads = str(max(1, (os.cpu_count() or 1) // workers))
                for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
                    env.setdefault(variable, threads)
            envs.append(env)
        return envs

    def submit(self, work: WorkDir, attempt: str, units: int, detach: bool, worker: str = WORKER) -> LocalJobs:
        envs = self.worker_environments()[: max(1, units)]
        folder = work.jobs / "local"
        folder.mkdir(parents=True, exist_ok=True)
        processes, logs = [], []
        for index, env in enumerate(envs):
            log = folder / f"{attempt}-worker-{index}.log"
            with log.open("ab") as out:
                processes.append(
                    subprocess.Popen(
                        [sys.executable, "-m", worker, str(work.path), attempt],
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        env=env,
                        start_new_session=True,
                    )
                )
            logs.append(log)
        return LocalJobs(processes, logs)


class LocalJobs:
    def __init__(self, processes: list[subprocess.Popen], logs: list[Path]):
        self.processes, self.logs = processes, logs
        pids = ", ".join(str(p.pid) for p in processes)
        self.description = f"{n(len(processes), 'local worker')} (processes {pids})"

    def finished(self) -> bool:
        return all(p.poll() is not None for p in self.processes)

    def ended(self) -> dict[str, JobEnd]:
        return {}

    def cancel(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in self.processes:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def errors(self) -> list[str]:
        out = []
        for process, log in zip(self.processes, self.logs, strict=True):
            code = process.poll()
            if code:
                how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
                out.append(f"local worker process {process.pid} {how} (its log: {log})")
        return out

    def close(self) -> None:
        pass
