"""ood-store: a results store for out-of-distribution generalisation studies.

lm-evaluation-harness outputs go in (``Store.ingest``), tidy rows come out of
DuckDB with SQL (``Store.query``). The package follows the data:
:mod:`ood_store._finetune` (finetune the runs) → :mod:`ood_store._evaluate` (run
lm-eval) → :mod:`ood_store._ingest` (files in) → :mod:`ood_store._store` and
:mod:`ood_store._schema` (the DuckDB file) → :mod:`ood_store._analysis`
(statistics) → :mod:`ood_store._export` (tables and figures for papers);
:mod:`ood_store._cli` is the command line over them.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version
from typing import TYPE_CHECKING, Any

try:
    __version__ = _version("ood-store")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

from ood_store._errors import InputError, OodStoreError, QueryError, StoreDamagedError, StoreError, StoreLockedError

if TYPE_CHECKING:
    from ood_store._finetune.runner import finetune
    from ood_store._store import Store, default_path, open

_FROM_STORE = ("Store", "default_path", "open")


def __getattr__(name: str) -> Any:
    # The store (DuckDB, Polars) loads on first use, so that light modules such as the
    # suite's lm-eval hooks (ood_store._evaluate.suite.labels) import nothing heavy.
    if name in _FROM_STORE:
        from ood_store import _store as store

        return getattr(store, name)
    if name == "finetune":  # the first stage of a study: checkpoints for evaluate (needs the finetune extra)
        from ood_store._finetune.runner import finetune

        return finetune
    raise AttributeError(f"module 'ood_store' has no attribute {name!r}")


__all__ = [
    "InputError",
    "OodStoreError",
    "QueryError",
    "Store",
    "StoreDamagedError",
    "StoreError",
    "StoreLockedError",
    "__version__",
    "default_path",
    "finetune",
    "open",
]
