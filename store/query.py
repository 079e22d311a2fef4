"""Read-only SQL on a store: one statement, checked before it runs (in a sandbox), rows as a Polars DataFrame."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import duckdb
import polars as pl

from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import QueryError
from ood_store._store.damage import what_is_wrong

# Statement types a query may run: reads only. (PIVOT parses as MULTI.)
_READ_STATEMENTS = {
    duckdb.StatementType.SELECT,
    duckdb.StatementType.EXPLAIN,
    duckdb.StatementType.MULTI,
}
# Query nodes of a SELECT that only read; another (DELETE_QUERY_NODE, INSERT_..., UPDATE_...) writes.
_READING_NODES = {"SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE"}
# Functions that change the store when a SELECT calls them.
_WRITING_FUNCTIONS = {
    "nextval": "advances a sequence",
    "checkpoint": "writes the store file",
    "force_checkpoint": "writes the store file",
}
# Functions that would show how the store was opened: a lake's credentials (its catalog's, its S3 keys').
_PRIVATE_FUNCTIONS = {
    "duckdb_secrets": "would list the credentials the store was opened with",
    "which_secret": "would name the credentials the store was opened with",
}


def read_only(
    con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, Any] | None = None, *, limit: int | None = None
) -> pl.DataFrame:
    """Run ``sql``, one read-only statement with ``$name`` parameters, on ``con``; anything else is refused.

    ``con`` should be a sandbox (:mod:`ood_store._store.sandbox`): DuckDB's settings there are what
    keeps a query from writing or reading other files. The check here refuses, before anything runs
    and with a message that says why, the statements that would write: any statement but a SELECT
    (or EXPLAIN of one, or PIVOT), a SELECT with a data-modifying common table expression, and one
    that calls ``nextval()`` or ``checkpoint()``, and one that lists secrets (``duckdb_secrets()``: a lake's
    credentials). ``limit`` keeps the first rows only (DuckDB stops there).
    """
    check(con, sql)
    return rows(con, sql, params, limit=limit)


def check(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Refuse ``sql`` unless it is one statement that only reads (parsed by DuckDB on ``con``)."""
    statements = _parse(sql)
    if not statements:
        raise QueryError("no SQL statement given")
    if len(statements) != 1:
        raise QueryError(f"expected one SQL statement, got {len(statements)}")
    kind = statements[0].type
    if kind == duckdb.StatementType.EXPLAIN:  # EXPLAIN ANALYZE runs the statement it explains
        sql = _explained(sql)
        inner = _parse(sql)
        if len(inner) != 1 or inner[0].type not in _READ_STATEMENTS - {duckdb.StatementType.EXPLAIN}:
            raise QueryError(
                f"queries are read-only: EXPLAIN of {inner[0].type.name if inner else 'no'} statements "
                "is not allowed (add data with `ood-store ingest`)"
            )
        kind = inner[0].type
    if kind not in _READ_STATEMENTS:
        raise QueryError(
            f"queries are read-only: {kind.name} statements are not allowed (add data with `ood-store ingest`)"
        )
    if kind == duckdb.StatementType.SELECT:
        _check_select(con, sql)


def _explained(sql: str) -> str:
    """The statement that ``EXPLAIN [ANALYZE] [VERBOSE] [(options)] statement`` explains, read off DuckDB's tokens."""
    found = duckdb.tokenize(sql)
    # A token's text ends where the next token, a comment too, starts: comments are then left out.
    ends = [start for start, _ in found[1:]] + [len(sql)]
    tokens = [(s, e, k) for (s, k), e in zip(found, ends, strict=True) if k != duckdb.token_type.comment]
    depth = 0
    for start, end, kind in tokens[1:]:  # tokens[0] is EXPLAIN
        text = sql[start:end].strip()
        if depth:
            depth += text.count("(") - text.count(")") if kind == duckdb.token_type.operator else 0
        elif kind == duckdb.token_type.keyword and text.upper() in ("ANALYZE", "ANALYSE", "VERBOSE"):
            continue
        elif kind == duckdb.token_type.operator and text.startswith("(") and not _one_statement(sql[start:]):
            depth = text.count("(") - text.count(")")  # an option list, not a parenthesised query
        else:
            return sql[start:]
    return ""


def _one_statement(sql: str) -> bool:
    try:
        return len(duckdb.extract_statements(sql)) == 1
    except duckdb.Error:
        return False


def _check_select(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Refuse a SELECT whose parse tree holds a write: a DELETE, INSERT or UPDATE in a CTE, ``nextval()``..."""
    tree = json.loads(rows(con, _sql("serialize_query"), {"sql": sql}).item())
    if tree.get("error"):  # not serializable (a PIVOT inside, say): the sandbox's settings still hold
        return
    for node in _nodes(tree):
        kind = node.get("type")
        if isinstance(kind, str) and kind.endswith("_NODE") and kind not in _READING_NODES:
            what = kind.removesuffix("_NODE").removesuffix("_QUERY")
            raise QueryError(
                f"queries are read-only: {what} statements are not allowed, inside a query either "
                "(add data with `ood-store ingest`)"
            )
        name = node.get("function_name")
        if node.get("class") == "FUNCTION" and isinstance(name, str) and name.lower() in _WRITING_FUNCTIONS:
            raise QueryError(f"queries are read-only: {name.lower()}() {_WRITING_FUNCTIONS[name.lower()]}")
        if node.get("class") == "FUNCTION" and isinstance(name, str) and name.lower() in _PRIVATE_FUNCTIONS:
            raise QueryError(f"queries read the store's data: {name.lower()}() {_PRIVATE_FUNCTIONS[name.lower()]}")


def _nodes(tree: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object in ``tree``, depth first."""
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def rows(
    con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, Any] | None = None, *, limit: int | None = None
) -> pl.DataFrame:
    """The rows of ``sql`` (ood-store's own queries, not checked) as a DataFrame; DuckDB errors as QueryError.

    ``limit``: at most that many rows, the first ones (DuckDB computes no more).
    """
    try:
        relation = con.sql(sql, params=dict(params) if params else None)
        if limit is not None and relation is not None:
            relation = relation.limit(limit)
        return _as_text_where_polars_cannot(relation).pl()
    except duckdb.PermissionException as exc:  # a file outside the store, in the sandbox
        raise QueryError(
            f"{_duckdb_message(exc)}; SQL reads the store, and files only in the folders of `allow_files`"
        ) from None
    except duckdb.Error as exc:
        if what_is_wrong(exc) is not None:  # the store's fault, not the query's: named where the path is known
            raise
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


def _sql(name: str) -> str:
    return sqlfiles.load("ood_store._store", name)


def _duckdb_message(exc: duckdb.Error) -> str:
    """DuckDB's message on one line: its first line, the others (``LINE 1: ...``, a hint) in brackets,
    the ``^^^`` line under the error left out."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip().strip("^")]
    if not lines:
        return type(exc).__name__
    return lines[0] if len(lines) == 1 else f"{lines[0]} ({'; '.join(lines[1:])})"
