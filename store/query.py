"""Read-only SQL on a store: one statement, checked before it runs, rows as a Polars DataFrame."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import duckdb
import polars as pl

from ood_store.errors import QueryError

# Statement types a query may run: reads only. (PIVOT parses as MULTI.)
_READ_STATEMENTS = {
    duckdb.StatementType.SELECT,
    duckdb.StatementType.EXPLAIN,
    duckdb.StatementType.MULTI,
}


def read_only(con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, Any] | None = None) -> pl.DataFrame:
    """Run ``sql``, one read-only statement with ``$name`` parameters, on ``con``; anything else is refused."""
    statements = _parse(sql)
    if len(statements) != 1:
        raise QueryError(f"expected one SQL statement, got {len(statements)}")
    kind = statements[0].type
    if kind not in _READ_STATEMENTS:
        raise QueryError(
            f"queries are read-only: {kind.name} statements are not allowed (add data with `ood-store ingest`)"
        )
    return rows(con, sql, params)


def rows(con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, Any] | None = None) -> pl.DataFrame:
    """The rows of ``sql`` (ood-store's own queries, not checked) as a DataFrame; DuckDB errors as QueryError."""
    try:
        relation = con.sql(sql, params=dict(params) if params else None)
        return _as_text_where_polars_cannot(relation).pl()
    except duckdb.Error as exc:
        raise QueryError(_duckdb_message(exc)) from None
    except pl.exceptions.PolarsError as exc:  # a column type Polars cannot import
        raise QueryError(f"cannot turn the result into a DataFrame: {exc}") from None


# DuckDB types (also inside lists and structs) that Polars cannot import, or imports as
# raw bytes (BIT): returned as DuckDB's text for them.
_NOT_IN_POLARS = re.compile(r"\bINTERVAL\b|\bUNION\(|\bTIME WITH TIME ZONE\b|\bBIT\b")


def _as_text_where_polars_cannot(relation: duckdb.DuckDBPyRelation) -> duckdb.DuckDBPyRelation:
    if relation is None:  # a statement without a result
        return relation
    types = [str(t) for t in relation.types]
    if not any(_NOT_IN_POLARS.search(t) for t in types):
        return relation
    columns = []
    for name, kind in zip(relation.columns, types, strict=True):
        quoted = '"' + name.replace('"', '""') + '"'
        columns.append(f"CAST({quoted} AS VARCHAR) AS {quoted}" if _NOT_IN_POLARS.search(kind) else quoted)
    return relation.project(", ".join(columns))


def _parse(sql: str) -> list[Any]:
    try:
        return duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(_duckdb_message(exc)) from None


def _duckdb_message(exc: duckdb.Error) -> str:
    return str(exc).strip()
