"""Figures for papers: partial-correlation heatmaps (one run, or a grid of runs), forest plots, training curves,
sign agreement.

Every function returns a :class:`matplotlib.figure.Figure` (made without
pyplot, so nothing accumulates and nothing is shown) sized for a two-column
paper: one column (3.25 in) wide by default, the full page (6.75 in, less for
a few runs) for grids of panels, 8 pt text and nothing smaller than 5 pt.
Write one with :func:`save`, which picks PDF, PNG or SVG by the file's
extension and records where the figure came from in its metadata. Every
figure of an analysis says in its note what was regressed out, with which
residualizer, and which p-values mark significance.

Heatmaps and sign matrices are lower triangles: for OOD tasks ``t0 .. tk-1``
the rows are ``t1 .. tk-1`` and the columns ``t0 .. tk-2``, each pair drawn once.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import matplotlib
import numpy as np
import polars as pl
from matplotlib.colors import ListedColormap, Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from ood_store._analysis import results
from ood_store._analysis.compare import DEFAULT_ADJUST_PAIRS, DEFAULT_TEST, compare
from ood_store._analysis.crossed import RESAMPLES
from ood_store._analysis.results import COMPARISON_COLUMNS, Comparison
from ood_store._analysis.saved import saved_analysis
from ood_store._errors import AnalysisError
from ood_store._export import display, grids, page, steps, triangle
from ood_store._export.captions import Method, adjusted_over_pairs
from ood_store._export.curves import curves
from ood_store._export.display import analysis_order, task_order
from ood_store._export.figure_files import FORMATS, STYLE, PaperFigure, file_format, save
from ood_store._export.forest import forest
from ood_store._export.heatmaps import CMAP, SEEDS, facet_header, heatmap, heatmap_grid, pair_rows, run_title
from ood_store._export.provenance import Provenance
from ood_store._names import split_names
from ood_store._store.runs import attribute_columns
from ood_store._store.selection import runs as list_runs

if TYPE_CHECKING:
    from ood_store._store import Database

__all__ = [
    "FORMATS", "KINDS", "SEEDS", "PaperFigure", "curves_of_run", "file_format", "forest", "from_analysis", "heatmap",
    "heatmap_grid", "run_title", "save", "sign_agreement", "task_order", "training_curves",
]  # fmt: skip

COLUMN_WIDTH = page.COLUMN  # inches: one column of a two-column paper (ACL, NeurIPS-style, IEEE ~3.3)
PAGE_WIDTH = page.PAGE  # inches: the full text width of a two-column paper
# Sign counts are mostly unanimous; the middle three quarters of the map keep those cells from going near-black.
_SIGN_CMAP = ListedColormap(matplotlib.colormaps[CMAP](np.linspace(0.125, 0.875, 256)), name="RdBu_r_light")
_SIGN_BAR = grids.ColorBar(None, (-1, 0, 1), ("all r<0", "split", "all r>0"))
_TITLE = 0.2  # inches a title takes
#: How the sign matrix shows a verdict of :func:`~ood_store._analysis.compare` (read from its ``verdict``
#: column; the rule that makes them is the analysis'). Verdicts not listed are drawn plain.
VERDICT_STYLE = {"model-dependent": "hatched", "consistently positive": "bold", "consistently negative": "bold"}


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

    Each cell is colored by ``(n_positive - n_negative) / runs`` on the same
    diverging map as the heatmaps (1: every run positive, -1: every run
    negative, 0: split evenly) and annotated ``"3+ 0−"`` (runs with r > 0 and
    r < 0). The verdict column of the comparison styles the cells
    (:data:`VERDICT_STYLE`): ``model-dependent`` ones are hatched,
    ``consistently positive``/``negative`` ones have bold text. A compare
    result with ``by`` columns gives one panel per group.

    Parameters
    ----------
    result : Comparison or polars.DataFrame
        A :func:`~ood_store._analysis.compare` result, or its table.
    names : mapping, optional
        Display names of tasks and group values.
    tasks : list of str, optional
        The OOD tasks to draw, in order; default all, in order of first appearance.
    note : bool
        Whether to print the legend of hatching and bold text (and the method) under the figure.
    width : float, optional
        Figure width in inches; default one column (3.25) for one panel, the full
        page (6.75) or less for several, as for :func:`heatmap_grid`. The height follows.

    Returns
    -------
    matplotlib.figure.Figure
    """
    frame = results.comparison_table(result)
    if frame.is_empty():
        raise AnalysisError("the compare result has no rows")
    names = dict(names or {})
    group_columns = [c for c in frame.columns if c not in COMPARISON_COLUMNS and not c.startswith("r:")]
    groups = _groups(frame, group_columns)
    order = task_order(frame, tasks)
    if len(order) < 2:
        raise AnalysisError("a sign matrix needs at least two OOD tasks")
    labels = [names.get(t, t) for t in order]
    items = []
    for key, group in groups:
        cells = triangle.pair_cells(
            order,
            pair_rows(group),
            value=lambda r: (r["n_positive"] - r["n_negative"]) / r["runs"] if r["runs"] else None,
            label=lambda r: f"{r['n_positive']}+ {r['n_negative']}\u2212",
            bold=lambda r: VERDICT_STYLE.get(str(r["verdict"])) == "bold",
            outlined=lambda r: VERDICT_STYLE.get(str(r["verdict"])) == "bold",
            hatched=lambda r: VERDICT_STYLE.get(str(r["verdict"])) == "hatched",
        )
        title = ", ".join(facet_header(c, v, names) for c, v in zip(group_columns, key, strict=True)) or None
        items.append((cells, title))

    def lines(layout: grids.GridLayout) -> list[str]:
        return _sign_note(result, names, layout) if note else []

    figure, _ = grids.draw_wrapped(
        items, labels, ncols=None, width=width, cmap=_SIGN_CMAP, norm=Normalize(vmin=-1.0, vmax=1.0), bar=_SIGN_BAR,
        note=lines,
    )  # fmt: skip
    return figure


def _sign_note(result, names, layout: grids.GridLayout) -> list[str]:
    lines = []
    regressed = Method.of(result).regressed_out(names)
    if regressed:
        lines.append(regressed[0].upper() + regressed[1:] + ".")
    counted = (
        "+/\u2212: runs with r > 0 / r < 0." if layout.numbers else "Color: the balance of runs with r > 0 and r < 0."
    )
    hatched = [v for v, style in VERDICT_STYLE.items() if style == "hatched"]
    bold = [v for v, style in VERDICT_STYLE.items() if style == "bold"]
    how = ""
    if isinstance(result, Comparison):
        how = (
            f" (compare at alpha {result.alpha:g}, {adjusted_over_pairs(result.adjust_pairs, result.test)}, "
            f"{result.inference} inference, agreement {result.agreement:g})"
        )
    lines.append(f"{counted} Hatched: {' or '.join(hatched)}; framed: {' or '.join(bold)}{how}.")
    return lines


def _groups(result: pl.DataFrame, columns: list[str]) -> list[tuple[tuple, pl.DataFrame]]:
    if not columns:
        return [((), result)]
    groups = [(tuple(key), frame) for key, frame in result.group_by(columns, maintain_order=True)]
    return sorted(groups, key=lambda item: tuple(display.natural_key(v) for v in item[0]))


# -- training curves ----------------------------------------------------------------------------------


def training_curves(
    store: Database,
    run: str,
    tasks: Sequence[str] | str,
    *,
    in_domain: str | None = None,
    metric: str = "acc",
    filter: str = "none",  # noqa: A002 - lm-eval's name for it
    num_fewshot: int | None = None,
    names: Mapping[str, str] | None = None,
    x_scale: str = "auto",
    width: float = COLUMN_WIDTH,
) -> Figure:
    """The scores of one run over its training steps, one line per task, with ±1 standard-error bands.

    The in-domain task, when given, is drawn thicker in black and labeled
    "(in-domain)" in the legend; the other tasks get the colors of
    matplotlib's ``tab10`` cycle. A band is drawn wherever the store has the
    score's standard error and left out where it has none. The data come from
    :func:`ood_store._export.curves.curves` (one SQL query).

    Parameters
    ----------
    store, run, tasks, metric, filter, num_fewshot
        As for :func:`~ood_store._export.curves.curves`; ``in_domain`` is added to
        ``tasks`` first when missing.
    in_domain : str, optional
        The in-domain task, drawn emphasized.
    names : mapping, optional
        Display names of tasks and the run.
    x_scale : {"auto", "linear", "log"}
        The step axis: ``log`` is a symmetric log scale, linear from 0 to the first nonzero step (step 0
        shown), for log-spaced checkpoints; ``auto`` (default) picks it where the run's checkpoints are
        log-spaced (:func:`~ood_store._export.steps.is_log_spaced`), else ``linear``.
    width : float
        Figure width in inches (default one column, 3.25); the height follows.

    Returns
    -------
    matplotlib.figure.Figure
    """
    steps.check_x_scale(x_scale)
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
        colors = iter(matplotlib.colormaps["tab10"].colors)  # type: ignore[attr-defined]  # a ListedColormap
        handles = []
        for task, label in zip(order, labels, strict=True):
            frame = data.filter(pl.col("task") == task)
            at, value = frame["step"].to_numpy(), frame["value"].to_numpy()
            emphasized = task == in_domain
            color = "black" if emphasized else next(colors)
            (line,) = ax.plot(
                at, value, color=color, lw=1.6 if emphasized else 1.0, zorder=3 if emphasized else 2, label=label
            )
            stderr = frame["stderr"].to_numpy()
            if frame["stderr"].is_not_null().any():
                ax.fill_between(at, value - stderr, value + stderr, color=color, alpha=0.2, lw=0, zorder=1)
            handles.append(line)
        steps.set_step_axis(ax, data["step"].to_list(), x_scale)
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
KINDS = ("heatmap", "grid", "signs", "forest")
_SOURCES = {"heatmap": "heatmap", "grid": "heatmap grid", "signs": "sign agreement", "forest": "forest plot"}


def from_analysis(
    store: Database,
    name: str,
    kind: str,
    *,
    runs: Sequence[str] | None = None,
    tasks: Sequence[str] | None = None,
    by: Sequence[str] | None = None,
    alpha: float = 0.05,
    inference: str = "effective",
    adjust_pairs: str = DEFAULT_ADJUST_PAIRS,
    test: str = DEFAULT_TEST,
    item_inference: str = "auto",
    item_resamples: int = RESAMPLES,
    names: Mapping[str, str] | None = None,
    order_by: Sequence[str] | None = None,
    ncols: int | None = None,
    rows: str | None = None,
    cols: str | None = None,
    seeds: str = "pool",
    color_by: str | None = None,
    short_titles: bool = True,
    note: bool = True,
    width: float | None = None,
) -> PaperFigure:
    """A figure of saved analysis ``name``, with its provenance: the figures' counterpart of ``tables.from_analysis``.

    Parameters
    ----------
    kind : {"heatmap", "grid", "signs", "forest"}
        ``heatmap``: one run (``runs`` names it, unless the analysis has one);
        ``grid``: one heatmap per run, ordered by run attributes (``order_by``),
        or faceted by ``rows`` and ``cols`` (:func:`heatmap_grid`);
        ``signs``: the sign agreement across runs of :func:`~ood_store._analysis.compare`,
        one panel per group of ``by``;
        ``forest``: per pair, each run's r colored by ``color_by`` (default the
        family, where runs have one) and the pooled r of ``compare`` with its interval.
    runs : list of str, optional
        The runs to draw (default all; for ``heatmap``, the one run).
    tasks, alpha, inference, names, note, width
        As for :func:`heatmap`; ``ncols``, ``rows``, ``cols``, ``seeds`` and
        ``short_titles`` as for :func:`heatmap_grid`.
    adjust_pairs, test
        How the verdicts and pooled intervals of ``signs``, ``forest`` and a pooled
        ``grid`` are adjusted over pairs and tested (:func:`~ood_store._analysis.compare`).
    item_inference, item_resamples
        Whether the verdicts of ``signs`` and ``forest`` generalize over items as well as runs (by default
        where the store holds per-sample rows; :func:`~ood_store._analysis.compare`).

    Returns
    -------
    PaperFigure
        The figure, its provenance (the analysis and every parameter, the
        plot's own settings) and what it shows in words; ``.save(path)`` writes it.
    """
    if kind not in KINDS:
        raise AnalysisError(f"must be one of {', '.join(KINDS)}, not {kind!r}", parameter="kind")
    analysis = saved_analysis(store, name)
    chosen = split_names(runs, "runs")
    tasks = split_names(tasks, "tasks")
    settings = [f"alpha {alpha:g}", f"{inference} inference", f"{test} test", f"{adjust_pairs} over pairs"]
    settings += [f"item inference {item_inference}"] if kind in ("signs", "forest") else []
    settings += [f"by {', '.join(by)}"] if by else []
    settings += [f"{what} {value}" for what, value in (("rows", rows), ("cols", cols), ("color by", color_by)) if value]
    provenance = Provenance.of_analysis(
        store, name, source=f"{_SOURCES[kind]} of analysis {name} ({', '.join(settings)})"
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
            ncols=ncols, width=width, rows=rows, cols=cols, seeds=seeds, attributes=store, short_titles=short_titles,
            adjust_pairs=adjust_pairs, test=test,
        )  # fmt: skip
        faceted = f", by {' and '.join(a for a in (rows, cols) if a)}" if rows or cols else ""
        return PaperFigure(figure, provenance, f"heatmaps of {len(ordered)} runs{faceted}")
    subset = _subset(analysis, chosen, name)
    if kind == "forest":
        result = compare(subset, alpha=alpha, inference=inference, adjust_pairs=adjust_pairs, test=test, items=store,
                         item_inference=item_inference, item_resamples=item_resamples)  # fmt: skip
        ordered = display.run_order(store, subset.table["run"].unique(), order_by)
        groups, group_name = _color_groups(store, ordered, color_by)
        figure = forest(result, groups=groups, group_name=group_name, runs=ordered, names=names,
                        tasks=tasks or analysis_order(subset), note=note, width=width or COLUMN_WIDTH)  # fmt: skip
        return PaperFigure(
            figure, provenance, f"a forest plot of {result.table.height} pairs across {len(ordered)} runs"
        )
    order = analysis_order(subset)  # the analysis' order, as in its heatmaps (compare sorts pairs)
    result = compare(subset, by=list(by) if by else None, attributes=store, alpha=alpha, inference=inference,
                     adjust_pairs=adjust_pairs, test=test, item_inference=item_inference,
                     item_resamples=item_resamples)  # fmt: skip
    figure = sign_agreement(result, names=names, tasks=tasks or order, note=note, width=width)
    return PaperFigure(figure, provenance, f"the sign agreement of {subset.table['run'].n_unique()} runs")


def _subset(analysis, chosen: Sequence[str] | None, name: str):
    """The analysis restricted to the ``chosen`` runs (all when None), still a result with its options."""
    if chosen is None:
        return analysis
    absent = [r for r in chosen if r not in set(analysis.table["run"])]
    if absent:
        raise AnalysisError(f"no run {', '.join(map(repr, absent))} in analysis {name!r}", parameter="runs")
    return dataclasses.replace(analysis, table=analysis.table.filter(pl.col("run").is_in(chosen)), runs=tuple(chosen))


def _color_groups(store: Database, runs: Sequence[str], color_by: str | None) -> tuple[dict, str | None]:
    """Run -> value of ``color_by`` (default the family, if any run has one), and the attribute's name."""
    attribute = color_by or "family"
    frame = attribute_columns(store, [attribute]).filter(pl.col("run").is_in(list(runs)))
    if frame[attribute].is_null().all():
        if color_by is not None:
            raise AnalysisError(f"no run has attribute {color_by!r}", parameter="color_by")
        return {}, None
    return dict(zip(frame["run"], frame[attribute], strict=True)), attribute


def curves_of_run(
    store: Database,
    run: str | None = None,
    *,
    analysis: str | None = None,
    tasks: Sequence[str] | None = None,
    in_domain: str | None = None,
    metric: str | None = None,
    filter: str | None = None,  # noqa: A002 - lm-eval's name for it
    num_fewshot: int | None = None,
    names: Mapping[str, str] | None = None,
    x_scale: str = "auto",
    width: float = COLUMN_WIDTH,
) -> PaperFigure:
    """:func:`training_curves` of ``run`` with its provenance; what is not given comes from saved ``analysis``.

    ``run`` may be left out when the store has one run. The tasks, in-domain
    task, metric, filter and shots default to those of ``analysis`` (then
    ``acc`` and ``none``); without an analysis, ``tasks`` is required. ``x_scale``: the step axis, as for
    :func:`training_curves` (``auto``: log where the checkpoints are log-spaced).
    """
    params = saved_analysis(store, analysis).params if analysis else {}
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
        names=names, x_scale=x_scale, width=width,
    )  # fmt: skip
    source = f"training curves of run {run}"
    if analysis:
        provenance = Provenance.of_analysis(store, analysis, source=source)
    else:
        drawn = {"run": run, "tasks": list(chosen), "in_domain": in_domain, "metric": metric, "filter": filter,
                 "num_fewshot": num_fewshot, "x_scale": x_scale}  # fmt: skip
        provenance = Provenance.of_store(store, source, params=drawn)
    count = len(dict.fromkeys([*([in_domain] if in_domain else []), *chosen]))
    return PaperFigure(figure, provenance, f"training curves of {count} tasks of run {run}")


def _only_run(store: Database) -> str:
    runs = sorted(list_runs(store)["run"])
    if len(runs) == 1:
        return runs[0]
    if not runs:
        raise AnalysisError("the store has no runs (see `ood-store ingest`)")
    raise AnalysisError(f"the store has {len(runs)} runs; choose one with `run`: {', '.join(runs)}")
