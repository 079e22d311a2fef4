"""The equivalence key applied to the records of an ingest: which of them the store (or an earlier record of
another format) already holds. The key itself, and the SQL that applies it, are the store layer's
(:mod:`ood_store._store.equivalence`), which ``merge`` and ``load`` use too.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import polars as pl

from ood_store._ingest.records import EvaluationRecord
from ood_store._store.equivalence import SCHEMA, Checkpoint, Held, checkpoint_formats, held_frame

__all__ = ["Held", "candidates", "checkpoint_formats", "held"]


def candidates(records: Sequence[EvaluationRecord], stored: dict[Checkpoint, set[str]]) -> list[int]:
    """Positions of the records whose checkpoint has evaluations of another format (in the store, or earlier
    among ``records``): the only ones an equivalent can hold."""
    seen = {checkpoint: set(formats) for checkpoint, formats in stored.items()}
    out = []
    for position, record in enumerate(records):
        checkpoint = (record.identity.run, record.identity.step)
        formats = seen.setdefault(checkpoint, set())
        if formats - {record.source_format}:
            out.append(position)
        formats.add(record.source_format)
    return out


def held(
    con: duckdb.DuckDBPyConnection, records: Sequence[EvaluationRecord], positions: Sequence[int]
) -> dict[int, Held]:
    """The records (by position) whose every score is already held, by the store's evaluations or by earlier
    records of another format; see the module for the key. ``positions`` are the candidates."""
    if not positions:
        return {}
    wanted = set(positions)
    # the candidates, and the earlier records they may be held by (those of their checkpoints)
    checkpoints = {(records[p].identity.run, records[p].identity.step) for p in positions}
    rows = [
        (position, record.identity.run, record.identity.step, record.source_format, *score[:4], score[4])
        for position, record in enumerate(records)
        if position in wanted or (record.identity.run, record.identity.step) in checkpoints
        for score in record.scores
    ]
    frame = pl.DataFrame(rows, schema=SCHEMA, orient="row")
    found = held_frame(con, frame)
    return {position: value for position, value in found.items() if position in wanted}
