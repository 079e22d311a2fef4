"""The item-dynamics figure: items learned for good, and items forgotten, over a run's training steps."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib
import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

from ood_store._analysis.dynamics import ItemDynamics, item_dynamics
from ood_store._export import steps as step_axis
from ood_store._export.figure_files import STYLE, PaperFigure
from ood_store._export.forest import PALETTE
from ood_store._export.provenance import Provenance

if TYPE_CHECKING:
    from ood_store._store import Database

COLUMN_WIDTH = 3.25
MOST_NAMED = 8  # runs drawn in a color each, with a legend; more are drawn in grey


def dynamics_figure(result: ItemDynamics, width: float = COLUMN_WIDTH, *, x_scale: str = "auto") -> Figure:
    """Two panels per task: the share of its items learned for good by each step, and forgetting events per item.

    One line per run on the left, on a step axis as ``x_scale`` says (``auto``: symmetric log where the steps
    are log-spaced, :mod:`~ood_store._export.steps`); on the right one point per run (its forgetting events
    per item). Up to :data:`MOST_NAMED` runs get a color each and a legend below; more are drawn in grey.
    """
    step_axis.check_x_scale(x_scale)
    seen = pl.concat([result.items["first_correct_step"], result.items["learned_step"]]).drop_nulls()
    tasks = result.table["task"].unique(maintain_order=True).to_list()
    runs = result.table["run"].unique(maintain_order=True).to_list()
    named = len(runs) <= MOST_NAMED
    colors = {run: (PALETTE[i % len(PALETTE)] if named else "0.45") for i, run in enumerate(runs)}
    legend_rows = math.ceil(len(runs) / 2) if named and len(runs) > 1 else 0
    height = 0.35 + 1.15 * len(tasks) + legend_rows * 0.15
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(width, height), layout="constrained")
        axes = figure.subplots(len(tasks), 2, squeeze=False, width_ratios=[2, 1])
        for row, task in zip(axes, tasks, strict=True):
            items = result.items.filter(pl.col("task") == task)
            for k, run in enumerate(runs):
                part = items.filter(pl.col("run") == run)
                if part.is_empty():
                    continue
                learned = np.sort(part["learned_step"].drop_nulls().to_numpy())
                steps = np.unique(np.concatenate([learned, part["first_correct_step"].drop_nulls().to_numpy()]))
                if steps.size:
                    share = np.searchsorted(learned, steps, side="right") / part.height
                    row[0].step(steps, share, where="post", lw=1.0, color=colors[run], alpha=1 if named else 0.5,
                                label=run)  # fmt: skip
                events = float(np.mean(part["forgetting_events"].to_numpy()))
                row[1].scatter([events], [k], s=8, color=colors[run], zorder=2)
            scale = step_axis.set_step_axis(row[0], seen.to_list(), x_scale)
            _step_ticks(row[0], seen.to_list(), scale)
            row[0].set_ylim(0, 1)
            row[0].set_ylabel(f"{task}\nlearned", fontsize=7)
            row[1].set_yticks([])
            row[1].set_ylim(-1, len(runs))
            row[1].xaxis.set_major_locator(MaxNLocator(3))
            row[1].margins(x=0.15)
            for ax in row:
                ax.spines[["top", "right"]].set_visible(False)
                ax.tick_params(labelsize=6)
            row[1].spines["left"].set_visible(False)
        axes[-1][0].set_xlabel("training step", fontsize=7)
        axes[-1][1].set_xlabel("forgetting events\nper item", fontsize=7)
        if legend_rows:
            handles = [Line2D([], [], color=colors[run], lw=1.0, label=run) for run in runs]
            figure.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=6, handlelength=1.2,
                          columnspacing=0.8)  # fmt: skip
    return figure


def _step_ticks(ax, at: list, scale: str) -> None:
    """Few enough step ticks for a narrow panel, labeled as papers print steps (500, 20k, 1.5M)."""
    from ood_store._export.figures import _step_label

    if scale == "log" and at:
        top = max(at)
        decades = [
            10**k for k in range(math.ceil(math.log10(step_axis.linear_threshold(at))), int(math.log10(top)) + 1)
        ]
        every = math.ceil(len(decades) / 3) or 1
        ax.set_xticks([0, *decades[::-1][::every][::-1]])
    else:
        ax.xaxis.set_major_locator(MaxNLocator(4, integer=True))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.xaxis.set_major_formatter(FuncFormatter(_step_label))


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
