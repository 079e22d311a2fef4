"""Tables for papers: a saved analysis, a comparison across runs, or any query, as LaTeX, Markdown, CSV, JSON, Parquet.

The builders (:func:`partial_table`, :func:`compare_table`, :func:`query_table`,
and :func:`from_analysis` / :func:`from_query` that read the store) return a
:class:`~ood_store._export.paper_table.PaperTable`: the rows as a tidy Polars
frame and a layout for the typeset formats. Every file written carries its
:class:`~ood_store._export.provenance.Provenance`; every caption says what was
regressed out, with which residualizer, and which p-values the marks use.

A table with many runs or testsets can be too wide for the page: ``fit()``
measures it (:mod:`~ood_store._export.table_fit`) and names the changes that
make it fit, each a keyword here: ``transpose`` (pairs as rows, runs as
columns), ``compact`` (two-letter codes for testsets with a key, run names
less what they share, numbers without leading zeros), ``landscape``,
``digits``, ``split``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import polars as pl

from ood_store._analysis import results
from ood_store._analysis.compare import DEFAULT_ADJUST_PAIRS, DEFAULT_TEST, INFERENCE, compare
from ood_store._analysis.crossed import RESAMPLES
from ood_store._analysis.results import COMPARISON_COLUMNS, Comparison, PartialCorrelations
from ood_store._analysis.saved import saved_analysis
from ood_store._errors import AnalysisError
from ood_store._export import display, page
from ood_store._export.captions import Method, adjusted_over_pairs
from ood_store._export.paper_table import FORMATS, PARQUET_KEY, Column, PaperTable, format_of
from ood_store._export.provenance import Provenance

if TYPE_CHECKING:
    from ood_store._store import Database

__all__ = [
    "FORMATS", "MARKS", "PARQUET_KEY", "STARS", "Column", "Layout", "PaperTable", "compare_table", "format_of",
    "from_analysis", "from_query", "partial_table", "query_table",
]  # fmt: skip

MARKS = ("stars", "bold", "none")
#: Significance levels of the stars: p < 0.001 ***, p < 0.01 **, p < 0.05 *.
STARS = ((0.001, "***"), (0.01, "**"), (0.05, "*"))
_P_LATEX = {"p_eff_adj": r"$p_{\mathrm{eff,adj}}$", "p_adj": r"$p_{\mathrm{adj}}$"}
_COMPACT_HEADERS = {"Testset X": "X", "Testset Y": "Y", "Sign agreement": "Agree", "Bootstrap CI": "Boot. CI"}


class Layout(TypedDict, total=False):
    """How every builder typesets its table; the keywords are documented at :func:`partial_table`."""

    digits: int | None
    names: Mapping[str, str] | None
    runs: Sequence[str] | None
    caption: str | None
    label: str | None
    provenance: Provenance | None
    compact: bool
    width: str | float
    landscape: bool
    split: bool
    long: bool | None


def partial_table(
    table: PartialCorrelations | pl.DataFrame,
    *,
    wide: bool = False,
    transpose: bool = False,
    inference: str = "effective",
    mark: str = "stars",
    **layout: Unpack[Layout],
) -> PaperTable:
    """A partial-correlation table (``analyze``, a saved analysis) for a paper.

    Parameters
    ----------
    table : PartialCorrelations or polars.DataFrame
        A result of :func:`~ood_store._analysis.partial_correlations` or ``Store.analysis``, or its rows.
    wide : bool
        One row per run and one column of r per pair of testsets, instead of
        one row per run and pair.
    transpose : bool
        A wide table the other way round: one row per pair, one column per run.
    inference : {"effective", "naive"}
        Which adjusted p marks significance: ``p_eff_adj`` (autocorrelation-aware,
        the default) or ``p_adj``; the long table shows that p and its ``n_eff`` or ``n``.
    mark : {"stars", "bold", "none"}
        Stars (p < 0.05 ``*``, 0.01 ``**``, 0.001 ``***``), bold for p < 0.05, or nothing.
    digits : int, optional
        Decimals (typeset default 2; CSV, JSON and Parquet keep full precision unless given).
    names : mapping, optional
        Display names of testsets and runs (:func:`~ood_store._export.display.names`).
    runs : sequence of str, optional
        The runs in the order to print them (:func:`~ood_store._export.display.run_order`);
        default: as in ``table``, sorted by name. Runs not listed are left out.
    caption, label : str, optional
        Default: a caption that says the in-domain task, residualizer, method and
        marks; label ``tab:partial-correlations``.
    provenance : Provenance, optional
        Where the rows came from, written into every file.
    compact : bool
        Testsets as two-letter codes (:func:`~ood_store._export.display.codes`)
        with a key in the caption, runs less what their names share, numbers
        without leading zeros (``.35``).
    width : str or float
        LaTeX: the text width of the page (``page``, the default: 6.75 in),
        ``column`` (one column of it), a TeX length such as ``16cm`` or inches.
    landscape, split, long : bool
        LaTeX: turned sideways (``sidewaystable``); split into as many tables
        as it takes to fit the width; a ``longtable`` (default: when taller than a page).

    Examples
    --------
    >>> import polars as pl
    >>> rows = pl.DataFrame({"run": ["m"], "task_x": ["hans"], "task_y": ["rte"], "n": [20], "r": [0.61],
    ...     "ci_low": [0.22], "ci_high": [0.83], "p_adj": [0.004], "n_eff": [12.5], "p_eff_adj": [0.03]})
    >>> table = partial_table(rows, names={"hans": "HANS", "rte": "RTE"})
    >>> print(table.to_markdown(), end="")  # doctest: +ELLIPSIS
    | Run   | Testset X   | Testset Y   |   n_eff |     r |       95% CI |   p_eff_adj |
    |:------|:------------|:------------|--------:|------:|-------------:|------------:|
    | m     | HANS        | RTE         |   12.50 | 0.61* | [0.22, 0.83] |       0.030 |
    <BLANKLINE>
    Table: Partial correlations between OOD testsets. Stars: * p_eff_adj < 0.05, ** < 0.01, *** < 0.001 (...).
    """
    _check_choice("inference", inference, INFERENCE)
    _check_choice("mark", mark, MARKS)
    source = table
    table = results.partial_frame(table, also=("ci_low", "ci_high"))
    p = "p_eff_adj" if inference == "effective" else "p_adj"
    runs = layout.get("runs")
    order = list(runs) if runs is not None else sorted(set(table["run"]))
    rows = (
        display.pair_order(table.filter(pl.col("run").is_in(order)), display.analysis_order(source))
        .with_columns(_run_rank=pl.col("run").replace_strict({run: i for i, run in enumerate(order)}, default=None))
        .sort("_run_rank", maintain_order=True)
        .drop("_run_rank")
    )
    names = dict(layout.get("names") or {})
    method = Method.of(source)
    regressed = method.regressed_out(names)
    default_caption = "Partial correlations between OOD testsets" + (f" with {regressed}" if regressed else "") + "."
    shown = _Names.of(rows, names, order, bool(layout.get("compact")))
    options = {"wide": wide, "transpose": transpose, "inference": inference, "mark": mark, "compact": False, **layout}
    common = _common(layout, options, functools.partial(partial_table, source), default_caption,
                     "tab:partial-correlations", _note(mark, p, method.test(inference)), shown.key)  # fmt: skip
    if wide or transpose:
        return _wide(rows, p, shown, transpose, mark, common)
    boot = "boot_ci_low" in rows.columns and rows["boot_ci_low"].fill_nan(None).is_not_null().any()
    size = "n_eff" if inference == "effective" else "n"
    keep = ["run", "task_x", "task_y", size, "r", "ci_low", "ci_high", *(["boot_ci_low", "boot_ci_high"] * boot), p]
    frame = shown.apply(rows.select(keep), ("run",), ("task_x", "task_y"))
    size_column = (
        Column("n_eff", "n_eff", "float", latex=r"$n_{\mathrm{eff}}$")
        if size == "n_eff"
        else Column("n", "n", "int", latex="$n$")
    )
    columns = (
        Column("run", "Run", "text"),
        Column("task_x", shown.header("Testset X"), "text"),
        Column("task_y", shown.header("Testset Y"), "text"),
        size_column,
        Column("r", "r", "float", latex="$r$", marked=True),
        Column("ci_low", "95% CI", "ci", high="ci_high"),
        *([Column("boot_ci_low", shown.header("Bootstrap CI"), "ci", high="boot_ci_high")] if boot else []),
        Column(p, p, "p", latex=_P_LATEX[p]),
    )
    marks = pl.DataFrame({"r": [_stars(v) for v in frame[p]]}, schema={"r": pl.String})
    return PaperTable(frame=frame, columns=columns, marks=marks, mark=mark, group="run", **common)


def _wide(rows: pl.DataFrame, p: str, shown: _Names, transpose: bool, mark: str, common: dict) -> PaperTable:
    """Runs by pairs (``transpose``: pairs by runs), r in each cell, marked by ``p``."""
    named = shown.apply(rows, ("run",), ("task_x", "task_y"))
    named = named.with_columns(pair=pl.concat_str("task_x", pl.lit("–"), "task_y"))
    pairs = list(dict.fromkeys(named["pair"]))
    marked = named.with_columns(mark=pl.col(p).map_elements(_stars, return_dtype=pl.String))
    index, columns_of = ("pair", "run") if transpose else ("run", "pair")
    frame = named.pivot(on=columns_of, index=index, values="r", aggregate_function=None, maintain_order=True)
    marks = marked.pivot(on=columns_of, index=index, values="mark", aggregate_function=None, maintain_order=True)
    keys = list(dict.fromkeys(named[columns_of]))
    frame = frame.select(index, *keys)
    marks = marks.select(*keys).fill_null("")
    if transpose:
        frame = frame.sort(pl.col("pair").replace_strict({pair: i for i, pair in enumerate(pairs)}))
    first = Column("pair", "Pair", "text") if transpose else Column("run", "Run", "text")
    columns = (first, *(Column(key, key, "float", marked=True) for key in keys))
    return PaperTable(frame=frame, columns=columns, marks=marks, mark=mark, **common)


def compare_table(
    result: Comparison | pl.DataFrame,
    *,
    wide: bool = False,
    mark: str = "stars",
    **layout: Unpack[Layout],
) -> PaperTable:
    """A comparison across runs (:func:`~ood_store._analysis.compare`) for a paper.

    One row per pair of testsets (and group of the comparison's ``by``): runs, sign agreement,
    pooled r with its interval, I² and the verdict. The pooled r is marked by
    its p-value as the comparison adjusted it over pairs (``p_pooled_adj``), and
    the interval is the adjusted one (``ci_low_adj``, ``ci_high_adj``), which
    excludes 0 exactly where that p is below the comparison's alpha: the
    table shows what the verdicts read.
    ``wide`` adds each run's r, in the order of ``runs``. The other keywords
    are those of :func:`partial_table` (a comparison has no ``transpose``:
    with ``wide`` its runs are columns already).
    """
    _check_choice("mark", mark, MARKS)
    source = result
    result = results.comparison_table(result)
    absent = [c for c in ("p_pooled_adj", "ci_low_adj", "ci_high_adj") if c not in result.columns]
    if absent:
        raise AnalysisError(f"not a comparison of this version: no column(s) {', '.join(absent)}", parameter="result")
    groups = [c for c in result.columns if c not in COMPARISON_COLUMNS and not c.startswith("r:")]
    per_run = [c.removeprefix("r:") for c in result.columns if c.startswith("r:")]
    runs = layout.get("runs")
    if runs is not None:
        per_run = [run for run in runs if run in per_run]
    names = dict(layout.get("names") or {})
    keep = [*groups, "task_x", "task_y", "runs", "sign_agreement", "r_pooled", "ci_low_adj", "ci_high_adj",
            "p_pooled_adj", "i2", "verdict", *(["basis"] if "basis" in result.columns else []),
            *([f"r:{run}" for run in per_run] if wide else [])]  # fmt: skip
    frame = result.select(keep)
    if isinstance(source, Comparison) and source.source is not None:  # pairs in the analysis' order
        frame = display.pair_order(frame, display.analysis_order(source.source))
    if groups:  # groups in attribute order (sizes as numbers), pairs as compare sorted them
        ranks = {g: {v: i for i, v in enumerate(sorted(set(frame[g]), key=display.natural_key))} for g in groups}
        frame = frame.sort([pl.col(g).replace_strict(ranks[g]) for g in groups], maintain_order=True)
    shown = _Names.of(frame, names, per_run, bool(layout.get("compact")))
    frame = shown.apply(frame, groups, ("task_x", "task_y"))
    frame = frame.rename({f"r:{run}": f"r:{shown.run(run)}" for run in per_run if wide})
    columns = (
        *(Column(g, names.get(g, g), "text") for g in groups),
        Column("task_x", shown.header("Testset X"), "text"),
        Column("task_y", shown.header("Testset Y"), "text"),
        Column("runs", "Runs", "int"),
        Column("sign_agreement", shown.header("Sign agreement"), "float"),
        Column("r_pooled", "Pooled r", "float", latex=r"Pooled $r$", marked=True),
        Column("ci_low_adj", "Adj. CI", "ci", high="ci_high_adj"),
        Column("i2", "I²", "float", latex=r"$I^2$"),
        Column("verdict", "Verdict", "text"),
        *(Column(f"r:{shown.run(run)}", shown.run(run), "float") for run in (per_run if wide else [])),
    )
    method = Method.of(source)
    regressed = method.regressed_out(names)
    inference = source.inference if isinstance(source, Comparison) else None
    over_items = isinstance(source, Comparison) and source.item_resamples is not None
    pooled = "pooled across runs (random effects on Fisher z" + (f", {inference} n" if inference else "") + ")"
    if over_items:
        pooled = "pooled across runs and items (the in-domain testset's item noise taken out)"
    default_caption = "Partial correlations" + (f" with {regressed}" if regressed else "") + f", {pooled}."
    options = {"wide": wide, "mark": mark, "compact": False, **layout}
    if isinstance(source, Comparison):
        adjusted = adjusted_over_pairs(source.adjust_pairs, "crossed" if over_items else source.test)
        level = f"alpha {source.alpha:g}"
    else:
        adjusted, level = "as compare adjusted it", "the comparison's alpha"
    note = _note(mark, "p", f"p of the pooled r: {adjusted}") + (
        f" Adj. CI: the pooled interval at the level the adjustment implies, which excludes 0 where the adjusted p "
        f"is below {level}."
    )
    if isinstance(source, Comparison) and not over_items:
        note += " Verdicts over runs only: item noise not included."
    common = _common(layout, options, functools.partial(compare_table, source), default_caption, "tab:compare", note,
                     shown.key)  # fmt: skip
    marks = pl.DataFrame({"r_pooled": [_stars(v) for v in frame["p_pooled_adj"]]}, schema={"r_pooled": pl.String})
    return PaperTable(frame=frame, columns=columns, marks=marks, mark=mark, group=groups[0] if groups else None,
                      **common)  # fmt: skip


def query_table(frame: pl.DataFrame, **layout: Unpack[Layout]) -> PaperTable:
    """Any rows (the result of a query) for a paper: text as is, numbers rounded, ``names`` applied to
    text values and to column headers; no significance marks. ``runs`` and ``compact`` do not apply."""
    names = dict(layout.get("names") or {})
    text = [c for c, dtype in frame.schema.items() if dtype == pl.String]
    frame = display.rename_values(frame, names, text)
    columns = tuple(Column(c, names.get(c, c), _kind(dtype)) for c, dtype in frame.schema.items())
    options = {key: value for key, value in layout.items() if key != "compact"}
    common = _common(options, options, functools.partial(query_table, frame), "", "tab:query", "", "")
    return PaperTable(frame=frame, columns=columns, mark="none", **common)


# -- from the store ------------------------------------------------------------
def from_analysis(
    store: Database,
    name: str,
    *,
    compared: bool = False,
    by: Sequence[str] | None = None,
    alpha: float = 0.05,
    inference: str = "effective",
    order_by: Sequence[str] | None = None,
    adjust_pairs: str = DEFAULT_ADJUST_PAIRS,
    test: str = DEFAULT_TEST,
    item_inference: str = "auto",
    item_resamples: int = RESAMPLES,
    **options: Any,
) -> PaperTable:
    """The table of saved analysis ``name`` (``compared``: of its comparison across runs, grouped ``by``, its
    verdicts adjusted over pairs by ``adjust_pairs`` with ``test``, over items as well as runs as
    ``item_inference`` says, as :func:`~ood_store._analysis.compare`).

    Runs are ordered by their attributes (:func:`~ood_store._export.display.run_order`,
    ``order_by``); other keywords go to :func:`partial_table` or :func:`compare_table`.
    """
    analysis = saved_analysis(store, name)
    runs = display.run_order(store, analysis.table["run"], order_by)
    if not compared:
        provenance = Provenance.of_analysis(store, name)
        return partial_table(analysis, inference=inference, runs=runs, provenance=provenance, **options)
    if options.pop("transpose", False):
        raise AnalysisError("a comparison has its runs as columns already (with `wide`)", parameter="transpose")
    result = compare(analysis, by=list(by) if by else None, attributes=store, alpha=alpha, inference=inference,
                     adjust_pairs=adjust_pairs, test=test, items=store, item_inference=item_inference,
                     item_resamples=item_resamples)  # fmt: skip
    provenance = Provenance.of_analysis(
        store, name, source=f"compare of analysis {name} ({test} test, {adjust_pairs} over pairs, {result.basis})"
    )
    return compare_table(result, runs=runs, provenance=provenance, **options)


def from_query(store: Database, sql: str, **options: Any) -> PaperTable:
    """The rows of one read-only query on ``store`` as a table (:func:`query_table`)."""
    return query_table(store.query(sql), provenance=Provenance.of_query(store, sql), **options)


def from_item_dynamics(
    store: Database, tasks: Sequence[str], runs: Sequence[str] | None = None, *, items: bool = False, **options: Any
) -> PaperTable:
    """The item dynamics of ``tasks`` (:func:`~ood_store._analysis.dynamics.item_dynamics`) as a table: one row
    per run and task, or with ``items`` one per item."""
    from ood_store._analysis.dynamics import item_dynamics

    result = item_dynamics(store, tasks, runs)
    frame = result.items if items else result.table
    provenance = Provenance.of_store(store, "item dynamics", params={"tasks": list(tasks), "runs": runs})
    return query_table(frame, provenance=provenance, **options)


# -- helpers -------------------------------------------------------------------
class _Names:
    """Display names of a table's testsets and runs: as given, or (compact) codes and names less what they share."""

    def __init__(self, tasks: dict[str, str], runs: dict[str, str], key: str, compact: bool):
        self.tasks, self.runs, self.key, self.compact = tasks, runs, key, compact

    @classmethod
    def of(cls, frame: pl.DataFrame, names: Mapping[str, str], runs: Sequence[str], compact: bool) -> _Names:
        tasks = list(dict.fromkeys(t for pair in frame.select("task_x", "task_y").iter_rows() for t in pair))
        shown = {t: names.get(t, t) for t in tasks}
        run_names = {r: names.get(r, r) for r in runs}
        if not compact:
            return cls(shown, run_names, "", False)
        codes = display.codes(list(shown.values()))
        key = "Testsets: " + ", ".join(f"{codes[v]} {v}" for v in shown.values()) + "."
        short, prefix, suffix = display.shorten(list(run_names.values()))
        if prefix or suffix:
            key += f" Runs: {display.abbreviated(prefix, suffix)}"
        return cls({t: codes[v] for t, v in shown.items()}, dict(zip(runs, short, strict=True)), key, True)

    def run(self, run: str) -> str:
        return self.runs.get(run, run)

    def header(self, text: str) -> str:
        return _COMPACT_HEADERS.get(text, text) if self.compact else text

    def apply(self, frame: pl.DataFrame, run_columns: Sequence[str], task_columns: Sequence[str]) -> pl.DataFrame:
        """``frame`` with the display names in ``run_columns`` (``run`` only) and ``task_columns``."""
        frame = display.rename_values(frame, self.tasks, task_columns)
        return display.rename_values(frame, self.runs, [c for c in run_columns if c == "run"])


def _common(layout, options: dict, rebuild, caption: str, label: str, note: str, key: str) -> dict:
    """The PaperTable fields every builder sets the same way from its layout keywords."""
    given_caption, given_label = layout.get("caption"), layout.get("label")
    return {
        "digits": layout.get("digits"),
        "caption": given_caption if given_caption is not None else caption,
        "label": given_label if given_label is not None else label,
        "note": note,
        "key": key,
        "provenance": layout.get("provenance"),
        "compact": bool(layout.get("compact")),
        "width": page.inches(layout.get("width", "page")),
        "landscape": bool(layout.get("landscape")),
        "split": bool(layout.get("split")),
        "long": layout.get("long"),
        "options": options,
        "rebuild": lambda **changes: rebuild(**{**options, **changes}),
    }


def _check_choice(what: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise AnalysisError(f"{what} must be one of {', '.join(allowed)}, not {value!r}")


def _stars(p: float | None) -> str:
    if p is None or not math.isfinite(p):
        return ""
    return next((stars for level, stars in STARS if p < level), "")


def _note(mark: str, p: str, test: str) -> str:
    """What the marks mean, in words that render in Markdown too (each run of stars between spaces)."""
    if mark == "stars":
        return f"Stars: * {p} < 0.05, ** < 0.01, *** < 0.001 ({test})."
    if mark == "bold":
        return f"Bold: {p} < 0.05 ({test})."
    return ""


def _kind(dtype: pl.DataType) -> str:
    if dtype.is_integer():
        return "int"
    if dtype.is_float():
        return "float"
    return "text"
