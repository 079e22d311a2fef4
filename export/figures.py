"""Figures for papers: partial-correlation heatmaps (one run, or a grid of runs), training curves, sign agreement.

Every function returns a :class:`matplotlib.figure.Figure` (made without
pyplot, so nothing accumulates and nothing is shown) sized for a two-column
paper: one column (3.25 in) wide by default, the full page (6.75 in, less for
a few runs) for grids of panels, 8 pt text. Write one with :func:`save`, which picks PDF, PNG or SVG by
the file's extension and records where the figure came from in its metadata.

Heatmaps and sign matrices are lower triangles: for OOD tasks ``t0 .. tk-1``
the rows are ``t1 .. tk-1`` and the columns ``t0 .. tk-2``, each pair drawn once.
"""

from __future__ import annotations

import functools
import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import matplotlib
import numpy as np
import polars as pl
from matplotlib.cm import ScalarMappable
from matplotlib.colors import ListedColormap, Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from ood_store.analysis import results
from ood_store.analysis.compare import INFERENCE, compare
from ood_store.analysis.results import COMPARISON_COLUMNS, Comparison, PartialCorrelations
from ood_store.errors import AnalysisError
from ood_store.export import display, triangle
from ood_store.export.curves import curves
from ood_store.export.display import size_value
from ood_store.export.figure_files import FORMATS, STYLE, PaperFigure, file_format, save
from ood_store.export.provenance import Provenance
from ood_store.names import split_names

if TYPE_CHECKING:
    from ood_store.store import Store

__all__ = [
    "FORMATS", "KINDS", "PaperFigure", "curves_of_run", "file_format", "from_analysis", "heatmap", "heatmap_grid",
    "run_title", "save", "sign_agreement", "task_order", "training_curves",
]  # fmt: skip

COLUMN_WIDTH = 3.25  # inches: one column of a two-column paper (ACL, NeurIPS-style, IEEE ~3.3)
PAGE_WIDTH = 6.75  # inches: the full text width of a two-column paper
CMAP = "RdBu_r"  # diverging: red positive, blue negative, white at 0
# Sign counts are mostly unanimous; the middle three quarters of the map keep those cells from going near-black.
_SIGN_CMAP = ListedColormap(matplotlib.colormaps[CMAP](np.linspace(0.125, 0.875, 256)), name="RdBu_r_light")
_COLORBAR = 0.62  # inches the colour bar and its labels take
_TITLE = 0.2  # inches a panel title takes
_NOTE = 0.18  # inches the note under a figure takes
_GAP = 0.12  # inches between panels
_MAX_SIDE = 2.0  # inches: the widest a panel of a grid gets by default


# -- partial-correlation heatmaps ---------------------------------------------------------------------


def heatmap(
    table: PartialCorrelations | pl.DataFrame,
    run: str | None = None,
    *,
    names: Mapping[str, str] | None = None,
    tasks: Sequence[str] | None = None,
    alpha: float = 0.05,
    inference: str = "effective",
    note: bool = True,
    width: float = COLUMN_WIDTH,
) -> Figure:
    """One run's partial correlations between OOD tasks as a lower-triangle heatmap.

    Each cell is coloured by r on a diverging map fixed to [-1, 1] (white at
    0) and annotated with r to two decimals (with a true minus sign; on cells
    too small for that, without the leading zero, or not at all). Cells of
    pairs that are not significant (adjusted p at least ``alpha``) are faded
    to 30 % opacity with grey text; significant ones keep full colour and bold
    text. A pair whose r is NaN is a grey cell marked "n/a". A note under the
    figure says so. Tasks label the rows on the left and the columns below.

    Parameters
    ----------
    table : PartialCorrelations or polars.DataFrame
        A result of :func:`~ood_store.analysis.partial_correlations` or
        ``store.analysis(name)``, or its table.
    run : str, optional
        The run to draw; required when the table has several.
    names : mapping, optional
        Display names of tasks and runs (:func:`ood_store.export.display.names`).
        A run without one is titled by the part of its name after the last ``/``.
    tasks : list of str, optional
        The OOD tasks to draw, in order; default all, in order of first appearance.
    alpha : float
        Significance level of the adjusted p-values.
    inference : {"effective", "naive"}
        ``effective`` tests with ``p_eff_adj`` (autocorrelation-aware), ``naive`` with ``p_adj``.
    note : bool
        Whether to print the note on faded cells under the figure.
    width : float
        Figure width in inches (default one column, 3.25); the height follows.

    Returns
    -------
    matplotlib.figure.Figure
    """
    table = _check_table(table)
    runs = _runs_of(table)
    if run is None:
        if len(runs) != 1:
            raise AnalysisError(f"the table has {len(runs)} runs; choose one with `run`: {', '.join(runs)}")
        run = runs[0]
    return heatmap_grid(
        table, [run], names=names, tasks=tasks, alpha=alpha, inference=inference, note=note, ncols=1, width=width
    )


def heatmap_grid(
    table: PartialCorrelations | pl.DataFrame,
    runs: Sequence[str] | None = None,
    *,
    names: Mapping[str, str] | None = None,
    tasks: Sequence[str] | None = None,
    alpha: float = 0.05,
    inference: str = "effective",
    note: bool = True,
    ncols: int | None = None,
    width: float | None = None,
) -> Figure:
    """A grid of :func:`heatmap` panels, one per run, with one shared colour bar: do results generalise?

    Every panel has the same tasks in the same order; panels are titled by the
    runs' display names and laid out row by row in the order of ``runs``.

    Parameters
    ----------
    table : PartialCorrelations or polars.DataFrame
        A partial-correlation result or table.
    runs : list of str, optional
        Runs to draw, in panel order; default every run of the table, sorted by name
        (the CLI orders them by family, size and seed: :func:`~ood_store.export.display.run_order`).
    names, tasks, alpha, inference, note
        As for :func:`heatmap`.
    ncols : int, optional
        Panels per row; default all in one row up to 4 runs, else rows of 3 or 4 as even as possible.
    width : float, optional
        Figure width in inches; default the full page (6.75), or less when panels
        would be wider than 2 in (one column, 3.25, for a single run). The height follows.

    Returns
    -------
    matplotlib.figure.Figure
    """
    table = _check_table(table)
    _check_test(alpha, inference)
    names = dict(names or {})
    known = _runs_of(table)
    runs = list(dict.fromkeys(runs)) if runs is not None else known
    absent = [r for r in runs if r not in known]
    if absent:
        raise AnalysisError(
            f"no run {', '.join(map(repr, absent))} in the table; it has: {', '.join(known)}", parameter="runs"
        )
    if not runs:
        raise AnalysisError("no runs given", parameter="runs")
    order = task_order(table, tasks)
    if len(order) < 2:
        raise AnalysisError("a heatmap needs at least two OOD tasks")
    labels, ncols, nrows, width, side, rotation, below = _panels(order, names, len(runs), ncols, width)
    height = nrows * (side + _TITLE) + (nrows - 1) * _GAP + below + (_NOTE if note else 0) + 0.08
    p_column = "p_eff_adj" if inference == "effective" else "p_adj"
    norm, cmap = Normalize(vmin=-1.0, vmax=1.0), matplotlib.colormaps[CMAP]
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(width, height), layout="constrained")
        grid = figure.add_gridspec(nrows, ncols)
        axes = []
        for index, run in enumerate(runs):
            row, col = divmod(index, ncols)
            ax = figure.add_subplot(grid[row, col])
            lookup = _pair_rows(table.filter(pl.col("run") == run))
            cells = triangle.pair_cells(
                order,
                lookup,
                value=lambda r: r["r"],
                label=lambda r: _signed(r["r"]),
                muted=functools.partial(_row_significant, column=p_column, alpha=alpha, expected=False),
                bold=functools.partial(_row_significant, column=p_column, alpha=alpha, expected=True),
            )
            triangle.draw(
                ax, labels, cells, cmap=cmap, norm=norm, cell_inches=side / (len(order) - 1),
                show_x=row == nrows - 1, show_y=col == 0, rotation=rotation,
            )  # fmt: skip
            ax.set_title(run_title(run, names), pad=3)
            axes.append(ax)
        bar = figure.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=axes, fraction=0.05, aspect=25, pad=0.03)
        bar.set_label("partial correlation r")
        bar.set_ticks([-1, -0.5, 0, 0.5, 1])
        bar.ax.tick_params(labelsize=triangle.TICK_SIZE)
        if note:
            figure.supxlabel(_heatmap_note(p_column, alpha), fontsize=6.5, color="0.3")
        _square_cells(figure, axes, nrows)
    return figure


def _panels(
    order: list[str], names: Mapping[str, str], panels: int, ncols: int | None, width: float | None
) -> tuple[list[str], int, int, float, float, float, float]:
    """The task labels and the geometry of a grid of ``panels`` triangles: columns, rows, then as :func:`_layout`."""
    labels = [names.get(t, t) for t in order]
    ncols = _columns(panels, ncols)
    width, _, side, rotation, below = _layout(labels, width, ncols)
    return labels, ncols, math.ceil(panels / ncols), width, side, rotation, below


def _layout(labels: list[str], width: float | None, ncols: int) -> tuple[float, float, float, float, float]:
    """Width, label margin, panel side, x-label rotation and room below the panels (inches) of ``ncols`` triangles.

    Without a ``width``: one column for one panel; for several, the full page
    or less, so that no panel is wider than :data:`_MAX_SIDE`.
    """
    left, _ = triangle.label_margins(labels)
    fixed = left + _COLORBAR + 0.15 + (ncols - 1) * _GAP
    if width is None:
        width = COLUMN_WIDTH if ncols == 1 else min(PAGE_WIDTH, fixed + ncols * _MAX_SIDE)
    side = (width - fixed) / ncols
    if side < 0.4:
        raise AnalysisError(
            f"{width:g} in is too narrow for {ncols} panel(s) of {len(labels)} tasks", parameter="width"
        )
    rotation = triangle.x_rotation(labels, side / (len(labels) - 1), panels_side_by_side=ncols > 1)
    return width, left, side, rotation, triangle.label_margins(labels, rotation)[1]


def _square_cells(figure: Figure, axes: list, nrows: int) -> None:
    """Make the cells square: lay the figure out once and give it the height that makes each panel as tall as wide."""
    figure.draw_without_rendering()
    width, height = figure.get_size_inches()
    box = axes[0].get_position()
    excess = box.height * height - box.width * width
    figure.set_size_inches(width, max(height - nrows * excess, 0.5))


def _heatmap_note(p_column: str, alpha: float) -> str:
    return f"Bold: {p_column} < {alpha:g}; faded: not significant."


def _significant(p: float | None, alpha: float) -> bool:
    return p is not None and math.isfinite(p) and p < alpha


def _row_significant(row: dict, *, column: str, alpha: float, expected: bool) -> bool:
    """Whether the row's p in ``column`` is significant (``expected=True``) or not (``expected=False``)."""
    return _significant(row[column], alpha) is expected


def _signed(value: float) -> str:
    """``value`` to two decimals with a typographic minus sign."""
    return f"{value:.2f}".replace("-", "\u2212")


def _check_table(data: PartialCorrelations | pl.DataFrame) -> pl.DataFrame:
    table = results.partial_table(data)
    if table.is_empty():
        raise AnalysisError("the partial-correlation table has no rows")
    return table


def _check_test(alpha: float, inference: str) -> None:
    if inference not in INFERENCE:
        raise AnalysisError(f"inference must be one of {', '.join(INFERENCE)}, not {inference!r}")
    if not 0 < alpha < 1:
        raise AnalysisError(f"alpha must be between 0 and 1, not {alpha}")


def _runs_of(table: pl.DataFrame) -> list[str]:
    return sorted(table["run"].unique())


def task_order(table: pl.DataFrame, tasks: Sequence[str] | None = None) -> list[str]:
    """The tasks of ``table`` in order of first appearance (task_x before task_y), or ``tasks`` checked against it.

    A partial-correlation table lists pairs in the order of its OOD tasks, so
    this is the order the analysis was given them in.
    """
    seen = list(dict.fromkeys(t for x, y in table.select("task_x", "task_y").iter_rows() for t in (x, y)))
    if tasks is None:
        return seen
    wanted = list(dict.fromkeys(tasks))
    absent = [t for t in wanted if t not in seen]
    if absent:
        raise AnalysisError(
            f"no task {', '.join(map(repr, absent))} in the table; it has: {', '.join(seen)}", parameter="tasks"
        )
    return wanted


def _pair_rows(frame: pl.DataFrame) -> dict[frozenset, dict]:
    return {frozenset((row["task_x"], row["task_y"])): row for row in frame.iter_rows(named=True)}


def _columns(panels: int, ncols: int | None) -> int:
    if ncols is not None:
        if ncols < 1:
            raise AnalysisError(f"ncols must be at least 1, not {ncols}")
        return min(ncols, panels)
    if panels <= 4:
        return panels
    rows = math.ceil(panels / 4)
    return math.ceil(panels / rows)


def run_title(run: str, names: Mapping[str, str] | None = None) -> str:
    """A run's display name: from ``names`` (full or short name), else the part after the last ``/``."""
    names = names or {}
    short = run.rsplit("/", 1)[-1]
    return names.get(run) or names.get(short) or short


# -- sign agreement -----------------------------------------------------------------------------------


def sign_agreement(
    result: Comparison | pl.DataFrame,
    *,
    names: Mapping[str, str] | None = None,
    tasks: Sequence[str] | None = None,
    note: bool = True,
    width: float | None = None,
) -> Figure:
    """How many runs agree on the sign of each pair's partial correlation: a lower-triangle matrix.

    Each cell is coloured by ``(n_positive - n_negative) / runs`` on the same
    diverging map as the heatmaps (1: every run positive, -1: every run
    negative, 0: split evenly) and annotated ``"3+ 0−"`` (runs with r > 0 and
    r < 0). Cells whose verdict is ``model-dependent`` are hatched;
    ``consistently positive``/``negative`` ones have bold text. A compare
    result with ``by`` columns gives one panel per group.

    Parameters
    ----------
    result : Comparison or polars.DataFrame
        A :func:`~ood_store.analysis.compare` result, or its table.
    names : mapping, optional
        Display names of tasks and group values.
    tasks : list of str, optional
        The OOD tasks to draw, in order; default all, in order of first appearance.
    note : bool
        Whether to print the legend of hatching and bold text under the figure.
    width : float, optional
        Figure width in inches; default one column (3.25) for one panel, the full
        page (6.75) or less for several, as for :func:`heatmap_grid`. The height follows.

    Returns
    -------
    matplotlib.figure.Figure
    """
    result = results.comparison_table(result)
    if result.is_empty():
        raise AnalysisError("the compare result has no rows")
    names = dict(names or {})
    group_columns = [c for c in result.columns if c not in COMPARISON_COLUMNS and not c.startswith("r:")]
    groups = _groups(result, group_columns)
    order = task_order(result, tasks)
    if len(order) < 2:
        raise AnalysisError("a sign matrix needs at least two OOD tasks")
    labels, ncols, nrows, width, side, rotation, below = _panels(order, names, len(groups), None, width)
    titled = bool(group_columns)
    height = nrows * (side + (_TITLE if titled else 0)) + (nrows - 1) * _GAP + below + (2 * _NOTE if note else 0) + 0.08
    norm, cmap = Normalize(vmin=-1.0, vmax=1.0), _SIGN_CMAP
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(width, height), layout="constrained")
        grid = figure.add_gridspec(nrows, ncols)
        axes = []
        for index, (key, frame) in enumerate(groups):
            row, col = divmod(index, ncols)
            ax = figure.add_subplot(grid[row, col])
            cells = triangle.pair_cells(
                order,
                _pair_rows(frame),
                value=lambda r: (r["n_positive"] - r["n_negative"]) / r["runs"] if r["runs"] else None,
                label=lambda r: f"{r['n_positive']}+ {r['n_negative']}\u2212",
                bold=lambda r: str(r["verdict"]).startswith("consistently"),
                hatched=lambda r: r["verdict"] == "model-dependent",
            )
            triangle.draw(
                ax, labels, cells, cmap=cmap, norm=norm, cell_inches=side / (len(order) - 1),
                show_x=row == nrows - 1, show_y=col == 0, rotation=rotation,
            )  # fmt: skip
            if titled:
                ax.set_title(", ".join(f"{c}={names.get(v, v)}" for c, v in zip(group_columns, key, strict=True)))
            axes.append(ax)
        bar = figure.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=axes, fraction=0.05, aspect=25, pad=0.03)
        bar.set_ticks([-1, 0, 1], labels=["all r<0", "split", "all r>0"])
        bar.ax.tick_params(labelsize=triangle.TICK_SIZE)
        if note:
            figure.supxlabel(
                "+/\u2212: runs with r > 0 / r < 0.\nHatched: model-dependent; bold: consistent sign.",
                fontsize=6.5,
                color="0.3",
            )
        _square_cells(figure, axes, nrows)
    return figure


def _groups(result: pl.DataFrame, columns: list[str]) -> list[tuple[tuple, pl.DataFrame]]:
    if not columns:
        return [((), result)]
    groups = [(tuple(key), frame) for key, frame in result.group_by(columns, maintain_order=True)]
    return sorted(groups, key=lambda item: tuple(_value_key(v) for v in item[0]))


def _value_key(value) -> tuple:
    """Group values in a natural order: sizes by parameter count, numbers by value, then text."""
    text = "" if value is None else str(value)
    number = size_value(text)
    return (value is None, number is None, number or 0.0, text)


# -- training curves ----------------------------------------------------------------------------------


def training_curves(
    store: Store,
    run: str,
    tasks: Sequence[str] | str,
    *,
    in_domain: str | None = None,
    metric: str = "acc",
    filter: str = "none",  # noqa: A002 - lm-eval's name for it
    num_fewshot: int | None = None,
    names: Mapping[str, str] | None = None,
    logx: bool = False,
    width: float = COLUMN_WIDTH,
) -> Figure:
    """The scores of one run over its training steps, one line per task, with ±1 standard-error bands.

    The in-domain task, when given, is drawn thicker in black and labelled
    "(in-domain)" in the legend; the other tasks get the colours of
    matplotlib's ``tab10`` cycle. A band is drawn wherever the store has the
    score's standard error and left out where it has none. The data come from
    :func:`ood_store.export.curves.curves` (one SQL query).

    Parameters
    ----------
    store, run, tasks, metric, filter, num_fewshot
        As for :func:`~ood_store.export.curves.curves`; ``in_domain`` is added to
        ``tasks`` first when missing.
    in_domain : str, optional
        The in-domain task, drawn emphasised.
    names : mapping, optional
        Display names of tasks and the run.
    logx : bool
        Steps on a symmetric log scale (linear below the first non-zero step), for log-spaced checkpoints.
    width : float
        Figure width in inches (default one column, 3.25); the height follows.

    Returns
    -------
    matplotlib.figure.Figure
    """
    names = dict(names or {})
    order = list(dict.fromkeys([*([in_domain] if in_domain else []), *(split_names(tasks, "tasks") or ())]))
    data = curves(store, run, order, metric=metric, filter=filter, num_fewshot=num_fewshot)
    labels = _legend_labels([names.get(t, t) + (" (in-domain)" if t == in_domain else "") for t in order], width)
    ncols = _legend_columns(labels, width)
    lines = [label.count("\n") + 1 for label in labels]
    legend_lines = sum(max(lines[i : i + ncols]) for i in range(0, len(lines), ncols))
    height = width * 0.62 + _TITLE + legend_lines * 0.15 + 0.1
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(width, height), layout="constrained")
        ax = figure.add_subplot()
        colours = iter(matplotlib.colormaps["tab10"].colors)  # type: ignore[attr-defined]  # a ListedColormap
        handles = []
        for task, label in zip(order, labels, strict=True):
            frame = data.filter(pl.col("task") == task)
            steps, value = frame["step"].to_numpy(), frame["value"].to_numpy()
            emphasised = task == in_domain
            colour = "black" if emphasised else next(colours)
            (line,) = ax.plot(
                steps, value, color=colour, lw=1.6 if emphasised else 1.0, zorder=3 if emphasised else 2, label=label
            )
            stderr = frame["stderr"].to_numpy()
            if frame["stderr"].is_not_null().any():
                ax.fill_between(steps, value - stderr, value + stderr, color=colour, alpha=0.2, lw=0, zorder=1)
            handles.append(line)
        if logx:
            positive = data.filter(pl.col("step") > 0)["step"].to_numpy()
            ax.set_xscale("symlog", linthresh=float(positive.min()) if positive.size else 1.0, linscale=0.3)
        ax.xaxis.set_major_formatter(FuncFormatter(_step_label))
        ax.set_xlabel("training step")
        ax.set_ylabel(metric if filter == "none" else f"{metric} ({filter})")
        ax.set_title(run_title(run, names), pad=3)
        ax.tick_params(labelsize=triangle.TICK_SIZE)
        ax.spines[["top", "right"]].set_visible(False)
        ax.margins(x=0.01)
        figure.legend(handles=handles, loc="outside lower center", ncols=ncols, handlelength=1.5, columnspacing=1.0)
    return figure


def _legend_labels(labels: list[str], width: float) -> list[str]:
    """``labels``, those too long for one legend column of a ``width``-inch figure wrapped onto several lines."""
    em = STYLE["legend.fontsize"] / 72
    room = width - 0.2 - (1.5 + 0.8) * em
    out = []
    for label in labels:
        wide = triangle.text_width(label, STYLE["legend.fontsize"])
        if wide > room:
            label = textwrap.fill(label, width=max(8, int(len(label) * room / wide)))
        out.append(label)
    return out


def _legend_columns(labels: Sequence[str], width: float, most: int = 3) -> int:
    """The most legend columns (up to ``most``) that fit side by side in ``width`` inches.

    Matplotlib fills the columns top to bottom, each as wide as its widest entry.
    """
    size = STYLE["legend.fontsize"]
    em = size / 72
    entries = [max(triangle.text_width(line, size) for line in label.split("\n")) + 2.3 * em for label in labels]
    for ncols in range(min(most, len(labels)), 1, -1):
        rows, longer = divmod(len(labels), ncols)  # as matplotlib splits them: the first `longer` get one more
        sizes = [rows + 1] * longer + [rows] * (ncols - longer)
        starts = np.cumsum([0, *sizes])
        widths = [max(entries[start:end]) for start, end in zip(starts[:-1], starts[1:], strict=True)]
        if sum(widths) + (ncols - 1) * em + 0.2 <= width:
            return ncols
    return 1


def _step_label(step: float, _position=None) -> str:
    """Steps the way papers print them: 500, 20k, 1.5M."""
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(step) >= scale:
            return f"{step / scale:g}{suffix}"
    return f"{step:g}"


# -- from the store ------------------------------------------------------------------------------------

#: The figures :func:`from_analysis` draws from a saved analysis.
KINDS = ("heatmap", "grid", "signs")


def from_analysis(
    store: Store,
    name: str,
    kind: str,
    *,
    runs: Sequence[str] | None = None,
    tasks: Sequence[str] | None = None,
    by: Sequence[str] | None = None,
    alpha: float = 0.05,
    inference: str = "effective",
    names: Mapping[str, str] | None = None,
    order_by: Sequence[str] | None = None,
    ncols: int | None = None,
    note: bool = True,
    width: float | None = None,
) -> PaperFigure:
    """A figure of saved analysis ``name``, with its provenance: the figures' counterpart of ``tables.from_analysis``.

    Parameters
    ----------
    kind : {"heatmap", "grid", "signs"}
        ``heatmap``: one run (``runs`` names it, unless the analysis has one);
        ``grid``: one heatmap per run, ordered by run attributes (``order_by``);
        ``signs``: the sign agreement across runs of :func:`~ood_store.analysis.compare`,
        one panel per group of ``by``.
    runs : list of str, optional
        The runs to draw (default all; for ``heatmap``, the one run).
    tasks, alpha, inference, names, note, width
        As for :func:`heatmap`; ``ncols`` as for :func:`heatmap_grid`.

    Returns
    -------
    PaperFigure
        The figure, its provenance (the analysis and every parameter, the
        plot's own settings) and what it shows in words; ``.save(path)`` writes it.
    """
    if kind not in KINDS:
        raise AnalysisError(f"must be one of {', '.join(KINDS)}, not {kind!r}", parameter="kind")
    analysis = store.analysis(name)
    chosen = split_names(runs, "runs")
    tasks = split_names(tasks, "tasks")
    grouped = f", by {', '.join(by)}" if by else ""
    source = {"heatmap": "heatmap", "grid": "heatmap grid", "signs": "sign agreement"}[kind]
    provenance = Provenance.of_analysis(
        store, name, source=f"{source} of analysis {name} (alpha {alpha:g}, {inference} inference{grouped})"
    )
    if kind == "heatmap":
        if chosen is not None and len(chosen) != 1:
            raise AnalysisError(f"a heatmap draws one run, not {len(chosen)}", parameter="runs")
        run = chosen[0] if chosen else None
        figure = heatmap(
            analysis, run, names=names, tasks=tasks, alpha=alpha, inference=inference, note=note,
            width=width or COLUMN_WIDTH,
        )  # fmt: skip
        return PaperFigure(figure, provenance, f"the heatmap of run {run or analysis.runs[0]}")
    if kind == "grid":
        ordered = display.run_order(store, list(chosen or analysis.table["run"].unique()), order_by)
        figure = heatmap_grid(
            analysis, ordered, names=names, tasks=tasks, alpha=alpha, inference=inference, note=note,
            ncols=ncols, width=width,
        )  # fmt: skip
        return PaperFigure(figure, provenance, f"heatmaps of {len(ordered)} runs")
    table = analysis.table
    if chosen is not None:
        absent = [r for r in chosen if r not in set(table["run"])]
        if absent:
            listed = ", ".join(map(repr, absent))
            raise AnalysisError(f"no run {listed} in analysis {name!r}", parameter="runs")
        table = table.filter(pl.col("run").is_in(chosen))
    order = task_order(table)  # the analysis' order, as in its heatmaps (compare sorts pairs)
    result = compare(table, by=list(by) if by else None, attributes=store, alpha=alpha, inference=inference)
    figure = sign_agreement(result, names=names, tasks=tasks or order, note=note, width=width)
    return PaperFigure(figure, provenance, f"the sign agreement of {table['run'].n_unique()} runs")


def curves_of_run(
    store: Store,
    run: str | None = None,
    *,
    analysis: str | None = None,
    tasks: Sequence[str] | None = None,
    in_domain: str | None = None,
    metric: str | None = None,
    filter: str | None = None,  # noqa: A002 - lm-eval's name for it
    num_fewshot: int | None = None,
    names: Mapping[str, str] | None = None,
    logx: bool = False,
    width: float = COLUMN_WIDTH,
) -> PaperFigure:
    """:func:`training_curves` of ``run`` with its provenance; what is not given comes from saved ``analysis``.

    ``run`` may be left out when the store has one run. The tasks, in-domain
    task, metric, filter and shots default to those of ``analysis`` (then
    ``acc`` and ``none``); without an analysis, ``tasks`` is required.
    """
    params = store.analysis(analysis).params if analysis else {}
    run = run or _only_run(store)
    chosen = split_names(tasks, "tasks") or params.get("tasks") or params.get("ood")
    if not chosen:
        raise AnalysisError("give the tasks to draw, or a saved analysis to take them from", parameter="tasks")
    in_domain = in_domain or params.get("in_domain")
    metric = metric or params.get("metric") or "acc"
    filter = filter or params.get("filter") or "none"
    num_fewshot = num_fewshot if num_fewshot is not None else params.get("num_fewshot")
    figure = training_curves(
        store, run, chosen, in_domain=in_domain, metric=metric, filter=filter, num_fewshot=num_fewshot,
        names=names, logx=logx, width=width,
    )  # fmt: skip
    source = f"training curves of run {run}"
    if analysis:
        provenance = Provenance.of_analysis(store, analysis, source=source)
    else:
        drawn = {"run": run, "tasks": list(chosen), "in_domain": in_domain, "metric": metric, "filter": filter,
                 "num_fewshot": num_fewshot}  # fmt: skip
        provenance = Provenance.of_store(store, source, params=drawn)
    count = len(dict.fromkeys([*([in_domain] if in_domain else []), *chosen]))
    return PaperFigure(figure, provenance, f"training curves of {count} tasks of run {run}")


def _only_run(store: Store) -> str:
    runs = sorted(store.runs()["run"])
    if len(runs) == 1:
        return runs[0]
    if not runs:
        raise AnalysisError("the store has no runs (see `ood-store ingest`)")
    raise AnalysisError(f"the store has {len(runs)} runs; choose one with `run`: {', '.join(runs)}")
