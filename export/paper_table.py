"""A table ready for a paper: its rows, how they are typeset, and the files it is written as.

A :class:`PaperTable` holds the rows as a tidy Polars frame (what CSV, JSON and
Parquet carry, at full precision unless ``digits`` is given) and a layout for
the typeset formats: headers, rounding, significance marks, caption, label,
and the page it must fit (LaTeX: :mod:`~ood_store._export.table_fit` measures
it, :mod:`~ood_store._export.latex` writes it). The builders in
:mod:`~ood_store._export.tables` make them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import polars as pl
from tabulate import tabulate

from ood_store._errors import AnalysisError, OodStoreError
from ood_store._export import formats, latex, page, table_fit
from ood_store._export.provenance import Provenance

FORMATS = formats.TABLES
DEFAULT_DIGITS = 2
P_DIGITS = 3  # p-values print with at least this many decimals
PARQUET_KEY = "ood_store.provenance"


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
    caption, label, note, key : str
        Caption and label of the LaTeX table; ``note`` says what the marks mean,
        ``key`` what the codes of a compact table stand for.
    provenance : Provenance or None
        Written into every file as a comment or metadata.
    compact : bool
        Numbers without their leading zero (``.35``), as compact tables print them.
    width : float
        The text width (inches) of the page the LaTeX table is for; one column
        (3.25 in or less) sets it in one column of a two-column page.
    landscape : bool
        LaTeX: a table turned sideways on its own page (``sidewaystable``).
    split : bool
        LaTeX: as many tables as it takes to fit, the leading text columns in each.
    long : bool or None
        LaTeX: a ``longtable`` over several pages (None: when taller than a page).
    options, rebuild
        The builder's options, and the builder bound to its rows: how :meth:`fit`
        measures the alternatives (``rebuild(compact=True)``).
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
    key: str = ""
    provenance: Provenance | None = None
    compact: bool = False
    width: float = page.PAGE
    landscape: bool = False
    split: bool = False
    long: bool | None = None
    options: Mapping[str, Any] = field(default_factory=dict, compare=False)
    rebuild: Callable[..., PaperTable] | None = field(default=None, compare=False, repr=False)

    # -- typeset formats ---------------------------------------------------
    def cells(self, flavour: str = "markdown") -> list[list[str]]:
        """The typeset cells, row by row, as ``to_markdown`` (or ``to_latex``, flavour ``latex``) prints them."""
        digits = DEFAULT_DIGITS if self.digits is None else self.digits
        rows = []
        previous = None
        position = [c.name for c in self.columns].index(self.group) if self.group is not None else None
        for i, row in enumerate(self.frame.iter_rows(named=True)):
            cells = []
            for column in self.columns:
                text = _cell(row, column, digits, flavour, self.compact)
                if column.marked and self.marks is not None and self.mark != "none":
                    text = _marked(text, self.marks[column.name][i], self.mark, flavour)
                cells.append(text)
            if position is not None:
                key = row[self.group]  # type: ignore[index]  # group is set when position is
                if key == previous:
                    cells[position] = ""
                previous = key
            rows.append(cells)
        return rows

    def fit(self) -> table_fit.PageFit:
        """How wide the LaTeX table is against the page (``width``, or the text height in ``landscape``),
        with the changes that would make it fit when it does not (:func:`~ood_store._export.table_fit.fit`)."""
        return table_fit.fit(self)

    def to_latex(self, *, standalone: bool = False) -> str:
        """Booktabs tables (``\\toprule``/``\\midrule``/``\\bottomrule``, no vertical rules).

        Numbers are right-aligned with a fixed number of decimals and the stars
        sit in a box of their own, so decimal points line up. The environment
        follows the table's size (:func:`~ood_store._export.table_fit.plan`):
        ``table`` or ``table*``, ``sidewaystable`` in landscape, ``longtable``
        when taller than a page; a split table is several. ``standalone`` wraps
        them in a minimal document that compiles on its own.
        """
        return latex.render(self, table_fit.plan(self), standalone=standalone)

    def to_markdown(self) -> str:
        """A pipe table (GitHub, pandoc), provenance in an HTML comment and the caption after it.

        Stars print as they are (``0.71**``): at the end of a cell, after a
        digit, they can open no emphasis, so GitHub and pandoc show them as stars.
        """
        table = tabulate(
            self.cells("markdown"),
            headers=[_markdown_escape(c.header) for c in self.columns],
            tablefmt="pipe",
            colalign=["left" if c.kind == "text" else "right" for c in self.columns],
            disable_numparse=True,
        )
        lines = self.provenance_lines()
        comment = "\n".join(["<!--", *(line.replace("--", "- -") for line in lines), "-->", ""]) if lines else ""
        parts = [_markdown_escape(self.caption), self.note, _markdown_escape(self.key)]
        caption = " ".join(part for part in parts if part)
        return f"{comment}{table}\n" + (f"\nTable: {caption}\n" if caption else "")

    # -- in a notebook -------------------------------------------------------
    def to_html(self) -> str:
        """An HTML table of the typeset cells (what :meth:`to_markdown` shows), caption and note under it;
        every cell escaped."""
        import html

        from tabulate import tabulate as _tabulate

        cells = [[html.escape(cell) for cell in row] for row in self.cells("markdown")]
        headers = [html.escape(c.header) for c in self.columns]
        table = _tabulate(cells, headers=headers, tablefmt="unsafehtml", disable_numparse=True)
        parts = [self.caption, self.note, self.key]
        caption = " ".join(html.escape(part) for part in parts if part)
        return f"<div class='ood-store-table'>{table}" + (f"<p>{caption}</p>" if caption else "") + "</div>"

    def _repr_html_(self) -> str:
        return self.to_html()

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def __repr__(self) -> str:
        caption = f": {self.caption}" if self.caption else ""
        return f"<PaperTable {self.frame.height} rows × {len(self.columns)} columns{caption}>"

    # -- data formats --------------------------------------------------------
    def data(self) -> pl.DataFrame:
        """The frame that CSV, JSON and Parquet carry: rounded to ``digits`` only when it is set."""
        if self.digits is None:
            return self.frame
        return self.frame.with_columns(pl.col(pl.Float32, pl.Float64).round(self.digits))

    def to_csv(self) -> str:
        """CSV with the provenance as ``#`` comment lines first (``pl.read_csv(path, comment_prefix="#")``)."""
        return "".join(f"# {line}\n" for line in self.provenance_lines()) + self.data().write_csv()

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

    def provenance_lines(self) -> list[str]:
        """The provenance as the lines of a comment block (none without one)."""
        return self.provenance.lines() if self.provenance else []


def format_of(path: str | Path) -> str:
    """The export format that a file name's extension asks for (:func:`ood_store._export.formats.from_extension`)."""
    return formats.from_extension(path, FORMATS)


# -- cells ---------------------------------------------------------------------
def _number(value: Any, digits: int, flavour: str, compact: bool = False) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "--" if flavour == "latex" else ""
    text = f"{value:.{digits}f}"  # -0.004 stays "-0.00": the sign says which side of 0 it is on
    if compact and digits:
        text = text.replace("0.", ".", 1) if text.lstrip("-").startswith("0.") else text
    return text.replace("-", "$-$") if flavour == "latex" else text


def _cell(row: Mapping[str, Any], column: Column, digits: int, flavour: str, compact: bool = False) -> str:
    value = row[column.name]
    if column.kind == "text":
        text = "" if value is None else str(value)
        return latex.escape(text) if flavour == "latex" else _markdown_escape(text)
    if column.kind == "int":
        return _number(value, 0, flavour)
    if column.kind == "ci":
        low, high = row[column.name], row[column.high or column.name]
        if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
            return _number(None, 0, flavour)
        return f"[{_number(low, digits, flavour, compact)}, {_number(high, digits, flavour, compact)}]"
    if column.kind == "p":
        p_digits = max(digits, P_DIGITS)
        if value is not None and math.isfinite(value) and 0 <= value < 10**-p_digits:
            bound = f"{10**-p_digits:.{p_digits}f}"
            return f"$<${bound}" if flavour == "latex" else f"<{bound}"
        return _number(value, p_digits, flavour)
    if isinstance(value, int) and not isinstance(value, bool):
        return _number(value, 0, flavour)
    return _number(value, digits, flavour, compact)


def _marked(text: str, mark: str | None, style: str, flavour: str) -> str:
    mark = mark or ""
    if style == "bold":
        if not mark:
            return text
        return rf"\textbf{{{text}}}" if flavour == "latex" else f"**{text}**"
    if flavour == "latex":
        return text + (rf"\rlap{{$^{{{mark}}}$}}" if mark else "")
    return text + mark  # after a digit, at the end of the cell: never emphasis


def _markdown_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", r"\|").replace("*", r"\*")
