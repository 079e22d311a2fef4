"""Where scores are stored: one DuckDB file, opened and locked here, with saved analyses and run attributes.

:func:`open` gives a :class:`Store`, the Python API over every stage
(ingest, evaluate, query, saved analyses). The schema itself is in
:mod:`ood_store._schema`.
"""

from ood_store._store.api import DB_ENV, DEFAULT_DB, Store, default_path, open
from ood_store._store.transaction import transaction

__all__ = ["DB_ENV", "DEFAULT_DB", "Store", "default_path", "open", "transaction"]
