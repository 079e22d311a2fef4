"""The one registry of output formats: their names, file extensions and what each can hold.

``query``, ``runs``, ``tasks``, ``analyze`` and ``compare`` print rows in the
:data:`ROWS` formats; ``export`` writes paper tables in the :data:`TABLES`
formats; ``plot`` writes figures in the :data:`FIGURES` formats. A file name's
extension picks the format wherever one is not given, by :func:`from_extension`.

Examples
--------
>>> from_extension("results.tex", TABLES)
'latex'
>>> from_extension("heatmap.pdf", FIGURES)
'pdf'
>>> ROWS
('table', 'csv', 'json', 'jsonl', 'markdown', 'latex', 'parquet')
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ood_store._errors import OodStoreError


@dataclass(frozen=True)
class Format:
    name: str
    extensions: tuple[str, ...]  # the first is the usual one
    binary: bool  # needs a file: cannot go to a terminal
    description: str


REGISTRY: dict[str, Format] = {
    f.name: f
    for f in (
        Format("table", (".txt",), False, "aligned plain-text columns, for the terminal"),
        Format("csv", (".csv",), False, "comma-separated values"),
        Format("json", (".json",), False, "JSON"),
        Format("jsonl", (".jsonl", ".ndjson"), False, "one JSON object per line"),
        Format("markdown", (".md",), False, "a pipe table (GitHub, pandoc)"),
        Format("latex", (".tex",), False, "a booktabs table"),
        Format("parquet", (".parquet",), True, "Apache Parquet"),
        Format("pdf", (".pdf",), True, "PDF, fonts embedded as TrueType"),
        Format("png", (".png",), True, "PNG at 300 dpi"),
        Format("svg", (".svg",), False, "SVG"),
    )
}

#: Formats rows are printed in (query, listings, analyze, compare).
ROWS = ("table", "csv", "json", "jsonl", "markdown", "latex", "parquet")
#: Formats a paper table is exported in.
TABLES = ("latex", "markdown", "csv", "json", "parquet")
#: Formats a figure is saved in.
FIGURES = ("pdf", "png", "svg")


def is_binary(name: str) -> bool:
    """Whether format ``name`` must be written to a file."""
    return REGISTRY[name].binary


def from_extension(path: str | Path, allowed: tuple[str, ...]) -> str:
    """The format among ``allowed`` that the extension of ``path`` asks for; anything else is an error."""
    suffix = Path(path).suffix.lower()
    for name in allowed:
        if suffix in REGISTRY[name].extensions:
            return name
    known = ", ".join(ext for name in allowed for ext in REGISTRY[name].extensions)
    raise OodStoreError(f"{path}: cannot tell the format from the extension; use one of {known}")
