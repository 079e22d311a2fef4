"""Partial-correlation heatmaps: one run, a grid of runs wrapped to the page, or runs faceted by their attributes.

Each heatmap is a lower triangle of OOD × OOD cells colored by r on a
diverging map fixed to [-1, 1]. A grid (:func:`heatmap_grid`) draws one per
run, wrapped into rows and columns for the page (:mod:`~ood_store._export.grids`),
or, with ``rows``/``cols``, one row of panels per value of one run attribute
and one column per value of another (``rows="family", cols="size"``), the runs
that share a panel (the seeds, usually) pooled or drawn side by side.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import matplotlib
import polars as pl
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from ood_store._analysis import results
from ood_store._analysis.compare import DEFAULT_ADJUST_PAIRS, DEFAULT_TEST, INFERENCE, compare
from ood_store._analysis.results import PartialCorrelations
from ood_store._errors import AnalysisError
from ood_store._export import display, grids, page, triangle
from ood_store._export.captions import Method, adjusted_over_pairs, p_column
from ood_store._export.display import analysis_order

if TYPE_CHECKING:
    from ood_store._store import Database

CMAP = "RdBu_r"  # diverging: red positive, blue negative, white at 0
SEEDS = ("pool", "each")
_R_BAR = grids.ColorBar("partial correlation r", (-1, -0.5, 0, 0.5, 1))


def heatmap(
    table: PartialCorrelations | pl.DataFrame,
    run: str | None = None,
    *,
    names: Mapping[str, str] | None = None,
    tasks: Sequence[str] | None = None,
    alpha: float = 0.05,
    inference: str = "effective",
    note: bool = True,
    width: float = page.COLUMN,
) -> Figure:
    """One run's partial correlations between OOD tasks as a lower-triangle heatmap.

    Each cell is colored by r on a diverging map fixed to [-1, 1] (white at
    0) and annotated with r to two decimals (with a true minus sign; on cells
    too small for that, without the leading zero, or not at all: never below
    5 pt). Cells of pairs that are not significant (adjusted p at least
    ``alpha``) are faded to 30 % opacity with grey text; significant ones keep
    full color and bold text. A pair whose r is NaN is a grey cell marked
    "n/a". The note under the figure says what was regressed out, with which
    residualizer and test. Tasks label the rows on the left and the columns below.

    Parameters
    ----------
    table : PartialCorrelations or polars.DataFrame
        A result of :func:`~ood_store._analysis.partial_correlations` or
        ``store.analysis(name)``, or its table.
    run : str, optional
        The run to draw; required when the table has several.
    names : mapping, optional
        Display names of tasks and runs (:func:`ood_store._export.display.names`).
        A run without one is titled by the part of its name after the last ``/``.
    tasks : list of str, optional
        The OOD tasks to draw, in order; default all, in order of first appearance.
    alpha : float
        Significance level of the adjusted p-values.
    inference : {"effective", "naive"}
        ``effective`` tests with ``p_eff_adj`` (autocorrelation-aware), ``naive`` with ``p_adj``.
    note : bool
        Whether to print the note (method, marks) under the figure.
    width : float
        Figure width in inches (default one column, 3.25); the height follows.

    Returns
    -------
    matplotlib.figure.Figure
    """
    frame = check_table(table)
    runs = runs_of(frame)
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
    rows: str | None = None,
    cols: str | None = None,
    seeds: str = "pool",
    attributes: Database | pl.DataFrame | None = None,
    short_titles: bool = True,
    adjust_pairs: str = DEFAULT_ADJUST_PAIRS,
    test: str = DEFAULT_TEST,
) -> Figure:
    """A grid of :func:`heatmap` panels with one shared color bar: do results generalize across runs?

    Every panel has the same tasks in the same order. Without ``rows`` and
    ``cols`` there is one panel per run, in the order of ``runs``, wrapped
    into rows for the page (:mod:`~ood_store._export.grids`), each titled by
    the run's display name less what all of them share (said in the note).
    With ``rows`` and/or ``cols`` (run attributes), panels are faceted: one
    row per value of ``rows``, one column per value of ``cols``; the runs that
    share both values are pooled into one panel (``seeds="pool"``: random
    effects on Fisher z by :func:`~ood_store._analysis.compare` with
    ``adjust_pairs`` and ``test``, faded where the pooled p, adjusted as the
    comparison adjusts its verdicts (over every panel's pairs), is at least
    ``alpha``; a lone run is drawn as it is) or drawn
    side by side as small multiples (``seeds="each"``). Runs whose every r is
    NaN (too few checkpoints, say) are left out and named in the note.

    Parameters
    ----------
    table : PartialCorrelations or polars.DataFrame
        A partial-correlation result or table.
    runs : list of str, optional
        Runs to draw, in panel order; default every run of the table, sorted by name
        (the CLI orders them by family, size and seed: :func:`~ood_store._export.display.run_order`).
    names, tasks, alpha, inference, note
        As for :func:`heatmap`.
    ncols : int, optional
        Panels per row of an unfaceted grid; default the fewest rows of panels
        at least 1.2 in wide that fit the page's height.
    width : float, optional
        Figure width in inches; default the full page (6.75), or less when panels
        would be wider than 2 in (one column, 3.25, for a single run). The height follows.
    rows, cols : str, optional
        Run attributes (``family``, ``size``, ``seed``, any other key) to facet by.
    seeds : {"pool", "each"}
        With facets: the runs of one panel pooled, or each drawn.
    attributes : Database or polars.DataFrame, optional
        Where run attributes come from with facets: a store, or a frame with a
        ``run`` column and one column per attribute.
    short_titles : bool
        Leave out of the titles what all of them share (default); False keeps whole display names.
    adjust_pairs, test
        With pooled panels: the comparison's adjustment over pairs and test of the pooled estimate
        (:func:`~ood_store._analysis.compare`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    frame = check_table(table)
    check_test(alpha, inference)
    if seeds not in SEEDS:
        raise AnalysisError(f"must be one of {', '.join(SEEDS)}, not {seeds!r}", parameter="seeds")
    names = dict(names or {})
    known = runs_of(frame)
    chosen = list(dict.fromkeys(runs)) if runs is not None else known
    absent = [r for r in chosen if r not in known]
    if absent:
        raise AnalysisError(
            f"no run {', '.join(map(repr, absent))} in the table; it has: {', '.join(known)}", parameter="runs"
        )
    if not chosen:
        raise AnalysisError("no runs given", parameter="runs")
    order = analysis_order(table, tasks)
    if len(order) < 2:
        raise AnalysisError("a heatmap needs at least two OOD tasks")
    frame = frame.filter(pl.col("task_x").is_in(order) & pl.col("task_y").is_in(order))
    finite = set(frame.filter(pl.col("r").is_finite())["run"])
    drawn = [r for r in chosen if r in finite]
    empty = [r for r in chosen if r not in finite]
    if not drawn:
        raise AnalysisError(f"no run has a finite r to draw: {', '.join(chosen)}", parameter="runs")
    method = Method.of(table if isinstance(table, PartialCorrelations) else frame)
    marks = _Test(p_column(inference), alpha, adjust_pairs, test)
    labels = [names.get(t, t) for t in order]
    if rows is not None and rows == cols:
        raise AnalysisError(f"rows and cols are both {rows!r}; facet by two different attributes", parameter="cols")
    if rows is None and cols is None:
        facets = _wrapped(frame, drawn, order, names, marks, short_titles)
    else:
        frame_of = _attributes(attributes, [a for a in (rows, cols) if a], drawn)
        facets = _faceted(frame, drawn, order, names, marks, rows, cols, seeds, frame_of)
        panel_columns = facets.ncols - len(facets.spacers)
        facets.width = grids.width_for(labels, panel_columns, width, nrows=facets.nrows, headers=rows is not None)
    norm, cmap = Normalize(vmin=-1.0, vmax=1.0), matplotlib.colormaps[CMAP]

    def lines(layout: grids.GridLayout) -> list[str]:
        return _note(method, names, inference, marks, layout, facets, empty, frame) if note else []

    if facets.nrows == 0:  # wrapped to the page
        items = [(panel.cells, panel.title) for panel in facets.panels]
        figure, _ = grids.draw_wrapped(items, labels, ncols=ncols, width=width, cmap=cmap, norm=norm, bar=_R_BAR,
                                       note=lines)  # fmt: skip
        return figure
    figure, _ = grids.draw(
        facets.panels, labels, nrows=facets.nrows, ncols=facets.ncols, width=facets.width, cmap=cmap, norm=norm,
        bar=_R_BAR, note=lines, row_headers=facets.row_headers, spacers=facets.spacers,
    )  # fmt: skip
    return figure


@dataclass(frozen=True)
class _Test:
    column: str
    alpha: float
    adjust_pairs: str = DEFAULT_ADJUST_PAIRS  # how compare adjusts the pooled panels' tests over pairs
    test: str = DEFAULT_TEST  # compare's test of a pooled estimate

    def significant(self, p: float | None) -> bool:
        return p is not None and math.isfinite(p) and p < self.alpha


@dataclass
class _Facets:
    """The panels of a grid and how they are arranged."""

    panels: list[grids.Panel]
    nrows: int
    ncols: int
    width: float
    row_headers: Sequence[str | None] | None = None
    spacers: tuple[int, ...] = ()  # columns between groups of small multiples
    affixes: str = ""  # what the titles leave out
    pooled: str | None = None  # what was pooled, for the note


def _wrapped(frame, runs, order, names, test, short_titles) -> _Facets:
    """One panel per run, titled by its display name less what all share; :func:`grids.draw_wrapped` places them."""
    named = [_named(run, names) for run in runs]
    titles, prefix, suffix = display.shorten(named) if short_titles else (named, "", "")
    titles = [t if _named(run, names) != run else t.rsplit("/", 1)[-1] for run, t in zip(runs, titles, strict=True)]
    panels = [grids.Panel(_run_cells(frame, run, order, test), 0, 0, t) for run, t in zip(runs, titles, strict=True)]
    return _Facets(panels, 0, 0, 0.0, affixes=display.abbreviated(prefix, suffix))


def _faceted(frame, runs, order, names, test, rows, cols, seeds, attributes: pl.DataFrame) -> _Facets:
    """One row of panels per value of ``rows``, one column (or one per run, ``each``) per value of ``cols``."""
    values = {run: row for run, row in zip(attributes["run"], attributes.iter_rows(named=True), strict=True)}
    row_values = _facet_values(values, runs, rows)
    col_values = _facet_values(values, runs, cols)
    cells: dict[tuple[int, int], list[str]] = {}
    for run in runs:
        key = (row_values.index(_value(values, run, rows)), col_values.index(_value(values, run, cols)))
        cells.setdefault(key, []).append(run)
    row_headers = [facet_header(rows, v, names) for v in row_values] if rows else None
    col_headers = [facet_header(cols, v, names) for v in col_values] if cols else [None] * len(col_values)
    panels = []
    if seeds == "pool":
        pooled = _pooled(frame, runs, attributes, [a for a in (rows, cols) if a], test)
        for (i, j), members in sorted(cells.items()):
            key = tuple(v for v, a in ((row_values[i], rows), (col_values[j], cols)) if a)
            cell_rows = pooled.get(key) if len(members) > 1 else None
            built = _cells(cell_rows, order, test.alpha) if cell_rows else _run_cells(frame, members[0], order, test)
            panels.append(grids.Panel(built, i, j, col_headers[j] if i == min(r for r, c in cells if c == j) else None))
        pooled_text = " and ".join(a for a in (rows, cols) if a)
        return _Facets(panels, len(row_values), len(col_values), 0.0, row_headers, pooled=pooled_text)
    within = _within_labels(cells, names)
    slots = list(dict.fromkeys(label for cell in within.values() for label in cell.values()))
    slots.sort(key=display.natural_key)
    per = len(slots)
    for (i, j), members in sorted(cells.items()):
        for run in members:
            k = slots.index(within[(i, j)][run])
            top = i == min(r for r, c in cells if c == j)
            head = "\n".join(h for h in (col_headers[j], within[(i, j)][run]) if h) if top else None
            panels.append(grids.Panel(_run_cells(frame, run, order, test), i, j * (per + 1) + k, head))
    spacers = tuple(j * (per + 1) - 1 for j in range(1, len(col_values))) if per > 1 else ()
    if per == 1:  # no groups to set apart: the panels close up
        panels = [grids.Panel(p.cells, p.row, p.col // 2, p.title) for p in panels]
    return _Facets(panels, len(row_values), len(col_values) * (per + 1) - 1 if per > 1 else len(col_values), 0.0,
                   row_headers, spacers)  # fmt: skip


def _attributes(source, names: list[str], runs: list[str]) -> pl.DataFrame:
    from ood_store._store.runs import run_attributes

    if source is None:
        raise AnalysisError("faceting by run attributes needs the store (or a frame of run attributes)")
    if isinstance(source, pl.DataFrame):
        missing = [n for n in names if n not in source.columns]
        if missing:
            raise AnalysisError(f"no run attribute {', '.join(map(repr, missing))}", parameter="rows")
        frame = source.select("run", *[pl.col(n).cast(pl.String) for n in names])
    else:
        frame = run_attributes(source, names, parameter="rows")
    return pl.DataFrame({"run": runs}).join(frame, on="run", how="left")


def _value(values: dict, run: str, attribute: str | None):
    return values[run][attribute] if attribute else None


def _facet_values(values: dict, runs: list[str], attribute: str | None) -> list:
    if attribute is None:
        return [None]
    found = list(dict.fromkeys(values[run][attribute] for run in runs))
    return sorted(found, key=display.natural_key)


def facet_header(attribute: str, value, names: Mapping[str, str]) -> str:
    """A facet's header: its value's display name (``160m``), or ``seed 1`` for a bare number."""
    if value is None:
        return f"no {names.get(attribute, attribute)}"
    text = names.get(str(value), str(value))
    return f"{names.get(attribute, attribute)} {text}" if display.is_number(text) else text


def _within_labels(cells: dict[tuple[int, int], list[str]], names: Mapping[str, str]) -> dict:
    """For each facet cell, a label per run that tells its runs apart: the display names less what they share."""
    out = {}
    for key, members in cells.items():
        titles = [_named(run, names) for run in members]
        out[key] = dict(zip(members, display.shorten(titles)[0] if len(members) > 1 else [""], strict=True))
    return out


def _pooled(frame, runs, attributes, by, test: _Test) -> dict[tuple, list[dict]]:
    """The runs of each facet pooled by :func:`~ood_store._analysis.compare`: group values -> rows as r and p, the
    pooled p adjusted as compare adjusts its verdicts (``p_pooled_adj``)."""
    inference = "effective" if test.column == "p_eff_adj" else "naive"
    result = compare(frame.filter(pl.col("run").is_in(runs)), by=by, attributes=attributes, alpha=test.alpha,
                     inference=inference, adjust_pairs=test.adjust_pairs, test=test.test).table  # fmt: skip
    out: dict[tuple, list[dict]] = {}
    for row in result.iter_rows(named=True):
        key = tuple(row[a] for a in by)
        out.setdefault(key, []).append(
            {"task_x": row["task_x"], "task_y": row["task_y"], "r": row["r_pooled"], "p": row["p_pooled_adj"]}
        )
    return out


def _run_cells(frame: pl.DataFrame, run: str, order, test: _Test) -> triangle.Cells:
    rows = [
        {"task_x": row["task_x"], "task_y": row["task_y"], "r": row["r"], "p": row[test.column]}
        for row in frame.filter(pl.col("run") == run).iter_rows(named=True)
    ]
    return _cells(rows, order, test.alpha)


def _cells(rows: list[dict], order, alpha: float) -> triangle.Cells:
    test = _Test("p", alpha)
    return triangle.pair_cells(
        order,
        pair_rows(rows),
        value=lambda r: r["r"],
        label=lambda r: signed(r["r"]),
        muted=lambda r: not test.significant(r["p"]),
        bold=lambda r: test.significant(r["p"]),
    )


def _note(method: Method, names, inference, test: _Test, layout: grids.GridLayout, facets: _Facets, empty, frame):
    lines = []
    regressed = method.regressed_out(names)
    if regressed:
        lines.append(regressed[0].upper() + regressed[1:] + ".")
    n = "effective" if inference == "effective" else "naive"
    if facets.pooled:
        lines.append(
            f"Panels pool the runs of each {facets.pooled}: random effects on Fisher z with each run's {n} n "
            f"(a lone run: its {test.column})."
        )
        adjusted = adjusted_over_pairs(test.adjust_pairs, test.test)
        test_text = f"Bold: pooled p < {test.alpha:g} ({adjusted}); faded: not significant."
        if not layout.numbers:
            test_text = f"Faded: not significant, pooled p \u2265 {test.alpha:g} ({adjusted})."
    elif layout.numbers:
        test_text = f"Bold: {test.column} < {test.alpha:g}; faded: not significant ({method.test(inference)})."
    else:
        test_text = f"Faded: not significant, {test.column} \u2265 {test.alpha:g} ({method.test(inference)})."
    if not layout.numbers:
        test_text += " The cells are too small at this width to print r: the color bar gives it."
    lines.append(test_text)
    if facets.affixes:
        lines.append(f"Runs: {facets.affixes}")
    if empty:
        reasons = {
            run: next(iter(frame.filter(pl.col("run") == run)["reason"].drop_nulls()), None)
            if "reason" in frame.columns else None
            for run in empty
        }  # fmt: skip
        listed = ", ".join(f"{names.get(r, r)} ({reasons[r]})" if reasons[r] else names.get(r, r) for r in empty)
        lines.append(f"Left out, no finite r: {listed}.")
    return lines


# -- shared with the other figures ---------------------------------------------------------------------


def signed(value: float) -> str:
    """``value`` to two decimals with a typographic minus sign."""
    return f"{value:.2f}".replace("-", "\u2212")


def check_table(data: PartialCorrelations | pl.DataFrame) -> pl.DataFrame:
    table = results.partial_frame(data)
    if table.is_empty():
        raise AnalysisError("the partial-correlation table has no rows")
    return table


def check_test(alpha: float, inference: str) -> None:
    if inference not in INFERENCE:
        raise AnalysisError(f"inference must be one of {', '.join(INFERENCE)}, not {inference!r}")
    if not 0 < alpha < 1:
        raise AnalysisError(f"alpha must be between 0 and 1, not {alpha}")


def runs_of(table: pl.DataFrame) -> list[str]:
    return sorted(table["run"].unique())


def pair_rows(rows) -> dict[frozenset, dict]:
    """Rows (a frame or dicts) by their unordered pair of tasks."""
    items = rows.iter_rows(named=True) if isinstance(rows, pl.DataFrame) else rows
    return {frozenset((row["task_x"], row["task_y"])): row for row in items}


def _named(run: str, names: Mapping[str, str]) -> str:
    """A run's display name from ``names`` (by its full name or the part after the last ``/``), else the run."""
    return names.get(run) or names.get(run.rsplit("/", 1)[-1]) or run


def run_title(run: str, names: Mapping[str, str] | None = None) -> str:
    """A run's display name: from ``names`` (full or short name), else the part after the last ``/``."""
    names = names or {}
    short = run.rsplit("/", 1)[-1]
    return names.get(run) or names.get(short) or short
