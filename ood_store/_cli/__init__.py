"""The ``ood-store`` command line: a thin layer over the Python API (:mod:`ood_store`)."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterator, MutableMapping
from pathlib import Path

import click
import duckdb

from ood_store import __version__
from ood_store._api import DB_ENV, DEFAULT_DB, Store
from ood_store._api import open as open_store
from ood_store._cli.flags import spelled
from ood_store._cli.options import FILE
from ood_store._errors import Note, OodStoreError
from ood_store._store.connection import DEFAULT_LOCK_TIMEOUT
from ood_store._store.damage import store_problem


class _Group(click.Group):
    """Turns user errors (OodStoreError) into a one-line ``Error: ...`` and exit status 1.

    So too a DuckDB error that says the store file is damaged, wherever a command meets it
    (:func:`ood_store._store.damage.store_problem`): it names the store and what to do.

    Library errors name the Python parameters they are about; they are printed
    with the flags that set them (:mod:`ood_store._cli.flags`).
    """

    def invoke(self, ctx: click.Context):
        with warnings.catch_warnings():  # restores the filters and showwarning afterwards
            warnings.simplefilter("always", Note)
            warnings.showwarning = _show_notes(warnings.showwarning)
            try:
                return super().invoke(ctx)
            except OodStoreError as exc:
                raise click.ClickException(spelled(exc)) from None
            except duckdb.Error as exc:  # a damaged store found in the middle of a command
                problem = store_problem(ctx.obj.db, exc) if isinstance(ctx.obj, Settings) else None
                if problem is None:
                    raise
                raise click.ClickException(spelled(problem)) from None


def _show_notes(show):
    """``warnings.showwarning`` that prints the library's :class:`Note` s as ``Note: ...`` on standard error."""

    def showwarning(message, category, *args, **kwargs):
        if issubclass(category, Note):
            click.echo(f"Note: {spelled(str(message))}", err=True)
        else:
            show(message, category, *args, **kwargs)

    return showwarning


class Settings:
    def __init__(self, db: Path, lock_timeout: float, db_given: bool = False):
        self.db = db
        self.lock_timeout = lock_timeout
        self.db_given = db_given  # --db or OOD_STORE_DB, not the default

    def open(
        self, *, read_only: bool = False, allow_files: tuple[Path, ...] = (), at: int | None = None, **kwargs
    ) -> Store:
        return open_store(
            self.db, read_only=read_only, lock_timeout=self.lock_timeout, allow_files=allow_files, at=at, **kwargs
        )


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    type=FILE,
    envvar=DB_ENV,
    default=DEFAULT_DB,
    show_default=True,
    show_envvar=True,
    help="The store: a DuckDB file, or a lake (ducklake:postgres:dbname=... host=..., ducklake:sqlite:PATH, "
    "ducklake:PATH).",
)
@click.option(
    "--lock-timeout",
    type=click.FloatRange(min=0),
    envvar="OOD_STORE_LOCK_TIMEOUT",
    default=DEFAULT_LOCK_TIMEOUT,
    show_default=True,
    show_envvar=True,
    help="Seconds to wait while another process writes the store.",
)
@click.version_option(__version__, prog_name="ood-store")
@click.pass_context
def main(ctx: click.Context, db: Path, lock_timeout: float) -> None:
    """Store lm-eval results of every checkpoint in one DuckDB file and query them with SQL."""
    source = ctx.get_parameter_source("db")
    ctx.obj = Settings(db, lock_timeout, source not in (None, click.core.ParameterSource.DEFAULT))


#: Each command and the module of ``ood_store._cli`` that defines it (in its ``COMMANDS``).
MODULES = {
    "init": "init",
    "ingest": "ingest",
    "evaluate": "evaluate",
    "collect": "work",
    "status": "work",
    "query": "query",
    "runs": "listings",
    "tasks": "listings",
    "analyze": "analyze",
    "compare": "analyze",
    "analyses": "analyze",
    "plan": "plan",
    "export": "export",
    "export-eee": "eee",
    "plot": "plot",
    "dump": "stores",
    "load": "stores",
    "merge": "stores",
    "suite": "suite",
    "snapshots": "lake",
    "vacuum": "lake",
    "serve": "serve",
    "demo": "demo",
    "finetune": "finetune",
}


class _Commands(MutableMapping[str, click.Command]):
    """``main.commands``: every command's name at once, each module imported when one of its commands is used.

    ``ood-store ingest`` then starts without importing the statistics and the
    plotting libraries (SciPy, statsmodels, matplotlib: a second of start-up).
    """

    def __init__(self, modules: dict[str, str]):
        self._modules = dict(modules)
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            if name not in self._modules:
                raise KeyError(name)
            for command in importlib.import_module(f"ood_store._cli.{self._modules[name]}").COMMANDS:
                self._loaded[command.name or ""] = command
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command
        self._modules.setdefault(name, "")

    def __delitem__(self, name: str) -> None:
        self._modules.pop(name)
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)


main.commands = _Commands(MODULES)
