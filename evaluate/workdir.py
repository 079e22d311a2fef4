"""The work folder: where the planner, the workers and the collector meet, on storage they all see.

Workers never open the store; everything they say goes through files here,
each written to a temporary name and renamed into place, so that a reader
sees a whole file or none::

    WORK_DIR/
      work.json                      the folder's format (FORMAT) and the ood-store that made it
      units/<unit>.json              what to evaluate (written by the planner)
      attempts/<attempt>.json        one per submission: its units in order, the executor, its jobs
      claims/<attempt>/<unit>.json   a worker took the unit (host, pid, job, start); touched while it runs
      done/<unit>.json               the completion marker: results file, its SHA-256, lm-eval version, host, seconds
      failed/<unit>.json             the unit's last failure: error, traceback tail, lm-eval log tail, host, job state
      failed/<unit>.log              lm-eval's log of that failed attempt
      stored/<unit>.json             the collector committed the unit to the store
      jobs/                          what executors write: local workers' logs, submitit's folder, ...

A unit with a completion marker is never evaluated again; a worker that dies
leaves none, and the unit is evaluated again by the next submission.

Every file is one of the typed records below (:class:`Unit`, :class:`Attempt`,
:class:`Claim`, :class:`Done`, :class:`Failure`, :class:`Stored`), written by
:func:`_write` and read back by :func:`_read` only, which checks it against
its type with pydantic (strict: a string is never read as a number) and
checks its ``format``. A folder or file of another format is refused in one
line naming it (:class:`~ood_store._errors.InputError`), never half read.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from ood_store._errors import InputError, OodStoreError
from ood_store._evaluate.timings import PARTS, Timings
from ood_store._processes import alive, this_host

#: The version of the work folder's files. 1: the unversioned folders of ood-store 0.1.0 (no
#: ``format`` field, untyped markers); 2: a ``format`` field in every file, records typed.
FORMAT = 2

#: A claim whose worker has not touched it for this long (and whose process cannot be
#: checked because it runs on another host) counts as a dead worker's.
HEARTBEAT_S = 30.0
STALE_AFTER_S = 4 * HEARTBEAT_S

State = Literal["pending", "running", "done", "stored", "failed"]
#: Where a unit failed: in lm-eval (evaluate), in the collector (collect), or with the scheduler's job
#: that held it (job: cancelled, out of memory, node failure, time limit).
Stage = Literal["evaluate", "collect", "job"]
#: The scheduler's states that end a job through no fault of its units: those units stay pending.
NOT_THE_UNITS_FAULT = frozenset({"TIMEOUT", "PREEMPTED", "DEADLINE"})

# pydantic's configuration of every record: strict (a number is never read from a string) and closed
# (an unknown field is an error).
_STRICT: Any = {"strict": True, "extra": "forbid"}


@dataclass(frozen=True)
class Unit:
    """One checkpoint of one run with all its pending tasks: what one worker evaluates in one lm-eval call."""

    __pydantic_config__ = _STRICT

    id: str
    store: str  # the store the results go to (absolute path)
    run: str
    step: int | None
    checkpoint: dict[str, Any]  # Checkpoint fields: model, step, revision, base_model
    label: str  # the folder or REPO@REVISION, as reports show it
    tasks: list[str]  # names given to lm-eval: leaf tasks and groups
    leaves: list[str]  # the leaf tasks they run (what progress counts)
    task_source: dict[str, Any]  # how the worker builds its task list: tasks, include_paths, data_dir
    options: dict[str, Any]  # keyword arguments of lm_eval.simple_evaluate
    dtype: str | None
    output: str  # the folder lm-eval's files are renamed into (absolute path)
    samples: bool  # per-sample rows are logged and stored
    attributes: dict[str, Any] | None  # run attributes, set by the collector
    log_to_file: bool  # lm-eval's output goes to lm-eval.log in the unit's folder
    scorer: str = "lm-eval"  # lm-eval's own hf model, or the verbalizer scorer (ood_store._evaluate.scorer)
    series: dict[str, Any] | None = None  # what every checkpoint of the run shares (ood_store._evaluate.series)
    max_length: int | None = None  # the most prompt tokens the model sees (None: lm-eval's length for the model)
    truncation: str = "left"  # which end of a longer prompt is cut (right: the verbalizer scorer only)
    format: int = FORMAT


@dataclass(frozen=True)
class Attempt:
    """One submission of units to an executor."""

    __pydantic_config__ = _STRICT

    units: list[str]  # in the order workers take them
    executor: str
    started: float  # seconds since the epoch
    host: str  # where the driver ran
    jobs: str | None = None  # what the executor started, as reports say it
    format: int = FORMAT


@dataclass(frozen=True)
class Claim:
    """A worker took a unit."""

    __pydantic_config__ = _STRICT

    host: str
    pid: int
    started: float
    job: str | None = None  # the scheduler's job that runs the worker (Slurm: 4242_3 for an array task)
    format: int = FORMAT


@dataclass(frozen=True)
class Done:
    """The completion marker: lm-eval's results file of the unit, as the worker wrote it."""

    __pydantic_config__ = _STRICT

    unit: str
    results: str  # the results file (absolute path)
    sha256: str  # of the results file
    lm_eval_version: str | None
    host: str
    pid: int
    attempt: str
    seconds: float  # evaluating the unit
    finished: float  # seconds since the epoch
    scorer: str = "lm-eval"  # what scored the unit (Unit.scorer)
    timings: dict[str, Any] | None = None  # where its time went (Timings.record(); ood_store._evaluate.timings)
    format: int = FORMAT


@dataclass(frozen=True)
class Failure:
    """Why a unit was not evaluated or not stored, the last time it was tried."""

    __pydantic_config__ = _STRICT

    unit: str
    error: str  # one line
    stage: Stage = "evaluate"
    tail: list[str] = field(default_factory=list)  # the end of the traceback and of lm-eval's log (or the job's)
    host: str | None = None
    pid: int | None = None
    attempt: str | None = None
    seconds: float | None = None
    finished: float | None = None
    job: str | None = None  # stage job: the scheduler's job that held the unit
    job_state: str | None = None  # stage job: its state (CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, ...)
    format: int = FORMAT


@dataclass(frozen=True)
class Stored:
    """The collector committed the unit's results to a store."""

    __pydantic_config__ = _STRICT

    unit: str
    store: str
    status: Literal["ingested", "present"]  # present: the store held the file already
    evaluation_id: int | None
    scores: int
    samples: int
    format: int = FORMAT


@dataclass(frozen=True)
class UnitStatus:
    """Where one unit stands, as :func:`WorkDir.status` reads it from the markers."""

    unit: Unit
    state: State
    host: str | None = None
    pid: int | None = None
    seconds: float | None = None  # evaluation time (done, stored) or time so far (running)
    error: str | None = None  # failed: the error; pending: why an earlier attempt did not finish
    error_tail: list[str] = field(default_factory=list)  # failed: the last lines of the traceback and lm-eval's log
    job: str | None = None  # the scheduler's job that ran (or last held) the unit
    job_state: str | None = None  # that job's state, when it ended the unit (CANCELLED, TIMEOUT, ...)
    timings: Timings | None = None  # done, stored: where the evaluation's time went


#: A record of the work folder: one of the dataclasses above, or another stage's completion marker
#: (:attr:`WorkDir.DONE`), each a frozen dataclass with a ``format`` field, checked strictly by pydantic.
Record = TypeVar("Record")


def this_job() -> str | None:
    """The scheduler's job this process runs in: Slurm's ``ARRAY_TASK`` (``4242_3``) or job id, else None."""
    array, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    if array and task:
        return f"{array}_{task}"
    return os.environ.get("SLURM_JOB_ID") or None


def _encode(record: Any) -> bytes:
    return (json.dumps(asdict(record), indent=1, sort_keys=True) + "\n").encode()


def _write(path: Path, record: Any, *, exclusive: bool = False) -> bool:
    """Write ``record`` to ``path``: atomically (a temporary file, flushed, renamed into place), or, ``exclusive``,
    only if no such file exists yet (``O_EXCL``: atomic on local and shared file systems); whether it was written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = _encode(record)
    if exclusive:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return True
    tmp = path.with_name(f".{path.name}.{this_host()}.{os.getpid()}.tmp")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return True


_ADAPTERS: dict[str, Any] = {}


def _adapter(kind: type) -> Any:
    """pydantic's validator of a record type (made once)."""
    if kind.__name__ not in _ADAPTERS:
        from pydantic import TypeAdapter

        _ADAPTERS[kind.__name__] = TypeAdapter(kind)
    return _ADAPTERS[kind.__name__]


def _read(path: Path, kind: type[Record]) -> Record | None:
    """The record in ``path`` (None when there is no such file); one line naming the file when it is not one."""
    from pydantic import ValidationError

    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise InputError(str(path), None, f"not JSON ({exc}): a damaged work folder file") from None
    found = data.get("format", 1) if isinstance(data, dict) else None
    if found != FORMAT:
        raise InputError(str(path), "format", _other_format(found)) from None
    try:
        return _adapter(kind).validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or None
        raise InputError(str(path), where, f"{first['msg']} (a {kind.__name__.lower()} record)") from None


def _other_format(found: Any) -> str:
    made = "an earlier ood-store" if isinstance(found, int) and found < FORMAT else "another ood-store"
    return (
        f"written by {made} (format {found}); this one reads format {FORMAT}: collect it with the ood-store that "
        "wrote it, or evaluate into another `work_dir`"
    )


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` atomically: a temporary file, flushed to disk, renamed into place (for a
    stage's own files beside the records, e.g. finetune's run specs and progress)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{this_host()}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True, default=str)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    """The JSON in ``path``, or None when the file does not exist."""
    try:
        return json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None


class WorkDir:
    """A work folder (see the module documentation for its layout).

    ``DONE`` is the type of its completion markers: evaluate's :class:`Done`; finetune's folder has its own.
    """

    DONE: type = Done

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path).resolve()

    def __repr__(self) -> str:
        return f"WorkDir({str(self.path)!r})"

    # -- layout --------------------------------------------------------------
    def _file(self, kind: str, unit_id: str, suffix: str = ".json") -> Path:
        return self.path / kind / f"{unit_id}{suffix}"

    @property
    def jobs(self) -> Path:
        return self.path / "jobs"

    def failed_log(self, unit_id: str) -> Path:
        return self._file("failed", unit_id, ".log")

    # -- creating ------------------------------------------------------------
    def create(self) -> WorkDir:
        """Make the folder (and check that files can be written in it), or stop with one line naming it.

        A work folder there already must be of this :data:`FORMAT`."""
        if self.exists():
            return self.require()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            probe = self.path / f".probe.{this_host()}.{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise InputError(str(self.path), None, f"cannot write the work folder: {reason}") from None
        from ood_store import __version__

        header = {"format": FORMAT, "created": time.time(), "ood_store": __version__}
        (self.path / "work.json").write_text(json.dumps(header, indent=1, sort_keys=True) + "\n", "utf-8")
        (self.path / "units").mkdir(exist_ok=True)
        return self

    def exists(self) -> bool:
        return (self.path / "units").is_dir()

    def require(self) -> WorkDir:
        """This folder, if it is a work folder of this :data:`FORMAT`; else stop with one line naming it."""
        if not self.exists():
            raise InputError(
                str(self.path), None, "not a work folder (no units/ in it): give the `work_dir` of evaluate"
            )
        try:
            header = json.loads((self.path / "work.json").read_bytes())
        except FileNotFoundError:
            header = {"format": 1}  # the unversioned folders of ood-store 0.1.0
        except ValueError:
            header = None
        found = header.get("format") if isinstance(header, dict) else None
        if found != FORMAT:
            raise InputError(str(self.path), None, f"a work folder {_other_format(found)}")
        return self

    # -- units ---------------------------------------------------------------
    def add_units(self, units: list[Unit]) -> None:
        for unit in units:
            _write(self._file("units", unit.id), unit)

    def unit(self, unit_id: str) -> Unit:
        unit = _read(self._file("units", unit_id), Unit)
        if unit is None:
            raise OodStoreError(f"{self.path}: no unit {unit_id}")
        return unit

    def units(self) -> list[Unit]:
        folder = self.path / "units"
        return [self.unit(p.stem) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []

    # -- attempts and claims -------------------------------------------------
    def _attempt_file(self, attempt: str) -> Path:
        return self.path / "attempts" / f"{attempt}.json"

    def start_attempt(self, unit_ids: list[str], executor: str) -> str:
        """Record a submission of ``unit_ids``; returns its name (claims of earlier attempts do not count)."""
        attempt = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
        _write(self._attempt_file(attempt), Attempt(unit_ids, executor, time.time(), this_host()))
        return attempt

    def attempt(self, attempt: str) -> Attempt:
        record = _read(self._attempt_file(attempt), Attempt)
        if record is None:
            raise OodStoreError(f"{self.path}: no attempt {attempt}")
        return record

    def record_jobs(self, attempt: str, jobs: str) -> None:
        record = self.attempt(attempt)
        _write(self._attempt_file(attempt), Attempt(record.units, record.executor, record.started, record.host, jobs))

    def _claim_file(self, attempt: str, unit_id: str) -> Path:
        return self.path / "claims" / attempt / f"{unit_id}.json"

    def claim(self, attempt: str, unit_id: str) -> Path | None:
        """Take ``unit_id`` for this process in ``attempt``: the claim file, or None if another worker has it.

        Creating the file with ``O_EXCL`` is atomic on local and shared file
        systems (NFSv3 and later, Lustre, GPFS), so two workers never take one unit.
        """
        path = self._claim_file(attempt, unit_id)
        taken = _write(path, Claim(this_host(), os.getpid(), time.time(), this_job()), exclusive=True)
        return path if taken else None

    def release(self, attempt: str, unit_id: str) -> None:
        """Give back a unit this process claimed and will not finish (its job is about to be requeued):
        another worker of ``attempt`` (the requeued job) may take it."""
        self._claim_file(attempt, unit_id).unlink(missing_ok=True)

    def claimed(self, attempt: str) -> set[str]:
        """The units that workers of ``attempt`` have taken."""
        folder = self.path / "claims" / attempt
        return {p.stem for p in folder.glob("*.json")} if folder.is_dir() else set()

    def claims(self, attempt: str) -> dict[str, Claim]:
        """The claims of ``attempt``'s workers, by unit."""
        out = {}
        for unit_id in self.claimed(attempt):
            claim = _read(self._claim_file(attempt, unit_id), Claim)
            if claim is not None:
                out[unit_id] = claim
        return out

    def _latest_claims(self) -> dict[str, tuple[str, Path]]:
        """For each unit, the claim of the latest attempt that claimed it: (attempt, claim file)."""
        folder = self.path / "claims"
        latest: dict[str, tuple[str, Path]] = {}
        if folder.is_dir():
            for attempt in sorted(p.name for p in folder.iterdir() if p.is_dir()):
                for claim in (folder / attempt).glob("*.json"):
                    latest[claim.stem] = (attempt, claim)
        return latest

    # -- markers -------------------------------------------------------------
    def mark_done(self, marker: Any) -> None:
        """Write the completion marker (a :attr:`DONE` record) of ``marker.unit``; its failure marker goes."""
        _write(self._file("done", marker.unit), marker)
        self._file("failed", marker.unit).unlink(missing_ok=True)

    def done(self, unit_id: str) -> Any:
        """The completion marker (a :attr:`DONE` record) of ``unit_id``, or None."""
        return _read(self._file("done", unit_id), self.DONE)

    def mark_failed(self, failure: Failure) -> None:
        _write(self._file("failed", failure.unit), failure)

    def failed(self, unit_id: str) -> Failure | None:
        return _read(self._file("failed", unit_id), Failure)

    def mark_stored(self, stored: Stored) -> None:
        _write(self._file("stored", stored.unit), stored)

    def stored(self, unit_id: str) -> Stored | None:
        return _read(self._file("stored", unit_id), Stored)

    def marked(self, kind: Literal["done", "failed", "stored"]) -> set[str]:
        """The ids of the units with a marker of this kind."""
        folder = self.path / kind
        return {p.stem for p in folder.glob("*.json") if not p.name.startswith(".")} if folder.is_dir() else set()

    # -- status --------------------------------------------------------------
    def status(self, units: list[Unit] | None = None) -> list[UnitStatus]:
        """Where each unit stands (all of this folder's units unless ``units`` is given), from the markers."""
        units = self.units() if units is None else units
        done, failed, stored = self.marked("done"), self.marked("failed"), self.marked("stored")
        claims = self._latest_claims()
        out = []
        for unit in units:
            failure = self.failed(unit.id) if unit.id in failed else None
            refused = failure is not None and failure.stage == "collect"
            if unit.id in stored or (unit.id in done and not refused):
                marker = self.done(unit.id)
                state: State = "stored" if unit.id in stored else "done"
                if marker is None:
                    out.append(UnitStatus(unit, state))
                else:
                    timings = Timings.of(marker.timings)
                    out.append(UnitStatus(unit, state, marker.host, marker.pid, marker.seconds, timings=timings))
            else:
                out.append(self._undone(unit, None if refused else claims.get(unit.id), failure))
        return out

    def _undone(self, unit: Unit, claim: tuple[str, Path] | None, failure: Failure | None) -> UnitStatus:
        if claim is not None:
            attempt, path = claim
            info = _read(path, Claim)
            alive = info is not None and _alive(info, path)
            if info is not None and alive and (failure is None or failure.attempt != attempt):
                return UnitStatus(unit, "running", info.host, info.pid, time.time() - info.started, job=info.job)
            if failure is None and info is not None and not alive:
                worker = (
                    f"its Slurm job {info.job}" if info.job else f"an earlier worker ({info.host}, process {info.pid})"
                )
                lost = f"{worker} stopped without finishing it"
                return UnitStatus(unit, "pending", info.host, info.pid, error=lost, job=info.job)
        if failure is not None:
            state: State = "pending" if failure.job_state in NOT_THE_UNITS_FAULT else "failed"
            return UnitStatus(
                unit, state, failure.host, failure.pid, failure.seconds, failure.error, list(failure.tail),
                job=failure.job, job_state=failure.job_state,
            )  # fmt: skip
        return UnitStatus(unit, "pending")


def _alive(claim: Claim, path: Path) -> bool:
    """Whether the worker that wrote ``claim`` still runs: its process on this host, else a recent heartbeat."""
    pid = claim.pid
    if claim.host == this_host():
        return alive(pid)
    try:
        return time.time() - path.stat().st_mtime < STALE_AFTER_S
    except FileNotFoundError:
        return False


def status_table(statuses: list[UnitStatus]) -> Any:
    """One row per unit (a Polars DataFrame): unit, run, step, tasks, state, host, job, job_state, seconds,
    documents scored, how its model was loaded and the seconds of each part (:mod:`~ood_store._evaluate.timings`;
    finished units), error. Seconds at full precision: the printed table rounds them (:func:`rounded`)."""
    import polars as pl

    def part(s: UnitStatus, name: str) -> float | None:
        return None if s.timings is None else getattr(s.timings, name)

    return pl.DataFrame(
        {
            "unit": [s.unit.id for s in statuses],
            "run": [s.unit.run for s in statuses],
            "step": [s.unit.step for s in statuses],
            "tasks": [len(s.unit.leaves) for s in statuses],
            "state": [s.state for s in statuses],
            "host": [s.host for s in statuses],
            "job": [s.job for s in statuses],
            "job_state": [s.job_state for s in statuses],
            "seconds": [s.seconds for s in statuses],
            "documents": [None if s.timings is None or not s.timings.documents else s.timings.documents
                          for s in statuses],  # fmt: skip
            "load": [None if s.timings is None else s.timings.load for s in statuses],
            **{name: [part(s, name) for s in statuses] for name in PARTS},
            "error": [s.error for s in statuses],
        },
        schema={
            "unit": pl.String, "run": pl.String, "step": pl.Int64, "tasks": pl.Int64, "state": pl.String,
            "host": pl.String, "job": pl.String, "job_state": pl.String, "seconds": pl.Float64, "documents": pl.Int64,
            "load": pl.String,
            **dict.fromkeys(PARTS, pl.Float64), "error": pl.String,
        },
    )  # fmt: skip


def rounded(frame: Any) -> Any:
    """A :func:`status_table` as a person reads it: its seconds to a tenth."""
    import polars as pl

    return frame.with_columns(pl.col("seconds", *PARTS).round(1))
