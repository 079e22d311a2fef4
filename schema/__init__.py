"""The store's schema: versioned ``NNNN_name.sql`` migrations and its views, as files; the store layer
applies them (:mod:`ood_store._store.migrations`).

Migrations hold tables only. The views have one definition each, in
``views.sql``, for the latest version; they are made (again) in the transaction
of the latest migration, so that a new store and one upgraded from any older
version, whose views an earlier ood-store made, end with the same views.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

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
