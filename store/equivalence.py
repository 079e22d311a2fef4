"""One evaluation, one row, however it arrived: the equivalence key, beside the content hash.

The content hash (the sha256 of a file's bytes, or the hash an EEE file of
ood-store's records) recognizes a file ingested again. The same evaluation can
also arrive in another format: an lm-eval results file and EEE's lm-eval
converter's files made from it (one per task), an inspect_ai log and the
converter's file of it. Such an evaluation is recognized by its scores:

    an evaluation is already held when every one of its scores is held, with the
    same value, under the same **run, step, task, metric and filter**, with the
    same **shots** or shots unknown on either side, by evaluations that came from
    **another source format** (``evaluations.source_format``).

It is then not stored again: ``ingest`` reports its file as already present,
naming what holds it, and ``merge``/``load`` count it as present. Equal values
are equal numbers (NaN, stored as NULL, equals NULL): a converter copies them
exactly. Evaluations of one format are never merged this way: two lm-eval runs
of a checkpoint that agree to the last digit are two evaluations (of two
campaigns, say), as before. Evaluations that disagree on a value are not
equivalent: both are stored and the disagreement is a conflict, as for any two
evaluations of a checkpoint.

Shots unknown on one side match any: EEE's lm-eval converter keeps the shots of
generation tasks only, so its other results have none. An evaluation whose scores
are held only in part (it has scores the store lacks) is stored whole.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import polars as pl

from ood_store import _sqlfiles as sqlfiles
from ood_store._store.transaction import registered

Checkpoint = tuple[str, int | None]
#: The frame of candidate scores the SQL reads.
SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "pos": pl.Int64,
    "run": pl.String,
    "step": pl.Int64,
    "source_format": pl.String,
    "task": pl.String,
    "num_fewshot": pl.Int32,
    "metric": pl.String,
    "filter": pl.String,
    "value": pl.Float64,
}


@dataclass(frozen=True)
class Held:
    """What holds every score of an evaluation: evaluations of the store, and earlier candidates."""

    evaluation_ids: tuple[int, ...]
    positions: tuple[int, ...]


def checkpoint_formats(con: duckdb.DuckDBPyConnection) -> dict[Checkpoint, set[str]]:
    """The source formats of the evaluations of each checkpoint in the store."""
    found: dict[Checkpoint, set[str]] = {}
    for run, step, source_format in con.execute(sqlfiles.load("ood_store._store", "checkpoint_formats")).fetchall():
        found.setdefault((run, step), set()).add(source_format)
    return found


def held_frame(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame) -> dict[int, Held]:
    """The positions of ``frame`` (scores in :data:`SCHEMA`) whose every score is already held (see the module);
    ingest builds the frame from its records (:func:`ood_store._ingest.equivalence.held`), ``merge`` from the
    other store."""
    with registered(con, "candidate_scores", frame):
        result = con.execute(sqlfiles.load("ood_store._store", "equivalent_evaluations")).fetchall()
    return {pos: Held(tuple(ids), tuple(positions)) for pos, ids, positions in result}
