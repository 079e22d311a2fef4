"""Writes validated EvaluationRecords into the store.

Records are written in batches, set-based (a handful of statements per batch,
not per file, plus one per samples file, which DuckDB streams from disk),
each batch in one transaction. A file therefore goes in whole or not at all.
Should DuckDB refuse a samples file, :class:`BatchRefused` says which record
it belongs to; should a batch fail otherwise, the caller retries its files one
per transaction, so that only the culprit is refused.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
import orjson
import polars as pl

from ood_store import __version__
from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import InputError
from ood_store._ingest import samples as samples_files
from ood_store._ingest.records import SCORE_SCHEMA, EvaluationRecord
from ood_store._store.ids import reserve_evaluation_ids
from ood_store._store.runs import fill_attributes, set_attributes
from ood_store._store.transaction import registered, transaction

_EVALUATION_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "evaluation_id": pl.Int32,
    "content_hash": pl.String,
    "source_path": pl.String,
    "run": pl.String,
    "step": pl.Int64,
    "identity_from": pl.String,
    "model_type": pl.String,
    "model_name": pl.String,
    "model_args": pl.String,
    "format": pl.String,
    "lm_eval_version": pl.String,
    "git_hash": pl.String,
    "date": pl.Datetime("us"),
    "num_fewshot": pl.Int32,
    "sample_limit": pl.Float64,
    "batch_size": pl.String,
    "task_hashes": pl.String,
    "task_versions": pl.String,
    "config": pl.String,
    "samples_files": pl.List(pl.String),
    "ingested_at": pl.Datetime("us"),
    "ood_store_version": pl.String,
    "campaign": pl.String,
    "source_format": pl.String,
    # for runs and checkpoints, not stored in evaluations
    "base_model": pl.String,
    "checkpoint_model": pl.String,
    "revision": pl.String,
}


class StoredMeanwhile(Exception):
    """Files of a batch that another writer stored since this ingest read the store (on a lake, where writers
    on other hosts run at once): their content hashes, each with its stored evaluation's id, path and run."""

    def __init__(self, stored: Mapping[str, tuple[int, str, str, str | None]]):
        super().__init__(f"{len(stored)} files stored meanwhile by another writer")
        self.stored = dict(stored)


class BatchRefused(Exception):
    """The record at ``position`` of a batch cannot be written: ``error`` says why.

    ``error`` is an InputError naming its samples file, or
    :class:`~ood_store._ingest.samples.Replan`.
    """

    def __init__(self, position: int, error: InputError | samples_files.Replan):
        super().__init__(str(error))
        self.position = position
        self.error = error


def _sql(name: str) -> str:
    return sqlfiles.load("ood_store._ingest", name)


def write_batch(
    con: duckdb.DuckDBPyConnection,
    records: Sequence[EvaluationRecord],
    attributes: Mapping[str, Mapping[str, Any]] | None = None,
    grouped: bool = True,
) -> list[tuple[int, int]]:
    """Insert the records (evaluations, runs, checkpoints, scores, samples) in one transaction.

    ``attributes`` maps a run to the attributes to set on it. Returns each
    record's evaluation id and number of sample rows, in order. The samples files
    of the batch go in by groups that DuckDB reads at once (:func:`~ood_store._ingest.samples.groups`),
    and then their documents, in one statement (:func:`~ood_store._ingest.samples.store_documents`);
    when DuckDB refuses a statement of several files, the batch is written again with each file alone
    (``grouped=False``), which names the file at fault.
    """
    if not records:
        return []
    try:
        return _write_batch(con, records, attributes, grouped)
    except samples_files.GroupRefused:
        return _write_batch(con, records, attributes, grouped=False)


def _write_batch(
    con: duckdb.DuckDBPyConnection,
    records: Sequence[EvaluationRecord],
    attributes: Mapping[str, Mapping[str, Any]] | None,
    grouped: bool,
) -> list[tuple[int, int]]:
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    note = {
        "command": "ingest",
        "files": len({record.path for record in records}),
        "evaluations": len(records),
        "runs": sorted({record.identity.run for record in records}),
    }
    with transaction(con, note):
        ids = reserve_evaluation_ids(con, len(records))
        _check_not_stored(con, records)
        evaluations = _evaluations_frame(records, ids, now)
        _run(con, "new_evaluations", evaluations, _sql("write_runs"), {"now": now})
        _run(con, "new_evaluations", evaluations, _sql("write_checkpoints"))
        _run(con, "new_evaluations", evaluations, _sql("write_evaluations"))
        scores = _scores_frame(records, ids)
        _check_unique(scores, records, ids)
        _run(con, "new_scores", scores, _sql("insert_scores"))
        counts = _insert_sample_rows(con, records, ids)
        position_of = {}  # a samples file's record, by the file's evaluation id and task
        files = []
        for position, (record, evaluation_id) in enumerate(zip(records, ids, strict=True)):
            for file in record.samples:
                position_of[evaluation_id, file.task] = position
                files.append((evaluation_id, file))
        for group in samples_files.groups(files) if grouped else [[item] for item in files]:
            try:
                rows = samples_files.insert(con, group)
            except (InputError, samples_files.Replan) as exc:  # of a file alone
                raise BatchRefused(position_of[group[0][0], group[0][1].task], exc) from None
            for (evaluation_id, file), n in zip(group, rows, strict=True):
                counts[position_of[evaluation_id, file.task]] += n
        try:
            samples_files.store_documents(con, files, grouped)
        except samples_files.DocumentsRefused as exc:
            raise BatchRefused(position_of[exc.key], exc.error) from None
        note["rows"] = scores.height + sum(counts)
        for record in records:
            if record.run_attributes:  # what another format's file says of its run, where the run has none
                fill_attributes(con, record.identity.run, record.run_attributes)
        for run, attrs in sorted((attributes or {}).items()):
            set_attributes(con, run, attrs)
    return list(zip(ids, counts, strict=True))


def _check_not_stored(con: duckdb.DuckDBPyConnection, records: Sequence[EvaluationRecord]) -> None:
    """Raise :class:`StoredMeanwhile` for records whose files are in the store already: stored by another
    writer since the ingest read the store (on a lake; on a file store no other writer can have)."""
    hashes = sorted({record.content_hash for record in records})
    found = con.execute(_sql("stored_hashes"), {"hashes": hashes}).fetchall()
    if found:
        raise StoredMeanwhile(
            {digest: (evaluation_id, path, run, campaign) for digest, evaluation_id, path, run, campaign in found}
        )


def _insert_sample_rows(
    con: duckdb.DuckDBPyConnection, records: Sequence[EvaluationRecord], ids: list[int]
) -> list[int]:
    """The per-sample rows the importers read themselves (``EvaluationRecord.sample_rows``), in one insert;
    each record's number of rows."""
    frames = [
        record.sample_rows.with_columns(evaluation_id=pl.lit(evaluation_id, dtype=pl.Int32))
        for record, evaluation_id in zip(records, ids, strict=True)
        if record.sample_rows is not None
    ]
    if frames:
        _run(con, "new_sample_rows", pl.concat(frames), _sql("insert_sample_rows"))
    return [0 if record.sample_rows is None else record.sample_rows.height for record in records]


def _scores_frame(records: Sequence[EvaluationRecord], ids: list[int]) -> pl.DataFrame:
    """Every score of the batch in one frame, each with its evaluation's id (built column by column: faster)."""
    columns = list(zip(*(row for record in records for row in record.scores), strict=True))
    frame = pl.DataFrame(
        [
            pl.Series(name, column, dtype=dtype)
            for (name, dtype), column in zip(SCORE_SCHEMA.items(), columns, strict=True)
        ]
    )
    repeated = [evaluation_id for record, evaluation_id in zip(records, ids, strict=True) for _ in record.scores]
    return frame.with_columns(evaluation_id=pl.Series(repeated, dtype=pl.Int32))


def _check_unique(scores: pl.DataFrame, records: Sequence[EvaluationRecord], ids: list[int]) -> None:
    """(evaluation, task, metric, filter) is the grain of ``evaluation_scores``: a record with one twice is refused."""
    twice = scores.filter(pl.struct(_KEY).is_duplicated())
    if twice.is_empty():
        return
    evaluation_id, task, metric, filt = twice.select(_KEY).row(0)
    position = ids.index(evaluation_id)
    error = InputError(
        records[position].display_path or records[position].path, f"{task}: {metric},{filt}", "appears twice"
    )
    raise BatchRefused(position, error)


_KEY = ("evaluation_id", "task", "metric", "filter")


def _evaluations_frame(records: Sequence[EvaluationRecord], ids: list[int], now: dt.datetime) -> pl.DataFrame:
    rows = []
    for record, evaluation_id in zip(records, ids, strict=True):
        ident = record.identity
        recorded = record.recorded
        rows.append(
            {
                "evaluation_id": evaluation_id,
                "content_hash": record.content_hash,
                "source_path": recorded.source_path if recorded and recorded.source_path else record.path,
                "run": ident.run,
                "step": ident.step,
                "identity_from": ident.source,
                "model_type": record.model_type,
                "model_name": record.model_name,
                "model_args": _json(record.model_args),
                "format": record.format,
                "lm_eval_version": record.lm_eval_version,
                "git_hash": record.git_hash,
                "date": record.date,
                "num_fewshot": record.num_fewshot,
                "sample_limit": record.sample_limit,
                "batch_size": record.batch_size,
                "task_hashes": _json_or_null(record.task_hashes),
                "task_versions": _json_or_null(record.task_versions),
                "config": _json_or_null(record.config),
                "samples_files": list(recorded.samples_files)
                if recorded
                else [str(file.path.resolve()) for file in record.samples],
                "ingested_at": now,
                "ood_store_version": recorded.ood_store_version
                if recorded and recorded.ood_store_version
                else __version__,
                "campaign": record.campaign,
                "source_format": record.source_format,
                "base_model": ident.base_model,
                "checkpoint_model": ident.model,
                "revision": ident.revision,
            }
        )
    return pl.DataFrame(rows, schema=_EVALUATION_SCHEMA)


def _run(con: duckdb.DuckDBPyConnection, name: str, frame: pl.DataFrame, sql: str, params: dict | None = None) -> None:
    with registered(con, name, frame):
        sqlfiles.execute(con, sql, params)


def _json(value: Any) -> str:
    """JSON text for a JSON column (NaN and ±inf become null, as JSON has neither)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
    except TypeError:  # integers beyond 64 bits, which orjson refuses: keep them as numbers
        return orjson.dumps(_wide_ints_as_floats(value), option=orjson.OPT_NON_STR_KEYS, default=str).decode()


def _wide_ints_as_floats(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _wide_ints_as_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_wide_ints_as_floats(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        return float(value)
    return value


def _json_or_null(value: Any) -> str | None:
    return None if value is None else _json(value)
