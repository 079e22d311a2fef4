"""The item-dynamics figure: items learned for good, and items forgotten, over a run's training steps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib
import numpy as np
import polars as pl
from matplotlib.figure import Figure

from ood_store._analysis.dynamics import ItemDynamics, item_dynamics
from ood_store._export import steps as step_axis
from ood_store._export.figure_files import STYLE, PaperFigure
from ood_store._export.provenance import Provenance

if TYPE_CHECKING:
    from ood_store._store import Database

COLUMN_WIDTH = 3.25


def dynamics_figure(result: ItemDynamics, width: float = COLUMN_WIDTH, *, x_scale: str = "auto") -> Figure:
    """Two panels per task: the share of its items learned for good by each step, and forgetting events per step.

    One line per run; the steps are those of the run's checkpoints, on a step axis as ``x_scale`` says
    (``auto``: symmetric log where they are log-spaced, :mod:`~ood_store._export.steps`).
    """
    step_axis.check_x_scale(x_scale)
    seen = pl.concat([result.items["first_correct_step"], result.items["learned_step"]]).drop_nulls()
    tasks = result.table["task"].unique(maintain_order=True).to_list()
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(width, 0.5 + 1.5 * len(tasks)), layout="constrained")
        axes = figure.subplots(len(tasks), 2, squeeze=False)
        for row, task in zip(axes, tasks, strict=True):
            items = result.items.filter(pl.col("task") == task)
            for run in items["run"].unique(maintain_order=True).to_list():
                part = items.filter(pl.col("run") == run)
                learned = np.sort(part["learned_step"].drop_nulls().to_numpy())
                steps = np.unique(np.concatenate([learned, part["first_correct_step"].drop_nulls().to_numpy()]))
                if steps.size:
                    share = np.searchsorted(learned, steps, side="right") / part.height
                    row[0].step(steps, share, where="post", lw=1.0, label=run)
                row[1].bar(run, float(np.mean(part["forgetting_events"].to_numpy())), color="0.5")
            step_axis.set_step_axis(row[0], seen.to_list(), x_scale)
            row[0].set_ylim(0, 1)
            row[0].set_ylabel(f"{task}\nlearned", fontsize=7)
            row[1].set_ylabel("forgetting events\nper item", fontsize=7)
            for ax in row:
                ax.spines[["top", "right"]].set_visible(False)
                ax.tick_params(labelsize=6)
            row[1].tick_params(axis="x", labelrotation=90)
        axes[-1][0].set_xlabel("training step", fontsize=7)
        if result.table["run"].n_unique() <= 8:
            axes[0][0].legend(fontsize=6, frameon=False, loc="upper left")
    return figure


def item_dynamics_figure(
    store: Database,
    tasks: Sequence[str] | str,
    runs: Sequence[str] | str | None = None,
    *,
    metric: str = "acc",
    filter: str = "none",  # noqa: A002 - lm-eval's name for it
    num_fewshot: int | None = None,
    width: float = COLUMN_WIDTH,
    result: ItemDynamics | None = None,
    x_scale: str = "auto",
) -> PaperFigure:
    """:func:`dynamics_figure` of :func:`~ood_store._analysis.dynamics.item_dynamics` on ``store``, with provenance.

    ``result``: that analysis already made (the other arguments then only name it). ``x_scale``: the step
    axis (``auto``, ``linear`` or ``log``), as for :func:`dynamics_figure`.
    """
    if result is None:
        result = item_dynamics(store, tasks, runs, metric=metric, filter=filter, num_fewshot=num_fewshot)
    params = {"tasks": result.table["task"].unique(maintain_order=True).to_list(), "metric": metric}
    params["runs"] = result.table["run"].unique(maintain_order=True).to_list()
    provenance = Provenance.of_store(store, "item dynamics", params=params)
    shown = ", ".join(params["tasks"])
    return PaperFigure(dynamics_figure(result, width, x_scale=x_scale), provenance, f"item dynamics of {shown}")
