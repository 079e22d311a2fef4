"""Bringing a store to the schema's latest version: the migrations of :mod:`ood_store._schema`, applied in order.

All the migrations a store needs run in one transaction, each with its row in ``schema_version``, and
the views (made for the latest version only) with them: a store is either at the version it had or at
the latest, never in between, whenever the process is stopped. A new store is made the same way in a
file of its own and appears whole (:mod:`ood_store._store.birth`).
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
    latest = schema.latest_version()
    with transaction(con):
        # The version is read inside the transaction that migrates: two processes cannot both apply it.
        version = current_version(con)
        check_supported(version, where)
        pending = [m for m in schema.migrations() if version < m.version and (upto is None or m.version <= upto)]
        for migration in pending:
            con.execute(migration.sql)
            if migration.version == latest:
                con.execute(sqlfiles.load(_SCHEMA, "views"))
            con.execute(
                sqlfiles.load(_SCHEMA, "record_migration"),
                {"version": migration.version, "name": migration.name, "applied_at": _utcnow()},
            )
    return [m.version for m in pending]


def _utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC).replace(tzinfo=None)
