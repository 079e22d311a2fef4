"""``evaluate``: run lm-eval on every checkpoint of a run (or of every run of a study) and fill the store, resumably.

Three roles, matching DuckDB's rule of one writing process:

1. **Plan** (:mod:`~ood_store._evaluate.plan`): from the checkpoints, tasks and
   the store, the pending units (one checkpoint with all its pending tasks),
   written to the work folder (:mod:`~ood_store._evaluate.workdir`).
2. **Work** (:mod:`~ood_store._evaluate.worker`): workers evaluate units with
   lm-eval and write its standard files and a completion marker; they never
   open the store. Where they run is the executor's business
   (:mod:`~ood_store._evaluate.executors`): ``inline`` in this process,
   ``local`` processes, a Slurm job array, Ray.
3. **Collect** (:mod:`~ood_store._evaluate.collect`): this process ingests each
   finished unit in a commit of its own, holding the store only for that
   commit; while workers run, other processes can read the store between commits.

A crash anywhere loses at most the units in flight; running the same command
again evaluates only what is neither stored nor finished.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Unpack

from ood_store._counts import n
from ood_store._errors import InputError
from ood_store._evaluate import executors, options
from ood_store._evaluate.collect import Collected, collect
from ood_store._evaluate.executors import JobEnd
from ood_store._evaluate.harness import require_eval_extra
from ood_store._evaluate.options import EvaluateOptions
from ood_store._evaluate.plan import DEFAULT_OUTPUT_DIR, Plan, RunRequest, check_run, plan, run_exists, step_name
from ood_store._evaluate.series import ModelSession
from ood_store._evaluate.study import Study, load_study
from ood_store._evaluate.suite.variant import Variant
from ood_store._evaluate.tasklist import TaskObjects
from ood_store._evaluate.timings import Timings
from ood_store._evaluate.workdir import NOT_THE_UNITS_FAULT, Claim, Failure, Unit, WorkDir
from ood_store._evaluate.worker import run_unit
from ood_store._progress import progress_bar
from ood_store._store import Database
from ood_store._store.database import connection, released
from ood_store._store.runs import parse_attributes, set_attributes
from ood_store._summary import Presented, Summary, first_rows

if TYPE_CHECKING:
    import polars as pl

#: How often the driver looks for finished units while workers run elsewhere.
POLL_S = 0.5
#: The keywords of :func:`evaluate` besides ``checkpoints``, ``run`` and ``tasks``.
KEYWORDS = tuple(EvaluateOptions.__annotations__)
# Those that define a run's evaluation (as a study's runs have them) and those of the executor.
_RUN_OPTIONS = ("variant", "base_model", "batch_size", "device", "dtype", "num_fewshot", "limit", "samples", "scorer",
                "max_length", "truncation")  # fmt: skip
_EXECUTOR_OPTIONS = ("workers", "units_per_task", "slurm_partition", "gpus_per_task", "timeout_min", "max_parallel",
                     "slurm_params", "ray_address")  # fmt: skip

Status = Literal["evaluated", "skipped", "failed", "submitted", "pending"]


@dataclass(frozen=True)
class CheckpointOutcome:
    checkpoint: str  # the folder or REPO@REVISION
    step: int | None
    status: Status  # evaluated (and stored), skipped (in the store already), failed, submitted (detach), pending
    tasks: list[str]  # the task names evaluated (or to evaluate)
    results_file: str | None = None
    evaluation_id: int | None = None
    scores: int = 0
    samples: int = 0
    seconds: float = 0.0
    run: str = ""
    unit: str | None = None  # the unit's id in the work folder
    error: str | None = None  # failed: why; pending (after a run that was not interrupted): why it was not evaluated
    job: str | None = None  # the scheduler's job that held the unit when it ended (Slurm: 4242_3)
    timings: Timings | None = None  # evaluated: where its time went (loading, forward passes, bookkeeping, writing)


class _WithStatus:
    """A read-only attribute of :class:`EvaluateReport`: its outcomes whose status is the attribute's name."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.status = name

    def __get__(self, report: EvaluateReport, owner: type | None = None) -> list[CheckpointOutcome]:
        return [c for c in report.checkpoints if c.status == self.status]

    def __set__(self, report: EvaluateReport, value: object) -> None:
        raise AttributeError(f"{self.status}: read-only (set the report's checkpoints instead)")


@dataclass(repr=False)
class EvaluateReport(Presented):
    """What an evaluation did with each checkpoint (``checkpoints``): evaluated and stored, skipped (in the store
    already), failed, submitted (detached) or pending; ``frame()`` has one row per checkpoint."""

    runs: list[str]
    checkpoints: list[CheckpointOutcome] = field(default_factory=list)
    built_in_tasks: bool = False  # whether lm-eval's built-in task index was needed
    output_dir: Path = DEFAULT_OUTPUT_DIR
    work_dir: Path | None = None
    executor: str = "inline"
    jobs: str | None = None  # what the executor started, e.g. "Slurm job array 4242: 10 tasks of up to 4 units"
    variant: Variant | None = None  # the ood_nli prompt variant given for every run, if any
    ended_jobs: list[JobEnd] = field(default_factory=list)  # workers' jobs the scheduler ended abnormally

    @property
    def run(self) -> str:
        """The run evaluated (the first, for a study)."""
        return self.runs[0] if self.runs else ""

    # The outcomes of one status, as properties: report.evaluated, report.failed, ...
    evaluated = _WithStatus()
    skipped = _WithStatus()
    failed = _WithStatus()
    submitted = _WithStatus()
    pending = _WithStatus()

    def frame(self) -> pl.DataFrame:
        """One row per checkpoint: run, step, checkpoint, status, tasks, scores, seconds, error."""
        import polars as pl

        rows = [
            (c.run, c.step, c.checkpoint, c.status, len(c.tasks), c.scores, round(c.seconds, 1), c.error)
            for c in self.checkpoints
        ]
        schema = {
            "run": pl.String, "step": pl.Int64, "checkpoint": pl.String, "status": pl.String, "tasks": pl.Int64,
            "scores": pl.Int64, "seconds": pl.Float64, "error": pl.String,
        }  # fmt: skip
        return pl.DataFrame(rows, schema=schema, orient="row")

    def summary(self) -> Summary:
        """The counts by status in the title, the checkpoints (failed and pending first), the executor's jobs."""
        import polars as pl

        counts = ", ".join(
            f"{len(getattr(self, status)):,} {status}"
            for status in ("evaluated", "skipped", "failed", "submitted", "pending")
            if getattr(self, status) or status in ("evaluated", "failed")
        )
        runs = f"run {self.run}" if len(self.runs) == 1 else n(len(self.runs), "run")
        order = {"failed": 0, "pending": 1}
        frame = self.frame().sort(pl.col("status").replace_strict(order, default=2), maintain_order=True)
        shown, notes = first_rows(frame, "checkpoints", "report.frame()")
        if self.jobs:
            notes += (f"Workers: {self.jobs}.",)
        notes += tuple(f"{end.describe()}" for end in self.ended_jobs)
        return Summary(f"EvaluateReport: {runs}: {counts}", shown, notes)


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`evaluate`; ``report`` says what was stored before it (the rest is ``pending``)."""

    def __init__(self, report: EvaluateReport):
        super().__init__("evaluation interrupted")
        self.report = report


def default_work_dir(output_dir: str | Path) -> Path:
    """The work folder beside ``output_dir``: ``lm-eval-results`` -> ``lm-eval-results-work``."""
    output_dir = Path(output_dir)
    return output_dir.with_name(f"{output_dir.name}-work")


def evaluate(
    store: Database,
    checkpoints: Sequence[str] = (),
    *,
    run: str | None = None,
    tasks: Sequence[str] = (),
    **keywords: Unpack[EvaluateOptions],
) -> EvaluateReport:
    """Evaluate checkpoints with lm-eval's ``hf`` model and store the results: one run, or every run of a study.

    The keywords after ``tasks`` are those of :class:`~ood_store._evaluate.options.EvaluateOptions`, typed
    there; each is described here, with its default. Another keyword is a ``TypeError``.

    Parameters
    ----------
    store
        The store (opened for writing). While workers run, its connection is
        closed and the store is opened for each commit only, so that other
        processes can read it; it is open again when this returns.
    checkpoints
        Checkpoint folders, folders of checkpoints (``checkpoint-N``, ``step-N``, ...),
        globs, or ``HF_REPO@REVISION``; see :mod:`ood_store._evaluate.checkpoints`.
    run
        The run the checkpoints belong to (``runs.run``).
    tasks
        lm-eval task, group or tag names (comma-separated lists allowed): the
        ``ood_nli`` suite, tasks in ``include_paths``, or lm-eval's built-in tasks.
    study
        A study file (or a loaded :class:`~ood_store._evaluate.study.Study`)
        naming many runs, each with its checkpoints, tasks, options and
        attributes, instead of ``checkpoints``, ``run`` and ``attributes``. The
        lm-eval options below, when given, apply to every run and win over the
        file; the executor options win over its ``[executor]`` table.
    output_dir
        Where lm-eval's results and samples files are kept:
        ``output_dir/<run>/step-<N>/<unit>/`` (default ``lm-eval-results``).
    work_dir
        The work folder (plan, completion markers, job logs), on storage every
        worker sees; default: beside ``output_dir`` (``lm-eval-results-work``).
    include_paths
        Folders of your own lm-eval task YAMLs.
    data_dir
        Read the ood_nli suite from JSONL exports here instead of the hub.
    variant
        The ood_nli suite's prompt variant: pattern, verbalizers, neutral scheme
        (default: the suite's own; a study's runs: their ``[suite]`` tables); its
        key is part of the suite's task names.
    base_model
        The base model of PEFT adapter checkpoints (default: from ``adapter_config.json``).
    batch_size, device, dtype, num_fewshot, limit
        As for lm-eval (``batch_size`` default ``auto``; ``dtype`` goes into
        ``model_args``); ``device`` defaults, in each worker, to ``cuda`` when it
        sees a GPU, else ``cpu``.
    samples
        Log and store per-sample rows (``log_samples``; default true).
    scorer
        ``lm-eval`` (lm-eval's own ``hf`` model, the default and the reference)
        or ``verbalizer``: for tasks whose answers are one token after the
        prompt (the ood_nli suite), one forward pass per document to its last
        position, equal to lm-eval's scores and files (see
        :mod:`ood_store._evaluate.scorer`); a task it cannot score exactly
        fails its unit, with one line naming it. ``fast``: the same scores
        and files for multiple-choice accuracy (``acc``, ``acc_norm``), with
        the run's requests prepared once (and kept in the work folder's
        ``prepared/`` for every run that shares tokenizer, tasks and data)
        and each checkpoint's work its forward passes and vectorized
        arithmetic (see :mod:`ood_store._evaluate.fast`).
    max_length, truncation
        The most prompt tokens the model sees (lm-eval's ``max_length`` model
        argument; default: lm-eval's length for the model), and which end of a
        longer prompt is cut: ``left`` (lm-eval's, the default: the last
        ``max_length`` tokens are kept) or ``right`` (the first, as a run
        finetuned with ``truncation = "right"`` saw its prompts; the
        verbalizer and fast scorers only, lm-eval's is refused before anything
        runs). A study written by ``ood-store finetune`` gives each run those
        it was trained with.
    force
        Evaluate (run, step, task) combinations that the store already holds.
    attributes
        Run attributes (``family``, ``size``, ``in_domain``, ``seed``, any key).
    lm_eval_kwargs
        Further keyword arguments for ``lm_eval.simple_evaluate``.
    executor
        Where workers run: ``inline`` (this process, the default), ``local``
        (worker processes here), ``slurm`` (a job array through submitit), ``ray``.
    workers
        ``local`` and ``ray``: how many workers (default: one per GPU, or one).
    units_per_task
        ``slurm``: units (checkpoints) per array task (default 4).
    slurm_partition, timeout_min, max_parallel, slurm_params
        ``slurm``: the partition, each array task's time limit in minutes
        (default 240), how many array tasks run at once
        (``slurm_array_parallelism``), and further sbatch parameters
        (``{"qos": "high"}`` or ``["qos=high"]``).
    gpus_per_task
        GPUs per worker (``local``, ``slurm``; ``ray``: ``num_gpus``, fractions allowed).
    ray_address
        ``ray``: the cluster (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``);
        default: a Ray instance started on this machine.
    detach
        Submit the workers and return without waiting (not ``inline``);
        ``ood-store collect WORK_DIR`` stores what they finish.
    progress
        Show a progress bar over units × tasks on standard error when it is a terminal.
    log_to_file
        Send what lm-eval writes to standard output and error while it
        evaluates a checkpoint (its log, warnings, progress bars, messages of
        programs it runs) to ``lm-eval.log`` beside that checkpoint's results.

    Returns
    -------
    EvaluateReport
        One outcome per checkpoint: evaluated (stored, with its results file
        and evaluation id), skipped because the store held all its tasks,
        failed (with the error: lm-eval's, or the state of the scheduler's
        job that held it, e.g. ``Slurm job 4242_3 ended: CANCELLED``),
        pending (not evaluated through no fault of its own: its job reached
        its time limit or was preempted, or no worker took it before the
        workers ended), or submitted (``detach``). ``ended_jobs`` holds each
        job the scheduler ended early, once, with the end of its stderr.

    Raises
    ------
    EvaluationInterrupted
        On Ctrl-C (a ``KeyboardInterrupt``), after storing what had finished;
        its ``report`` says what was stored.
    """
    unknown = sorted(set(keywords) - set(KEYWORDS))
    if unknown:
        raise TypeError(f"evaluate() got an unexpected keyword argument {unknown[0]!r}")
    given: dict[str, Any] = {**keywords}  # the keywords of EvaluateOptions, read by name below
    include_paths, data_dir, lm_eval_kwargs = (
        given.pop(name, None) for name in ("include_paths", "data_dir", "lm_eval_kwargs")
    )
    run_options = {
        "tasks": list(tasks) or None,
        "include_paths": [str(Path(p).resolve()) for p in include_paths or ()] or None,
        "data_dir": None if data_dir is None else str(Path(data_dir).resolve()),
        **{name: given.get(name) for name in _RUN_OPTIONS},
        "lm_eval_kwargs": None if lm_eval_kwargs is None else dict(lm_eval_kwargs),
    }
    overrides = {name: options.check(name, value) for name, value in run_options.items() if value is not None}
    executor_options = {name: given.get(name) for name in _EXECUTOR_OPTIONS}
    if executor_options["slurm_params"]:
        executor_options["slurm_params"] = executors.slurm_params(executor_options["slurm_params"])
    study, executor, attributes = given.get("study"), given.get("executor"), given.get("attributes")
    output_dir, work_dir = given.get("output_dir"), given.get("work_dir")
    study_path: Path | None = None
    if study is not None:
        for name, value in (("checkpoints", checkpoints), ("run", run), ("attributes", attributes)):
            if value:
                raise InputError(
                    None,
                    None,
                    "not with `study`: a study names its runs, their checkpoints and attributes",
                    parameter=name,
                )
        loaded = study if isinstance(study, Study) else load_study(study)
        study_path = loaded.path
        requests = loaded.requests(overrides)
        executor, executor_options = _with_study_executor(loaded.executor, executor, executor_options)
        output_dir = output_dir or loaded.output_dir
        work_dir = work_dir or loaded.work_dir
    else:
        attrs = parse_attributes(attributes) if attributes else None
        if not checkpoints:
            raise InputError(None, None, "no checkpoints given", parameter="checkpoints")
        if "tasks" not in overrides:
            raise InputError(None, None, "no task names given", parameter="tasks")
        requests = [
            RunRequest(run=check_run(run), checkpoints=[str(c) for c in checkpoints], attributes=attrs, **overrides)
        ]
    for request in requests:
        why = options.truncation_needs_verbalizer(request.scorer, request.truncation)
        if why is not None:
            where = "" if study_path is None else f"{study_path}: run {request.run}: "
            raise InputError(None, None, where + why, parameter="truncation")
    chosen = executors.settings(executor, **executor_options)
    if given.get("detach") and chosen.name == "inline":
        raise InputError(
            None, None, "the inline executor runs in this process: choose local, slurm or ray", parameter="detach"
        )
    backend = None if chosen.name == "inline" else executors.create(chosen)
    if backend is not None:
        backend.preflight()  # the cluster's refusal (a partition, a Ray token), before anything is planned
    require_eval_extra("evaluate")
    output = Path(output_dir or DEFAULT_OUTPUT_DIR)
    work = WorkDir(work_dir or default_work_dir(output))
    if work.exists():
        work.require()  # a work folder of another format: refused before planning
    planned = plan(
        connection(store),
        requests,
        store=store.location,
        output_dir=output,
        force=bool(given.get("force")),
        log_to_file=bool(given.get("log_to_file")),
    )
    if planned.units:
        if backend is not None:
            backend.check()
        work.create()
    for request in planned.complete_runs:  # attributes given again for a run that is complete
        if request.attributes and run_exists(connection(store), request.run):
            set_attributes(connection(store), request.run, request.attributes)
    report = EvaluateReport(
        runs=[r.run for r in requests],
        built_in_tasks=planned.built_in_tasks,
        output_dir=output,
        work_dir=work.path,
        executor=chosen.name,
        variant=given.get("variant"),
    )
    outcomes: dict[str, CheckpointOutcome] = {}
    if planned.units:
        work.add_units(planned.units)
        driver = _Driver(store, work, planned.units, backend, outcomes, report)
        with released(store):
            driver.run(bool(given.get("progress")), bool(given.get("detach")))
    report.checkpoints = _in_order(planned, outcomes, [r.run for r in requests])
    return report


def _with_study_executor(
    table: Mapping[str, Any], name: str | None, given: dict[str, Any]
) -> tuple[str | None, dict[str, Any]]:
    """The study's ``[executor]`` with what was given on top; its options for another executor are dropped."""
    study_name = table.get("name")
    chosen = name or study_name
    merged = {k: v for k, v in given.items() if v is not None}
    if chosen == study_name or name is None:
        merged = {**{k: v for k, v in table.items() if k != "name"}, **merged}
    return chosen, {**{k: None for k in given}, **merged}


class _Driver:
    """Runs the units (inline, or through an executor while collecting) and records each outcome."""

    def __init__(
        self,
        store: Database,
        work: WorkDir,
        units: list[Unit],
        backend: executors.Executor | None,
        outcomes: dict[str, CheckpointOutcome],
        report: EvaluateReport,
    ):
        self.store, self.work, self.units, self.backend = store, work, units, backend
        self.outcomes, self.report = outcomes, report
        self.advance: Any = None
        self.jobs: executors.Jobs | None = None

    def run(self, progress: bool, detach: bool) -> None:
        attempt = self.work.start_attempt([u.id for u in self.units], self.report.executor)
        total = sum(len(u.leaves) for u in self.units)
        label = f"evaluating {self.report.run}" if len(self.report.runs) == 1 else "evaluating"
        with progress_bar(progress and not detach, total, label) as self.advance:
            try:
                if self.backend is None:
                    self._inline(attempt)
                else:
                    self._elsewhere(attempt, detach)
            except KeyboardInterrupt:
                if self.jobs is not None:
                    self.jobs.cancel()
                self._collect(self._open_units())  # what finished before Ctrl-C
                for unit in self._open_units():
                    self.outcomes[unit.id] = _outcome(unit, "pending")
                self.report.checkpoints = list(self.outcomes.values())
                raise EvaluationInterrupted(self.report) from None
            finally:
                if self.jobs is not None:
                    self.jobs.close()

    def _inline(self, attempt: str) -> None:
        with TaskObjects() as tasks, ModelSession() as session:
            for index, unit in enumerate(self.units):
                if self.work.done(unit.id) is None:
                    self.advance(0, f"{_where(unit)}: evaluating")
                    claim = self.work.claim(attempt, unit.id)
                    upcoming = _next_of_run(self.units, index, self.work)
                    result = run_unit(self.work, unit, tasks, attempt, claim, session=session, upcoming=upcoming)
                    if not result.ok:
                        self._failed(unit, result.error)
                        continue
                self._collect([unit])

    def _elsewhere(self, attempt: str, detach: bool) -> None:
        assert self.backend is not None
        self._collect(self.units)  # finished by an earlier submission
        todo = self._open_units()
        if not todo:
            return
        self.jobs = self.backend.submit(self.work, attempt, len(todo), detach)
        self.work.record_jobs(attempt, self.jobs.description)
        self.report.jobs = self.jobs.description
        if detach:
            for unit in todo:
                self.outcomes[unit.id] = _outcome(unit, "submitted")
            return
        while True:
            finished = self.jobs.finished()  # before collecting: what they finished is collected below
            self._collect(self._open_units())
            for unit in self._open_units():
                failure = self.work.failed(unit.id)
                if failure is not None and failure.attempt == attempt:
                    self._failed(unit, failure.error)
            if finished:
                break
            running = len(self.work.claimed(attempt) - set(self.outcomes))
            self.advance(0, f"{running} running, {len(self._open_units()) - running} waiting")
            time.sleep(POLL_S)
        if self._open_units():
            self._lost(attempt)

    def _lost(self, attempt: str) -> None:
        """The units every worker left unfinished: failed with the state of the job that held them (CANCELLED,
        OUT_OF_MEMORY, NODE_FAIL, ...), pending where that job ran out of time or was preempted, or was never
        taken by a worker; each job's state and the end of its stderr are reported once (``ended_jobs``)."""
        assert self.jobs is not None
        ended = self.jobs.ended()
        claims = self.work.claims(attempt)
        why = "; ".join(self.jobs.errors()) or "every worker stopped without finishing it"
        again = "running the same command again evaluates it"
        held: set[str] = set()
        for unit in self._open_units():
            claim = claims.get(unit.id)
            end = ended.get(claim.job) if claim is not None and claim.job else None
            if claim is None and ended:  # the scheduler ended every worker before one took it
                states = ", ".join(sorted({e.state for e in ended.values()}))
                self.outcomes[unit.id] = _outcome(unit, "pending", error=f"not started: the workers ended ({states})")
                continue
            if end is None:
                error = f"not evaluated: {why} ({again})"
                self.work.mark_failed(_failure(unit, error, claim, attempt))
                self._failed(unit, error)
                continue
            held.add(end.job)
            self.work.mark_failed(_failure(unit, f"{end.describe()} ({again})", claim, attempt, end))
            if end.state in NOT_THE_UNITS_FAULT:
                self.outcomes[unit.id] = _outcome(unit, "pending", error=end.describe(), job=end.job)
            else:
                self._failed(unit, end.describe(), job=end.job)
        self.report.ended_jobs = [end for job, end in sorted(ended.items()) if job in held]

    def _open_units(self) -> list[Unit]:
        return [u for u in self.units if u.id not in self.outcomes]

    def _collect(self, units: list[Unit]) -> None:
        if units:
            collect(self.work, units=units, lock_timeout=self.store.lock_timeout, on_collected=self._collected)

    def _collected(self, unit: Unit, collected: Collected) -> None:
        if collected.status == "rejected":
            self._failed(unit, collected.reason)
            return
        marker = self.work.done(unit.id)
        self.outcomes[unit.id] = _outcome(
            unit,
            "evaluated",
            results_file=None if marker is None else marker.results,
            evaluation_id=collected.evaluation_id,
            scores=collected.scores,
            samples=collected.samples,
            seconds=0.0 if marker is None else marker.seconds,
            timings=None if marker is None else Timings.of(marker.timings),
        )
        self.advance(len(unit.leaves), f"{_where(unit)}: stored")

    def _failed(self, unit: Unit, error: str | None, job: str | None = None) -> None:
        self.outcomes[unit.id] = _outcome(unit, "failed", error=error or "failed", job=job)
        self.advance(len(unit.leaves), f"{_where(unit)}: failed")


def _failure(unit: Unit, error: str, claim: Claim | None, attempt: str, end: JobEnd | None = None) -> Failure:
    """The failure marker of a unit that every worker left unfinished (``claim``: the one that took it)."""
    return Failure(
        unit.id, error, stage="job", tail=[] if end is None else list(end.tail), attempt=attempt, finished=time.time(),
        host=None if claim is None else claim.host, pid=None if claim is None else claim.pid,
        job=None if claim is None else claim.job, job_state=None if end is None else end.state,
    )  # fmt: skip


def _next_of_run(units: list[Unit], index: int, work: WorkDir) -> Unit | None:
    """The unit after ``units[index]`` that the inline executor will evaluate, if it is of the same run."""
    for unit in units[index + 1 :]:
        if work.done(unit.id) is None:
            return unit if unit.run == units[index].run else None
    return None


def _where(unit: Unit) -> str:
    return f"{unit.run} {step_name(unit.step)}"


def _outcome(unit: Unit, status: Status, **values: Any) -> CheckpointOutcome:
    return CheckpointOutcome(
        checkpoint=unit.label,
        step=unit.step,
        status=status,
        tasks=list(unit.tasks),
        run=unit.run,
        unit=unit.id,
        **values,
    )


def _in_order(planned: Plan, outcomes: Mapping[str, CheckpointOutcome], runs: list[str]) -> list[CheckpointOutcome]:
    """Every checkpoint's outcome, run by run in the order given, checkpoints in step order (final models last)."""
    rows = [CheckpointOutcome(s.label, s.step, "skipped", [], run=s.run) for s in planned.skipped]
    rows += [outcomes[u.id] for u in planned.units if u.id in outcomes]
    order = {run: i for i, run in enumerate(runs)}
    return sorted(rows, key=lambda c: (order.get(c.run, 0), c.step is None, c.step or 0))
