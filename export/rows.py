"""Rows (a query's result, a listing, an analysis table) as text or a file in any of the row formats.

The formats are those of :data:`ood_store._export.formats.ROWS`. LaTeX goes
through the paper tables of :mod:`ood_store._export.tables`, so that a query's rows
printed as ``latex`` are the table that exporting the same query writes.
"""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import polars as pl

from ood_store._errors import OodStoreError
from ood_store._export import formats
from ood_store._summary import text_table


def render(frame: pl.DataFrame, output_format: str) -> str:
    """The rows of ``frame`` as text in a text format of :data:`~ood_store._export.formats.ROWS`.

    Examples
    --------
    >>> frame = pl.DataFrame({"task": ["mnli", "hans"], "acc": [0.8125, 0.5]})
    >>> print(render(frame, "csv"), end="")
    task,acc
    mnli,0.8125
    hans,0.5
    >>> print(render(frame, "table"))
    task       acc
    ------  ------
    mnli    0.8125
    hans    0.5
    """
    if output_format not in formats.ROWS or formats.is_binary(output_format):
        text_formats = [f for f in formats.ROWS if not formats.is_binary(f)]
        raise OodStoreError(f"{output_format!r} is not a text format for rows; use one of {', '.join(text_formats)}")
    binary = [name for name, dtype in frame.schema.items() if dtype == pl.Binary]
    if binary:  # bytes (BLOB, BIT) print as hex in text formats
        frame = frame.with_columns(pl.col(binary).bin.encode("hex"))
    if output_format == "csv":
        return _nested_as_json(frame).write_csv()
    if output_format in ("json", "jsonl"):
        buffer = io.BytesIO()
        (frame.write_json if output_format == "json" else frame.write_ndjson)(buffer)
        text = buffer.getvalue().decode("utf-8")
        return text if text.endswith("\n") or not text else text + "\n"
    if output_format == "latex":
        from ood_store._export import tables

        return tables.query_table(frame).to_latex()
    return text_table(frame, output_format)


def _nested_as_json(frame: pl.DataFrame) -> pl.DataFrame:
    """Lists, arrays and structs (which CSV cannot hold) as JSON text, one value per cell."""
    nested = [name for name, dtype in frame.schema.items() if dtype.is_nested()]
    if not nested:
        return frame
    return frame.with_columns(
        pl.Series(name, [None if v is None else orjson.dumps(v, default=str).decode() for v in frame[name].to_list()])
        for name in nested
    )


def write(frame: pl.DataFrame, output_format: str, path: str | Path) -> None:
    """Write the rows of ``frame`` to ``path`` in ``output_format``; an unwritable path is a one-line error."""
    try:
        if output_format == "parquet":
            frame.write_parquet(path)
        else:
            Path(path).write_text(render(frame, output_format), encoding="utf-8")
    except OSError as exc:
        raise OodStoreError(f"{path}: cannot write: {exc.strerror or exc}") from None
