"""Whether a LaTeX table fits the page, measured before TeX sees it, and what would make it fit.

A table's width is what ``tabular`` makes of it: the widest cell (or
header) of each column as :mod:`~ood_store._export.tex_metrics` sets it,
plus ``\\tabcolsep`` on either side of each column (6 pt), except where an
``@{...}`` takes its place. Its height is one ``\\small`` line (11 pt) per row
with the rules, the spaces between blocks and the caption. The measures err
wide: a table said to fit compiles without an overfull box (the tests compile
them with pdflatex).

:func:`fit` compares the width with the room: the page's text width (or one
column), or the text height for a landscape table. A table that does not
fit comes with the changes that would make it fit, each measured:
transposed (pairs as rows, runs as columns), compact (two-letter codes,
shorter numbers), landscape, fewer decimals, or split into several tables.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ood_store._export import latex, page, tex_metrics

if TYPE_CHECKING:
    from ood_store._export.tables import PaperTable

ROW = 11.0  # pt: a \small line (9 pt on 11 pt), the height of a tabular row
RULES = 14.0  # pt: \toprule, \midrule and \bottomrule with the space booktabs puts around them
BLOCK = 0.5 * tex_metrics.EM  # pt: booktabs' \addlinespace between blocks
CAPTION = 10.0 + 2.0  # pt: \abovecaptionskip and the gap under the caption
_STAR_ROOM = 1.6 * tex_metrics.EM  # pt: the @{\hspace{1.6em}} after starred numbers
_FLOAT_ROOM = 0.95  # of the text height: the most a float may take
# What the font metrics leave out (a few positive kerns, italic corrections in math) comes to less than
# 0.4 % and half a point a cell against pdflatex (the tests compare): each column is measured this much wider.
_MARGIN = (1.005, 0.35)


@dataclass(frozen=True)
class Suggestion:
    """A change that makes a table fit: the keywords (and values) to pass, and the width it gives."""

    changes: tuple[tuple[str, object], ...]
    width: float  # pt: the table's width with the change (of its widest part, when split)
    room: float  # pt: what it has with the change
    parts: int = 1

    def text(self) -> str:
        words = []
        for parameter, value in self.changes:
            if parameter == "split":
                words.append(f"`split` into {self.parts} tables")
            elif parameter == "digits":
                words.append(f"with `digits` {value}")
            else:
                words.append(f"`{parameter}`")
        text = " and ".join(words)
        if any(p == "split" for p, _ in self.changes):
            return text
        if any(p == "landscape" for p, _ in self.changes):
            return f"{text} ({self.width:,.0f} of {self.room:,.0f} pt)"
        return f"{text} ({self.width:,.0f} pt)"


@dataclass(frozen=True)
class PageFit:
    """How wide a table is against the room it has, and what would make it fit."""

    width: float  # pt: the natural width of the table (its widest part, if split)
    room: float  # pt
    suggestions: tuple[Suggestion, ...] = ()

    @property
    def fits(self) -> bool:
        return self.width <= self.room

    def message(self) -> str:
        """One line for a table that does not fit: how much too wide, and the changes that fix it."""
        text = (
            f"the table is {self.width:,.0f} pt wide, {self.width - self.room:,.0f} pt more than the "
            f"{self.room:,.0f} pt it has (`width`)"
        )
        if not self.suggestions:
            return text + "; nothing ood-store can change makes it fit: leave out runs or tasks"
        items = [s.text() for s in self.suggestions]
        listed = items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]
        return f"{text}; it fits with {listed}"


def column_widths(table: PaperTable) -> list[float]:
    """The width (pt) of each column's widest cell or header as LaTeX sets it."""
    cells = table.cells("latex")
    widths = []
    for i, column in enumerate(table.columns):
        texts = [latex.header(column), *(row[i] for row in cells)]
        widths.append(max(tex_metrics.width(text) for text in texts) * _MARGIN[0] + _MARGIN[1])
    return widths


def tabular_width(table: PaperTable, part: Sequence[int] | None = None) -> float:
    """The width (pt) of the ``tabular`` of ``part`` (column indices; default all columns)."""
    widths = column_widths(table)
    part = list(range(len(table.columns))) if part is None else list(part)
    total = tex_metrics.TABCOLSEP  # left of the first column
    for position, index in enumerate(part):
        total += widths[index]
        starred = latex.spec(table.columns[index], table.mark).endswith(latex.STAR_ROOM)
        last = position == len(part) - 1
        total += _STAR_ROOM if starred else (tex_metrics.TABCOLSEP if last else 2 * tex_metrics.TABCOLSEP)
    return total


def height(table: PaperTable) -> float:
    """The height (pt) of the table as a float: rows, rules, spaces between blocks and the caption."""
    rows = table.frame.height + 1
    blocks = table.frame[table.group].n_unique() - 1 if table.group else 0
    caption_width = tex_metrics.width(latex.caption(table))
    lines = max(1, math.ceil(caption_width / (room(table) * 0.95)))
    return rows * ROW + RULES + blocks * BLOCK + CAPTION + lines * ROW


def room(table: PaperTable) -> float:
    """The width (pt) the table has: the text height in landscape, one column, or the page's text width."""
    if table.landscape:
        return page.points(page.TEXT_HEIGHT)
    return page.points(table.width)


def is_long(table: PaperTable) -> bool:
    """Whether the table is set as a ``longtable``: asked for, or taller than a float can be."""
    if table.long is not None:
        return table.long
    return height(table) > _FLOAT_ROOM * page.points(page.TEXT_HEIGHT)


def parts(table: PaperTable) -> list[tuple[int, ...]]:
    """The columns of each table a split table becomes: its leading text columns in each, the rest in turn
    as many as fit (one part when the table fits, or is not split)."""
    every = tuple(range(len(table.columns)))
    if not table.split or tabular_width(table) <= room(table):
        return [every]
    keys = []
    for index, column in enumerate(table.columns):
        if column.kind != "text":
            break
        keys.append(index)
    out: list[tuple[int, ...]] = []
    current = list(keys)
    for index in every[len(keys) :]:
        if len(current) > len(keys) and tabular_width(table, [*current, index]) > room(table):
            out.append(tuple(current))
            current = list(keys)
        current.append(index)
    out.append(tuple(current))
    return out


def plan(table: PaperTable) -> latex.TablePlan:
    """How :func:`~ood_store._export.latex.render` sets ``table``: environment and parts."""
    chosen = parts(table)
    if is_long(table):
        return latex.TablePlan("landscape longtable" if table.landscape else "longtable", tuple(chosen))
    if table.landscape:
        return latex.TablePlan("sidewaystable", tuple(chosen))
    widest = max(tabular_width(table, part) for part in chosen)
    one_column = table.width <= page.COLUMN or widest <= page.points(page.column_of(table.width))
    return latex.TablePlan("table" if one_column else "table*", tuple(chosen))


def fit(table: PaperTable) -> PageFit:
    """The table's width against its room, with the changes that would make a table that does not fit fit."""
    width = max(tabular_width(table, part) for part in parts(table))
    have = room(table)
    if width <= have:
        return PageFit(width, have)
    return PageFit(width, have, tuple(_suggestions(table)))


def _suggestions(table: PaperTable) -> list[Suggestion]:
    """The single changes that make ``table`` fit, each measured; else the fewest tables it splits into."""
    changes: list[tuple[str, object]] = []
    if table.options.get("transpose") is False:  # a partial-correlation table, not yet transposed
        changes.append(("transpose", True))
    if table.options.get("compact") is False:
        changes.append(("compact", True))
    if (2 if table.digits is None else table.digits) > 1 and any(c.kind in ("float", "ci") for c in table.columns):
        changes.append(("digits", 1))
    variants = {change: table.rebuild(**{change[0]: change[1]}) for change in changes if table.rebuild is not None}
    if not table.landscape:
        variants[("landscape", True)] = replace(table, landscape=True)
    out = []
    for change, changed in variants.items():
        width, have = tabular_width(changed), room(changed)
        if width <= have:
            out.append(Suggestion((change,), width, have))
    if out or table.split:
        return out
    splits: list[tuple[tuple[tuple[str, object], ...], PaperTable]] = [((), table)]
    splits += [
        ((change,), variants[change]) for change in (("compact", True), ("landscape", True)) if change in variants
    ]
    best = None
    for given, changed in splits:
        split = parts(replace(changed, split=True))
        widest = max(tabular_width(changed, part) for part in split)
        if len(split) > 1 and widest <= room(changed) and (best is None or len(split) < best.parts):
            best = Suggestion((*given, ("split", True)), widest, room(changed), parts=len(split))
    return [best] if best else []
