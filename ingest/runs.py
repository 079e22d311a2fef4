"""Run attributes: the columns of ``runs`` plus free-form key=value pairs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb
import orjson

from ood_store import sqlfiles
from ood_store.connection import fetch_one
from ood_store.errors import InputError

# --attr keys stored in their own column of `runs` (aliases map to a column).
COLUMNS = {
    "base_model": "base_model",
    "family": "family",
    "size": "size",
    "in_domain": "in_domain_task",
    "in_domain_task": "in_domain_task",
    "seed": "seed",
}


def parse_attributes(pairs: list[str] | Mapping[str, Any]) -> dict[str, Any]:
    """``["family=OPT", "seed=1"]`` (or a mapping) as a checked dict; keys are normalised."""
    items = list(pairs.items()) if isinstance(pairs, Mapping) else [_split(p) for p in pairs]
    out: dict[str, Any] = {}
    for key, value in items:
        key = str(key).strip()
        if not key:
            raise InputError("--attr", None, "empty attribute name")
        column = COLUMNS.get(key, key)
        if column == "seed":
            try:
                value = int(value)
            except (TypeError, ValueError):
                raise InputError("--attr", "seed", f"expected an integer, got {value!r}") from None
        out[column] = value
    return out


def set_attributes(con: duckdb.DuckDBPyConnection, run: str, attributes: Mapping[str, Any]) -> None:
    """Apply attributes to an existing run (inside the caller's transaction if any)."""
    attributes = parse_attributes(attributes)
    row = fetch_one(con, "SELECT attributes FROM runs WHERE run = ?", [run])
    if row is None:
        raise InputError(run, None, "no such run in the store")
    extra = orjson.loads(row[0]) if row[0] else {}
    extra.update({k: v for k, v in attributes.items() if k not in COLUMNS.values()})
    con.execute(
        sqlfiles.load("ood_store.ingest", "update_run"),
        {
            "run": run,
            **{column: attributes.get(column) for column in set(COLUMNS.values())},
            "attributes": orjson.dumps(extra).decode(),
        },
    )


def _split(pair: str) -> tuple[str, str]:
    key, sep, value = pair.partition("=")
    if not sep:
        raise InputError("--attr", pair, "expected KEY=VALUE")
    return key, value
