"""How results present themselves: a :class:`Summary` is what a command prints and what a notebook shows.

Every results object has a ``summary()`` that returns one: a title line, a frame of its main columns
(floats rounded to 3 significant digits) and notes. ``print(summary)`` is the text the command line
prints in ``--format table``; in Jupyter it displays as an HTML (or Markdown) table; ``.frame`` is
the rows as Polars. Text tables are drawn by tabulate, here only, for the command line and the
notebook alike.

>>> frame = pl.DataFrame({"task": ["mnli", "hans"], "acc": [0.8125, 0.5]})
>>> summary = Summary("Accuracy of one checkpoint", frame, notes=("hans: the non-entailed half is hard",))
>>> print(summary)
Accuracy of one checkpoint
task       acc
------  ------
mnli    0.8125
hans    0.5
hans: the non-entailed half is hard
>>> print(summary.as_markdown())
**Accuracy of one checkpoint**
<BLANKLINE>
| task   |    acc |
|--------|--------|
| mnli   | 0.8125 |
| hans   | 0.5    |
<BLANKLINE>
hans: the non-entailed half is hard
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl
from tabulate import tabulate

#: tabulate's style for each text format of a table.
_STYLES = {"table": "simple", "markdown": "github"}


def text_table(frame: pl.DataFrame, style: str = "table") -> str:
    """The rows of ``frame`` as a text table: ``table`` (aligned columns) or ``markdown`` (GitHub's).

    Missing values show as ``NULL`` in ``table`` (as SQL prints them) and empty in ``markdown``.
    """
    return tabulate(
        frame.rows(),
        headers=frame.columns,
        tablefmt=_STYLES[style],
        missingval="NULL" if style == "table" else "",
        floatfmt="g",
    )


def html_table(frame: pl.DataFrame) -> str:
    """The rows of ``frame`` as an HTML table, every value escaped (names come from files anyone can write)."""
    escaped = frame.with_columns(
        pl.col(name).map_elements(lambda v: html.escape(str(v)), return_dtype=pl.String)
        for name, dtype in frame.schema.items()
        if dtype == pl.String
    )
    headers = [html.escape(name) for name in frame.columns]
    return tabulate(escaped.rows(), headers=headers, tablefmt="unsafehtml", missingval="", floatfmt="g")


def rounded(frame: pl.DataFrame, digits: int = 3) -> pl.DataFrame:
    """``frame`` with its float columns rounded to ``digits`` significant digits (the command line's view)."""
    return frame.with_columns(pl.col(pl.Float64, pl.Float32).round_sig_figs(digits))


@dataclass(frozen=True)
class Summary:
    """A results object's presentation: a title, its main rows, notes (see the module docstring)."""

    #: One line saying what the rows are.
    title: str
    #: The rows shown, with the columns and rounding of the command line's table.
    frame: pl.DataFrame
    #: Lines shown under the table (what to look at next, warnings).
    notes: Sequence[str] = field(default_factory=tuple)

    def as_text(self) -> str:
        """The title, the table (``--format table``) and the notes, as the command line prints them."""
        parts = [self.title] if self.title else []
        if self.frame.width:
            parts.append(text_table(self.frame, "table"))
        parts.extend(self.notes)
        return "\n".join(parts)

    def as_markdown(self) -> str:
        """The same as Markdown: the title in bold, a GitHub table, the notes."""
        parts = [f"**{self.title}**", ""] if self.title else []
        if self.frame.width:
            parts += [text_table(self.frame, "markdown"), ""]
        parts.extend(self.notes)
        return "\n".join(parts).rstrip("\n")

    def as_html(self) -> str:
        """The same as HTML, every value escaped."""
        parts = [f"<p><strong>{html.escape(self.title)}</strong></p>"] if self.title else []
        if self.frame.width:
            parts.append(html_table(self.frame))
        parts.extend(f"<p>{html.escape(note)}</p>" for note in self.notes)
        return "<div class='ood-store-summary'>" + "".join(parts) + "</div>"

    def __str__(self) -> str:
        return self.as_text()

    def _repr_html_(self) -> str:
        return self.as_html()

    def _repr_markdown_(self) -> str:
        return self.as_markdown()


#: How many rows a report's summary lists before it says how many more there are.
SHOWN_ROWS = 20


def first_rows(frame: pl.DataFrame, what: str, method: str) -> tuple[pl.DataFrame, tuple[str, ...]]:
    """The first :data:`SHOWN_ROWS` rows of ``frame``, and a note naming how many more there are, and where."""
    if frame.height <= SHOWN_ROWS:
        return frame, ()
    more = frame.height - SHOWN_ROWS
    return frame.head(SHOWN_ROWS), (f"... and {more:,} more {what} ({method} has every one).",)


class Presented:
    """What a report shows of itself: a one-line ``repr``, and its :meth:`summary` in a notebook.

    Subclasses define :meth:`summary`; the ``repr`` is its title, so that a notebook cell (or a log line)
    never prints a report's every outcome.
    """

    def summary(self) -> Summary:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{self.summary().title}>"

    def _repr_html_(self) -> str:
        return self.summary().as_html()

    def _repr_markdown_(self) -> str:
        return self.summary().as_markdown()
