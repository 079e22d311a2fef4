"""Adding another store's results to this one: from a dump folder (:func:`load_dump`) or a store file (:func:`merge`).

The rules, applied in one transaction (all of it goes in, or nothing):

* **Evaluations** are identified by their content hash: one the store already holds is not added
  again, so loading the same dump twice adds nothing the second time. Nor is one the store holds in
  another format (:mod:`ood_store._store.equivalence`: every score held at the same run, step, task,
  shots, metric and filter with the same value, by evaluations of another source format), so a store
  built from EEE's converter output merged with the lm-eval store of the same runs holds each
  evaluation once. New evaluations get new ids; their scores, samples and any other per-evaluation
  rows come with them. The documents of per-sample rows this store does not hold (by task and doc_hash)
  are added, each once.
* **Runs and checkpoints** missing here are added. For a run both stores hold, an attribute only
  the other store has is filled in; one the stores disagree on is a conflict: reported, and this
  store's value kept, unless ``prefer="theirs"`` (take the other's) or ``prefer="ours"`` (keep
  this one's, without complaint). Checkpoints' model and revision are reconciled the same way.
* **Saved analyses** are matched by name: one with the same kind, parameters and rows is already
  present; one that differs is a clash, reported (``prefer="theirs"`` replaces ours with it).
* An evaluation both stores hold but file under different checkpoints is reported, never rewritten.

A store or dump of an older schema version is migrated first, in a staging copy
(:mod:`ood_store._store.staging`); the other store is only ever opened read-only.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb
import orjson
import polars as pl

from ood_store import _schema as schema
from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import InputError, OodStoreError, StoreError, first_line
from ood_store._store import equivalence, lake, migrations
from ood_store._store.connection import fetch_value, guarded
from ood_store._store.damage import damaged
from ood_store._store.dump import dump, quoted, read_manifest
from ood_store._store.ids import reserve_evaluation_ids
from ood_store._store.runs import attributes_of, set_attributes
from ood_store._store.staging import fill_from_dump, fill_from_store, staged
from ood_store._store.transaction import registered, transaction
from ood_store._summary import Presented, Summary

Prefer = Literal["theirs", "ours"]
PREFER: tuple[str, ...] = ("theirs", "ours")


@dataclass(frozen=True)
class MergeConflict:
    """A value the two stores disagree on."""

    kind: str  # 'run', 'checkpoint', 'evaluation' or 'analysis'
    key: str  # the run, 'run@step', the evaluation's content hash, the analysis name
    field: str
    ours: str | None
    theirs: str | None
    resolution: str  # 'kept ours' or 'took theirs'

    def describe(self, source: str) -> str:
        """One line, e.g. ``run r1: seed: 1 here, 2 in other.duckdb; kept ours``."""
        if self.ours is None and self.theirs is None:
            return f"{self.kind} {self.key}: {self.field} differ from {source}'s; {self.resolution}"
        return f"{self.kind} {self.key}: {self.field}: {self.ours} here, {self.theirs} in {source}; {self.resolution}"


@dataclass(repr=False)
class MergeReport(Presented):
    """What a load or merge added, what was there already, and what the stores disagree on."""

    source: str
    prefer: str | None = None
    evaluations_added: int = 0
    evaluations_present: int = 0  # by content hash, or held in another format (``evaluations_equivalent`` of them)
    evaluations_equivalent: int = 0
    scores_added: int = 0
    samples_added: int = 0
    documents_added: int = 0  # documents of per-sample rows (by task and doc_hash) this store did not hold
    runs_added: int = 0
    runs_updated: int = 0
    checkpoints_added: int = 0
    analyses_added: list[str] = field(default_factory=list)
    analyses_present: list[str] = field(default_factory=list)
    analyses_replaced: list[str] = field(default_factory=list)
    conflicts: list[MergeConflict] = field(default_factory=list)

    @property
    def unresolved(self) -> list[MergeConflict]:
        """Conflicts decided by default (this store's value kept) because no preference was given."""
        return [] if self.prefer else self.conflicts

    @property
    def ok(self) -> bool:
        return not self.unresolved

    def summary(self) -> Summary:
        """What was added and present, one row per kind; each conflict as a note (with how it was decided)."""
        rows = [
            ("evaluations", self.evaluations_added, self.evaluations_present),
            ("scores", self.scores_added, None),
            ("samples", self.samples_added, None),
            ("documents", self.documents_added, None),
            ("runs", self.runs_added, None),
            ("checkpoints", self.checkpoints_added, None),
            ("analyses", len(self.analyses_added), len(self.analyses_present)),
        ]
        frame = pl.DataFrame(rows, schema={"what": pl.String, "added": pl.Int64, "present": pl.Int64}, orient="row")
        notes: tuple[str, ...] = ()
        if self.evaluations_equivalent:
            notes += (f"{self.evaluations_equivalent:,} of the evaluations present are held in another format.",)
        if self.runs_updated:
            notes += (f"{self.runs_updated:,} runs' attributes updated.",)
        if self.analyses_replaced:
            notes += (f"Analyses replaced: {', '.join(self.analyses_replaced)}.",)
        notes += tuple(c.describe(self.source) for c in self.conflicts)
        added = f"{self.evaluations_added:,} evaluations added, {self.evaluations_present:,} present"
        conflicts = f", {len(self.conflicts):,} conflicts" if self.conflicts else ""
        return Summary(f"MergeReport: {self.source}: {added}{conflicts}", frame, notes)


def _sql(name: str) -> str:
    return sqlfiles.load("ood_store._store", name)


def _check_prefer(prefer: str | None) -> None:
    if prefer is not None and prefer not in PREFER:
        raise OodStoreError(f"expected one of {', '.join(PREFER)}, got {prefer!r}", parameter="prefer")


def load_dump(
    con: duckdb.DuckDBPyConnection,
    store_path: Path,
    folder: str | os.PathLike[str],
    *,
    prefer: str | None = None,
    progress: bool = False,
) -> MergeReport:
    """Add the dump in ``folder`` (``ood-store dump``) to the store on ``con``; see the module for the rules.

    Parameters
    ----------
    con, store_path
        The target store's connection and file (the staging copy is made beside it).
    folder
        The dump. Its manifest is checked first: every file present, with its sha256 and row count.
    prefer
        ``"theirs"`` or ``"ours"``: how to settle conflicting values (default: keep ours, report them).
    progress
        Show a progress bar over the dump's tables on standard error when it is a terminal.
    """
    _check_prefer(prefer)
    manifest = read_manifest(folder)
    with staged(store_path, manifest.schema_version, fill_from_dump(manifest, progress)) as path:
        return _merge_file(con, path, str(folder), prefer)


def merge(
    con: duckdb.DuckDBPyConnection, store_path: Path, other: str | os.PathLike[str], *, prefer: str | None = None
) -> MergeReport:
    """Add every result of the store ``other`` (a file, opened read-only, or a lake, read at its latest
    snapshot) to the store on ``con``."""
    _check_prefer(prefer)
    if lake.is_lake(other):
        return _merge_lake(con, store_path, lake.parse(other), prefer)
    other = Path(other)
    if not other.is_file():
        raise InputError(other, None, "no such store file")
    if other.resolve() == store_path.resolve():
        raise InputError(other, None, "is the store itself; give another store to merge")
    try:
        version = _attached_version(con, other)
        if version == schema.latest_version():
            try:
                return _merge_attached(con, str(other), prefer)
            finally:
                con.execute(_sql("detach_incoming"))
        con.execute(_sql("detach_incoming"))
        with staged(store_path, version, fill_from_store(other)) as path:
            return _merge_file(con, path, str(other), prefer)
    except duckdb.Error as exc:  # DuckDB does not say which of the two files failed its checksum
        problem = damaged(f"{other} (or the store {store_path})", exc)
        if problem is None:
            raise
        raise problem from None


def _merge_lake(con: duckdb.DuckDBPyConnection, store_path: Path, other: lake.Lake, prefer: str | None) -> MergeReport:
    """A lake merged in: dumped (read-only, at its latest snapshot) to a temporary folder, loaded from there.

    A lake cannot be attached beside a store file without DuckLake's extensions in the store's connection;
    its dump is the same rows, checked by the manifest on the way in.
    """
    from ood_store._store.database import Database

    if str(other) == str(store_path):
        raise InputError(other.shown, None, "is the store itself; give another store to merge")
    with tempfile.TemporaryDirectory(prefix="ood-store-merge-") as tmp:
        folder = Path(tmp) / "dump"
        source = Database(other, read_only=True)
        try:
            dump(source.connection, folder)
        finally:
            source.close()
        report = load_dump(con, store_path, folder, prefer=prefer)
    report.source = other.shown
    return report


def _attached_version(con: duckdb.DuckDBPyConnection, other: Path) -> int:
    """Attach ``other`` as ``ood_store_incoming`` and return its schema version, after checking it is an ood-store."""
    try:
        with guarded(other, exclusive=False):  # DuckDB reads the headers before its lock: not while a writer lets go
            con.execute(_sql("attach_incoming").format(path=sqlfiles.literal(str(other))))
    except duckdb.Error as exc:
        raise damaged(other, exc) or StoreError(f"{other}: cannot open the store to merge: {first_line(exc)}") from None
    try:
        if not fetch_value(con, _sql("incoming_has_version_table")):
            raise StoreError(f"{other}: not an ood-store (no schema_version table)")
        version = int(fetch_value(con, _sql("incoming_version")))
        migrations.check_supported(version, str(other))
    except BaseException:
        con.execute(_sql("detach_incoming"))
        raise
    return version


def _merge_file(con: duckdb.DuckDBPyConnection, path: Path, source: str, prefer: str | None) -> MergeReport:
    with guarded(path, exclusive=False):
        con.execute(_sql("attach_incoming").format(path=sqlfiles.literal(str(path))))
    try:
        return _merge_attached(con, source, prefer)
    finally:
        con.execute(_sql("detach_incoming"))


def _merge_attached(con: duckdb.DuckDBPyConnection, source: str, prefer: str | None) -> MergeReport:
    """Merge the attached store ``ood_store_incoming`` (at the current schema) into the store, in one transaction."""
    if lake.is_lake_connection(con):  # another writer's commit conflicts: the merge is tried again, afresh
        return lake.retried(lambda: _merge_once(con, source, prefer))
    return _merge_once(con, source, prefer)


def _merge_once(con: duckdb.DuckDBPyConnection, source: str, prefer: str | None) -> MergeReport:
    report = MergeReport(source, prefer)
    with transaction(con, {"merged": source}):
        _merge_evaluations(con, report)
        report.documents_added = _count(con.execute(_sql("merge_documents")))
        report.runs_added = _count(con.execute(_sql("merge_new_runs")))
        _merge_runs(con, report)
        report.checkpoints_added = _count(con.execute(_sql("merge_new_checkpoints")))
        _merge_checkpoints(con, report)
        _merge_analyses(con, report)
    return report


def _count(result: duckdb.DuckDBPyConnection) -> int:
    row = result.fetchone()
    return int(row[0]) if row else 0


def _merge_evaluations(con: duckdb.DuckDBPyConnection, report: MergeReport) -> None:
    new = [row[0] for row in con.execute(_sql("merge_new_evaluations")).fetchall()]
    held = _held_in_another_format(con, new)
    report.evaluations_equivalent = len(held)
    new = [evaluation_id for evaluation_id in new if evaluation_id not in held]
    total = int(fetch_value(con, _sql("incoming_evaluations")))
    report.evaluations_present = total - len(new)
    for content_hash, run, step, their_run, their_step in con.execute(_sql("merge_evaluation_identities")).fetchall():
        report.conflicts.append(
            MergeConflict(
                "evaluation", content_hash[:16], "checkpoint", f"{run}@{step}", f"{their_run}@{their_step}", "kept ours"
            )
        )
    if not new:
        return
    ids = reserve_evaluation_ids(con, len(new))
    id_map = pl.DataFrame({"old_id": new, "new_id": ids}, schema={"old_id": pl.Int64, "new_id": pl.Int64})
    with registered(con, "merge_ids", id_map):
        report.evaluations_added = _count(con.execute(_sql("merge_insert_evaluations")))
        for (table,) in con.execute(_sql("merge_per_evaluation_tables")).fetchall():
            added = _count(con.execute(_sql("merge_insert_rows").format(table=quoted(table))))
            if table == "evaluation_scores":
                report.scores_added = added
            elif table == "samples":
                report.samples_added = added


def _held_in_another_format(con: duckdb.DuckDBPyConnection, ids: list[int]) -> set[int]:
    """The incoming evaluations (of ``ids``) whose every score the store holds from another source format."""
    if not ids:
        return set()
    frame = con.sql(_sql("merge_equivalent_candidates"), params={"ids": ids}).pl()
    if frame.is_empty():
        return set()
    return set(equivalence.held_frame(con, frame.cast(equivalence.SCHEMA)))


def reconcile(
    kind: str, key: str, ours: Mapping[str, Any], theirs: Mapping[str, Any], prefer: str | None, report: MergeReport
) -> dict[str, Any]:
    """The values of ``theirs`` to write over ``ours``: those ours lacks, and with ``prefer="theirs"``
    those the two disagree on; each disagreement is added to the report's conflicts."""
    updates: dict[str, Any] = {}
    for name, value in theirs.items():
        mine = ours.get(name)
        if mine is None:
            updates[name] = value
        elif mine != value:
            took = prefer == "theirs"
            report.conflicts.append(
                MergeConflict(kind, key, name, str(mine), str(value), "took theirs" if took else "kept ours")
            )
            if took:
                updates[name] = value
    return updates


def _merge_runs(con: duckdb.DuckDBPyConnection, report: MergeReport) -> None:
    for (run,) in con.execute(_sql("merge_common_runs")).fetchall():
        ours = attributes_of(con, run) or {}
        theirs = attributes_of(con, run, database="incoming") or {}
        updates = reconcile("run", run, ours, theirs, report.prefer, report)
        if updates:
            set_attributes(con, run, updates)
            report.runs_updated += 1


def _merge_checkpoints(con: duckdb.DuckDBPyConnection, report: MergeReport) -> None:
    for run, step, model, revision, their_model, their_revision in con.execute(
        _sql("merge_checkpoint_pairs")
    ).fetchall():
        ours = {"model": model, "revision": revision}
        theirs = {k: v for k, v in {"model": their_model, "revision": their_revision}.items() if v is not None}
        updates = reconcile("checkpoint", f"{run}@{step}", ours, theirs, report.prefer, report)
        if updates:
            values = {**ours, **updates}
            con.execute(_sql("update_checkpoint"), {"run": run, "step": step, **values})


def _merge_analyses(con: duckdb.DuckDBPyConnection, report: MergeReport) -> None:
    for name, exists, same_kind, our_params, their_params, differing in con.execute(_sql("merge_analyses")).fetchall():
        if not exists:
            sqlfiles.execute(con, _sql("merge_insert_analysis"), {"name": name})
            report.analyses_added.append(name)
            continue
        same_params = orjson.loads(our_params) == orjson.loads(their_params)
        if same_kind and same_params and differing == 0:
            report.analyses_present.append(name)
            continue
        what = "parameters" if not (same_kind and same_params) else f"rows ({differing} of them)"
        took = report.prefer == "theirs"
        report.conflicts.append(
            MergeConflict("analysis", name, what, None, None, "took theirs" if took else "kept ours")
        )
        if took:
            sqlfiles.execute(con, _sql("delete_analysis"), {"name": name})
            sqlfiles.execute(con, _sql("merge_insert_analysis"), {"name": name})
            report.analyses_replaced.append(name)
