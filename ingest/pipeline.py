"""The ingestion layer: results files in, tidy rows in the store out.

:func:`ingest` reads results files (lm-eval's, with the per-sample files beside
them, and the other formats of :mod:`ood_store.ingest.formats`), validates each
one completely before touching the store, and writes each with all its
evaluations in one transaction: a file goes in whole or not at all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb

from ood_store import sqlfiles
from ood_store.errors import InputError, first_line
from ood_store.ingest import formats
from ood_store.ingest.discover import Candidate, discover
from ood_store.ingest.identity import Overrides
from ood_store.ingest.records import EvaluationRecord
from ood_store.ingest.samples import read_samples, samples_beside, task_of
from ood_store.ingest.wandb import HistoryOptions
from ood_store.ingest.write import write_batch
from ood_store.progress import progress_bar
from ood_store.store.runs import parse_attributes, set_attributes
from ood_store.store.transaction import transaction

__all__ = ["Conflict", "FileOutcome", "IngestReport", "Overrides", "ingest"]

Status = Literal["ingested", "present", "rejected", "skipped"]


@dataclass(frozen=True)
class FileOutcome:
    path: str
    status: Status
    reason: str | None = None  # why it was rejected, or which evaluation it duplicates
    evaluation_id: int | None = None
    run: str | None = None
    step: int | None = None
    scores: int = 0
    samples: int = 0
    evaluations: int = 1  # a W&B history holds one per step


@dataclass(frozen=True)
class Conflict:
    """A (run, step, task, num_fewshot, metric, filter) key on which evaluations disagree."""

    run: str
    step: int | None
    task: str
    num_fewshot: int | None
    metric: str
    filter: str
    values: list[tuple[float, str]]  # (value, source path), in ingest order
    chosen: str  # the source path whose value `scores` shows


@dataclass
class IngestReport:
    files: list[FileOutcome] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)

    def _with(self, status: Status) -> list[FileOutcome]:
        return [f for f in self.files if f.status == status]

    # The files by outcome: written, already in the store, refused, or not lm-eval files.
    ingested = property(lambda self: self._with("ingested"))
    present = property(lambda self: self._with("present"))
    rejected = property(lambda self: self._with("rejected"))
    skipped = property(lambda self: self._with("skipped"))

    @property
    def ok(self) -> bool:
        return not self.rejected


def ingest(
    con: duckdb.DuckDBPyConnection,
    paths: list[str],
    *,
    overrides: Overrides | None = None,
    attributes: Mapping[str, Any] | list[str] | None = None,
    samples: bool = True,
    progress: bool = False,
    wandb_map: Sequence[str] = (),
    wandb_step: str | None = None,
    wandb_config: str | None = None,
) -> IngestReport:
    """Ingest results files, folders (recursive) and globs into the store on ``con``.

    Parameters
    ----------
    paths
        Files, folders or glob patterns. A ``samples_*.jsonl`` stands for its results file.
    overrides
        ``run``, ``step`` or ``model`` that replace what the files say.
    attributes
        Run attributes (``family``, ``size``, ``in_domain``, ``seed``, any key) set
        on every run that an ingested file belongs to.
    samples
        Also ingest the ``samples_<task>_<ts>.jsonl`` files beside each results file.
    progress
        Show a progress bar on standard error when it is a terminal.
    wandb_map, wandb_step, wandb_config
        For W&B run histories (:mod:`ood_store.ingest.wandb`): column patterns
        (``"eval/{task}_{metric}"``, ``"eval/hans_acc=hans:acc"``) saying which
        columns are scores of which task and metric, the step column (default
        ``_step``), and the run's config file (default: ``config.yaml`` or
        ``config.json`` beside the history).

    Returns
    -------
    IngestReport
        One outcome per file (ingested, already present, rejected with the
        reason, or skipped as not lm-eval), and the keys on which evaluations
        of the same checkpoint disagree.
    """
    overrides = overrides or Overrides()
    attrs = parse_attributes(attributes) if attributes else None
    history = HistoryOptions.build(wandb_map, wandb_step, wandb_config)
    report = IngestReport()
    candidates, searched, errors = discover(paths)
    for error in errors:
        report.files.append(FileOutcome(error.path or "", "rejected", str(error)))

    known = {
        digest: (path, run)
        for digest, path, run in con.execute(sqlfiles.load("ood_store.ingest", "known_files")).fetchall()
    }
    outcomes: dict[int, FileOutcome] = {}
    recognised: set[str] = set()  # arguments that found at least one lm-eval file
    batch = _Batch(con, attrs, outcomes)
    with progress_bar(progress, len(candidates), "ingesting") as advance:
        for index, candidate in enumerate(candidates):
            result = _read_one(candidate, overrides, samples, known, history)
            if isinstance(result, FileOutcome):
                outcomes[index] = result
            else:
                for record in result:
                    known[record.content_hash] = (record.path, record.identity.run)
                batch.add(index, result)
            if not isinstance(result, FileOutcome) or result.status != "skipped":
                recognised.add(candidate.root)
            advance(1, candidate.path.name)
        batch.flush()
    report.files.extend(outcomes[i] for i in sorted(outcomes))
    if attrs:  # attributes also go to the runs of files that were already present
        present = {f.run for f in report.present if f.run} - {f.run for f in report.ingested}
        _set_attributes(con, sorted(present), attrs)

    matched_nothing = {e.path for e in errors}
    for root in sorted(set(searched) - recognised - matched_nothing):
        report.files.append(FileOutcome(root, "rejected", f"{root}: no results files found ({formats.KNOWN})"))
    if batch.new_ids:
        report.conflicts = _conflicts(con, batch.new_ids)
    return report


class _Batch:
    """Validated records waiting to be written, flushed by file count or sample rows."""

    MAX_FILES = 256
    MAX_SAMPLE_ROWS = 500_000

    def __init__(self, con, attrs, outcomes: dict[int, FileOutcome]):
        self.con, self.attrs, self.outcomes = con, attrs, outcomes
        self.pending: list[tuple[int, list[EvaluationRecord]]] = []
        self.sample_rows = 0
        self.new_ids: list[int] = []

    def add(self, index: int, records: list[EvaluationRecord]) -> None:
        """Queue the records of one file (written together, in one transaction)."""
        self.pending.append((index, records))
        self.sample_rows += sum(0 if r.samples is None else r.samples.height for r in records)
        if len(self.pending) >= self.MAX_FILES or self.sample_rows >= self.MAX_SAMPLE_ROWS:
            self.flush()

    def flush(self) -> None:
        pending, self.pending, self.sample_rows = self.pending, [], 0
        if not pending:
            return
        try:
            ids = iter(write_batch(self.con, [r for _, records in pending for r in records], self.attrs))
        except duckdb.Error as exc:
            if len(pending) == 1:
                index, records = pending[0]
                shown = records[0].display_path
                self.outcomes[index] = FileOutcome(
                    shown, "rejected", f"{shown}: could not be stored: {first_line(exc)}"
                )
                return
            for item in pending:  # isolate the file that DuckDB refused
                self.pending = [item]
                self.flush()
            return
        for index, records in pending:
            file_ids = [next(ids) for _ in records]
            self.new_ids.extend(file_ids)
            first = records[0]
            self.outcomes[index] = FileOutcome(
                first.display_path,
                "ingested",
                evaluation_id=file_ids[0],
                run=first.identity.run,
                step=first.identity.step,
                scores=sum(len(r.scores) for r in records),
                samples=sum(0 if r.samples is None else r.samples.height for r in records),
                evaluations=len(records),
            )


def _read_one(
    candidate: Candidate,
    overrides: Overrides,
    with_samples: bool,
    known: dict[str, tuple[str, str]],
    history: HistoryOptions,
) -> FileOutcome | list[EvaluationRecord]:
    """The validated records of one file that are not in the store yet, or its outcome when none will be written."""
    shown = str(candidate.path)
    try:
        data = candidate.path.read_bytes()
    except OSError as exc:
        return FileOutcome(shown, "rejected", f"{shown}: cannot read: {exc.strerror}")
    digest = hashlib.sha256(data).hexdigest()
    if digest in known:
        first_path, run = known[digest]
        return FileOutcome(shown, "present", f"same content as {first_path}", run=run)
    try:
        records = formats.read(candidate.path, shown, data, digest, overrides, history)
        for record in records:
            if with_samples and record.source_format == "lm-eval":
                _attach_samples(record, candidate.path)
    except formats.NotResults:
        if candidate.explicit:
            return FileOutcome(shown, "rejected", f"{shown}: not a results file ood-store reads ({formats.KNOWN})")
        return FileOutcome(shown, "skipped", "not a results file")
    except InputError as exc:
        return FileOutcome(shown, "rejected", str(exc))
    fresh = [r for r in records if r.content_hash not in known]
    if not fresh:  # another file, or an export of an evaluation already here (EEE keeps the content hash)
        first_path, run = known[records[0].content_hash]
        return FileOutcome(shown, "present", f"same content as {first_path}", run=run, evaluations=len(records))
    for record in fresh:
        record.display_path = shown
        record.path = str(candidate.path.resolve())
    return fresh


def _set_attributes(con: duckdb.DuckDBPyConnection, runs: list[str], attrs: Mapping[str, Any]) -> None:
    if not runs:
        return
    with transaction(con):
        for run in runs:
            set_attributes(con, run, attrs)


def _attach_samples(record: Any, results_path: Path) -> None:
    import polars as pl

    files = samples_beside(results_path)
    if not files:
        return
    frames = [read_samples(f, record.output_types.get(task_of(f))) for f in files]
    record.samples = pl.concat(frames, how="vertical")
    record.samples_files = [str(f.resolve()) for f in files]


def _conflicts(con: duckdb.DuckDBPyConnection, new_ids: list[int]) -> list[Conflict]:
    rows = con.execute(sqlfiles.load("ood_store.ingest", "conflicts_for"), {"new_ids": new_ids}).fetchall()
    out = []
    for run, step, task, shots, metric, filt, ids, values, paths, chosen in rows:
        out.append(
            Conflict(
                run=run,
                step=step,
                task=task,
                num_fewshot=shots,
                metric=metric,
                filter=filt,
                values=list(zip(values, paths, strict=True)),
                chosen=paths[ids.index(chosen)],
            )
        )
    return out
