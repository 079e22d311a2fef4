"""Loads the ``.sql`` files that ship inside the package."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def load(package: str, name: str) -> str:
    """The text of ``<package>/<name>.sql``, e.g. ``load("ood_store._store", "list_runs")``."""
    return resources.files(package).joinpath(f"{name}.sql").read_text("utf-8")


def execute(con, sql: str, params: dict | None = None) -> None:
    """Run every statement of ``sql`` in turn, each with the named parameters it uses.

    DuckDB binds parameters only for the last statement of a multi-statement
    string; this lets one ``.sql`` file hold several statements that share them.
    """
    import duckdb

    params = params or {}
    for statement in duckdb.extract_statements(sql):
        con.execute(statement, {name: params[name] for name in statement.named_parameters})


def literal(text: str) -> str:
    """``text`` as an SQL string literal, for the statements that take no parameters in every DuckDB this
    supports (``ATTACH``'s path on DuckDB 1.5, which the lake extra pins).

    >>> print(literal("it's.duckdb"))
    'it''s.duckdb'
    """
    return "'" + text.replace("'", "''") + "'"
