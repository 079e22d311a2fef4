"""The store's schema: versioned ``NNNN_name.sql`` migrations, applied in order, and its views.

Each migration runs in one transaction together with its row in
``schema_version``; a store is either at a version or at the one before it.
Migrations hold tables only. The views have one definition each, in
``views.sql``, for the latest version; they are made (again) in the transaction
of the latest migration, so that a new store and one upgraded from any older
version, whose views an earlier ood-store made, end with the same views.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

import duckdb

from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import SchemaError
from ood_store._store.connection import fetch_value
from ood_store._store.transaction import transaction

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


@cache
def migrations() -> tuple[Migration, ...]:
    """All migrations shipped with this version of ood-store, in order."""
    found = []
    for entry in resources.files(__name__).iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"schema migrations are not numbered 1..n: {versions}")
    return tuple(found)


def latest_version() -> int:
    return migrations()[-1].version


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    """The version a store is at; 0 for an empty database."""
    has_table = fetch_value(con, sqlfiles.load(__name__, "has_version_table"))
    if not has_table:
        return 0
    return int(fetch_value(con, sqlfiles.load(__name__, "version")))


def check_supported(version: int, where: str) -> None:
    if version > latest_version():
        from ood_store import __version__

        raise SchemaError(
            f"{where}: the store has schema version {version}, but ood-store {__version__} "
            f"understands versions up to {latest_version()}; upgrade ood-store to open it"
        )


def migrate(con: duckdb.DuckDBPyConnection, where: str, upto: int | None = None) -> list[int]:
    """Bring a store up to the latest schema (or to version ``upto``); returns the versions applied.

    A store brought to an older version (``upto``, for staging an older dump) has its tables only:
    the views are those of the latest version and come with its migration.
    """
    version = current_version(con)
    check_supported(version, where)
    latest = latest_version()
    applied = []
    for migration in migrations():
        if migration.version <= version or (upto is not None and migration.version > upto):
            continue
        with transaction(con):
            con.execute(migration.sql)
            if migration.version == latest:
                con.execute(sqlfiles.load(__name__, "views"))
            con.execute(
                sqlfiles.load(__name__, "record_migration"),
                {"version": migration.version, "name": migration.name, "applied_at": _utcnow()},
            )
        applied.append(migration.version)
    return applied


def _utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC).replace(tzinfo=None)
