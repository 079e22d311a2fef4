"""The ingestion layer: results files in, tidy rows in the store out.

:func:`ingest` finds the files (lm-eval's, with the per-sample files beside
them, and the other formats of :mod:`ood_store._ingest.formats`), then for each
one in turn reads it into an outcome (already present, skipped, rejected with
the reason) or its validated records, one per evaluation it holds
(:func:`read_one`); records are written in batches (:class:`Batch`), each in
one transaction: a file goes in with all its evaluations, or not at all.
Before a batch is written, evaluations it holds that the store (or an earlier file
of the batch) already holds in another format are taken out
(:mod:`~ood_store._ingest.equivalence`); a dry run stops there and reports what
would be written.

Each file is isolated by construction: any exception while one file is read,
validated or prepared for the store rejects that file alone. Problems with the
input are :class:`~ood_store._errors.InputError` s naming the file and field;
anything else is a bug, reported as ``internal error while reading FILE:
<type>: <message>; please report`` with its traceback kept in the outcome.
"""

from __future__ import annotations

import gc
import hashlib
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import duckdb

from ood_store import _sqlfiles as sqlfiles
from ood_store._counts import n
from ood_store._errors import InputError, first_line
from ood_store._ingest import equivalence, formats
from ood_store._ingest import samples as samples_files
from ood_store._ingest.discover import Candidate, discover
from ood_store._ingest.identity import Overrides, campaign_of
from ood_store._ingest.limits import MAX_SAMPLE_LINE_BYTES
from ood_store._ingest.records import EvaluationRecord
from ood_store._ingest.regular import check_name, read_regular
from ood_store._ingest.report import (
    CampaignMix,
    Conflict,
    FileOutcome,
    IngestReport,
    Status,
    campaign_order,
    unexpected,
)
from ood_store._ingest.wandb import HistoryOptions
from ood_store._ingest.write import BatchRefused, StoredMeanwhile, write_batch
from ood_store._progress import progress_bar
from ood_store._store import lake
from ood_store._store.attribute_rules import AttributeRule, attributes_for, unmatched
from ood_store._store.damage import is_store_problem
from ood_store._store.runs import parse_attributes, set_attributes
from ood_store._store.transaction import transaction

__all__ = ["CampaignMix", "Conflict", "FileOutcome", "IngestReport", "Overrides", "ingest"]


@dataclass(frozen=True)
class _Known:
    """An evaluation already in the store, by the content hash of its file."""

    path: str
    run: str
    evaluation_id: int
    campaign: str | None


def ingest(
    con: duckdb.DuckDBPyConnection,
    paths: list[str],
    *,
    overrides: Overrides | None = None,
    attributes: Mapping[str, Any] | list[str] | None = None,
    attribute_rules: Sequence[AttributeRule] = (),
    samples: bool = True,
    progress: bool = False,
    wandb_map: Sequence[str] = (),
    wandb_step: str | None = None,
    wandb_config: str | None = None,
    dry_run: bool = False,
) -> IngestReport:
    """Ingest results files, folders (recursive) and globs into the store on ``con``.

    Parameters
    ----------
    paths
        Files, folders or glob patterns. A ``samples_*.jsonl`` stands for its results file.
    overrides
        ``run``, ``step``, ``model`` or ``campaign`` that replace what the files say.
    attributes
        Run attributes (``family``, ``size``, ``in_domain``, ``seed``, any key) set
        on every run that an ingested file belongs to.
    attribute_rules
        Attributes by run name or glob (:func:`~ood_store._store.attribute_rules.read_attribute_file`),
        set on the runs of the files they match; ``attributes`` win over them.
    samples
        Also ingest the ``samples_<task>_<ts>.jsonl`` files beside each results file.
    progress
        Show a progress bar on standard error when it is a terminal.
    wandb_map, wandb_step, wandb_config
        For W&B run histories (:mod:`ood_store._ingest.wandb`): column patterns
        (``"eval/{task}_{metric}"``, ``"eval/hans_acc=hans:acc"``) saying which
        columns are scores of which task and metric, the step column (default
        ``_step``), and the run's config file (default: ``config.yaml`` or
        ``config.json`` beside the history).
    dry_run
        Read and check every file, and say what would be stored (each file's format, run, step,
        campaign and where they came from: the outcomes are ``planned``), without writing anything.

    Returns
    -------
    IngestReport
        One outcome per file (ingested, already present, rejected with the
        reason, or skipped as not lm-eval), the keys on which evaluations of
        the same checkpoint disagree, and the runs whose checkpoints now mix
        campaigns.
    """
    collecting = gc.isenabled()
    gc.disable()  # hundreds of thousands of score tuples, none in a cycle: collecting them costs a third of the time
    try:
        history = HistoryOptions.build(wandb_map, wandb_step, wandb_config)
        read = _Reading(overrides or Overrides(), samples, history, dry_run)
        return _ingest(con, paths, read, attributes, attribute_rules, progress)
    finally:
        if collecting:
            gc.enable()


@dataclass(frozen=True)
class _Reading:
    """How every file of one ingest is read."""

    overrides: Overrides
    samples: bool
    history: HistoryOptions
    dry_run: bool = False


def _ingest(
    con: duckdb.DuckDBPyConnection,
    paths: list[str],
    read: _Reading,
    attributes: Mapping[str, Any] | list[str] | None,
    attribute_rules: Sequence[AttributeRule],
    progress: bool,
) -> IngestReport:
    report = IngestReport()
    run_attributes = _RunAttributes(parse_attributes(attributes) if attributes else {}, attribute_rules)
    candidates, searched, errors = discover(paths)
    for error in errors:
        report.files.append(FileOutcome(error.path or "", "rejected", str(error)))

    known = {
        digest: _Known(path, run, evaluation_id, campaign)
        for digest, path, run, evaluation_id, campaign in con.execute(
            sqlfiles.load("ood_store._ingest", "known_files")
        ).fetchall()
    }
    stored_without_campaign = {k.evaluation_id for k in known.values() if k.campaign is None}
    outcomes: dict[int, FileOutcome] = {}
    recognized: set[str] = set()  # arguments that found at least one lm-eval file
    batch = Batch(con, run_attributes, outcomes, dry_run=read.dry_run)
    campaigns_found: dict[int, str] = {}  # for evaluations already present that had none
    present_files: dict[int, Path] = {}  # the results file of each evaluation already present
    with progress_bar(progress, len(candidates), "ingesting") as advance:
        for index, candidate in enumerate(candidates):
            try:
                result = read_one(candidate, read, known)
            except Exception as exc:  # a bug met by one file: that file is rejected, the others go in
                result = _internal_error(str(candidate.path), "reading", exc)
            if isinstance(result, FileOutcome):
                outcomes[index] = result
                if result.campaign is not None and result.evaluation_id in stored_without_campaign:
                    campaigns_found[result.evaluation_id] = result.campaign
                if result.status == "present" and result.evaluation_id is not None:
                    present_files.setdefault(result.evaluation_id, candidate.path)
            else:
                for record in result:
                    known[record.content_hash] = _Known(record.path, record.identity.run, -1, record.campaign)
                batch.add(index, result)
            if not isinstance(result, FileOutcome) or result.status != "skipped":
                recognized.add(candidate.root)
            advance(1, candidate.path.name)
        batch.flush()
    report.files.extend(outcomes[i] for i in sorted(outcomes))
    present = {f.run for f in report.present if f.run} - {f.run for f in report.ingested}
    if not read.dry_run:
        lake.retried(lambda: _update_present(con, sorted(present), run_attributes, campaigns_found))
    if read.samples and not read.dry_run and present_files:
        report.warnings.extend(_documents_of_present(con, present_files))

    matched_nothing = {e.path for e in errors}
    for root in sorted(set(searched) - recognized - matched_nothing):
        report.files.append(
            FileOutcome(
                root, "rejected", f"{root}: no results files found ({formats.KNOWN}){_skipped_in(report, root)}"
            )
        )
    runs = {f.run for f in report.files if f.run}
    report.warnings.extend(
        f"{item.where or item.pattern}: {item.pattern!r} matches no run of these files"
        for item in unmatched(attribute_rules, runs)
    )
    if batch.new_ids:
        report.conflicts = _conflicts(con, batch.new_ids)
        report.campaign_mixes = _campaign_mixes(con, batch.new_ids)
    return report


@dataclass(frozen=True)
class _RunAttributes:
    """What to set on a run: the rules that match it, then the attributes given for every run."""

    fixed: Mapping[str, Any]
    rules: Sequence[AttributeRule]

    def of(self, run: str) -> dict[str, Any]:
        return {**attributes_for(run, self.rules), **self.fixed}

    def for_runs(self, runs: Sequence[str]) -> dict[str, dict[str, Any]]:
        wanted = {run: self.of(run) for run in runs}
        return {run: attrs for run, attrs in wanted.items() if attrs}


class Batch:
    """Validated records waiting to be written, by file, flushed by file count or by the bytes of their samples."""

    MAX_FILES = 1000
    MAX_SAMPLE_BYTES = 1 << 30

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        attributes: _RunAttributes,
        outcomes: dict[int, FileOutcome],
        *,
        dry_run: bool = False,
    ):
        self.con, self.attributes, self.outcomes, self.dry_run = con, attributes, outcomes, dry_run
        self.pending: list[tuple[int, list[EvaluationRecord]]] = []
        self.sample_bytes = 0
        self.new_ids: list[int] = []
        self.formats_at = equivalence.checkpoint_formats(con)  # the source formats of each stored checkpoint

    def add(self, index: int, records: list[EvaluationRecord]) -> None:
        """Queue the records of one file (written together, in one transaction)."""
        self.pending.append((index, records))
        self.sample_bytes += sum(file.size for record in records for file in record.samples)
        if self.dry_run:  # nothing is written: every file is weighed against all the others at the end
            return
        if len(self.pending) >= self.MAX_FILES or self.sample_bytes >= self.MAX_SAMPLE_BYTES:
            self.flush()

    def flush(self) -> None:
        pending, self.pending, self.sample_bytes = self.pending, [], 0
        while pending:
            pending = self._without_equivalents(pending)
            if not pending:
                return
            records = [record for _, file_records in pending for record in file_records]
            if self.dry_run:
                for index, file_records in pending:
                    self.outcomes[index] = _outcome("planned", file_records)
                return
            runs = sorted({record.identity.run for record in records})
            try:
                written = lake.retried(partial(write_batch, self.con, records, self.attributes.for_runs(runs)))
            except StoredMeanwhile as meanwhile:
                pending = self._stored_meanwhile(pending, meanwhile)
                continue
            except BatchRefused as refused:
                file, at = _file_of(pending, refused.position)
                index, file_records = pending[file]
                shown = file_records[0].display_path
                try:
                    outcome = self._refused(pending, file, at, refused.error)
                except Exception as exc:  # a bug met while planning one file's samples again: that file is rejected
                    if is_store_problem(exc):
                        raise
                    outcome = _internal_error(shown, "storing", exc)
                if outcome is not None:
                    self.outcomes[index] = outcome
                    del pending[file]
                continue
            except duckdb.Error as exc:
                if is_store_problem(exc):  # a damaged store or a failed transaction: not this batch's fault
                    raise
                self._isolate(pending, partial(_not_stored, error=first_line(exc)))
                return
            except Exception as exc:  # a bug met by a file of the batch: find it, store the others
                if is_store_problem(exc):
                    raise
                self._isolate(pending, partial(_internal_error, doing="storing", exc=exc))
                return
            self._stored(pending, written)
            return

    def _stored_meanwhile(
        self, pending: list[tuple[int, list[EvaluationRecord]]], meanwhile: StoredMeanwhile
    ) -> list[tuple[int, list[EvaluationRecord]]]:
        """``pending`` less the files another writer stored since this ingest read the store: each is present."""
        out = []
        for index, file_records in pending:
            found = [meanwhile.stored[r.content_hash] for r in file_records if r.content_hash in meanwhile.stored]
            if not found:
                out.append((index, file_records))
                continue
            evaluation_id, path, run, campaign = found[0]
            self.outcomes[index] = FileOutcome(
                file_records[0].display_path,
                "present",
                f"same content as {path} (stored meanwhile by another writer)",
                evaluation_id=evaluation_id,
                run=run,
                campaign=campaign,
            )
        return out

    def _refused(
        self, pending: list[tuple[int, list[EvaluationRecord]]], file: int, at: int, error: Exception
    ) -> FileOutcome | None:
        """The outcome of ``pending[file]``, whose record ``at`` was refused; None when its samples file,
        planned again, lets it be tried again (``pending`` then holds the new plan)."""
        index, file_records = pending[file]
        shown = file_records[0].display_path
        if not isinstance(error, samples_files.Replan):
            return FileOutcome(shown, "rejected", str(error))
        try:
            wider = _replanned(self.con, file_records[at], error)
        except duckdb.Error as exc:  # the reader refuses a line past the one that asked for replanning
            if is_store_problem(exc):
                raise
            return FileOutcome(shown, "rejected", str(samples_files.explain(error.file, exc)))
        if wider is None:
            return FileOutcome(
                shown, "rejected", f"{error.file.path}: its lines list per-sample metrics that cannot be read"
            )
        pending[file] = (index, [*file_records[:at], wider, *file_records[at + 1 :]])
        return None

    def _isolate(
        self, pending: list[tuple[int, list[EvaluationRecord]]], outcome: Callable[[str], FileOutcome]
    ) -> None:
        """A batch failed as a whole: a lone file gets ``outcome`` (of its path), several are written one by one."""
        if len(pending) == 1:
            index, file_records = pending[0]
            self.outcomes[index] = outcome(file_records[0].display_path)
            return
        for item in pending:
            self.pending = [item]
            self.flush()

    def _stored(self, pending: list[tuple[int, list[EvaluationRecord]]], written: list[tuple[int, int]]) -> None:
        done = iter(written)
        for index, file_records in pending:
            stored = [next(done) for _ in file_records]
            self.new_ids.extend(evaluation_id for evaluation_id, _ in stored)
            for record in file_records:
                self.formats_at.setdefault((record.identity.run, record.identity.step), set()).add(record.source_format)
            self.outcomes[index] = _outcome(
                "ingested", file_records, evaluation_id=stored[0][0], samples=sum(rows for _, rows in stored)
            )

    def _without_equivalents(
        self, pending: list[tuple[int, list[EvaluationRecord]]]
    ) -> list[tuple[int, list[EvaluationRecord]]]:
        """``pending`` less the evaluations already held in another format (ood_store._ingest.equivalence):
        a file all of whose evaluations are is present; one with some keeps the others, with a warning."""
        records = [record for _, file_records in pending for record in file_records]
        positions = equivalence.candidates(records, self.formats_at)
        found = equivalence.held(self.con, records, positions) if positions else {}
        if not found:
            return pending
        paths = _stored_paths(self.con, {i for held in found.values() for i in held.evaluation_ids})
        out = []
        position = 0
        for index, file_records in pending:
            keep: list[EvaluationRecord] = []
            reasons: list[str] = []
            for record in file_records:
                held = found.get(position)
                position += 1
                if held is None:
                    keep.append(record)
                    continue
                where = [paths[i] for i in held.evaluation_ids]
                where += [f"{records[p].display_path} ({records[p].source_format})" for p in held.positions]
                more = f" and {n(len(where) - 1, 'other')}" if len(where) > 1 else ""
                step = "" if len(file_records) == 1 else f"step {record.identity.step}: "
                reasons.append(f"{step}the same evaluation as {where[0]}{more}")
            if not reasons:
                out.append((index, file_records))
            elif keep:
                keep[0].warnings.extend(f"{keep[0].display_path}: {reason}: not stored again" for reason in reasons)
                out.append((index, keep))
            else:
                first = file_records[0]
                self.outcomes[index] = FileOutcome(
                    first.display_path,
                    "present",
                    f"{reasons[0]} (it holds every score, read from another format)",
                    run=first.identity.run,
                    evaluations=len(file_records),
                    campaign=first.campaign,
                    detected=first.detected,
                )
        return out


def _outcome(status: Status, file_records: list[EvaluationRecord], **fields: Any) -> FileOutcome:
    """The outcome of a file whose records are (or, in a dry run, would be) written."""
    first = file_records[0]
    return FileOutcome(
        first.display_path,
        status,
        run=first.identity.run,
        step=first.identity.step,
        scores=sum(len(r.scores) for r in file_records),
        samples=fields.pop("samples", sum(0 if r.sample_rows is None else r.sample_rows.height for r in file_records)),
        evaluations=len(file_records),
        campaign=first.campaign,
        non_finite=sum(r.non_finite for r in file_records),
        collapsed=sum(r.collapsed for r in file_records),
        warnings=tuple(w for r in file_records for w in r.warnings),
        detected=first.detected,
        identity_from=first.identity.source,
        evidence=first.identity.evidence,
        campaign_from=first.campaign_from,
        steps=tuple(r.identity.step for r in file_records),
        **fields,
    )


def _skipped_in(report: IngestReport, root: str) -> str:
    """``: it holds ...`` naming the files a folder search skipped there, the first few."""
    skipped = [f for f in report.skipped if f.path.startswith(root.rstrip("/"))]
    if not skipped:
        return ""
    shown = "; ".join(f"{Path(f.path).name}: {f.reason}" for f in skipped[:3])
    more = f"; and {n(len(skipped) - 3, 'other file')}" if len(skipped) > 3 else ""
    return f"; it holds {shown}{more}"


def _stored_paths(con: duckdb.DuckDBPyConnection, ids: set[int]) -> dict[int, str]:
    """``source_path (source_format)`` of stored evaluations, by id."""
    if not ids:
        return {}
    rows = con.execute(sqlfiles.load("ood_store._ingest", "evaluation_sources"), {"ids": sorted(ids)}).fetchall()
    return {evaluation_id: f"{path} ({source_format})" for evaluation_id, path, source_format in rows}


def _file_of(pending: list[tuple[int, list[EvaluationRecord]]], position: int) -> tuple[int, int]:
    """The file of ``pending`` (and the place among its records) of the record at ``position`` of the batch."""
    for file, (_, records) in enumerate(pending):
        if position < len(records):
            return file, position
        position -= len(records)
    raise IndexError(position)


def _replanned(
    con: duckdb.DuckDBPyConnection, record: EvaluationRecord, replan: samples_files.Replan
) -> EvaluationRecord | None:
    """``record`` with the samples file ``replan`` names planned again (None if that changes nothing)."""
    file = replan.file
    if replan.what == "layout":
        again = replace(file, layout="json")
    elif replan.what == "long lines":
        again = replace(file, line_bytes=MAX_SAMPLE_LINE_BYTES)
    else:
        names = samples_files.all_metric_names(con, file)
        if names == file.metric_names:
            return None
        again = replace(file, metric_names=names)
    return replace(record, samples=[again if f is file else f for f in record.samples])


def _not_stored(shown: str, error: str) -> FileOutcome:
    return FileOutcome(shown, "rejected", f"{shown}: could not be stored: {error}")


def _internal_error(shown: str, doing: str, exc: Exception) -> FileOutcome:
    """The outcome of a file that met a bug in ood-store: rejected, with the traceback for ``ingest -v``."""
    reason = f"internal error while {doing} {shown}: {unexpected(exc)}"
    return FileOutcome(shown, "rejected", reason, traceback="".join(traceback.format_exception(exc)))


def read_one(candidate: Candidate, read: _Reading, known: Mapping[str, _Known]) -> FileOutcome | list[EvaluationRecord]:
    """The validated records of one file that are not in the store yet, or its outcome when none will be written."""
    shown = str(candidate.path)
    try:
        return _read_one(candidate, shown, read, known)
    except formats.NotResults as exc:
        if candidate.explicit:
            return FileOutcome(shown, "rejected", f"{shown}: not a results file ood-store reads: {exc.why}")
        return FileOutcome(shown, "skipped", exc.why)
    except InputError as exc:
        detected = getattr(exc, "detected", None)
        return FileOutcome(shown, "rejected", str(exc), detected=None if detected is None else str(detected))


def _read_one(
    candidate: Candidate, shown: str, read: _Reading, known: Mapping[str, _Known]
) -> FileOutcome | list[EvaluationRecord]:
    data = read_regular(candidate.path, shown)
    digest = hashlib.sha256(data).hexdigest()
    if digest in known:
        return _present(candidate, known[digest], read, lambda: _records(candidate, shown, data, digest, read))
    records = _records(candidate, shown, data, digest, read)
    fresh = [r for r in records if r.content_hash not in known]
    if not fresh:  # another file, or an export of an evaluation already here (EEE keeps the content hash)
        outcome = _present(candidate, known[records[0].content_hash], read, lambda: records)
        return replace(outcome, evaluations=len(records), detected=records[0].detected)
    absolute = candidate.path.resolve()
    check_name(absolute, shown)
    for record in fresh:
        record.display_path = shown
        record.path = str(absolute)
        record.campaign, record.campaign_from = _campaign(absolute, record, read.overrides)
    return fresh


def _records(candidate: Candidate, shown: str, data: bytes, digest: str, read: _Reading) -> list[EvaluationRecord]:
    records, detected = formats.read(candidate.path, shown, data, digest, read.overrides, read.history)
    for record in records:
        record.detected = str(detected)
        if read.samples and record.source_format == "lm-eval" and record.recorded is None:
            record.samples = _plan_samples(record, candidate.path)
        if not read.samples:
            record.sample_rows = None
    return records


def _campaign(absolute: Path, record: EvaluationRecord, overrides: Overrides) -> tuple[str | None, str]:
    """The campaign of a record and the rule that gave it (ood_store._ingest.identity's table)."""
    if overrides.campaign is not None:
        return overrides.campaign, "`campaign`"
    if record.campaign_from != "folder":  # the format's own rule (EEE's source, W&B's run)
        return record.campaign, record.campaign_from
    return campaign_of(absolute.parent.parts, record.identity, record.model_name), "folder"


def _present(
    candidate: Candidate, first: _Known, read: _Reading, records: Callable[[], list[EvaluationRecord]]
) -> FileOutcome:
    """A file already in the store; one stored before campaigns were kept gets the one it has now."""
    shown = str(candidate.path)
    stored = first.evaluation_id if first.evaluation_id >= 0 else None
    campaign = first.campaign
    if campaign is None and stored is not None:
        try:
            campaign, _ = _campaign(candidate.path.resolve(), records()[0], read.overrides)
        except (InputError, formats.NotResults):
            campaign = read.overrides.campaign
    return FileOutcome(
        shown, "present", f"same content as {first.path}", evaluation_id=stored, run=first.run, campaign=campaign
    )


def _plan_samples(record: EvaluationRecord, results_path: Path) -> list[samples_files.SamplesFile]:
    files = samples_files.samples_beside(results_path)
    if not files:
        return []
    metrics: dict[str, dict[str, None]] = {}
    for task, _, metric, *_ in record.scores:
        metrics.setdefault(task, {})[metric] = None
    return [
        samples_files.plan(path, record.output_types.get(task), tuple(metrics.get(task, ())))
        for path in files
        for task in [samples_files.task_of(path)]
    ]


def _sql(name: str) -> str:
    return sqlfiles.load("ood_store._ingest", name)


def _documents_of_present(con: duckdb.DuckDBPyConnection, present: Mapping[int, Path]) -> list[str]:
    """Store the documents of evaluations already present whose tasks have none in the store (ingested by an
    ood-store before schema 6), read from the samples files beside their results files; returns warnings for
    files that cannot be read. Only the evaluations' own rows are read to find them, not their samples."""
    found = con.execute(_sql("evaluations_with_samples"), {"evaluation_ids": sorted(present)}).fetchall()
    if not found:
        return []
    documented = {task for (task,) in con.execute(_sql("documented_tasks")).fetchall()}
    files: list[tuple[int, samples_files.SamplesFile]] = []
    warnings = []
    for evaluation_id, stored in found:
        lacking = {samples_files.task_of(Path(path)) for path in stored} - documented
        for path in samples_files.samples_beside(present[evaluation_id]):
            if samples_files.task_of(path) in lacking:
                try:
                    files.append((evaluation_id, samples_files.plan(path, None)))
                except InputError as exc:
                    warnings.append(f"{exc}: its documents are not stored")
    if files:
        try:
            try:
                with transaction(con):
                    samples_files.store_documents(con, files)
            except samples_files.GroupRefused:  # read them again file by file, to name the one at fault
                with transaction(con):
                    samples_files.store_documents(con, files, grouped=False)
        except samples_files.DocumentsRefused as exc:
            warnings.append(f"{exc.error}: the documents of {n(len(files), 'samples file')} are not stored")
        except duckdb.Error as exc:
            if is_store_problem(exc):
                raise
            warnings.append(f"the documents of {n(len(files), 'samples file')} are not stored: {first_line(exc)}")
    return warnings


def _update_present(
    con: duckdb.DuckDBPyConnection, runs: list[str], attributes: _RunAttributes, campaigns: Mapping[int, str]
) -> None:
    """Attributes for the runs of files that were already present, and campaigns they lacked, in one transaction."""
    wanted = attributes.for_runs(runs)
    if not wanted and not campaigns:
        return
    with transaction(con):
        for run, attrs in sorted(wanted.items()):
            set_attributes(con, run, attrs)
        for evaluation_id, campaign in sorted(campaigns.items()):
            con.execute(
                sqlfiles.load("ood_store._ingest", "set_campaign"),
                {"evaluation_id": evaluation_id, "campaign": campaign},
            )


def _conflicts(con: duckdb.DuckDBPyConnection, new_ids: list[int]) -> list[Conflict]:
    rows = con.execute(sqlfiles.load("ood_store._ingest", "conflicts_for"), {"new_ids": new_ids}).fetchall()
    out = []
    for run, step, task, shots, metric, filt, ids, values, paths, campaigns, chosen in rows:
        at = ids.index(chosen)
        out.append(
            Conflict(
                run=run,
                step=step,
                task=task,
                num_fewshot=shots,
                metric=metric,
                filter=filt,
                values=list(zip(values, paths, strict=True)),
                chosen=paths[at],
                campaigns=tuple(campaigns),
                chosen_campaign=campaigns[at],
            )
        )
    return out


def _campaign_mixes(con: duckdb.DuckDBPyConnection, new_ids: list[int]) -> list[CampaignMix]:
    """Runs touched by ``new_ids`` whose checkpoints come from more than one campaign.

    Only checkpoints with a step count: final models evaluated once form no series to mix.
    """
    steps: dict[str, dict[str | None, set[int]]] = {}
    added_to: dict[str, set[str | None]] = {}
    for run, campaign, step, new in con.execute(
        sqlfiles.load("ood_store._ingest", "campaign_steps"), {"new_ids": new_ids}
    ).fetchall():
        if step is None:
            continue
        steps.setdefault(run, {}).setdefault(campaign, set()).add(step)
        if new:
            added_to.setdefault(run, set()).add(campaign)
    mixes = []
    for run, by_campaign in sorted(steps.items()):
        if len(by_campaign) < 2 or not added_to.get(run):
            continue
        names = sorted(by_campaign, key=campaign_order)
        only = []
        for name in names:
            elsewhere = set().union(*(s for c, s in by_campaign.items() if c != name))
            only.append(len(by_campaign[name] - elsewhere))
        mixes.append(
            CampaignMix(
                run,
                tuple((name, len(by_campaign[name])) for name in names),
                tuple(sorted(added_to[run], key=campaign_order)),
                tuple(only),
            )
        )
    return mixes
