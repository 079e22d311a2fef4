"""The page that tables and figures are made for: a two-column paper, and the lengths users give for it.

Two-column venues (ICML, ACL, IEEE, AAAI) have a text block about 6.75 in
wide and 9 in high with columns of about 3.25 in; that is the default here.
A width is given as ``page`` (the text width), ``column`` (one column), a TeX
length (``6.5in``, ``16cm``, ``455pt``, ``170mm``, ``480bp``) or a bare
number of inches.

Examples
--------
>>> inches("column"), round(inches("16cm"), 3), round(inches("455.24pt"), 3), inches(3.5)
(3.25, 6.299, 6.299, 3.5)
"""

from __future__ import annotations

import re

from ood_store._errors import AnalysisError

COLUMN = 3.25  # in: one column of a two-column page
PAGE = 6.75  # in: the text width of a two-column page (\textwidth)
COLUMN_SEP = PAGE - 2 * COLUMN  # in: between the two columns (\columnsep)
TEXT_HEIGHT = 9.0  # in: the text height (\textheight); a landscape table's width
FIGURE_HEIGHT = 8.5  # in: the tallest a figure gets, leaving room for its caption
POINTS = 72.27  # TeX points per inch
NAMED = {"page": PAGE, "column": COLUMN}
_UNITS = {"in": 1.0, "cm": 1 / 2.54, "mm": 1 / 25.4, "pt": 1 / POINTS, "bp": 1 / 72}
_LENGTH = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*$", re.IGNORECASE)


def inches(width: str | float, parameter: str = "width") -> float:
    """A width in inches from ``page``, ``column``, a TeX length or a number of inches."""
    if isinstance(width, int | float) and not isinstance(width, bool):
        value = float(width)
    else:
        text = str(width).strip().lower()
        if text in NAMED:
            return NAMED[text]
        match = _LENGTH.match(text)
        if match is None or match[2] not in ("", *_UNITS):
            raise AnalysisError(
                f"{width!r} is not a width: give page, column, a length such as 6.5in, 16cm or 455pt, or inches",
                parameter=parameter,
            )
        value = float(match[1]) * _UNITS.get(match[2], 1.0)
    if not 0 < value <= 40:
        raise AnalysisError(f"{width!r} is not a usable width (between 0 and 40 in)", parameter=parameter)
    return value


def points(width_inches: float) -> float:
    """``width_inches`` in TeX points."""
    return width_inches * POINTS


def column_of(page_inches: float) -> float:
    """The column width (in) of a two-column page ``page_inches`` wide, with the default column separation."""
    return (page_inches - COLUMN_SEP) / 2
