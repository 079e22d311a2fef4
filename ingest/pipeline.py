"""The ingestion layer: lm-eval output files in, tidy rows in the store out.

:func:`ingest` finds the files, then for each one in turn reads it into an
outcome (already present, skipped, rejected with the reason) or a validated
record (:func:`read_one`); records are written in batches (:class:`Batch`),
each in one transaction: a file goes in whole or not at all.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb

from ood_store import sqlfiles
from ood_store.errors import InputError, first_line
from ood_store.ingest import jsontext
from ood_store.ingest import samples as samples_files
from ood_store.ingest.discover import Candidate, discover
from ood_store.ingest.identity import Overrides, campaign_of
from ood_store.ingest.lmeval import NotLmEval, parse_results
from ood_store.ingest.records import EvaluationRecord
from ood_store.ingest.report import CampaignMix, Conflict, FileOutcome, IngestReport, campaign_order
from ood_store.ingest.write import BatchRefused, write_batch
from ood_store.progress import progress_bar
from ood_store.store.attribute_rules import AttributeRule, attributes_for, unmatched
from ood_store.store.runs import parse_attributes, set_attributes
from ood_store.store.transaction import transaction

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
) -> IngestReport:
    """Ingest lm-eval results files, folders (recursive) and globs into the store on ``con``.

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
        Attributes by run name or glob (:func:`~ood_store.store.attribute_rules.read_attribute_file`),
        set on the runs of the files they match; ``attributes`` win over them.
    samples
        Also ingest the ``samples_<task>_<ts>.jsonl`` files beside each results file.
    progress
        Show a progress bar on standard error when it is a terminal.

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
        return _ingest(con, paths, overrides or Overrides(), attributes, attribute_rules, samples, progress)
    finally:
        if collecting:
            gc.enable()


def _ingest(
    con: duckdb.DuckDBPyConnection,
    paths: list[str],
    overrides: Overrides,
    attributes: Mapping[str, Any] | list[str] | None,
    attribute_rules: Sequence[AttributeRule],
    samples: bool,
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
            sqlfiles.load("ood_store.ingest", "known_files")
        ).fetchall()
    }
    stored_without_campaign = {k.evaluation_id for k in known.values() if k.campaign is None}
    outcomes: dict[int, FileOutcome] = {}
    recognised: set[str] = set()  # arguments that found at least one lm-eval file
    batch = Batch(con, run_attributes, outcomes)
    campaigns_found: dict[int, str] = {}  # for evaluations already present that had none
    with progress_bar(progress, len(candidates), "ingesting") as advance:
        for index, candidate in enumerate(candidates):
            result = read_one(candidate, overrides, samples, known)
            if isinstance(result, FileOutcome):
                outcomes[index] = result
                if result.campaign is not None and result.evaluation_id in stored_without_campaign:
                    campaigns_found[result.evaluation_id] = result.campaign
            else:
                known[result.content_hash] = _Known(result.path, result.identity.run, -1, result.campaign)
                batch.add(index, result)
            if not isinstance(result, FileOutcome) or result.status != "skipped":
                recognised.add(candidate.root)
            advance(1, candidate.path.name)
        batch.flush()
    report.files.extend(outcomes[i] for i in sorted(outcomes))
    present = {f.run for f in report.present if f.run} - {f.run for f in report.ingested}
    _update_present(con, sorted(present), run_attributes, campaigns_found)

    matched_nothing = {e.path for e in errors}
    for root in sorted(set(searched) - recognised - matched_nothing):
        report.files.append(FileOutcome(root, "rejected", f"{root}: no lm-eval results files found"))
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
    """Validated records waiting to be written, flushed by file count or by the bytes of their samples."""

    MAX_FILES = 1000
    MAX_SAMPLE_BYTES = 1 << 30

    def __init__(self, con: duckdb.DuckDBPyConnection, attributes: _RunAttributes, outcomes: dict[int, FileOutcome]):
        self.con, self.attributes, self.outcomes = con, attributes, outcomes
        self.pending: list[tuple[int, EvaluationRecord]] = []
        self.sample_bytes = 0
        self.new_ids: list[int] = []

    def add(self, index: int, record: EvaluationRecord) -> None:
        self.pending.append((index, record))
        self.sample_bytes += sum(file.size for file in record.samples)
        if len(self.pending) >= self.MAX_FILES or self.sample_bytes >= self.MAX_SAMPLE_BYTES:
            self.flush()

    def flush(self) -> None:
        pending, self.pending, self.sample_bytes = self.pending, [], 0
        while pending:
            records = [record for _, record in pending]
            runs = sorted({record.identity.run for record in records})
            try:
                written = write_batch(self.con, records, self.attributes.for_runs(runs))
            except BatchRefused as refused:
                index, record = pending[refused.position]
                if isinstance(refused.error, samples_files.Replan):
                    wider = _replanned(self.con, record, refused.error)
                    if wider is not None:
                        pending[refused.position] = (index, wider)
                        continue
                    path = refused.error.file.path
                    self._reject(index, record, f"{path}: its lines list per-sample metrics that cannot be read")
                    del pending[refused.position]
                else:
                    self._reject(index, record, str(refused.error))
                    del pending[refused.position]
                continue
            except duckdb.Error as exc:
                if len(pending) == 1:
                    index, record = pending[0]
                    self._reject(index, record, f"{record.display_path}: could not be stored: {first_line(exc)}")
                    return
                for item in pending:  # isolate the file that DuckDB refused
                    self.pending = [item]
                    self.flush()
                return
            for (index, record), (evaluation_id, sample_rows) in zip(pending, written, strict=True):
                self.new_ids.append(evaluation_id)
                self.outcomes[index] = FileOutcome(
                    record.display_path,
                    "ingested",
                    evaluation_id=evaluation_id,
                    run=record.identity.run,
                    step=record.identity.step,
                    scores=len(record.scores),
                    samples=sample_rows,
                    campaign=record.campaign,
                    non_finite=record.non_finite,
                    warnings=tuple(record.warnings),
                )
            return

    def _reject(self, index: int, record: EvaluationRecord, reason: str) -> None:
        self.outcomes[index] = FileOutcome(record.display_path, "rejected", reason)


def _replanned(
    con: duckdb.DuckDBPyConnection, record: EvaluationRecord, replan: samples_files.Replan
) -> EvaluationRecord | None:
    """``record`` with the samples file ``replan`` names planned again (None if that changes nothing)."""
    file = replan.file
    if replan.what == "layout":
        again = replace(file, layout="json")
    else:
        names = samples_files.all_metric_names(con, file)
        if names == file.metric_names:
            return None
        again = replace(file, metric_names=names)
    return replace(record, samples=[again if f is file else f for f in record.samples])


def read_one(
    candidate: Candidate,
    overrides: Overrides,
    with_samples: bool,
    known: Mapping[str, _Known],
) -> FileOutcome | EvaluationRecord:
    """A validated record for one file, or its outcome when it will not be written."""
    shown = str(candidate.path)
    try:
        data = candidate.path.read_bytes()
    except OSError as exc:
        return FileOutcome(shown, "rejected", f"{shown}: cannot read: {exc.strerror}")
    digest = hashlib.sha256(data).hexdigest()
    if digest in known:
        first = known[digest]
        stored = first.evaluation_id if first.evaluation_id >= 0 else None
        campaign = first.campaign
        if campaign is None and stored is not None:  # stored before campaigns were kept: the one it has now
            campaign = overrides.campaign or _campaign_of_data(candidate, data, overrides)
        return FileOutcome(
            shown, "present", f"same content as {first.path}", evaluation_id=stored, run=first.run, campaign=campaign
        )
    try:
        record = parse_results(shown, digest, jsontext.loads(shown, None, data), overrides)
        if with_samples:
            record.samples = _plan_samples(record, candidate.path)
    except NotLmEval:
        if candidate.explicit:
            return FileOutcome(
                shown, "rejected", f"{shown}: not an lm-eval results file (no top-level 'results' object)"
            )
        return FileOutcome(shown, "skipped", "not an lm-eval results file")
    except InputError as exc:
        return FileOutcome(shown, "rejected", str(exc))
    record.display_path = shown
    absolute = candidate.path.resolve()
    record.path = str(absolute)
    record.campaign = overrides.campaign or campaign_of(absolute.parent.parts, record.identity, record.model_name)
    return record


def _campaign_of_data(candidate: Candidate, data: bytes, overrides: Overrides) -> str | None:
    shown = str(candidate.path)
    try:
        record = parse_results(shown, "", jsontext.loads(shown, None, data), overrides)
    except (InputError, NotLmEval):
        return None
    return campaign_of(candidate.path.resolve().parent.parts, record.identity, record.model_name)


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
                sqlfiles.load("ood_store.ingest", "set_campaign"),
                {"evaluation_id": evaluation_id, "campaign": campaign},
            )


def _conflicts(con: duckdb.DuckDBPyConnection, new_ids: list[int]) -> list[Conflict]:
    rows = con.execute(sqlfiles.load("ood_store.ingest", "conflicts_for"), {"new_ids": new_ids}).fetchall()
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
        sqlfiles.load("ood_store.ingest", "campaign_steps"), {"new_ids": new_ids}
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
