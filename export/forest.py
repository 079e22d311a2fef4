"""A forest plot across many runs: for each pair of OOD tasks, every run's r and the pooled r with its interval.

With twenty runs or more, a grid of heatmaps shows each run but not at a
glance whether a pair "depends on the model". Here each pair is one row: a
point per run (colored by a run attribute such as family, filled where the
run's own adjusted p is below alpha), and below them the pooled r of
:func:`~ood_store._analysis.compare` (random effects on Fisher z) with its
interval as the verdict reads it (adjusted over pairs: it excludes 0 exactly
where the adjusted pooled p is below alpha), the verdict at the right. Pairs whose runs spread to both sides of
zero, or cluster by color, are the model-dependent ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib
import numpy as np
import polars as pl
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.transforms import blended_transform_factory

from ood_store._analysis import results
from ood_store._analysis.results import COMPARISON_COLUMNS, Comparison
from ood_store._errors import AnalysisError
from ood_store._export import grids, page, triangle
from ood_store._export.captions import Method, adjusted_over_pairs, p_column
from ood_store._export.display import task_order
from ood_store._export.figure_files import STYLE

#: Colors of run groups: Okabe and Ito's palette, told apart with any color vision; then tab20.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
_ROW = 0.19  # inches per pair, at least
_LINE = 1.25 / 72  # inches per point of text: a line with its leading
_LEAST_AXES = 0.6  # inches: the shortest the rows of pairs get, for one or two pairs
_X_AXIS = 0.42  # inches: the x axis' tick labels and its label, and the layout's pads
_MARKER = 10.0  # points², a run's point
VERDICT_SIZE = 6.0


def forest(
    result: Comparison | pl.DataFrame,
    *,
    groups: Mapping[str, str | None] | None = None,
    group_name: str | None = None,
    runs: Sequence[str] | None = None,
    names: Mapping[str, str] | None = None,
    tasks: Sequence[str] | None = None,
    note: bool = True,
    width: float = page.COLUMN,
) -> Figure:
    """Per pair of OOD tasks, each run's r as a point and the pooled r with its interval as a bar.

    Parameters
    ----------
    result : Comparison or polars.DataFrame
        A :func:`~ood_store._analysis.compare` result over all runs (no ``by``),
        or its table; its ``r:<run>`` columns are the points, ``r_pooled``,
        ``ci_low_adj``, ``ci_high_adj`` (the interval adjusted over pairs; ``ci_low``,
        ``ci_high`` in a table without them) the bar and ``verdict`` the text beside it.
        With a result of a partial-correlation result, points of runs whose
        adjusted p (``result.inference``) is at least ``result.alpha`` are hollow.
    groups : mapping, optional
        Run -> group (a value of ``group_name``, such as the family): the points'
        colors, with a legend. Default: one color.
    group_name : str, optional
        What the groups are, for the legend's title.
    runs : list of str, optional
        The runs in the order their points spread within a row (default by
        group, then name); runs not listed are left out of the points (the
        pooled bar stays that of ``result``).
    names : mapping, optional
        Display names of tasks, runs and group values.
    tasks : list of str, optional
        The tasks whose pairs to draw, in order (default all, in order of first appearance).
    note : bool
        Whether to print the note (method, marks) under the figure.
    width : float
        Figure width in inches (default one column, 3.25); the height follows the number of pairs.

    Returns
    -------
    matplotlib.figure.Figure
        One point per run and pair (``PathCollection``\\ s labeled by group),
        one ``LineCollection`` of pooled intervals (gid ``pooled-ci``) and the
        pooled estimates (a ``Line2D``, gid ``pooled-r``).
    """
    frame = results.comparison_table(result)
    grouped = [c for c in frame.columns if c not in COMPARISON_COLUMNS and not c.startswith("r:")]
    if grouped:
        raise AnalysisError(
            f"a forest plot draws one comparison of all runs, not one per {', '.join(grouped)}; color runs by it "
            "with `color_by` instead",
            parameter="by",
        )
    if frame.is_empty():
        raise AnalysisError("the compare result has no rows")
    names = dict(names or {})
    available = [c.removeprefix("r:") for c in frame.columns if c.startswith("r:")]
    order = list(runs) if runs is not None else available
    missing = [r for r in order if r not in available]
    if missing:
        raise AnalysisError(f"no run {', '.join(map(repr, missing))} in the comparison", parameter="runs")
    groups = dict(groups or {})
    group_values: list[str | None] = list(dict.fromkeys(groups.get(r) for r in order)) if groups else [None]
    if runs is None:
        order = sorted(order, key=lambda r: (group_values.index(groups.get(r)), r))
    tasks_in_order = task_order(frame, tasks)
    pairs = _pairs(frame, tasks_in_order)
    significant = _significant(result, order)
    labels = [f"{names.get(x, x)}\u2013{names.get(y, y)}" for x, y in pairs]
    rows = {(row["task_x"], row["task_y"]): row for row in frame.iter_rows(named=True)}
    colors = {value: _color(i) for i, value in enumerate(group_values)}
    verdict_texts = [str(rows[pair]["verdict"]) for pair in pairs]
    handles_count = len(group_values) + 1
    legend = (math.ceil(handles_count / 3) + bool(group_name and groups)) * triangle.TICK_SIZE * _LINE * 1.5
    broken = _fitted(labels, width), _fitted(verdict_texts, width, size=VERDICT_SIZE, share=0.24)
    lines = max(text.count("\n") + 1 for text in [*broken[0], *broken[1]])
    row = max(_ROW, lines * triangle.TICK_SIZE * _LINE + 0.07)
    if len(pairs) * row + legend + _X_AXIS <= page.FIGURE_HEIGHT / 1.5:  # two-line rows while the page has room
        labels, verdict_texts = broken
    else:
        row = _ROW
    height = max(len(pairs) * row, _LEAST_AXES) + legend + _X_AXIS
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(width, height), layout="constrained")
        ax = figure.add_subplot()
        offsets = np.linspace(-0.36, 0.06, len(order)) if len(order) > 1 else np.array([-0.15])
        for value in group_values:
            members = [(k, run) for k, run in enumerate(order) if groups.get(run) == value or not groups]
            points = [(rows[pair][f"r:{run}"], i + offsets[k], significant.get((run, pair), True))
                      for i, pair in enumerate(pairs) for k, run in members
                      if rows[pair][f"r:{run}"] is not None and np.isfinite(rows[pair][f"r:{run}"])]  # fmt: skip
            if not points:
                continue
            x, y, filled = (np.array(v) for v in zip(*points, strict=True))
            color = colors[value]
            ax.scatter(
                x, y, s=_MARKER, marker="o", linewidths=0.6, edgecolors=color, zorder=2, alpha=0.9,
                facecolors=[color if f else "white" for f in filled],
                label=names.get(str(value), str(value)) if value is not None else "runs",
            )  # fmt: skip
        low, high = ("ci_low_adj", "ci_high_adj") if "ci_low_adj" in frame.columns else ("ci_low", "ci_high")
        pooled = [(rows[p]["r_pooled"], rows[p][low], rows[p][high], i + 0.26) for i, p in enumerate(pairs)]
        drawn = [(r, lo, hi, y) for r, lo, hi, y in pooled if r is not None and lo is not None and hi is not None]
        ax.add_collection(LineCollection([[(lo, y), (hi, y)] for _, lo, hi, y in drawn], colors="black",
                                         linewidths=1.4, zorder=3, gid="pooled-ci"))  # fmt: skip
        ax.plot([r for r, *_ in drawn], [y for *_, y in drawn], linestyle="none", marker="D", markersize=3.2,
                color="black", zorder=4, gid="pooled-r")  # fmt: skip
        ax.axvline(0, color="0.6", linewidth=0.6, linestyle=(0, (3, 2)), zorder=1)
        verdicts = blended_transform_factory(ax.transAxes, ax.transData)
        for i, verdict in enumerate(verdict_texts):
            ax.text(1.02, i, verdict, transform=verdicts, fontsize=VERDICT_SIZE, color="0.3", va="center", ha="left",
                    clip_on=False, linespacing=1.0)  # fmt: skip
        for i in range(1, len(pairs)):
            ax.axhline(i - 0.5, color="0.92", linewidth=0.5, zorder=0)
        ax.set_yticks(range(len(pairs)), labels, linespacing=1.0)
        ax.set_ylim(len(pairs) - 0.5, -0.5)
        ax.set_xlim(-1, 1)
        ax.set_xticks([-1, -0.5, 0, 0.5, 1])
        ax.set_xlabel("partial correlation r")
        ax.tick_params(labelsize=triangle.TICK_SIZE, length=2)
        ax.tick_params(axis="y", length=0)
        ax.spines[["top", "right", "left"]].set_visible(False)
        handles: list = [
            Line2D([], [], linestyle="none", marker="o", markersize=3.5, color=colors[value],
                   label=names.get(str(value), str(value)) if value is not None else "runs")
            for value in group_values
        ]  # fmt: skip
        adjusted = low == "ci_low_adj" and not (isinstance(result, Comparison) and result.adjust_pairs == "none")
        level = 1 - (result.alpha if isinstance(result, Comparison) else 0.05)
        handles.append(Line2D([], [], color="black", marker="D", markersize=3.2, linewidth=1.4,
                              label="pooled r, adjusted CI" if adjusted else f"pooled r, {level:.0%} CI"))  # fmt: skip
        title = names.get(group_name, group_name) if group_name and groups else None
        figure.legend(handles=handles, loc="outside upper center", ncols=min(len(handles), 3), title=title,
                      handletextpad=0.3, columnspacing=0.9, fontsize=triangle.TICK_SIZE,
                      title_fontsize=triangle.TICK_SIZE)  # fmt: skip
        if note:
            grids.add_note(figure, _note(result, significant, names), width)
    return figure


def _fitted(texts: list[str], width: float, *, size: float = triangle.TICK_SIZE, share: float = 0.36) -> list[str]:
    """``texts`` as they are printed beside the rows: those wider than ``share`` of the figure's ``width`` broken
    onto two lines (after the dash between the tasks of a pair, or at the space nearest the middle)."""
    room = share * width
    out = []
    for text in texts:
        if triangle.text_width(text, size) > room:
            cuts = [i + 1 for i, c in enumerate(text) if c == "\u2013"] or [i for i, c in enumerate(text) if c == " "]
            if cuts:
                cut = min(cuts, key=lambda i: abs(2 * i - len(text)))
                text = text[:cut].rstrip() + "\n" + text[cut:].lstrip()
        out.append(text)
    return out


def _pairs(frame: pl.DataFrame, tasks: list[str]) -> list[tuple[str, str]]:
    """The comparison's pairs among ``tasks``, in the order of the tasks (as the heatmaps have them)."""
    index = {t: i for i, t in enumerate(tasks)}
    pairs = [(x, y) for x, y in frame.select("task_x", "task_y").iter_rows() if x in index and y in index]
    return sorted(pairs, key=lambda p: (min(index[p[0]], index[p[1]]), max(index[p[0]], index[p[1]])))


def _significant(result, runs: Sequence[str]) -> dict[tuple[str, tuple[str, str]], bool]:
    """(run, pair) -> whether the run's adjusted p is below alpha, where the comparison knows its analysis."""
    if not isinstance(result, Comparison) or result.source is None or result.item_resamples is not None:
        return {}  # over items, the points are each run's r*, which has no p of its own in the analysis
    column = p_column(result.inference)
    table = result.source.table.filter(pl.col("run").is_in(list(runs)))
    return {
        (row["run"], (row["task_x"], row["task_y"])): row[column] is not None and row[column] < result.alpha
        for row in table.iter_rows(named=True)
    }


def _color(index: int):
    if index < len(PALETTE):
        return PALETTE[index]
    return matplotlib.colormaps["tab20"](index % 20)


def _note(result, significant: dict, names: Mapping[str, str]) -> list[str]:
    method = Method.of(result)
    lines = []
    regressed = method.regressed_out(names)
    if regressed:
        lines.append(regressed[0].upper() + regressed[1:] + ".")
    if isinstance(result, Comparison) and result.item_resamples is not None:
        lines.append(
            "Points: each run's r with the in-domain testset's item noise taken out. Black: pooled over runs and "
            f"items, with the interval the verdict reads ({adjusted_over_pairs(result.adjust_pairs, 'crossed')}: "
            "the runs' spread and the covariance their shared items give them); right: the verdict of compare."
        )
    elif isinstance(result, Comparison):
        inference = result.inference
        text = "Points: each run's r"
        if significant:
            text += f"; filled where {p_column(inference)} < {result.alpha:g}"
        lines.append(
            f"{text} ({method.test(inference)}). Black: r pooled over runs by random effects on Fisher z "
            f"({'effective' if inference == 'effective' else 'naive'} n) with the interval the verdict reads "
            f"({adjusted_over_pairs(result.adjust_pairs, result.test)}: it excludes 0 where the adjusted p is below "
            f"{result.alpha:g}); right: the verdict of compare."
        )
    return lines
