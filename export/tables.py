"""Tables for papers: a saved analysis, a comparison across runs, or any query, as LaTeX, Markdown, CSV, JSON, Parquet.

The builders (:func:`partial_table`, :func:`compare_table`, :func:`query_table`,
and :func:`from_analysis` / :func:`from_query` that read the store) return a
:class:`PaperTable`: the rows as a tidy Polars frame (what CSV, JSON and
Parquet carry, at full precision unless ``digits`` is given) and a layout for
the typeset formats (headers, rounding, significance marks, caption, label).
Every file written carries its :class:`~ood_store.export.provenance.Provenance`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import orjson
import polars as pl
from tabulate import tabulate

from ood_store.analysis import results
from ood_store.analysis.compare import INFERENCE, compare
from ood_store.analysis.inference import ADJUST_METHODS, adjust
from ood_store.analysis.results import COMPARISON_COLUMNS, Comparison, PartialCorrelations
from ood_store.errors import AnalysisError, OodStoreError
from ood_store.export import display, formats
from ood_store.export.provenance import Provenance

if TYPE_CHECKING:
    from ood_store.store import Store

FORMATS = formats.TABLES
MARKS = ("stars", "bold", "none")
#: Significance levels of the stars: p < 0.001 ***, p < 0.01 **, p < 0.05 *.
STARS = ((0.001, "***"), (0.01, "**"), (0.05, "*"))
DEFAULT_DIGITS = 2
P_DIGITS = 3  # p-values print with at least this many decimals
PARQUET_KEY = "ood_store.provenance"
_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "–": "--", "—": "---",
}  # fmt: skip
_LATEX_PATTERN = re.compile("|".join(re.escape(c) for c in _LATEX_SPECIAL))
_RESIDUALIZER = {"gam": "GAM"}
_P_LATEX = {"p_eff_adj": r"$p_{\mathrm{eff,adj}}$", "p_adj": r"$p_{\mathrm{adj}}$"}


@dataclass(frozen=True)
class Column:
    """How one column of the typeset table shows the frame.

    ``kind`` is ``text``, ``int``, ``float``, ``p`` (p-value) or ``ci`` (an
    interval from ``name`` and ``high``). ``latex`` is the header in LaTeX
    when it differs from ``header`` (math, say).
    """

    name: str
    header: str
    kind: str = "float"
    high: str | None = None
    latex: str | None = None
    marked: bool = False


@dataclass(frozen=True)
class PaperTable:
    """A table ready to export; see the module docstring.

    Attributes
    ----------
    frame : polars.DataFrame
        The rows, display names applied, in their final order.
    columns : tuple of Column
        The typeset layout (LaTeX, Markdown).
    marks : polars.DataFrame or None
        Significance marks (``""``, ``"*"``, ``"**"``, ``"***"``), one column per
        marked column, row for row with ``frame``.
    mark : {"stars", "bold", "none"}
        How marks show: stars after the number, the number in bold (any mark), or not at all.
    digits : int or None
        Decimals of the typeset numbers (default 2) and, when set, the rounding
        of CSV, JSON and Parquet (full precision otherwise).
    group : str or None
        A column whose repeated values print once per block, blocks set apart (the run).
    caption, label, note : str
        Caption and label of the LaTeX table; ``note`` says what the marks mean.
    provenance : Provenance or None
        Written into every file as a comment or metadata.
    """

    frame: pl.DataFrame
    columns: tuple[Column, ...]
    marks: pl.DataFrame | None = None
    mark: str = "stars"
    digits: int | None = None
    group: str | None = None
    caption: str = ""
    label: str = ""
    note: str = ""
    provenance: Provenance | None = None

    # -- typeset formats ---------------------------------------------------
    def cells(self, flavour: str = "markdown") -> list[list[str]]:
        """The typeset cells, row by row, as ``to_markdown`` (or ``to_latex``, flavour ``latex``) prints them."""
        digits = DEFAULT_DIGITS if self.digits is None else self.digits
        rows = []
        previous = None
        for i, row in enumerate(self.frame.iter_rows(named=True)):
            cells = []
            for column in self.columns:
                text = _cell(row, column, digits, flavour)
                if column.marked and self.marks is not None and self.mark != "none":
                    text = _marked(text, self.marks[column.name][i], self.mark, flavour)
                cells.append(text)
            if self.group is not None:
                key = row[self.group]
                position = [c.name for c in self.columns].index(self.group)
                if key == previous:
                    cells[position] = ""
                previous = key
            rows.append(cells)
        return rows

    def to_latex(self, *, standalone: bool = False) -> str:
        """A booktabs ``table`` (``\\toprule``/``\\midrule``/``\\bottomrule``, no vertical rules).

        Numbers are right-aligned with a fixed number of decimals and the stars
        sit in a box of their own, so decimal points line up. ``standalone``
        wraps the table in a minimal document that compiles on its own.
        """
        spec = "".join(_latex_spec(c, self.mark) for c in self.columns)
        headers = " & ".join(c.latex or _latex_escape(c.header) for c in self.columns)
        body = []
        group_at = [c.name for c in self.columns].index(self.group) if self.group else None
        for i, cells in enumerate(self.cells("latex")):
            if group_at is not None and i > 0 and cells[group_at] != "":
                body.append(r"\addlinespace")
            body.append(" & ".join(cells) + r" \\")
        caption = " ".join(_latex_escape(part) for part in (self.caption, self.note) if part)
        for name, math_name in _P_LATEX.items():
            caption = caption.replace(_latex_escape(name), math_name)
        caption = re.sub(r"\*+", lambda m: f"$^{{{m.group()}}}$", caption).replace(" < ", " $<$ ")
        lines = [
            *(f"% {line}" for line in self._provenance_lines()),
            r"\begin{table}[t]",
            r"\centering",
            r"\small",
            rf"\caption{{{caption}}}",
            *([rf"\label{{{self.label}}}"] if self.label else []),
            rf"\begin{{tabular}}{{{spec}}}",
            r"\toprule",
            headers + r" \\",
            r"\midrule",
            *body,
            r"\bottomrule",
            r"\end{tabular}",
            r"\end{table}",
        ]
        text = "\n".join(lines) + "\n"
        if standalone:
            text = (
                "\\documentclass{article}\n\\usepackage{booktabs}\n"
                "\\usepackage[margin=2cm]{geometry}\n\\begin{document}\n" + text + "\\end{document}\n"
            )
        return text

    def to_markdown(self) -> str:
        """A pipe table (GitHub, pandoc), provenance in an HTML comment and the caption after it."""
        table = tabulate(
            self.cells("markdown"),
            headers=[_markdown_escape(c.header) for c in self.columns],
            tablefmt="pipe",
            colalign=["left" if c.kind == "text" else "right" for c in self.columns],
            disable_numparse=True,
        )
        lines = self._provenance_lines()
        comment = "\n".join(["<!--", *(line.replace("--", "- -") for line in lines), "-->", ""]) if lines else ""
        caption = " ".join(part for part in (self.caption, self.note) if part)
        return f"{comment}{table}\n" + (f"\nTable: {_markdown_escape(caption)}\n" if caption else "")

    # -- data formats --------------------------------------------------------
    def data(self) -> pl.DataFrame:
        """The frame that CSV, JSON and Parquet carry: rounded to ``digits`` only when it is set."""
        if self.digits is None:
            return self.frame
        return self.frame.with_columns(pl.col(pl.Float32, pl.Float64).round(self.digits))

    def to_csv(self) -> str:
        """CSV with the provenance as ``#`` comment lines first (``pl.read_csv(path, comment_prefix="#")``)."""
        return "".join(f"# {line}\n" for line in self._provenance_lines()) + self.data().write_csv()

    def to_json(self) -> str:
        """``{"provenance": {...}, "rows": [{column: value}, ...]}``; NaN is null."""
        provenance = self.provenance.to_dict() if self.provenance else None
        document = {"provenance": provenance, "rows": self.data().to_dicts()}
        return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY, default=str).decode()

    def render(self, output_format: str, *, standalone: bool = False) -> str:
        """The table as text in ``output_format`` (any of :data:`FORMATS` but parquet)."""
        if output_format == "latex":
            return self.to_latex(standalone=standalone)
        if output_format == "markdown":
            return self.to_markdown()
        if output_format == "csv":
            return self.to_csv()
        if output_format == "json":
            return self.to_json() + "\n"
        raise AnalysisError(f"format {output_format!r} is not text; choose one of {', '.join(FORMATS[:-1])}")

    def write(self, path: str | Path, output_format: str | None = None, *, standalone: bool = False) -> str:
        """Write the table to ``path`` in ``output_format`` (default: from the extension); returns the format."""
        path = Path(path)
        output_format = output_format or format_of(path)
        try:
            if output_format == "parquet":
                metadata = {PARQUET_KEY: self.provenance.to_json()} if self.provenance else None
                self.data().write_parquet(path, metadata=metadata)
            else:
                path.write_text(self.render(output_format, standalone=standalone), encoding="utf-8")
        except OSError as exc:
            raise OodStoreError(f"{path}: cannot write: {exc.strerror or exc}") from None
        return output_format

    def _provenance_lines(self) -> list[str]:
        return self.provenance.lines() if self.provenance else []


def format_of(path: str | Path) -> str:
    """The export format that a file name's extension asks for (:func:`ood_store.export.formats.from_extension`)."""
    return formats.from_extension(path, FORMATS)


# -- builders ------------------------------------------------------------------
class Layout(TypedDict, total=False):
    """How every builder typesets its table; the keywords are documented at :func:`partial_table`."""

    digits: int | None
    names: Mapping[str, str] | None
    runs: Sequence[str] | None
    caption: str | None
    label: str | None
    provenance: Provenance | None


def partial_table(
    table: PartialCorrelations | pl.DataFrame,
    *,
    wide: bool = False,
    inference: str = "effective",
    mark: str = "stars",
    digits: int | None = None,
    names: Mapping[str, str] | None = None,
    runs: Sequence[str] | None = None,
    caption: str | None = None,
    label: str | None = None,
    provenance: Provenance | None = None,
) -> PaperTable:
    """A partial-correlation table (``analyze``, a saved analysis) for a paper.

    Parameters
    ----------
    table : polars.DataFrame
        Rows of :func:`~ood_store.analysis.partial_correlations` or ``Store.analysis``.
    wide : bool
        One row per run and one column of r per pair of testsets, instead of
        one row per run and pair.
    inference : {"effective", "naive"}
        Which adjusted p marks significance: ``p_eff_adj`` (autocorrelation-aware,
        the default) or ``p_adj``; the long table shows that p and its ``n_eff`` or ``n``.
    mark : {"stars", "bold", "none"}
        Stars (p < 0.05 ``*``, 0.01 ``**``, 0.001 ``***``), bold for p < 0.05, or nothing.
    digits : int, optional
        Decimals (typeset default 2; CSV, JSON and Parquet keep full precision unless given).
    names : mapping, optional
        Display names of testsets and runs (:func:`~ood_store.export.display.names`).
    runs : sequence of str, optional
        The runs in the order to print them (:func:`~ood_store.export.display.run_order`);
        default: as in ``table``, sorted by name. Runs not listed are left out.
    caption, label : str, optional
        Default: a caption that says the in-domain task, residualiser, method and
        marks; label ``tab:partial-correlations``.
    provenance : Provenance, optional
        Where the rows came from, written into every file.

    Examples
    --------
    >>> import polars as pl
    >>> rows = pl.DataFrame({"run": ["m"], "task_x": ["hans"], "task_y": ["rte"], "n": [20], "r": [0.61],
    ...     "ci_low": [0.22], "ci_high": [0.83], "p_adj": [0.004], "n_eff": [12.5], "p_eff_adj": [0.03]})
    >>> print(partial_table(rows, names={"hans": "HANS", "rte": "RTE"}).to_markdown(), end="")
    | Run   | Testset X   | Testset Y   |   n_eff |      r |       95% CI |   p_eff_adj |
    |:------|:------------|:------------|--------:|-------:|-------------:|------------:|
    | m     | HANS        | RTE         |   12.50 | 0.61\\* | [0.22, 0.83] |       0.030 |
    <BLANKLINE>
    Table: Partial correlations between OOD testsets. Stars: p_eff_adj < 0.05 \\*, < 0.01 \\*\\*, < 0.001 \\*\\*\\*.
    """
    _check_choice("inference", inference, INFERENCE)
    _check_choice("mark", mark, MARKS)
    table = results.partial_table(table, also=("ci_low", "ci_high"))
    size, p = ("n_eff", "p_eff_adj") if inference == "effective" else ("n", "p_adj")
    order = list(runs) if runs is not None else sorted(set(table["run"]))
    rows = (
        table.filter(pl.col("run").is_in(order))
        .with_columns(_run_rank=pl.col("run").replace_strict({run: i for i, run in enumerate(order)}, default=None))
        .sort("_run_rank", "task_x", "task_y", maintain_order=True)
        .drop("_run_rank")
    )
    names = dict(names or {})
    caption = caption if caption is not None else _partial_caption(table, names or {})
    note = _note(mark, p)
    if wide:
        return _wide(rows, p, mark, digits, names, caption, label, note, provenance)
    boot = "boot_ci_low" in rows.columns and rows["boot_ci_low"].fill_nan(None).is_not_null().any()
    keep = ["run", "task_x", "task_y", size, "r", "ci_low", "ci_high", *(["boot_ci_low", "boot_ci_high"] * boot), p]
    frame = display.rename_values(rows.select(keep), names, ("run", "task_x", "task_y"))
    size_column = (
        Column("n_eff", "n_eff", "float", latex=r"$n_{\mathrm{eff}}$")
        if size == "n_eff"
        else Column("n", "n", "int", latex="$n$")
    )
    columns = (
        Column("run", "Run", "text"),
        Column("task_x", "Testset X", "text"),
        Column("task_y", "Testset Y", "text"),
        size_column,
        Column("r", "r", "float", latex="$r$", marked=True),
        Column("ci_low", "95% CI", "ci", high="ci_high"),
        *([Column("boot_ci_low", "Bootstrap CI", "ci", high="boot_ci_high")] if boot else []),
        Column(p, p, "p", latex=_P_LATEX[p]),
    )
    return PaperTable(
        frame=frame,
        columns=columns,
        marks=pl.DataFrame({"r": [_stars(v) for v in frame[p]]}, schema={"r": pl.String}),
        mark=mark,
        digits=digits,
        group="run",
        caption=caption,
        label=label if label is not None else "tab:partial-correlations",
        note=note,
        provenance=provenance,
    )


def _wide(rows, p, mark, digits, names, caption, label, note, provenance) -> PaperTable:
    named = display.rename_values(rows, names, ("run", "task_x", "task_y"))
    pairs = list(dict.fromkeys(zip(named["task_x"], named["task_y"], strict=True)))
    keys = {pair: f"{pair[0]}–{pair[1]}" for pair in pairs}
    named = named.with_columns(pair=pl.concat_str("task_x", pl.lit("–"), "task_y"))
    frame = named.pivot(on="pair", index="run", values="r", aggregate_function=None, maintain_order=True)
    marks = named.with_columns(mark=pl.col(p).map_elements(_stars, return_dtype=pl.String)).pivot(
        on="pair", index="run", values="mark", aggregate_function=None, maintain_order=True
    )
    frame = frame.select("run", *keys.values())
    marks = marks.select(*keys.values()).fill_null("")
    columns = (Column("run", "Run", "text"), *(Column(key, key, "float", marked=True) for key in keys.values()))
    return PaperTable(
        frame=frame,
        columns=columns,
        marks=marks,
        mark=mark,
        digits=digits,
        caption=caption,
        label=label if label is not None else "tab:partial-correlations",
        note=note,
        provenance=provenance,
    )


def compare_table(
    result: Comparison | pl.DataFrame,
    *,
    wide: bool = False,
    adjust_method: str = "holm",
    mark: str = "stars",
    **layout: Unpack[Layout],
) -> PaperTable:
    """A comparison across runs (:func:`~ood_store.analysis.compare`) for a paper.

    One row per pair of testsets (and ``--by`` group): runs, sign agreement,
    pooled r with its interval, I² and the verdict. The pooled r is marked by
    its p-value adjusted over the rows (``adjust_method``, default Holm).
    ``wide`` adds each run's r, in the order of ``runs``.
    """
    _check_choice("mark", mark, MARKS)
    _check_choice("adjust", adjust_method, ADJUST_METHODS)
    result = results.comparison_table(result)
    groups = [c for c in result.columns if c not in COMPARISON_COLUMNS and not c.startswith("r:")]
    per_run = [c.removeprefix("r:") for c in result.columns if c.startswith("r:")]
    digits, runs, caption, label = layout.get("digits"), layout.get("runs"), layout.get("caption"), layout.get("label")
    if runs is not None:
        per_run = [run for run in runs if run in per_run]
    names = dict(layout.get("names") or {})
    frame = result.with_columns(p_pooled_adj=pl.Series(_adjusted(result["p_pooled"], adjust_method), dtype=pl.Float64))
    keep = [*groups, "task_x", "task_y", "runs", "sign_agreement", "r_pooled", "ci_low", "ci_high", "p_pooled_adj",
            "i2", "verdict", *([f"r:{run}" for run in per_run] if wide else [])]  # fmt: skip
    frame = frame.select(keep)
    if groups:  # groups in attribute order (sizes as numbers), pairs as compare sorted them
        frame = frame.sort(by=[pl.col(g).map_elements(_order_key, return_dtype=_ORDER) for g in groups],
                           maintain_order=True)  # fmt: skip
    frame = display.rename_values(frame, names, (*groups, "task_x", "task_y"))
    frame = frame.rename({f"r:{run}": f"r:{names.get(run, run)}" for run in per_run if wide})
    columns = (
        *(Column(g, names.get(g, g), "text") for g in groups),
        Column("task_x", "Testset X", "text"),
        Column("task_y", "Testset Y", "text"),
        Column("runs", "Runs", "int"),
        Column("sign_agreement", "Sign agreement", "float"),
        Column("r_pooled", "Pooled r", "float", latex=r"Pooled $r$", marked=True),
        Column("ci_low", "95% CI", "ci", high="ci_high"),
        Column("i2", "I²", "float", latex=r"$I^2$"),
        Column("verdict", "Verdict", "text"),
        *(Column(f"r:{names.get(run, run)}", names.get(run, run), "float") for run in (per_run if wide else [])),
    )
    return PaperTable(
        frame=frame,
        columns=columns,
        marks=pl.DataFrame({"r_pooled": [_stars(v) for v in frame["p_pooled_adj"]]}, schema={"r_pooled": pl.String}),
        mark=mark,
        digits=digits,
        group=groups[0] if groups else None,
        caption=caption if caption is not None else "Partial correlations pooled across runs (random effects).",
        label=label if label is not None else "tab:compare",
        note=_note(mark, f"p of the pooled r, {adjust_method}-adjusted over pairs,"),
        provenance=layout.get("provenance"),
    )


def query_table(frame: pl.DataFrame, **layout: Unpack[Layout]) -> PaperTable:
    """Any rows (the result of a query) for a paper: text as is, numbers rounded, ``names`` applied to
    text values and to column headers; no significance marks. ``runs`` does not apply."""
    names = dict(layout.get("names") or {})
    caption, label = layout.get("caption"), layout.get("label")
    text = [c for c, dtype in frame.schema.items() if dtype == pl.String]
    frame = display.rename_values(frame, names, text)
    columns = tuple(Column(c, names.get(c, c), _kind(dtype)) for c, dtype in frame.schema.items())
    return PaperTable(
        frame=frame,
        columns=columns,
        mark="none",
        digits=layout.get("digits"),
        caption=caption or "",
        label=label if label is not None else "tab:query",
        provenance=layout.get("provenance"),
    )


# -- from the store ------------------------------------------------------------
def from_analysis(
    store: Store,
    name: str,
    *,
    compared: bool = False,
    by: Sequence[str] | None = None,
    alpha: float = 0.05,
    inference: str = "effective",
    order_by: Sequence[str] | None = None,
    **options: Any,
) -> PaperTable:
    """The table of saved analysis ``name`` (``compared``: of its comparison across runs, grouped ``by``).

    Runs are ordered by their attributes (:func:`~ood_store.export.display.run_order`,
    ``order_by``); other keywords go to :func:`partial_table` or :func:`compare_table`.
    """
    analysis = store.analysis(name)
    runs = display.run_order(store, analysis.table["run"], order_by)
    if not compared:
        provenance = Provenance.of_analysis(store, name)
        return partial_table(analysis, inference=inference, runs=runs, provenance=provenance, **options)
    result = compare(analysis, by=list(by) if by else None, attributes=store, alpha=alpha, inference=inference)
    provenance = Provenance.of_analysis(store, name, source=f"compare of analysis {name}")
    return compare_table(result, runs=runs, provenance=provenance, adjust_method=analysis.options.adjust, **options)


def from_query(store: Store, sql: str, **options: Any) -> PaperTable:
    """The rows of one read-only query on ``store`` as a table (:func:`query_table`)."""
    return query_table(store.query(sql), provenance=Provenance.of_query(store, sql), **options)


# -- helpers -------------------------------------------------------------------
def _check_choice(what: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise AnalysisError(f"{what} must be one of {', '.join(allowed)}, not {value!r}")


_ORDER = pl.Struct({"missing": pl.Boolean, "number": pl.Float64, "text": pl.String})


def _order_key(value: Any) -> dict:
    """Sort key of a group value: numbers and sizes (160m < 1.4b) by value, then text."""
    text = None if value is None else str(value)
    number = display.size_value(text)
    return {"missing": text is None, "number": number, "text": text or ""}


def _stars(p: float | None) -> str:
    if p is None or not math.isfinite(p):
        return ""
    return next((stars for level, stars in STARS if p < level), "")


def _adjusted(p: pl.Series, method: str) -> list[float | None]:
    import numpy as np

    values = p.cast(pl.Float64).fill_null(float("nan")).to_numpy()
    out = adjust(values, method)
    return [float(v) if np.isfinite(v) else None for v in out]


def _note(mark: str, p: str) -> str:
    if mark == "stars":
        return f"Stars: {p} < 0.05 *, < 0.01 **, < 0.001 ***."
    if mark == "bold":
        return f"Bold: {p} < 0.05."
    return ""


def _partial_caption(table: pl.DataFrame, names: Mapping[str, str]) -> str:
    def one(column: str) -> str | None:
        values = table[column].unique().to_list() if column in table.columns else []
        return values[0] if len(values) == 1 else None

    in_domain, residualizer, method = one("in_domain"), one("residualizer"), one("method")
    text = "Partial correlations between OOD testsets"
    if in_domain:
        text += f" with in-domain {names.get(in_domain, in_domain)} regressed out"
    details = []
    if residualizer:
        details.append(f"{_RESIDUALIZER.get(residualizer, residualizer)} residualiser")
    if method:
        details.append(method.capitalize())
    return text + (f" ({', '.join(details)})." if details else ".")


def _kind(dtype: pl.DataType) -> str:
    if dtype.is_integer():
        return "int"
    if dtype.is_float():
        return "float"
    return "text"


def _number(value: Any, digits: int, flavour: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "--" if flavour == "latex" else ""
    text = f"{value:.{digits}f}"  # -0.004 stays "-0.00": the sign says which side of 0 it is on
    return text.replace("-", "$-$") if flavour == "latex" else text


def _cell(row: Mapping[str, Any], column: Column, digits: int, flavour: str) -> str:
    value = row[column.name]
    if column.kind == "text":
        text = "" if value is None else str(value)
        return _latex_escape(text) if flavour == "latex" else _markdown_escape(text)
    if column.kind == "int":
        return _number(value, 0, flavour) if value is not None else _number(None, 0, flavour)
    if column.kind == "ci":
        low, high = row[column.name], row[column.high or column.name]
        if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
            return _number(None, 0, flavour)
        return f"[{_number(low, digits, flavour)}, {_number(high, digits, flavour)}]"
    if column.kind == "p":
        p_digits = max(digits, P_DIGITS)
        if value is not None and math.isfinite(value) and 0 <= value < 10**-p_digits:
            bound = f"{10**-p_digits:.{p_digits}f}"
            return f"$<${bound}" if flavour == "latex" else f"<{bound}"
        return _number(value, p_digits, flavour)
    if isinstance(value, int) and not isinstance(value, bool):
        return _number(value, 0, flavour)
    return _number(value, digits, flavour)


def _marked(text: str, mark: str | None, style: str, flavour: str) -> str:
    mark = mark or ""
    if style == "bold":
        if not mark:
            return text
        return rf"\textbf{{{text}}}" if flavour == "latex" else f"**{text}**"
    if flavour == "latex":
        return text + (rf"\rlap{{$^{{{mark}}}$}}" if mark else "")
    return text + mark.replace("*", r"\*")


def _latex_spec(column: Column, mark: str) -> str:
    if column.kind == "text":
        return "l"
    if column.marked and mark == "stars":
        return r"r@{\hspace{1.6em}}"  # room for the stars, which take no width of their own
    return "r"


def _latex_escape(text: str) -> str:
    return _LATEX_PATTERN.sub(lambda m: _LATEX_SPECIAL[m.group()], text)


def _markdown_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", r"\|").replace("*", r"\*")
