"""Where workers run: ``inline`` (in this process), ``local`` (worker processes here), ``slurm``, ``ray``.

:func:`settings` checks the executor's name and options (every option belongs
to some executors only) before anything is planned or submitted;
:func:`create` makes the executor, importing its optional extra. An executor's
``preflight()`` asks the cluster, before planning, whether it would take
the workers as configured (``sbatch --test-only``, a Ray head that answers
and accepts this machine's token); its ``check()`` starts what the workers
need (a connection to Ray) once there is something to evaluate; its
``submit()`` starts workers on an attempt's units and returns :class:`Jobs`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ood_store._errors import InputError, OodStoreError, install_hint
from ood_store._evaluate.workdir import WorkDir

NAMES = ("inline", "local", "slurm", "ray")
#: The module whose ``work(work_dir, attempt, max_units=None)`` workers run unless ``submit`` is given another
#: (``ood-store finetune`` gives its own): evaluate's.
WORKER = "ood_store._evaluate.worker"

#: The executors each option applies to.
OWNERS: dict[str, tuple[str, ...]] = {
    "workers": ("local", "ray"),
    "units_per_task": ("slurm",),
    "slurm_partition": ("slurm",),
    "gpus_per_task": ("local", "slurm", "ray"),
    "timeout_min": ("slurm",),
    "max_parallel": ("slurm",),
    "slurm_params": ("slurm",),
    "ray_address": ("ray",),
}

#: Slurm parameters that have an option of their own.
_SLURM_OWN = {
    "partition": "slurm_partition",
    "time": "timeout_min",
    "array_parallelism": "max_parallel",
    "gpus_per_node": "gpus_per_task",
    "gpus_per_task": "gpus_per_task",
}


@dataclass(frozen=True)
class ExecutorSettings:
    """An executor and its options, checked (see :func:`settings`)."""

    name: str = "inline"
    workers: int | None = None
    units_per_task: int | None = None
    slurm_partition: str | None = None
    gpus_per_task: float | None = None
    timeout_min: int | None = None
    max_parallel: int | None = None
    slurm_params: dict[str, Any] = field(default_factory=dict)
    ray_address: str | None = None


@dataclass(frozen=True)
class JobEnd:
    """A worker's job that the scheduler ended without completing it: its state and the end of its own stderr."""

    job: str  # as the scheduler names it (Slurm: 4242_3 for an array task), and as claims record it
    state: str  # the scheduler's: CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, FAILED, UNKNOWN, ...
    tail: list[str] = field(default_factory=list)
    log: str | None = None  # its stderr file
    scheduler: str = "Slurm"

    def describe(self) -> str:
        return f"{self.scheduler} job {self.job} ended: {self.state}"


class Jobs(Protocol):
    """Workers started by an executor."""

    description: str  # e.g. "Slurm job array 4242 (10 tasks)"

    def finished(self) -> bool:
        """Whether every worker has stopped."""
        ...

    def ended(self) -> dict[str, JobEnd]:
        """The workers' jobs that the scheduler ended abnormally, by job (as claims name it); {} without one."""
        ...

    def cancel(self) -> None:
        """Stop every worker."""
        ...

    def errors(self) -> list[str]:
        """Why workers stopped abnormally (exit status, exception), one line each."""
        ...

    def close(self) -> None:
        """Let go of what the driver held (a Ray connection), leaving running workers alone."""
        ...


class Executor(Protocol):
    settings: ExecutorSettings

    def preflight(self) -> None:
        """Stop with one line when the cluster refuses the configuration (a partition, an account, a Ray
        address), before anything is planned; quick, and leaves nothing behind."""
        ...

    def check(self) -> None:
        """Stop with one line when the executor cannot run as configured (after planning, before submitting)."""
        ...

    def submit(self, work: WorkDir, attempt: str, units: int, detach: bool, worker: str = WORKER) -> Jobs:
        """Start workers on the ``units`` units of ``attempt``, each running ``work`` of the module ``worker``."""
        ...


def settings(name: str | None = None, **options: Any) -> ExecutorSettings:
    """Checked executor settings: a known name, and only options that apply to it, of the right types.

    ``options`` are the keyword parameters of :class:`ExecutorSettings`; None
    (or an empty ``slurm_params``) means not given. Errors name the parameter.
    """
    name = (name or "inline").strip().lower()
    if name not in NAMES:
        raise InputError(None, None, f"unknown executor {name!r} (inline, local, slurm or ray)", parameter="executor")
    unknown = sorted(set(options) - set(OWNERS))
    if unknown:
        raise InputError(None, None, "not an executor option", parameter=unknown[0])
    for option, value in options.items():
        if value is None or (option == "slurm_params" and not value):
            continue
        owners = OWNERS[option]
        if name not in owners:
            raise InputError(
                None, None, f"only for the {' and '.join(owners)} executor, not `executor` {name}", parameter=option
            )
    checked: dict[str, Any] = {}
    for option in ("workers", "units_per_task", "timeout_min", "max_parallel"):
        checked[option] = _positive_int(options.get(option), option)
    gpus = options.get("gpus_per_task")
    if gpus is not None:
        integral = name != "ray"  # Ray shares a GPU between workers (num_gpus=0.5); Slurm and local do not
        if isinstance(gpus, bool) or not isinstance(gpus, int | float) or gpus < 0 or (integral and gpus != int(gpus)):
            kind = "a number" if not integral else "a whole number"
            raise InputError(None, None, f"expected {kind} of GPUs, 0 or more, got {gpus!r}", parameter="gpus_per_task")
        gpus = int(gpus) if integral else float(gpus)
    partition, address = options.get("slurm_partition"), options.get("ray_address")
    for option, text in (("slurm_partition", partition), ("ray_address", address)):
        if text is not None and (not isinstance(text, str) or not text.strip()):
            raise InputError(None, None, f"expected a non-empty string, got {text!r}", parameter=option)
    return ExecutorSettings(
        name=name,
        gpus_per_task=gpus,
        slurm_partition=partition,
        ray_address=address,
        slurm_params=slurm_params(options.get("slurm_params") or {}),
        **checked,
    )


def _positive_int(value: Any, parameter: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(None, None, f"expected a whole number, 1 or more, got {value!r}", parameter=parameter)
    return value


def slurm_params(given: Mapping[str, Any] | Sequence[str]) -> dict[str, Any]:
    """``["qos=high", "mem=64G"]`` or a mapping as sbatch parameters: names checked, numbers and booleans read."""
    items = list(given.items()) if isinstance(given, Mapping) else [_pair(p) for p in given]
    out: dict[str, Any] = {}
    for key, value in items:
        key = str(key).strip().replace("-", "_")
        if key in _SLURM_OWN:
            raise InputError(None, key, f"has an option of its own: `{_SLURM_OWN[key]}`", parameter="slurm_params")
        if not isinstance(value, str | int | float | bool):
            raise InputError(
                None, key, f"expected a string, number or boolean, got {type(value).__name__}", parameter="slurm_params"
            )
        out[key] = _scalar(value) if isinstance(value, str) else value
    return out


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = str(text).partition("=")
    if not sep or not key.strip():
        raise InputError(None, str(text), "expected KEY=VALUE", parameter="slurm_params")
    return key, value


def _scalar(text: str) -> Any:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return int(text)
    except ValueError:
        return text


def create(settings: ExecutorSettings) -> Executor:
    """The executor of ``settings`` (``local``, ``slurm`` or ``ray``); imports its extra, or says which to install."""
    if settings.name == "local":
        from ood_store._evaluate.executors.local import LocalExecutor

        return LocalExecutor(settings)
    if settings.name == "slurm":
        from ood_store._evaluate.executors.slurm import SlurmExecutor

        return SlurmExecutor(settings)
    if settings.name == "ray":
        from ood_store._evaluate.executors.ray import RayExecutor

        return RayExecutor(settings)
    raise OodStoreError(f"the {settings.name} executor runs in this process: it is not created")


def worker_function(module: str, cluster: str | None = None) -> Any:
    """What a worker runs: ``work`` of the module ``module``, or on Slurm its ``slurm_work`` where it has one (a
    callable with a ``checkpoint`` method, which submitit calls to requeue a job at its time limit or preemption)."""
    import importlib

    loaded = importlib.import_module(module)
    return getattr(loaded, "slurm_work", loaded.work) if cluster == "slurm" else loaded.work


def require_extra(module: str, executor: str, extra: str) -> Any:
    """Import ``module`` for an executor, or stop with one line naming the extra that provides it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise OodStoreError(
            f"the {executor} executor needs {module}: {install_hint(extra)}", parameter="executor"
        ) from None
