"""Named analyses saved in the store, so that exports and figures can refer to them by name.

An analysis is kept as its rows (a frame) and its parameters (a JSON object); turning them back into
a results object is the analysis layer's business (``PartialCorrelations.from_saved``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import duckdb
import orjson
import polars as pl

from ood_store import __version__
from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import AnalysisError
from ood_store._store.connection import fetch_one, fetch_value
from ood_store._store.lake import retried
from ood_store._store.transaction import registered, transaction

KIND = "partial_correlations"


def _sql(name: str) -> str:
    return sqlfiles.load("ood_store._store", name)


def save(
    con: duckdb.DuckDBPyConnection, name: str, rows: pl.DataFrame, params: dict[str, Any], *, replace: bool = False
) -> None:
    """Save ``rows`` and ``params`` as analysis ``name``, in one transaction."""
    if not name or not name.strip():
        raise AnalysisError("an analysis needs a name", parameter="name")

    def write() -> None:
        with registered(con, "new_rows", rows), transaction(con, {"command": "save analysis", "analysis": name}):
            # read in the transaction that writes: on a lake, another writer may have saved one meanwhile
            exists = fetch_value(con, _sql("analysis_exists"), {"name": name})
            if exists and not replace:
                raise AnalysisError(
                    f"an analysis named {name!r} exists already; pass `replace` to overwrite it", parameter="name"
                )
            values = {
                "name": name,
                "kind": KIND,
                "params": orjson.dumps(params, default=str).decode(),
                "created_at": dt.datetime.now(dt.UTC).replace(tzinfo=None),
                "version": __version__,
            }
            if exists:
                sqlfiles.execute(con, _sql("delete_analysis"), values)
            sqlfiles.execute(con, _sql("save_analysis"), values)

    retried(write)


def read_analysis(con: duckdb.DuckDBPyConnection, name: str) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Saved analysis ``name``: its rows (with its parameters' columns) and its parameters."""
    saved = params(con, name)  # raises when absent
    return con.sql(_sql("load_analysis"), params={"name": name}).pl(), saved


def params(con: duckdb.DuckDBPyConnection, name: str) -> dict[str, Any]:
    """The parameters analysis ``name`` was computed with."""
    row = fetch_one(con, _sql("analysis_params"), {"name": name})
    if row is None:
        raise AnalysisError(f"no saved analysis named {name!r} (see `ood-store analyses`)")
    return orjson.loads(row[0])


def listing(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row per saved analysis, newest first."""
    return con.sql(_sql("list_analyses")).pl()


def drop(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Remove saved analysis ``name`` and its rows."""
    params(con, name)  # raises when absent

    def write() -> None:
        with transaction(con, {"command": "drop analysis", "analysis": name}):
            sqlfiles.execute(con, _sql("delete_analysis"), {"name": name})

    retried(write)
