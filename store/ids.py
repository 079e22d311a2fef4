"""Evaluation ids, reserved from the store's sequence: for an ingest and for a merge alike."""

from __future__ import annotations

import duckdb

from ood_store import _sqlfiles as sqlfiles


def reserve_evaluation_ids(con: duckdb.DuckDBPyConnection, n: int) -> list[int]:
    """``n`` new evaluation ids, ascending, so that ids follow the order the caller lists its evaluations in."""
    return [row[0] for row in con.execute(sqlfiles.load("ood_store._store", "reserve_ids"), {"n": n}).fetchall()]
