"""Run attributes: the columns of ``runs`` plus free-form key=value pairs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import orjson
import polars as pl

from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import AnalysisError, InputError, first_line

if TYPE_CHECKING:
    from ood_store._store import Database
from ood_store._store.connection import fetch_one
from ood_store._store.database import read

#: Run attributes stored in a column of ``runs`` of their own, by every name they go by;
#: any other name is a key of the ``attributes`` JSON.
COLUMNS = {
    "base_model": "base_model",
    "model": "base_model",
    "family": "family",
    "size": "size",
    "in_domain": "in_domain_task",
    "in_domain_task": "in_domain_task",
    "seed": "seed",
}


def parse_attributes(pairs: list[str] | Mapping[str, Any]) -> dict[str, Any]:
    """``["family=OPT", "seed=1"]`` (or a mapping) as a checked dict; keys are normalized."""
    items = list(pairs.items()) if isinstance(pairs, Mapping) else [_split(p) for p in pairs]
    out: dict[str, Any] = {}
    for key, value in items:
        key = str(key).strip()
        if not key:
            raise InputError(None, None, "empty attribute name", parameter="attributes")
        column = COLUMNS.get(key, key)
        if column == "seed":
            try:
                value = int(value)
            except (TypeError, ValueError):
                raise InputError(None, "seed", f"expected an integer, got {value!r}", parameter="attributes") from None
        out[column] = value
    return out


def set_attributes(con: duckdb.DuckDBPyConnection, run: str, attributes: Mapping[str, Any]) -> None:
    """Apply attributes to an existing run (inside the caller's transaction if any)."""
    attributes = parse_attributes(attributes)
    row = fetch_one(con, sqlfiles.load("ood_store._store", "attributes_of_run"), {"run": run})
    if row is None:
        raise InputError(run, None, "no such run in the store")
    extra = orjson.loads(row[0]) if row[0] else {}
    extra.update({k: v for k, v in attributes.items() if k not in COLUMNS.values()})
    con.execute(
        sqlfiles.load("ood_store._store", "update_run"),
        {
            "run": run,
            **{column: attributes.get(column) for column in set(COLUMNS.values())},
            "attributes": orjson.dumps(extra).decode(),
        },
    )


#: The columns of ``runs`` that hold attributes, in the order run_values.sql reads them.
_ATTRIBUTE_COLUMNS = ("base_model", "family", "size", "in_domain_task", "seed")


def attributes_of(con: duckdb.DuckDBPyConnection, run: str, *, database: str = "main") -> dict[str, Any] | None:
    """Every attribute run ``run`` has (its columns and free-form keys, none of them null); None without the run.

    ``database="incoming"`` reads the store attached for a merge (:mod:`ood_store._store.merge`).
    """
    query = "incoming_run_values" if database == "incoming" else "run_values"
    row = fetch_one(con, sqlfiles.load("ood_store._store", query), {"run": run})
    if row is None:
        return None
    values = {name: value for name, value in zip(_ATTRIBUTE_COLUMNS, row[:-1], strict=True) if value is not None}
    values.update({k: v for k, v in (orjson.loads(row[-1]) if row[-1] else {}).items() if v is not None})
    return values


def fill_attributes(con: duckdb.DuckDBPyConnection, run: str, attributes: Mapping[str, Any]) -> None:
    """Set the attributes that run ``run`` does not have yet; those it has keep their values."""
    current = attributes_of(con, run) or {}
    missing = {k: v for k, v in parse_attributes(attributes).items() if current.get(k) is None and v is not None}
    if missing:
        set_attributes(con, run, missing)


def _split(pair: str) -> tuple[str, str]:
    key, sep, value = pair.partition("=")
    if not sep:
        raise InputError(None, pair, "expected KEY=VALUE", parameter="attributes")
    return key, value


#: Tables of a run file that other readers own: ``[suite]``, the ood_nli prompt variant
#: (:func:`ood_store._evaluate.suite.variant.from_run_file`).
OTHER_TABLES = ("suite",)


def read_run_file(path: str | Path) -> tuple[str | None, dict[str, Any]]:
    """A run file (TOML, or YAML for ``.yaml``/``.yml``): the run name (key ``run``, if any) and its attributes.

    Every other top-level key is an attribute, e.g. ``family = "OPT"``, ``seed = 1``;
    an ``[attributes]`` table is read the same way. Values must be scalars. The
    tables in :data:`OTHER_TABLES` are left to their own readers.
    """
    data = {k: v for k, v in load_run_file(path).items() if k not in OTHER_TABLES}
    nested = data.pop("attributes", None) or {}
    if not isinstance(nested, dict):
        raise InputError(str(path), "attributes", "expected a table of key = value pairs")
    run = data.pop("run", None)
    if run is not None and not (isinstance(run, str) and run.strip()):
        raise InputError(str(path), "run", "expected a non-empty string")
    try:
        return run, scalar_attributes({**data, **nested})
    except InputError as exc:
        raise InputError(str(path), exc.field, exc.message) from None


def load_run_file(path: str | Path, what: str = "run file") -> dict[str, Any]:
    """A run file's (or, ``what`` says, another file's) top-level table, parsed (TOML, or YAML for
    ``.yaml``/``.yml``); one-line errors."""
    path = Path(path)
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise InputError(str(path), None, f"cannot read the {what}: {reason}") from None
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            import tomllib

            data = tomllib.loads(text)
    except Exception as exc:  # TOMLDecodeError, YAMLError: both name the line
        raise InputError(str(path), None, f"not a valid {what}: {first_line(exc)}") from None
    if not isinstance(data, dict):
        raise InputError(str(path), None, "expected a table of key = value pairs")
    return dict(data)


def scalar_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes read from a file: scalar values only, checked and normalized by :func:`parse_attributes`."""
    for key, value in attributes.items():
        if not isinstance(value, str | int | float | bool):
            raise InputError(None, str(key), f"expected a string, number or boolean, got {type(value).__name__}")
    return parse_attributes(attributes)


def run_attributes(store: Database, names: Sequence[str], parameter: str = "by") -> pl.DataFrame:
    """One row per run with one text column per attribute in ``names`` (null where a run lacks it).

    Names are the ``runs`` columns (``family``, ``size``, ``in_domain_task``
    or ``in_domain``, ``seed``, ``base_model``) or keys of its ``attributes``.
    An attribute that no run has is an error about ``parameter``.
    """
    frame = attribute_columns(store, names)
    unknown = [name for name in names if frame[name].is_null().all()]
    if unknown:
        raise AnalysisError(
            f"no run has attribute {', '.join(map(repr, unknown))} (set run attributes with `attributes` at ingest)",
            parameter=parameter,
        )
    return frame


def attribute_columns(store: Database, names: Sequence[str]) -> pl.DataFrame:
    """Like :func:`run_attributes`, but an attribute that no run has is a column of nulls."""
    runs = read(store, sqlfiles.load("ood_store._store", "run_attributes"))
    columns = []
    for name in names:
        column = COLUMNS.get(name, name)
        if column in COLUMNS.values():
            columns.append(pl.col(column).cast(pl.String).alias(name))
        else:
            path = "$." + column if column.isidentifier() else f'$["{column}"]'
            columns.append(pl.col("attributes").str.json_path_match(path).alias(name))
    return runs.select("run", *columns)
