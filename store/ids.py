"""Evaluation ids, reserved from the store's sequence: for an ingest and for a merge alike."""

from __future__ import annotations

import duckdb

from ood_store import _sqlfiles as sqlfiles


def reserve_evaluation_ids(con: duckdb.DuckDBPyConnection, n: int) -> list[int]:
    """``n`` new evaluation ids, ascending, so that ids follow the order the caller lists its evaluations in.
    On a lake (no sequences) from its ``lake_writes`` row, inside the caller's write transaction."""
    from ood_store._store import lake

    if lake.is_lake_connection(con):
        return lake.reserve_ids(con, n)
    return [row[0] for row in con.execute(sqlfiles.load("ood_store._store", "reserve_ids"), {"n": n}).fetchall()]
