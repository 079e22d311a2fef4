"""The scores as one long frame, narrowed by run, task, metric, filter, shots or campaign; names checked."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import InputError
from ood_store._names import did_you_mean
from ood_store._store.database import Database, read

_SQL = "ood_store._store"


def scores(
    db: Database,
    *,
    runs: str | Sequence[str] | None = None,
    tasks: str | Sequence[str] | None = None,
    metric: str | None = None,
    filter: str | None = None,  # noqa: A002 - lm-eval's word, and the column's
    num_fewshot: int | None = None,
    campaign: str | None = None,
) -> pl.DataFrame:
    """Rows of the ``scores`` view (or of ``campaign_scores`` for one ``campaign``) for the names given.

    A name the store does not hold is an error naming the argument (with the names close to it),
    never an empty frame that looks like missing results.
    """
    selection = {
        "runs": _names(runs),
        "tasks": _names(tasks),
        "metric": metric,
        "filter": filter,
        "campaign": campaign,
    }
    if any(value is not None for value in selection.values()):
        _check(db, selection)
    return read(db, sqlfiles.load(_SQL, "select_scores"), num_fewshot=num_fewshot, **selection)


def _names(given: str | Sequence[str] | None) -> list[str] | None:
    if given is None:
        return None
    return [given] if isinstance(given, str) else list(given)


def _check(db: Database, selection: dict[str, str | list[str] | None]) -> None:
    known = read(db, sqlfiles.load(_SQL, "known_names"))
    for kind, given in selection.items():
        if given is None:
            continue
        names = known.filter(pl.col("kind") == kind)["name"].to_list()
        for name in [given] if isinstance(given, str) else given:
            if name not in names:
                raise InputError(
                    None,
                    None,
                    f"the store holds no {kind.rstrip('s')} {name!r}{did_you_mean(name, names)}",
                    parameter=kind,
                )


def runs(db: Database) -> pl.DataFrame:
    """One row per run: attributes, checkpoints, steps, evaluations and tasks (``Store.runs``)."""
    return read(db, sqlfiles.load(_SQL, "list_runs"))


def tasks(db: Database, run: str | None = None) -> pl.DataFrame:
    """One row per (task, metric, filter, num_fewshot) in ``scores``, optionally for one run (``Store.tasks``)."""
    return read(db, sqlfiles.load(_SQL, "list_tasks"), run=run)
