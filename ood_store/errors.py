"""Errors that ood-store reports to its users as one line, without a traceback.

Anything else that escapes is a bug in ood-store and keeps its traceback.
"""

from __future__ import annotations


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (DuckDB's can run to several)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class OodStoreError(Exception):
    """An error caused by the user's input or environment, not by ood-store."""


class StoreError(OodStoreError):
    """The store file cannot be opened or used as asked."""


class StoreLockedError(StoreError):
    """Another process holds the store's write lock."""


class SchemaError(StoreError):
    """The store's schema version is not one this ood-store can use."""


class QueryError(OodStoreError):
    """A query was refused or failed."""


class InputError(OodStoreError):
    """A bad input file; names the file and the field."""

    def __init__(self, path: str, field: str | None, message: str):
        self.path = str(path)
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.path}: {self.field}" if self.field else self.path
        return f"{where}: {self.message}"


class AnalysisError(OodStoreError):
    """An analysis cannot run as asked (unknown task or run, ambiguous series, bad option)."""
