"""Planning an evaluation: from runs, checkpoints, tasks and the store, the units still to evaluate.

A unit is one checkpoint of one run with all the tasks the store does not
hold for it yet (the resume rule: a (run, step, task) already in the store is
skipped unless ``force``; of a tag only the missing tasks run, a group runs
whole for its aggregate). Its id is stable: the same checkpoint, tasks,
options and store give the same id on every run of the same command, so a
unit finished by an earlier submission is recognized and not evaluated again.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb

from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import InputError
from ood_store._evaluate.checkpoints import Checkpoint, resolve
from ood_store._evaluate.series import series_of
from ood_store._evaluate.suite.variant import Variant
from ood_store._evaluate.tasklist import task_list_of
from ood_store._evaluate.workdir import Unit
from ood_store._names import run_folder_name, unit_folder_name

DEFAULT_OUTPUT_DIR = Path("lm-eval-results")


@dataclass(frozen=True)
class RunRequest:
    """What to evaluate for one run: its checkpoints, tasks and lm-eval options (one run of a study)."""

    run: str
    checkpoints: list[str]
    tasks: list[str]
    include_paths: list[str] = field(default_factory=list)
    data_dir: str | None = None
    variant: Variant | None = None  # the ood_nli suite's prompt variant
    base_model: str | None = None
    batch_size: int | str = "auto"
    device: str | None = None  # None: chosen by each worker (cuda when it sees a GPU)
    dtype: str | None = None
    num_fewshot: int | None = None
    limit: int | float | None = None
    samples: bool = True
    attributes: dict[str, Any] | None = None
    lm_eval_kwargs: dict[str, Any] = field(default_factory=dict)
    scorer: str = "lm-eval"  # or the verbalizer scorer (ood_store._evaluate.scorer)
    max_length: int | None = None  # the most prompt tokens the model sees (None: lm-eval's length for the model)
    truncation: str = "left"  # which end of a longer prompt is cut: left (lm-eval's) or right (the verbalizer scorer)

    def task_source(self) -> dict[str, Any]:
        """What this run's task list is built from (:func:`~ood_store._evaluate.tasklist.task_list_of`), as plain
        JSON: a worker on another machine builds it again."""
        variant = self.variant
        return {
            "tasks": list(self.tasks),
            "include_paths": [str(p) for p in self.include_paths],
            "data_dir": None if self.data_dir is None else str(self.data_dir),
            "variant": None
            if variant is None
            else {k: variant.record()[k] for k in ("pattern", "verbalizers", "neutral")},
            "num_fewshot": self.num_fewshot,
        }

    def lm_eval_options(self) -> dict[str, Any]:
        """The keyword arguments of ``lm_eval.simple_evaluate`` for this run's units."""
        return {
            "batch_size": self.batch_size,
            "device": self.device,
            "num_fewshot": self.num_fewshot,
            "limit": self.limit,
            "log_samples": self.samples,
            **self.lm_eval_kwargs,
        }


@dataclass(frozen=True)
class Skipped:
    """A checkpoint whose every task is in the store already."""

    run: str
    label: str
    step: int | None
    leaves: int  # the leaf tasks the store holds for it


@dataclass
class Plan:
    units: list[Unit] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    complete_runs: list[RunRequest] = field(default_factory=list)  # runs with nothing left to evaluate
    built_in_tasks: bool = False  # whether lm-eval's built-in task index was needed


def plan(
    con: duckdb.DuckDBPyConnection,
    requests: Sequence[RunRequest],
    *,
    store: str | Path,
    output_dir: Path,
    force: bool = False,
    log_to_file: bool = False,
) -> Plan:
    """The units to evaluate for ``requests``, in order: run by run, checkpoints in step order.

    Checks every checkpoint and task name first (one line naming the first bad
    one), so that nothing is submitted for a plan that cannot run.
    """
    result = Plan()
    nonce = f"{time.time_ns()}" if force else None  # forced units are new units: never taken for earlier ones
    catalogues: dict[str, tuple[list[str], dict[str, list[str]], set[str], bool]] = {}
    for request in requests:
        checkpoints = resolve(list(request.checkpoints), request.base_model)
        source = request.task_source()
        key = json.dumps(source, sort_keys=True)
        if key not in catalogues:
            with task_list_of(source) as catalogue:
                catalogues[key] = (catalogue.names, catalogue.leaves, catalogue.groups, catalogue.built_in)
        names, leaves, groups, built_in = catalogues[key]
        result.built_in_tasks |= built_in
        done = evaluated(con, request.run, request.num_fewshot)
        series = series_of(checkpoints)
        pending_any = False
        for checkpoint in checkpoints:
            pending = pending_tasks(names, leaves, groups, checkpoint.step, done, force)
            if not pending:
                held = len({leaf for name in names for leaf in leaves[name]})
                result.skipped.append(Skipped(request.run, checkpoint.label, checkpoint.step, held))
                continue
            pending_any = True
            unit = _unit(request, checkpoint, pending, leaves, source, store, output_dir, nonce, log_to_file)
            result.units.append(replace(unit, series=series or None))
        if not pending_any:
            result.complete_runs.append(request)
    return result


def _unit(
    request: RunRequest,
    checkpoint: Checkpoint,
    pending: list[str],
    leaves: Mapping[str, list[str]],
    source: dict[str, Any],
    store: str | Path,
    output_dir: Path,
    nonce: str | None,
    log_to_file: bool,
) -> Unit:
    options = request.lm_eval_options()
    identity = {
        "store": str(store),
        "run": request.run,
        "checkpoint": asdict(checkpoint),
        "tasks": pending,
        "task_source": source,
        "options": options,
        "dtype": request.dtype,
        "samples": request.samples,
        "nonce": nonce,
        **({"scorer": request.scorer} if request.scorer != "lm-eval" else {}),  # lm-eval's: the ids of before
        **({"max_length": request.max_length} if request.max_length is not None else {}),
        **({"truncation": request.truncation} if request.truncation != "left" else {}),
    }
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:10]
    step = step_name(checkpoint.step)
    covered: list[str] = []
    for name in pending:
        covered.extend(t for t in leaves.get(name, [name]) if t not in covered)
    return Unit(
        id=f"{run_slug(request.run)}.{step}.{digest}",
        store=str(store),
        run=request.run,
        step=checkpoint.step,
        checkpoint=asdict(checkpoint),
        label=checkpoint.label,
        tasks=pending,
        leaves=covered,
        task_source=source,
        options=options,
        dtype=request.dtype,
        output=str(run_folder(output_dir, request.run).resolve() / step / unit_folder_name(digest)),
        samples=request.samples,
        attributes=request.attributes,
        log_to_file=log_to_file,
        scorer=request.scorer,
        max_length=request.max_length,
        truncation=request.truncation,
    )


def pending_tasks(
    names: list[str],
    leaves: Mapping[str, list[str]],
    groups: set[str],
    step: int | None,
    done: set[tuple[int | None, str]],
    force: bool,
) -> list[str]:
    """What still needs evaluating at ``step``: a task or group whose leaf tasks are not all in the store
    (a group runs whole, for its aggregate), or of a tag only its missing tasks."""
    if force:
        return list(names)
    pending: list[str] = []
    for name in names:
        missing = [t for t in leaves[name] if (step, t) not in done]
        if not missing:
            continue
        chosen = [name] if name in groups or leaves[name] == [name] else missing
        pending.extend(t for t in chosen if t not in pending)
    return pending


def evaluated(con: duckdb.DuckDBPyConnection, run: str, num_fewshot: int | None) -> set[tuple[int | None, str]]:
    """The (step, task) pairs of ``run`` that the store holds (with ``num_fewshot`` shots, if given)."""
    rows = con.execute(
        sqlfiles.load("ood_store._evaluate", "evaluated"), {"run": run, "num_fewshot": num_fewshot}
    ).fetchall()
    return {(step, task) for step, task in rows}


def run_exists(con: duckdb.DuckDBPyConnection, run: str) -> bool:
    return bool(con.execute(sqlfiles.load("ood_store._evaluate", "run_exists"), {"run": run}).fetchall()[0][0])


def step_name(step: int | None) -> str:
    return "final" if step is None else f"step-{step}"


def run_slug(run: str) -> str:
    """The run as one file name (``org/model`` -> ``org__model``)."""
    return run_folder_name(run)


def run_folder(output_dir: str | Path, run: str) -> Path:
    """Where a run's lm-eval files go: ``output_dir/<run as one folder name>``."""
    return Path(output_dir) / run_slug(run)


def check_run(run: str | None, parameter: str = "run") -> str:
    if not isinstance(run, str) or not run.strip():
        raise InputError(None, None, "the run needs a name", parameter=parameter)
    return run
