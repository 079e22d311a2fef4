"""Item dynamics: when each item is learned for good over a run's checkpoints, and how often items are forgotten.

Per run and task, from the stored per-sample rows (0/1 metric, such as
accuracy): an item is *learned* at the first checkpoint from which it is
answered correctly at every later checkpoint; a *forgetting event* is a
checkpoint where it is answered wrongly after being answered correctly at the
one before (Toneva et al. 2019, "An empirical study of example forgetting
during deep neural network learning", count the same transitions over
training epochs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from ood_store._analysis.results import Result
from ood_store._errors import AnalysisError
from ood_store._names import split_names
from ood_store._store.selection import runs as list_runs

if TYPE_CHECKING:
    from ood_store._store import Database

#: Columns of the per-(run, task) table of item dynamics, in order.
DYNAMICS_COLUMNS = (
    "run", "task", "checkpoints", "items", "learned", "always_correct", "never_learned", "median_learned_step",
    "forgetting_events", "items_forgotten", "forgetting_rate",
)  # fmt: skip

#: Columns of the per-item table, in order.
ITEM_DYNAMICS_COLUMNS = ("run", "task", "item", "first_correct_step", "learned_step", "forgetting_events")


@dataclass(frozen=True, repr=False)
class ItemDynamics(Result):
    """Item dynamics per (run, task) (:data:`DYNAMICS_COLUMNS`); ``items`` has one row per item.

    ``learned``: items answered correctly at every checkpoint from some step on
    (``always_correct`` of them from the first); ``never_learned``: wrong at the
    last checkpoint; ``median_learned_step``: the median step of learning among
    the learned; ``forgetting_events``: correct-then-wrong transitions between
    consecutive checkpoints (``items_forgotten``: items with at least one);
    ``forgetting_rate``: events per item and transition.
    """

    summary_columns = DYNAMICS_COLUMNS

    #: One row per (run, task, item): :data:`ITEM_DYNAMICS_COLUMNS`.
    items: pl.DataFrame
    metric: str

    def _summary(self) -> str:
        return f": {self.table.height} (run, task) series, {self.items.height} items, metric {self.metric!r}"


def item_dynamics(
    data: Database | pl.DataFrame,
    tasks: Sequence[str] | str,
    runs: Sequence[str] | str | None = None,
    *,
    metric: str = "acc",
    filter: str = "none",  # noqa: A002 - lm-eval's name for it
    num_fewshot: int | None = None,
    campaign: str | None = None,
) -> ItemDynamics:
    """When each item of ``tasks`` is learned for good, and its forgetting events, per run.

    ``data`` is a store (its per-sample rows) or a frame ``step, task, item,
    value`` (``run`` optional), as for :func:`~ood_store._analysis.items.item_correlations`.
    The metric must be 0/1 per item (accuracy).

    Examples
    --------
    >>> import polars as pl
    >>> from ood_store._analysis.dynamics import item_dynamics
    >>> outcomes = {0: [0, 1, 1, 1], 1: [1, 0, 1, 1], 2: [0, 0, 1, 0]}   # three items over four checkpoints
    >>> frame = pl.DataFrame([(step * 100, "rte", item, float(v)) for item, row in outcomes.items()
    ...                       for step, v in enumerate(row)], schema=["step", "task", "item", "value"], orient="row")
    >>> result = item_dynamics(frame, "rte")
    >>> result.items.select("item", "first_correct_step", "learned_step", "forgetting_events").rows()
    [(0, 100, 100, 0), (1, 0, 200, 1), (2, 200, None, 1)]
    >>> result.table.select("items", "learned", "never_learned", "forgetting_events").row(0)
    (3, 2, 1, 2)
    """
    from ood_store._analysis.items import _blocks, item_rows, items_frame

    chosen = list(split_names(tasks, "tasks") or ())
    if isinstance(data, pl.DataFrame):
        data = items_frame(data)
        in_tasks = data.filter(pl.col("task").is_in(chosen))
        names = sorted(in_tasks["run"].unique().to_list()) if runs is None else list(split_names(runs, "runs") or ())
    else:
        names = list(split_names(runs, "runs") or list_runs(data)["run"].to_list())
    rows = item_rows(data, chosen, names, metric=metric, filter=filter, num_fewshot=num_fewshot, campaign=campaign)
    present = rows.select("run_index", "task_index").unique()
    wanted = pl.DataFrame(
        {"run": [names[r] for r in present["run_index"]], "task": [chosen[t] for t in present["task_index"]]}
    )
    absent = [task for t, task in enumerate(chosen) if t not in set(present["task_index"].to_list())]
    if absent:
        raise AnalysisError(
            f"no per-sample rows of {', '.join(absent)} with {metric!r} (ingest stores them from lm-eval's samples "
            "files; `samples` turns that off)",
            parameter="tasks",
        )
    columns = {name: rows[name].to_numpy() for name in ("run_index", "task_index", "step", "item", "doc", "value")}
    if not np.isin(columns["value"], (0.0, 1.0)).all():
        raise AnalysisError(f"item dynamics need a 0/1 metric per item; {metric!r} has other values")
    blocks = _blocks(columns, wanted, names, chosen)
    summaries, per_item = [], []
    for (r, t), (steps, matrix) in sorted(blocks.items()):
        first, learned, events = dynamics_of(matrix, steps)
        items = np.unique(columns["item"][(columns["run_index"] == r) & (columns["task_index"] == t)])
        per_item.append(
            pl.DataFrame(
                {
                    "run": names[r],
                    "task": chosen[t],
                    "item": items,
                    "first_correct_step": first,
                    "learned_step": learned,
                    "forgetting_events": events,
                },
                schema_overrides={"first_correct_step": pl.Int64, "learned_step": pl.Int64},
                strict=False,
            )
        )
        found = learned[~np.isnan(learned)] if learned.size else learned
        summaries.append(
            {
                "run": names[r],
                "task": chosen[t],
                "checkpoints": len(steps),
                "items": matrix.shape[0],
                "learned": int(found.size),
                "always_correct": int(np.sum(found == steps[0])),
                "never_learned": int(matrix.shape[0] - found.size),
                "median_learned_step": float(np.median(found)) if found.size else float("nan"),
                "forgetting_events": int(events.sum()),
                "items_forgotten": int(np.sum(events > 0)),
                "forgetting_rate": float(events.sum() / (matrix.shape[0] * max(len(steps) - 1, 1))),
            }
        )
    table = pl.DataFrame(summaries).select(DYNAMICS_COLUMNS)
    items_table = pl.concat(per_item).select(ITEM_DYNAMICS_COLUMNS)
    return ItemDynamics(table, items_table, metric)


def dynamics_of(matrix: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per item (rows of a 0/1 items × checkpoints matrix): first correct step, learned step, forgetting events.

    Steps are NaN where there is none (never correct; wrong at the last checkpoint).
    """
    correct = matrix > 0.5
    T = correct.shape[1]
    steps = np.asarray(steps, dtype=float)
    any_correct = correct.any(axis=1)
    first = np.where(any_correct, steps[np.argmax(correct, axis=1)], np.nan)
    # the last wrong checkpoint; learned at the one after it, if the item is right at the last one
    wrong = ~correct
    last_wrong = np.where(wrong.any(axis=1), T - 1 - np.argmax(wrong[:, ::-1], axis=1), -1)
    learned = np.where(last_wrong < T - 1, steps[np.minimum(last_wrong + 1, T - 1)], np.nan)
    events = (correct[:, :-1] & wrong[:, 1:]).sum(axis=1)
    return first, learned, events
