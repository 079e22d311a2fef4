"""Loads the ``.sql`` files that ship inside the package."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def load(package: str, name: str) -> str:
    """The text of ``<package>/<name>.sql``, e.g. ``load("ood_store.queries", "runs")``."""
    return resources.files(package).joinpath(f"{name}.sql").read_text("utf-8")
