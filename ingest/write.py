"""Writes validated EvaluationRecords into the store.

Records are written in batches, set-based (a handful of statements per batch,
not per file), each batch in one transaction. A file therefore goes in whole
or not at all. Should a batch fail inside DuckDB, it is rolled back and its
files are retried one per transaction, so that only the culprit is refused.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
import orjson
import polars as pl

from ood_store import __version__, sqlfiles
from ood_store.ingest.records import EvaluationRecord
from ood_store.store.runs import fill_attributes, set_attributes
from ood_store.store.transaction import transaction

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
    # for runs and checkpoints, not stored in evaluations
    "base_model": pl.String,
    "checkpoint_model": pl.String,
    "revision": pl.String,
}


_PROVENANCE_SCHEMA = {"evaluation_id": pl.Int32, "source_format": pl.String, "campaign": pl.String}


def _sql(name: str) -> str:
    return sqlfiles.load("ood_store.ingest", name)


def write_batch(
    con: duckdb.DuckDBPyConnection,
    records: Sequence[EvaluationRecord],
    attributes: Mapping[str, Any] | None = None,
) -> list[int]:
    """Insert the records (evaluations, runs, checkpoints, scores, samples) in one
    transaction; returns their evaluation ids, in order."""
    if not records:
        return []
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    with transaction(con):
        ids = [row[0] for row in con.execute(_sql("reserve_ids"), {"n": len(records)}).fetchall()]
        evaluations = _evaluations_frame(records, ids, now)
        _run(con, "new_evaluations", evaluations, _sql("write_runs"), {"now": now})
        _run(con, "new_evaluations", evaluations, _sql("write_checkpoints"))
        _run(con, "new_evaluations", evaluations, _sql("write_evaluations"))
        provenance = [
            (i, r.source_format, r.campaign)
            for r, i in zip(records, ids, strict=True)
            if r.source_format != "lm-eval" or r.campaign is not None
        ]
        if provenance:  # evaluations.source_format and campaign exist from schema 3 on
            frame = pl.DataFrame(provenance, schema=_PROVENANCE_SCHEMA, orient="row")
            _run(con, "new_provenance", frame, _sql("write_provenance"))
        scores = pl.concat(
            [
                r.scores_frame().with_columns(evaluation_id=pl.lit(i, pl.Int32))
                for r, i in zip(records, ids, strict=True)
            ]
        )
        _run(con, "new_scores", scores, _sql("insert_scores"))
        samples = [
            r.samples.with_columns(evaluation_id=pl.lit(i, pl.Int32))
            for r, i in zip(records, ids, strict=True)
            if r.samples is not None and r.samples.height
        ]
        if samples:
            _run(con, "new_samples", pl.concat(samples), _sql("insert_samples"))
        for record in records:
            if record.run_attributes:
                fill_attributes(con, record.identity.run, record.run_attributes)
        if attributes:
            for run in sorted({r.identity.run for r in records}):
                set_attributes(con, run, attributes)
    return ids


def _evaluations_frame(records: Sequence[EvaluationRecord], ids: list[int], now: dt.datetime) -> pl.DataFrame:
    rows = []
    for record, evaluation_id in zip(records, ids, strict=True):
        ident = record.identity
        rows.append(
            {
                "evaluation_id": evaluation_id,
                "content_hash": record.content_hash,
                "source_path": record.path,
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
                "samples_files": record.samples_files,
                "ingested_at": now,
                "ood_store_version": __version__,
                "base_model": ident.base_model,
                "checkpoint_model": ident.model,
                "revision": ident.revision,
            }
        )
    return pl.DataFrame(rows, schema=_EVALUATION_SCHEMA)


def _run(con: duckdb.DuckDBPyConnection, name: str, frame: pl.DataFrame, sql: str, params: dict | None = None) -> None:
    con.register(name, frame)
    try:
        con.execute(sql, params)
    finally:
        con.unregister(name)


def _json(value: Any) -> str:
    """JSON text for a JSON column (NaN becomes null, as JSON has no NaN)."""
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
