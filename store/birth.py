"""A new store file appears whole: made aside, in a file of its own beside it, then linked into place.

DuckDB creates a database file as soon as it is opened and lays the schema out afterwards, so a
store made in place could be seen half-made (empty, or without the views of the last migration) by
another process, or left so by a process killed meanwhile. :func:`create` makes the store in
``.<name>.creating.<host>.<pid>.<token>`` in the same folder, with every migration in one
transaction, checkpoints it (no write-ahead log is left beside it), flushes it to disk, and links it to
the store's path, which succeeds only while no file is there: of processes creating one store at
once, the first to finish wins, and the others open its store. A file left aside by a process that was
killed is removed by the next one to open the store for writing on this machine. A store removed because the
command that made it stored nothing (:func:`discard`) is moved aside before it is let go.
"""

from __future__ import annotations

import os
import secrets
from contextlib import suppress
from pathlib import Path

import duckdb

from ood_store._errors import StoreError, first_line
from ood_store._processes import alive, this_host
from ood_store._store import migrations
from ood_store._store.connection import guarded

_INFIX = ".creating."


def create(path: Path) -> list[int] | None:
    """Make the store at ``path``, unless another process makes it first: the migrations applied to this
    process's store, linked there, or None when another process's store is there."""
    remove_leftovers(path)
    aside = _aside(path)
    try:
        try:
            con = duckdb.connect(str(aside))
            try:
                applied = migrations.migrate(con, str(path))
                con.execute("CHECKPOINT")
            finally:
                con.close()
            _flush(aside)
        except duckdb.Error as exc:
            raise StoreError(f"{path}: cannot create the store: {first_line(exc)}") from None
        except OSError as exc:
            raise StoreError(f"{path}: cannot create the store: {exc.strerror}") from None
        return applied if _link(aside, path) else None
    finally:
        _remove(aside)


def discard(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Remove the store at ``path``, which ``con`` holds (and which holds nothing), and close ``con``.

    The file is moved aside while ``con`` still holds DuckDB's lock on it, so that no process waiting
    for the store can open it in between and write into a file about to be removed: such a process
    finds no store and makes a new one.
    """
    with guarded(path, exclusive=True):  # no process reads the store's headers until it is let go
        try:
            con.execute("CHECKPOINT")  # nothing left in a write-ahead log named after the store's path
            aside = _aside(path)
            os.rename(path, aside)
        except (duckdb.Error, OSError):  # the store stays: an empty store is harmless
            con.close()
            return
        con.close()
    _remove(aside)


def remove_leftovers(path: Path) -> None:
    """Remove what processes of this machine that were killed while they made the store at ``path`` left beside it."""
    prefix = f".{path.name}{_INFIX}{this_host()}."
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        if not name.startswith(prefix):
            continue
        pid = name[len(prefix) :].split(".", 1)[0]
        if pid.isdigit() and not alive(int(pid)):
            _remove(path.with_name(name.removesuffix(".wal")))


def _aside(path: Path) -> Path:
    """A name beside ``path`` for this process's file, found and removed by :func:`remove_leftovers` if it is killed."""
    return path.with_name(f".{path.name}{_INFIX}{this_host()}.{os.getpid()}.{secrets.token_hex(4)}")


def _link(aside: Path, path: Path) -> bool:
    """Put ``aside`` at ``path`` if nothing is there yet (atomically: a hard link); False if something is."""
    try:
        os.link(aside, path)
    except FileExistsError:
        return False
    except OSError as exc:  # a file system without hard links: a rename, which could replace a store made meanwhile
        if path.exists():
            return False
        try:
            os.rename(aside, path)
        except OSError:
            raise StoreError(f"{path}: cannot create the store: {exc.strerror}") from None
    _flush_folder(path.parent)
    return True


def _flush(file: Path) -> None:
    fd = os.open(file, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _flush_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems cannot flush a folder; the link stands all the same
        pass
    finally:
        os.close(fd)


def _remove(aside: Path) -> None:
    for file in (aside, aside.with_name(aside.name + ".wal")):
        with suppress(OSError):
            file.unlink(missing_ok=True)
