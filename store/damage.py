"""A damaged store file, or a failed transaction: the store's fault, told apart from the input's, in one line.

DuckDB raises the same exception classes for a damaged file as for a bad query
(a failed checksum is a bare ``duckdb.Error``), so what is wrong is read off
its message. :func:`store_problem` is used where connections open
(:mod:`ood_store._store.connection`), where the command line maps errors
(:mod:`ood_store._cli`), and by the code that would otherwise blame an input
file or a query for it (ingest, dump, merge, queries).
"""

from __future__ import annotations

import os
import re

import duckdb

from ood_store._errors import StoreDamagedError, StoreError, first_line

#: What to do about a damaged store: the two ways back.
REMEDY = (
    "move it aside, then restore the store from a dump (`ood-store load DIR`) "
    "or rebuild it from the lm-eval files (`ood-store ingest`)"
)

_NOT_RECOGNIZED = "DuckDB does not recognize it as a database"
_MAGIC = b"DUCK"  # bytes 8..12 of every DuckDB database file
# DuckDB's words for a store file it cannot read, and what they mean for the user.
_DAMAGE = (
    ("Corrupt database file", "a checksum fails"),
    ("not a valid DuckDB database file", _NOT_RECOGNIZED),
    ("Could not read enough bytes", "it is shorter than DuckDB expects (truncated?)"),
    ("database has been invalidated", "DuckDB stopped using it after a fatal error"),
)


def what_is_wrong(exc: BaseException) -> str | None:
    """What ``exc`` says is wrong with a store file itself; None when it is about something else.

    >>> what_is_wrong(duckdb.Error("Corrupt database file: computed checksum 1 does not match stored checksum 2"))
    'a checksum fails'
    >>> what_is_wrong(duckdb.CatalogException("Catalog Error: Table with name nope does not exist!")) is None
    True
    """
    if not isinstance(exc, duckdb.Error):
        return None
    text = str(exc)
    for sign, meaning in _DAMAGE:
        if sign in text:
            return meaning
    return None


def damaged(path: str | os.PathLike[str], exc: BaseException) -> StoreDamagedError | None:
    """The one-line error for a damaged store file at ``path``, or None when ``exc`` is not about one.

    A file DuckDB does not recognize is damaged when it starts as a DuckDB file does, or is empty;
    another file (a JSON file given as the store) is no store at all, not a damaged one.
    """
    what = what_is_wrong(exc)
    if what is None:
        return None
    if what == _NOT_RECOGNIZED:
        head = _head(path)
        if head == b"":
            return damaged_file(path, "it is empty (0 bytes)")
        if head is not None and not has_duckdb_magic(head):
            return None
    return damaged_file(path, f"{what} ({first_line(exc)})")


def damaged_file(path: str | os.PathLike[str], what: str) -> StoreDamagedError:
    """The one-line error for the store file at ``path``, damaged as ``what`` says."""
    return StoreDamagedError(f"{path}: the store file is damaged: {what}; {REMEDY}")


def has_duckdb_magic(head: bytes) -> bool:
    """Whether ``head``, a file's first 12 bytes or more, begins as every DuckDB database file does."""
    return head[8:12] == _MAGIC


def _head(path: str | os.PathLike[str]) -> bytes | None:
    try:
        with open(path, "rb") as file:
            return file.read(12)
    except OSError:  # no such file (a message that names two), or unreadable: judged by DuckDB's words alone
        return None


def is_store_problem(exc: BaseException) -> bool:
    """Whether ``exc`` is the store's fault (see :func:`store_problem`), for code that would blame its input."""
    return what_is_wrong(exc) is not None or isinstance(exc, duckdb.TransactionException | duckdb.FatalException)


def store_problem(path: str | os.PathLike[str], exc: BaseException) -> StoreError | None:
    """The error to report for ``exc`` when the store, not an input file or a query, is at fault; else None.

    A damaged file (:func:`damaged`), a transaction DuckDB could not finish or roll back (every later
    statement then fails with "Current transaction is aborted"), or a database DuckDB gave up on.
    """
    if str(path).startswith("ducklake:"):  # a lake: no file to be damaged; the catalog's database may refuse
        return _lake_problem(path, exc)
    found = damaged(path, exc)
    if found is not None:
        return found
    if is_store_problem(exc):
        return StoreError(
            f"{path}: a transaction on the store failed ({first_line(exc)}), so what it was writing was not "
            f"stored; if this happens again, the store file may be damaged: {REMEDY}"
        )
    return None


def _lake_problem(path: str | os.PathLike[str], exc: BaseException) -> StoreError | None:
    """The error for a write a lake's catalog refused or could not finish; None when ``exc`` is about something
    else. The catalog's own words (PostgreSQL's ``ERROR:`` line) are kept, not the statement DuckLake sent."""
    from ood_store._store import lake

    if not is_store_problem(exc):
        return None
    text = str(exc)
    said = re.search(r"ERROR:\s+([^\n]+)", text)
    words = said[1].strip() if said else first_line(exc)
    if lake.is_refused(exc):
        return StoreError(f"{path}: the catalog refused to write ({words}): this role may only read the lake")
    return StoreError(f"{path}: a transaction on the lake failed ({words}), so what it was writing was not stored")
