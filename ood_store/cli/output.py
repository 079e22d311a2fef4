"""Output options shared by every command that prints rows (``query``, ``runs``, ``tasks``).

Bundled as one decorator, :func:`output_options`, in the style of sqlite-utils.
"""

from __future__ import annotations

import functools
import io
from pathlib import Path

import click
import polars as pl
from tabulate import tabulate

from ood_store.errors import OodStoreError

FORMATS = ("table", "csv", "json", "jsonl", "markdown", "latex", "parquet")
_TABULATE = {"table": "simple", "markdown": "github", "latex": "latex_booktabs"}


def output_options(fn):
    """Add ``--format`` and ``--output`` to a command; it receives ``output_format`` and ``output``."""

    @click.option(
        "-f",
        "--format",
        "output_format",
        type=click.Choice(FORMATS, case_sensitive=False),
        default="table",
        show_default=True,
        help="How to print the rows. parquet needs --output.",
    )
    @click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, writable=True, path_type=Path),
        help="Write to this file instead of standard output.",
    )
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if kwargs["output_format"] == "parquet" and kwargs["output"] is None:
            raise click.UsageError("--format parquet writes a binary file: give it one with -o FILE")
        return fn(*args, **kwargs)

    return wrapper


def emit(frame: pl.DataFrame, output_format: str, output: Path | None) -> None:
    """Write ``frame`` in ``output_format`` to ``output`` or standard output."""
    output_format = output_format.lower()
    try:
        if output_format == "parquet":
            frame.write_parquet(output)
            return
        text = render(frame, output_format)
        if output is None:
            click.echo(text, nl=not text.endswith("\n"))
        else:
            output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise OodStoreError(f"{output}: cannot write: {exc.strerror or exc}") from None


def render(frame: pl.DataFrame, output_format: str) -> str:
    """The rows of ``frame`` as text in one of the text formats."""
    binary = [name for name, dtype in frame.schema.items() if dtype == pl.Binary]
    if binary:  # bytes (BLOB, BIT) print as hex in text formats
        frame = frame.with_columns(pl.col(binary).bin.encode("hex"))
    if output_format == "csv":
        return frame.write_csv()
    if output_format in ("json", "jsonl"):
        buffer = io.BytesIO()
        (frame.write_json if output_format == "json" else frame.write_ndjson)(buffer)
        text = buffer.getvalue().decode("utf-8")
        return text if text.endswith("\n") or not text else text + "\n"
    if output_format in _TABULATE:
        return tabulate(
            frame.rows(),
            headers=frame.columns,
            tablefmt=_TABULATE[output_format],
            missingval="" if output_format != "table" else "NULL",
            floatfmt="g",
        )
    raise ValueError(f"unknown format {output_format!r}")
