"""The store layer: one DuckDB file, opened, locked, migrated and read here, with dumps, merges,
saved analyses and run attributes.

Every stage works on a :class:`~ood_store._store.database.Database` through :func:`read`,
:func:`connection` and :func:`released`; the public facade over every stage is
:class:`ood_store.Store`. The schema's files are in :mod:`ood_store._schema`.
"""

from ood_store._store.database import Database, connection, damage_named, read, released
from ood_store._store.transaction import transaction

__all__ = ["Database", "connection", "damage_named", "read", "released", "transaction"]
