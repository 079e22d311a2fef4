"""A paper table as LaTeX: booktabs rules, aligned numbers, and the environment its size calls for.

:func:`render` writes what :class:`~ood_store._export.tables.PaperTable`
decided: the columns of each part (one part unless the table is split), and
the environment: ``table`` (one column of a two-column page), ``table*``
(the page), ``sidewaystable`` (rotating: a page turned sideways),
``longtable`` (more rows than a page, over several pages; one-column pages
only, such as an appendix after ``\\onecolumn``), or ``longtable`` in
pdflscape's ``landscape``. The packages the table needs are named in a
comment above it and loaded by ``standalone`` documents.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ood_store._export import page

if TYPE_CHECKING:
    from ood_store._export.tables import Column, PaperTable

_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "–": "--", "—": "---",
    "<": r"$<$", ">": r"$>$", "|": r"$|$", "≥": r"$\geq$", "≤": r"$\leq$", "−": "$-$",
}  # fmt: skip
_PATTERN = re.compile("|".join(re.escape(c) for c in _SPECIAL))
_P_MATH = {"p_eff_adj": r"$p_{\mathrm{eff,adj}}$", "p_adj": r"$p_{\mathrm{adj}}$"}
STAR_ROOM = r"@{\hspace{1.6em}}"  # after a column of starred numbers: room for stars that take no width
#: The environments :func:`render` writes, and the packages each needs besides booktabs.
PACKAGES = {"table": (), "table*": (), "sidewaystable": ("rotating",), "longtable": ("longtable",),
            "landscape longtable": ("longtable", "pdflscape")}  # fmt: skip


@dataclass(frozen=True)
class TablePlan:
    """How a table is set: its environment and the columns of each of its parts (indices into its columns)."""

    environment: str
    parts: tuple[tuple[int, ...], ...]


def escape(text: str) -> str:
    """``text`` with LaTeX's special characters as the commands that print them."""
    return _PATTERN.sub(lambda m: _SPECIAL[m.group()], text)


def spec(column: Column, mark: str) -> str:
    """The column's ``tabular`` spec: ``l`` for text, ``r`` for numbers, with room after starred numbers."""
    if column.kind == "text":
        return "l"
    if column.marked and mark == "stars":
        return "r" + STAR_ROOM
    return "r"


def header(column: Column) -> str:
    """The column's header as LaTeX."""
    return column.latex or escape(column.header)


def caption(table: PaperTable) -> str:
    """The caption (with the note on the marks and the key of codes) as LaTeX: stars as superscripts."""
    text = " ".join(escape(part) for part in (table.caption, table.note, table.key) if part)
    for name, math in _P_MATH.items():
        text = text.replace(escape(name), math)
    return re.sub(r"\*+", lambda m: f"$^{{{m.group()}}}$", text)


def render(table: PaperTable, plan: TablePlan, *, standalone: bool = False) -> str:
    """The LaTeX of ``table`` as ``plan`` sets it; ``standalone`` wraps it in a document that compiles alone."""
    packages = ["booktabs", *PACKAGES[plan.environment]]
    lines = [f"% {line}" for line in table.provenance_lines()]
    if lines or len(packages) > 1:  # with the provenance, or where booktabs is not all it needs
        long = "longtable" in plan.environment
        lines.append(f"% Needs \\usepackage{{{','.join(packages)}}}" + (
            "; longtable sets one-column pages only (an appendix after \\onecolumn)" if long else ""
        ))  # fmt: skip
    cells = table.cells("latex")
    for number, part in enumerate(plan.parts, start=1):
        suffix = f" (part {number} of {len(plan.parts)})" if len(plan.parts) > 1 else ""
        label = table.label if number == 1 or not table.label else f"{table.label}-{number}"
        lines.extend(_part(table, plan.environment, part, cells, caption(table) + suffix, label))
    text = "\n".join(lines) + "\n"
    if standalone:
        text = _document(table, plan, packages, text)
    return text


def _part(table: PaperTable, environment: str, part: Sequence[int], cells, text: str, label: str) -> list[str]:
    columns = [table.columns[i] for i in part]
    tabular = "".join(spec(c, table.mark) for c in columns)
    head = " & ".join(header(c) for c in columns) + r" \\"
    body = []
    group_at = next((k for k, i in enumerate(part) if table.columns[i].name == table.group), None)
    for r, row in enumerate(cells):
        chosen = [row[i] for i in part]
        if group_at is not None and r > 0 and chosen[group_at] != "":
            body.append(r"\addlinespace")
        body.append(" & ".join(chosen) + r" \\")
    titled = [rf"\caption{{{text}}}", *([rf"\label{{{label}}}"] if label else [])]
    if "longtable" in environment:
        continued = rf"\multicolumn{{{len(columns)}}}{{@{{}}l}}{{\footnotesize\itshape (continued)}} \\"
        longtable = [
            r"\begingroup\small",
            rf"\begin{{longtable}}{{{tabular}}}",
            "".join(titled) + r" \\",
            r"\toprule", head, r"\midrule", r"\endfirsthead",
            continued, r"\toprule", head, r"\midrule", r"\endhead",
            r"\midrule", rf"\multicolumn{{{len(columns)}}}{{@{{}}r}}{{\footnotesize\itshape (continued overleaf)}} \\",
            r"\endfoot",
            r"\bottomrule", r"\endlastfoot",
            *body,
            r"\end{longtable}",
            r"\endgroup",
        ]  # fmt: skip
        return (
            [r"\begin{landscape}", *longtable, r"\end{landscape}"] if environment.startswith("landscape") else longtable
        )
    placement = "" if environment == "sidewaystable" else "[t]"
    return [
        rf"\begin{{{environment}}}{placement}",
        r"\centering",
        r"\small",
        *titled,
        rf"\begin{{tabular}}{{{tabular}}}",
        r"\toprule",
        head,
        r"\midrule",
        *body,
        r"\bottomrule",
        r"\end{tabular}",
        rf"\end{{{environment}}}",
    ]


def _document(table: PaperTable, plan: TablePlan, packages: list[str], body: str) -> str:
    """A document around ``body``: a two-column page of the table's width (one column for long tables)."""
    long = "longtable" in plan.environment
    text_width = page.PAGE if table.width <= page.COLUMN else table.width
    options = "" if long else "[twocolumn]"
    geometry = (
        f"paperwidth={text_width + 2:.4g}in, paperheight={page.TEXT_HEIGHT + 2:.4g}in, "
        f"textwidth={text_width:.4g}in, textheight={page.TEXT_HEIGHT:.4g}in, columnsep={page.COLUMN_SEP:.4g}in"
    )
    return (
        f"\\documentclass{options}{{article}}\n\\usepackage[{geometry}]{{geometry}}\n"
        f"\\usepackage{{{','.join(packages)}}}\n\\begin{{document}}\n{body}\\end{{document}}\n"
    )
