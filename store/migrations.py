"""Bringing a store to the schema's latest version: the migrations of :mod:`ood_store._schema`, applied in order.

Each migration runs in one transaction together with its row in ``schema_version``; a store is either
at a version or at the one before it. The views, made for the latest version only, come with the
latest migration's transaction.
"""

from __future__ import annotations

import datetime as _dt

import duckdb

from ood_store import _schema as schema
from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import SchemaError
from ood_store._store.connection import fetch_value
from ood_store._store.transaction import transaction

_SCHEMA = "ood_store._schema"


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    """The version a store is at; 0 for an empty database."""
    has_table = fetch_value(con, sqlfiles.load(_SCHEMA, "has_version_table"))
    if not has_table:
        return 0
    return int(fetch_value(con, sqlfiles.load(_SCHEMA, "version")))


def check_supported(version: int, where: str) -> None:
    if version > schema.latest_version():
        from ood_store import __version__

        raise SchemaError(
            f"{where}: the store has schema version {version}, but ood-store {__version__} "
            f"understands versions up to {schema.latest_version()}; upgrade ood-store to open it"
        )


def migrate(con: duckdb.DuckDBPyConnection, where: str, upto: int | None = None) -> list[int]:
    """Bring a store up to the latest schema (or to version ``upto``); returns the versions applied.

    A store brought to an older version (``upto``, for staging an older dump) has its tables only:
    the views are those of the latest version and come with its migration.
    """
    version = current_version(con)
    check_supported(version, where)
    latest = schema.latest_version()
    applied = []
    for migration in schema.migrations():
        if migration.version <= version or (upto is not None and migration.version > upto):
            continue
        with transaction(con):
            con.execute(migration.sql)
            if migration.version == latest:
                con.execute(sqlfiles.load(_SCHEMA, "views"))
            con.execute(
                sqlfiles.load(_SCHEMA, "record_migration"),
                {"version": migration.version, "name": migration.name, "applied_at": _utcnow()},
            )
        applied.append(migration.version)
    return applied


def _utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC).replace(tzinfo=None)
