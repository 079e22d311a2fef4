"""ood-store: a results store for out-of-distribution generalisation studies.

lm-evaluation-harness outputs go in (``Store.ingest``), tidy rows come out of
DuckDB with SQL (``Store.query``).
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

try:
    __version__ = _version("ood-store")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

from ood_store.errors import InputError, OodStoreError, QueryError, StoreError, StoreLockedError
from ood_store.store import Store, default_path, open

__all__ = [
    "InputError",
    "OodStoreError",
    "QueryError",
    "Store",
    "StoreError",
    "StoreLockedError",
    "__version__",
    "default_path",
    "open",
]
