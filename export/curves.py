"""Training curves of one run: the scores of a few tasks over its checkpoints, with their standard errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from ood_store import _sqlfiles as sqlfiles
from ood_store._analysis.series import check_one_shot_count, missing_task_message
from ood_store._errors import AnalysisError
from ood_store._names import split_names
from ood_store._store.database import read
from ood_store._store.selection import runs as list_runs

if TYPE_CHECKING:
    from ood_store._store import Database


def curves(
    store: Database,
    run: str,
    tasks: Sequence[str] | str,
    *,
    metric: str = "acc",
    filter: str = "none",  # noqa: A002 - lm-eval's name for it
    num_fewshot: int | None = None,
) -> pl.DataFrame:
    """The scores of ``tasks`` at every checkpoint of ``run``, pulled with one SQL query.

    Parameters
    ----------
    store : Database
        The store to read.
    run : str
        The run.
    tasks : list of str or str
        Tasks (repeated or comma-separated names).
    metric, filter, num_fewshot
        Which scores form the curves (``num_fewshot`` is required when a task
        was evaluated at several shot counts).

    Returns
    -------
    polars.DataFrame
        Columns ``task, step, value, stderr`` sorted by task and step;
        ``stderr`` is null where the results file gave none.

    Raises
    ------
    AnalysisError
        For an unknown run, a task without such scores in the run, or a task
        with scores at several shot counts.
    """
    names = split_names(tasks, "tasks") or ()
    if run not in set(list_runs(store)["run"]):
        raise AnalysisError(f"no run {run!r} in the store (see `ood-store runs`)", parameter="run")
    frame = read(
        store,
        sqlfiles.load("ood_store._export", "curves"),
        run=run,
        metric=metric,
        filter=filter,
        tasks=list(names),
        num_fewshot=num_fewshot,
    )
    for task in names:
        if frame.filter(pl.col("task") == task).is_empty():
            message = missing_task_message(store, task, metric, filter, num_fewshot, [run])
            if message.startswith("no task "):
                message = f"no task {task!r} in run {run!r} (see `ood-store tasks`)"
            raise AnalysisError(message.replace(" in the chosen runs", f" in run {run!r}"))
    check_one_shot_count(frame)
    return frame.select("task", "step", pl.col("value").cast(pl.Float64), pl.col("stderr").cast(pl.Float64))
