"""What a page is made of, whatever it shows: tables of rows, charts, controls; and the URLs between pages.

A page's HTML and its ``.json`` twin come from the same :class:`Page`: every
:class:`Table` is a table in the HTML and a list of rows under its name in the
JSON, so the two cannot disagree. Every view's state is in its URL's query
(:class:`Query`), so that a link shows a colleague the same thing.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import polars as pl


@dataclass(frozen=True)
class Column:
    """A column of a table: its key in the rows, its heading, and where a cell links to (None: nowhere)."""

    key: str
    label: str | None = None
    link: Callable[[Mapping[str, Any]], str | None] | None = None

    @property
    def heading(self) -> str:
        return self.label if self.label is not None else self.key


@dataclass(frozen=True)
class Table:
    """Rows (JSON values: text, numbers, booleans, lists, null) shown as an HTML table and given as JSON."""

    name: str
    title: str
    columns: tuple[Column, ...]
    rows: list[dict[str, Any]]
    note: str | None = None
    folded: bool = False  # shown folded away (<details>), for long tables under a chart

    @classmethod
    def of(
        cls,
        name: str,
        title: str,
        frame: pl.DataFrame,
        *,
        links: Mapping[str, Callable[[Mapping[str, Any]], str | None]] | None = None,
        labels: Mapping[str, str] | None = None,
        note: str | None = None,
        folded: bool = False,
    ) -> Table:
        """A table of every column of ``frame``, in its order."""
        links, labels = links or {}, labels or {}
        columns = tuple(Column(c, labels.get(c), links.get(c)) for c in frame.columns)
        return cls(name, title, columns, json_rows(frame), note, folded)

    def links(self) -> list[dict[str, str | None]]:
        """Per row, the link of each linked column."""
        linked = [c for c in self.columns if c.link is not None]
        return [{c.key: c.link(row) for c in linked if c.link is not None} for row in self.rows]


@dataclass(frozen=True)
class Chart:
    """A Vega-Lite spec drawn in the page, and the paper figures (PDF, SVG) of the same data, if export draws one."""

    id: str
    title: str
    spec: dict[str, Any]
    figures: tuple[tuple[str, str], ...] = ()  # (label, href)
    note: str | None = None


@dataclass(frozen=True)
class Choice:
    """A select box of a page's form: the query parameter, its label, the (value, label) options, the value chosen."""

    name: str
    label: str
    options: tuple[tuple[str, str], ...]
    value: str | None


@dataclass(frozen=True)
class Link:
    label: str
    href: str
    current: bool = False


@dataclass
class Page:
    """What one request shows. ``data`` and the tables' rows are the JSON twin; the rest is for the HTML."""

    name: str  # the template, and the page's name in the JSON
    title: str
    data: dict[str, Any] = field(default_factory=dict)
    tables: list[Table] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)
    choices: list[Choice] = field(default_factory=list)  # a GET form of select boxes
    toggles: list[Link] = field(default_factory=list)  # links that change one setting of the view
    context: dict[str, Any] = field(default_factory=dict)  # anything else the template shows
    refresh: int | None = None  # seconds until the browser loads the page again
    #: What the page was rendered as, by kind and URL: kept with the page while the store file is unchanged.
    rendered: dict[tuple[str, str], bytes] = field(default_factory=dict, repr=False)

    def json(self, url: str) -> dict[str, Any]:
        return {
            "page": self.name,
            "title": self.title,
            "url": url,
            **self.data,
            **{t.name: t.rows for t in self.tables},
        }


def json_rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``frame`` as dicts of JSON values: NaN and infinities are null (JSON has neither)."""
    return [{k: clean(v) for k, v in row.items()} for row in frame.iter_rows(named=True)]


def clean(value: Any) -> Any:
    """``value`` as JSON can hold it: non-finite floats as None, times as ISO text, lists and dicts cleaned inside."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    return value


def segment(name: str, *, slashes: bool = False) -> str:
    """``name`` as one segment of a URL path, every character that means something in a URL %-encoded.

    ``slashes``: keep ``/`` readable (``EleutherAI/pythia-160m``) where the route takes a path; a name with
    an empty, ``.`` or ``..`` part (which browsers would collapse) keeps them encoded.
    """
    encoded = quote(name, safe="")
    parts = name.split("/")
    if slashes and all(p not in ("", ".", "..") for p in parts):
        return "/".join(quote(p, safe="") for p in parts)
    return encoded


def url(path: str, params: Mapping[str, Any] | Iterable[tuple[str, Any]] = ()) -> str:
    """``path`` with the query ``params`` (None values left out; lists repeat the key)."""
    items = params.items() if isinstance(params, Mapping) else params
    pairs: list[tuple[str, str]] = []
    for key, value in items:
        if value is None:
            continue
        for v in value if isinstance(value, list | tuple) else [value]:
            pairs.append((key, str(v)))
    return f"{path}?{urlencode(pairs)}" if pairs else path


class Query:
    """The query parameters of a request, read with defaults and checks; what a page was asked for."""

    def __init__(self, pairs: Sequence[tuple[str, str]]):
        self.pairs = tuple((k, v) for k, v in pairs if k != "token")

    def get(self, name: str, default: str | None = None) -> str | None:
        values = self.all(name)
        return values[-1] if values else default

    def all(self, name: str) -> list[str]:
        return [v for k, v in self.pairs if k == name and v != ""]

    def flag(self, name: str) -> bool:
        return (self.get(name) or "").lower() in ("1", "true", "yes", "on")

    def number(self, name: str, default: float, low: float, high: float) -> float:
        text = self.get(name)
        if text is None:
            return default
        try:
            value = float(text)
        except ValueError:
            raise BadRequest(f"{name}: expected a number, got {text!r}") from None
        if not low < value < high:
            raise BadRequest(f"{name}: must be between {low:g} and {high:g}, not {text}")
        return value

    def integer(self, name: str) -> int | None:
        text = self.get(name)
        if text is None:
            return None
        try:
            return int(text)
        except ValueError:
            raise BadRequest(f"{name}: expected a whole number, got {text!r}") from None

    def one_of(self, name: str, allowed: Sequence[str], default: str) -> str:
        value = self.get(name) or default
        if value not in allowed:
            raise BadRequest(f"{name}: must be one of {', '.join(allowed)}, not {value!r}")
        return value

    def key(self) -> tuple[tuple[str, str], ...]:
        """What identifies the view: the parameters, sorted (their order in the URL does not matter)."""
        return tuple(sorted(self.pairs))

    def with_(self, **changes: Any) -> list[tuple[str, str]]:
        """These parameters with ``changes`` (None removes one), for links that change one setting."""
        kept = [(k, v) for k, v in self.pairs if k not in changes]
        for k, v in changes.items():
            for value in v if isinstance(v, list | tuple) else [] if v is None else [v]:
                kept.append((k, str(value)))
        return kept


class BadRequest(Exception):
    """A request the viewer cannot answer as asked (an unknown parameter value): a one-line 400."""


class NotFound(Exception):
    """No such run, analysis, task, ... in the store: a one-line 404."""
