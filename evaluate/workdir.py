"""The work folder: where the planner, the workers and the collector meet, on storage they all see.

Workers never open the store; everything they say goes through files here,
each written to a temporary name and renamed into place, so that a reader
sees a whole file or none::

    WORK_DIR/
      units/<unit>.json              what to evaluate (written by the planner)
      attempts/<attempt>.json        one per submission: its units in order, the executor, its jobs
      claims/<attempt>/<unit>.json   a worker took the unit (host, pid, start); touched while it runs
      done/<unit>.json               the completion marker: results file, its SHA-256, lm-eval version, host, seconds
      failed/<unit>.json             the unit's last failure: error, traceback tail, lm-eval log tail, host
      failed/<unit>.log              lm-eval's log of that failed attempt
      stored/<unit>.json             the collector committed the unit to the store
      jobs/                          what executors write: local workers' logs, submitit's folder, ...

A unit with a completion marker is never evaluated again; a worker that dies
leaves none, and the unit is evaluated again by the next submission.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from ood_store._errors import InputError, OodStoreError
from ood_store._evaluate.timings import PARTS, Timings

#: A claim whose worker has not touched it for this long (and whose process cannot be
#: checked because it runs on another host) counts as a dead worker's.
HEARTBEAT_S = 30.0
STALE_AFTER_S = 4 * HEARTBEAT_S

State = Literal["pending", "running", "done", "stored", "failed"]


@dataclass(frozen=True)
class Unit:
    """One checkpoint of one run with all its pending tasks: what one worker evaluates in one lm-eval call."""

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

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Unit:
        return cls(**data)


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
    timings: Timings | None = None  # done, stored: where the evaluation's time went


def this_host() -> str:
    return socket.gethostname()


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` atomically: a temporary file, flushed to disk, renamed into place."""
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
    """A work folder (see the module documentation for its layout)."""

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
        """Make the folder (and check that files can be written in it), or stop with one line naming it."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            probe = self.path / f".probe.{this_host()}.{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise InputError(str(self.path), None, f"cannot write the work folder: {reason}") from None
        return self

    def exists(self) -> bool:
        return (self.path / "units").is_dir()

    def require(self) -> WorkDir:
        """This folder, if it is a work folder; else stop with one line naming it."""
        if not self.exists():
            raise InputError(
                str(self.path), None, "not a work folder (no units/ in it): give the `work_dir` of evaluate"
            )
        return self

    # -- units ---------------------------------------------------------------
    def add_units(self, units: list[Unit]) -> None:
        for unit in units:
            write_json(self._file("units", unit.id), asdict(unit))

    def unit(self, unit_id: str) -> Unit:
        data = read_json(self._file("units", unit_id))
        if data is None:
            raise OodStoreError(f"{self.path}: no unit {unit_id}")
        return Unit.from_dict(data)

    def units(self) -> list[Unit]:
        folder = self.path / "units"
        return [self.unit(p.stem) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []

    # -- attempts and claims -------------------------------------------------
    def start_attempt(self, unit_ids: list[str], executor: str) -> str:
        """Record a submission of ``unit_ids``; returns its name (claims of earlier attempts do not count)."""
        attempt = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
        write_json(
            self.path / "attempts" / f"{attempt}.json",
            {"units": unit_ids, "executor": executor, "started": time.time(), "host": this_host(), "jobs": None},
        )
        return attempt

    def attempt(self, attempt: str) -> dict[str, Any]:
        data = read_json(self.path / "attempts" / f"{attempt}.json")
        if data is None:
            raise OodStoreError(f"{self.path}: no attempt {attempt}")
        return data

    def record_jobs(self, attempt: str, jobs: str) -> None:
        data = self.attempt(attempt)
        write_json(self.path / "attempts" / f"{attempt}.json", {**data, "jobs": jobs})

    def _claim_file(self, attempt: str, unit_id: str) -> Path:
        return self.path / "claims" / attempt / f"{unit_id}.json"

    def claim(self, attempt: str, unit_id: str) -> Path | None:
        """Take ``unit_id`` for this process in ``attempt``: the claim file, or None if another worker has it.

        Creating the file with ``O_EXCL`` is atomic on local and shared file
        systems (NFSv3 and later, Lustre, GPFS), so two workers never take one unit.
        """
        path = self._claim_file(attempt, unit_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return None
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"host": this_host(), "pid": os.getpid(), "started": time.time()}, fh)
        return path

    def claimed(self, attempt: str) -> set[str]:
        """The units that workers of ``attempt`` have taken."""
        folder = self.path / "claims" / attempt
        return {p.stem for p in folder.glob("*.json")} if folder.is_dir() else set()

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
    def mark_done(self, unit_id: str, marker: dict[str, Any]) -> None:
        write_json(self._file("done", unit_id), marker)
        self._file("failed", unit_id).unlink(missing_ok=True)

    def done(self, unit_id: str) -> dict[str, Any] | None:
        """The completion marker of ``unit_id``, or None."""
        return read_json(self._file("done", unit_id))

    def mark_failed(self, unit_id: str, failure: dict[str, Any]) -> None:
        write_json(self._file("failed", unit_id), failure)

    def failed(self, unit_id: str) -> dict[str, Any] | None:
        return read_json(self._file("failed", unit_id))

    def mark_stored(self, unit_id: str, stored: dict[str, Any]) -> None:
        write_json(self._file("stored", unit_id), stored)

    def stored(self, unit_id: str) -> dict[str, Any] | None:
        return read_json(self._file("stored", unit_id))

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
            refused = unit.id in failed and (self.failed(unit.id) or {}).get("stage") == "collect"
            if unit.id in stored or (unit.id in done and not refused):
                marker = self.done(unit.id) or {}
                state: State = "stored" if unit.id in stored else "done"
                host, pid, seconds = marker.get("host"), marker.get("pid"), marker.get("seconds")
                out.append(UnitStatus(unit, state, host, pid, seconds, timings=Timings.of(marker.get("timings"))))
            else:
                out.append(self._undone(unit, None if refused else claims.get(unit.id), unit.id in failed))
        return out

    def _undone(self, unit: Unit, claim: tuple[str, Path] | None, failed: bool) -> UnitStatus:
        failure = self.failed(unit.id) if failed else None
        if claim is not None:
            attempt, path = claim
            info = read_json(path) or {}
            alive = _alive(info, path)
            if alive and (failure is None or failure.get("attempt") != attempt):
                started = info.get("started")
                return UnitStatus(
                    unit,
                    "running",
                    info.get("host"),
                    info.get("pid"),
                    None if started is None else time.time() - started,
                )
            if failure is None and not alive:
                lost = f"an earlier worker ({info.get('host')}, process {info.get('pid')}) stopped without finishing it"
                return UnitStatus(unit, "pending", info.get("host"), info.get("pid"), error=lost)
        if failure is not None:
            return UnitStatus(
                unit,
                "failed",
                failure.get("host"),
                failure.get("pid"),
                failure.get("seconds"),
                failure.get("error"),
                list(failure.get("tail") or []),
            )
        return UnitStatus(unit, "pending")


def _alive(claim: dict[str, Any], path: Path) -> bool:
    """Whether the worker that wrote ``claim`` still runs: its process on this host, else a recent heartbeat."""
    pid = claim.get("pid")
    if claim.get("host") == this_host() and isinstance(pid, int):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return _not_zombie(pid)
    try:
        return time.time() - path.stat().st_mtime < STALE_AFTER_S
    except FileNotFoundError:
        return False


def _not_zombie(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return True  # no /proc (macOS): the signal test above is all there is
    return fields[0] != "Z"


def status_table(statuses: list[UnitStatus]) -> Any:
    """One row per unit (a Polars DataFrame): unit, run, step, tasks, state, host, seconds, how its model was
    loaded and the seconds of each part (:mod:`~ood_store._evaluate.timings`; finished units), error."""
    import polars as pl

    def part(s: UnitStatus, name: str) -> float | None:
        return None if s.timings is None else round(getattr(s.timings, name), 1)

    return pl.DataFrame(
        {
            "unit": [s.unit.id for s in statuses],
            "run": [s.unit.run for s in statuses],
            "step": [s.unit.step for s in statuses],
            "tasks": [len(s.unit.leaves) for s in statuses],
            "state": [s.state for s in statuses],
            "host": [s.host for s in statuses],
            "seconds": [None if s.seconds is None else round(s.seconds, 1) for s in statuses],
            "load": [None if s.timings is None else s.timings.load for s in statuses],
            **{name: [part(s, name) for s in statuses] for name in PARTS},
            "error": [s.error for s in statuses],
        },
        schema={
            "unit": pl.String, "run": pl.String, "step": pl.Int64, "tasks": pl.Int64, "state": pl.String,
            "host": pl.String, "seconds": pl.Float64, "load": pl.String, **dict.fromkeys(PARTS, pl.Float64),
            "error": pl.String,
        },
    )  # fmt: skip
