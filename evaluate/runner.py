"""``evaluate``: run lm-eval on every checkpoint of a run and fill the store, resumably.

For each checkpoint, in step order: the (step, task) pairs already in the
store are skipped (unless ``force``); the model is loaded once and evaluated
on all remaining tasks in one ``lm_eval.simple_evaluate`` call; lm-eval's
results and samples files are written in its standard layout under
``output_dir/<run>/step-<N>/``; and that results file is ingested (the same
path as ``ood-store ingest``) in its own transaction, before the next
checkpoint starts. A crash therefore loses at most the checkpoint in flight,
and the store can be rebuilt from ``output_dir`` with ``ood-store ingest``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb

from ood_store import sqlfiles
from ood_store.errors import InputError, OodStoreError
from ood_store.evaluate.checkpoints import Checkpoint, resolve
from ood_store.evaluate.suite.variant import Variant
from ood_store.evaluate.tasklist import TaskList, task_list
from ood_store.ingest import ingest
from ood_store.ingest.identity import Overrides
from ood_store.names import run_folder_name
from ood_store.progress import progress_bar
from ood_store.store.runs import parse_attributes, set_attributes

DEFAULT_OUTPUT_DIR = Path("lm-eval-results")


@dataclass(frozen=True)
class CheckpointOutcome:
    checkpoint: str  # the folder or REPO@REVISION
    step: int | None
    status: Literal["evaluated", "skipped"]
    tasks: list[str]  # the task names evaluated (empty when skipped)
    results_file: str | None = None
    evaluation_id: int | None = None
    scores: int = 0
    samples: int = 0
    seconds: float = 0.0


@dataclass
class EvaluateReport:
    run: str
    checkpoints: list[CheckpointOutcome] = field(default_factory=list)
    built_in_tasks: bool = False  # whether lm-eval's built-in task index was needed

    @property
    def evaluated(self) -> list[CheckpointOutcome]:
        return [c for c in self.checkpoints if c.status == "evaluated"]

    @property
    def skipped(self) -> list[CheckpointOutcome]:
        return [c for c in self.checkpoints if c.status == "skipped"]


def evaluate(
    con: duckdb.DuckDBPyConnection,
    checkpoints: Sequence[str],
    *,
    run: str,
    tasks: Sequence[str],
    output_dir: str | Path = DEFAULT_OUTPUT_DIR,
    include_paths: Sequence[str | Path] = (),
    data_dir: str | Path | None = None,
    variant: Variant | None = None,
    base_model: str | None = None,
    batch_size: int | str = "auto",
    device: str | None = None,
    dtype: str | None = None,
    num_fewshot: int | None = None,
    limit: int | float | None = None,
    samples: bool = True,
    force: bool = False,
    attributes: Mapping[str, Any] | list[str] | None = None,
    progress: bool = False,
    log_to_file: bool = False,
    lm_eval_kwargs: Mapping[str, Any] | None = None,
) -> EvaluateReport:
    """Evaluate checkpoints of one run on tasks with lm-eval's ``hf`` model and store the results.

    Parameters
    ----------
    checkpoints
        Checkpoint folders, folders of checkpoints (``checkpoint-N``, ``step-N``, ...),
        globs, or ``HF_REPO@REVISION``; see :mod:`ood_store.evaluate.checkpoints`.
    run
        The run the checkpoints belong to (``runs.run``).
    tasks
        lm-eval task, group or tag names (comma-separated lists allowed): the
        ``ood_nli`` suite, tasks in ``include_paths``, or lm-eval's built-in tasks.
    output_dir
        Where lm-eval's results and samples files are kept: ``output_dir/<run>/step-<N>/``.
    include_paths
        Folders of your own lm-eval task YAMLs.
    data_dir
        Read the ood_nli suite from JSONL exports here instead of the hub.
    variant
        The ood_nli suite's prompt variant: pattern, verbalisers, neutral scheme
        (default: the suite's own); its key is part of the suite's task names.
    base_model
        The base model of PEFT adapter checkpoints (default: from ``adapter_config.json``).
    batch_size, device, dtype, num_fewshot, limit
        As for lm-eval (``dtype`` goes into ``model_args``); ``device`` defaults to
        ``cuda`` when there is a GPU, else ``cpu``.
    samples
        Log and store per-sample rows (``log_samples``).
    force
        Evaluate (run, step, task) combinations that the store already holds.
    attributes
        Run attributes (``family``, ``size``, ``in_domain``, ``seed``, any key).
    progress
        Show a progress bar over checkpoints × tasks on standard error when it is a terminal.
    log_to_file
        Send what lm-eval writes to standard output and error while it
        evaluates a checkpoint (its log, warnings, progress bars, messages of
        programs it runs) to ``lm-eval.log`` beside that checkpoint's results.
    lm_eval_kwargs
        Further keyword arguments for ``lm_eval.simple_evaluate``.

    Returns
    -------
    EvaluateReport
        One outcome per checkpoint: evaluated (with its results file and
        evaluation id) or skipped because the store held all its tasks.
    """
    if not run or not run.strip():
        raise InputError(None, None, "the run needs a name", parameter="run")
    attrs = parse_attributes(attributes) if attributes else None
    resolved = resolve(list(checkpoints), base_model)
    require_eval_extra("evaluate")
    report = EvaluateReport(run)
    with task_list(tasks, include_paths, data_dir, variant, num_fewshot) as catalogue:
        report.built_in_tasks = catalogue.built_in
        done = _evaluated(con, run, num_fewshot)
        plan = [(c, _pending(catalogue, c.step, done, force)) for c in resolved]
        total = len(resolved) * len(catalogue.names)
        with progress_bar(progress, total, f"evaluating {run}") as advance:
            for checkpoint, pending in plan:
                where = _step_name(checkpoint.step)
                if not pending:
                    report.checkpoints.append(CheckpointOutcome(checkpoint.label, checkpoint.step, "skipped", []))
                    advance(len(catalogue.names), f"{where}: already in the store")
                    continue
                advance(len(catalogue.names) - len(pending), where)
                outcome = _evaluate_one(
                    con,
                    checkpoint,
                    pending,
                    catalogue,
                    run=run,
                    output_dir=Path(output_dir),
                    attrs=attrs,
                    samples=samples,
                    options={
                        "batch_size": batch_size,
                        "device": device or default_device(),
                        "num_fewshot": num_fewshot,
                        "limit": limit,
                        "log_samples": samples,
                        **(lm_eval_kwargs or {}),
                    },
                    dtype=dtype,
                    log_to_file=log_to_file,
                )
                report.checkpoints.append(outcome)
                advance(len(pending), f"{where}: stored")
    if attrs and not report.evaluated and _run_exists(con, run):
        set_attributes(con, run, attrs)  # attributes given again for a run that is complete
    return report


def _evaluate_one(
    con: duckdb.DuckDBPyConnection,
    checkpoint: Checkpoint,
    pending: list[str],
    catalogue: TaskList,
    *,
    run: str,
    output_dir: Path,
    attrs: Mapping[str, Any] | None,
    samples: bool,
    options: dict[str, Any],
    dtype: str | None,
    log_to_file: bool,
) -> CheckpointOutcome:
    import lm_eval
    from lm_eval.loggers import EvaluationTracker

    started = time.perf_counter()
    folder = run_folder(output_dir, run) / _step_name(checkpoint.step)
    tracker = EvaluationTracker(output_path=str(folder))
    with _output_to(folder / "lm-eval.log" if log_to_file else None):
        result = lm_eval.simple_evaluate(
            model="hf",
            model_args=checkpoint.model_args(dtype),
            tasks=catalogue.task_specs(pending),
            task_manager=catalogue.manager,
            evaluation_tracker=tracker,
            **options,
        )
    if result is None:  # lm-eval returns None on ranks other than 0
        raise OodStoreError(f"{checkpoint.label}: lm-eval returned no results")
    suite_record = catalogue.suite_record(pending)
    if suite_record:  # the prompt variant, in the results file's config and so in evaluations.config
        result.setdefault("config", {})["ood_nli"] = suite_record
    results_file = _save(tracker, result, folder)
    report = ingest(
        con,
        [str(results_file)],
        overrides=Overrides(run=run, step=checkpoint.step),
        attributes=attrs,
        samples=samples,
    )
    if not report.ok or not report.ingested:
        reasons = "; ".join(f.reason or f.path for f in report.files if f.status != "ingested")
        raise OodStoreError(f"{results_file}: lm-eval's output could not be stored: {reasons}")
    stored = report.ingested[0]
    return CheckpointOutcome(
        checkpoint.label,
        checkpoint.step,
        "evaluated",
        pending,
        results_file=str(results_file),
        evaluation_id=stored.evaluation_id,
        scores=stored.scores,
        samples=stored.samples,
        seconds=time.perf_counter() - started,
    )


def _save(tracker: Any, result: dict[str, Any], folder: Path) -> Path:
    """Write lm-eval's standard layout (results_<ts>.json, samples_<task>_<ts>.jsonl); return the results file."""
    samples = result.pop("samples", None)
    tracker.save_results_aggregated(results=result, samples=samples)
    for task in samples or {}:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    date_id = getattr(tracker, "date_id", None)
    path = folder / str(tracker.general_config_tracker.model_name_sanitized) / f"results_{date_id}.json"
    if not path.is_file():  # EvaluationTracker logs write errors instead of raising them
        raise OodStoreError(f"{folder}: lm-eval did not write its results file (is the folder writable?)")
    return path


@contextmanager
def _output_to(path: Path | None) -> Iterator[None]:
    """Point file descriptors 1 and 2 (standard output and error, Python's and child processes'), and Python's
    ``sys.stdout`` and ``sys.stderr``, at ``path``."""
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    streams = (sys.stdout, sys.stderr)
    for stream in streams:
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        # Python's sys.stdout/sys.stderr too, for when they are not descriptors 1 and 2 (notebooks, tests)
        with path.open("a", encoding="utf-8", buffering=1) as log, redirect_stdout(log), redirect_stderr(log):
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            yield
    finally:
        for stream in streams:
            stream.flush()
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


def _pending(catalogue: TaskList, step: int | None, done: set[tuple[int | None, str]], force: bool) -> list[str]:
    """What still needs evaluating at ``step``: a task or group whose leaf tasks are not all in the store
    (a group runs whole, for its aggregate), or of a tag only its missing tasks."""
    if force:
        return list(catalogue.names)
    pending: list[str] = []
    for name in catalogue.names:
        missing = [t for t in catalogue.leaves[name] if (step, t) not in done]
        if not missing:
            continue
        chosen = [name] if name in catalogue.groups or catalogue.leaves[name] == [name] else missing
        pending.extend(t for t in chosen if t not in pending)
    return pending


def _evaluated(con: duckdb.DuckDBPyConnection, run: str, num_fewshot: int | None) -> set[tuple[int | None, str]]:
    rows = con.execute(
        sqlfiles.load("ood_store.evaluate", "evaluated"), {"run": run, "num_fewshot": num_fewshot}
    ).fetchall()
    return {(step, task) for step, task in rows}


def _run_exists(con: duckdb.DuckDBPyConnection, run: str) -> bool:
    return bool(con.execute(sqlfiles.load("ood_store.evaluate", "run_exists"), {"run": run}).fetchall()[0][0])


def _step_name(step: int | None) -> str:
    return "final" if step is None else f"step-{step}"


def run_folder(output_dir: str | Path, run: str) -> Path:
    """Where a run's lm-eval files go: the run as one folder name (``org/model`` -> ``org__model``)."""
    return Path(output_dir) / run_folder_name(run)


def default_device() -> str:
    """``cuda`` when torch sees a GPU, else ``mps`` on Apple silicon, else ``cpu``."""
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    return "mps" if mps is not None and mps.is_available() else "cpu"


def require_eval_extra(what: str) -> None:
    """Stop with one line when torch, transformers or lm-eval's hf model cannot be imported."""
    missing = []
    for module in ("torch", "transformers", "lm_eval.models.huggingface"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module.split(".")[0])
    if missing:
        raise OodStoreError(f"{what} needs {', '.join(missing)}: install the eval extra, pip install 'ood-store[eval]'")
