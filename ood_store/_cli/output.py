"""Output options shared by every command that prints rows (``query``, ``runs``, ``tasks``, ``analyze``, ...).

Bundled as one decorator, :func:`output_options`, in the style of sqlite-utils;
the formats are the registry's (:mod:`ood_store._export.formats`) and the
rendering is :mod:`ood_store._export.rows`.
"""

from __future__ import annotations

import functools
from pathlib import Path

import click
import polars as pl

from ood_store._counts import n
from ood_store._export import formats, rows

FORMATS = formats.ROWS


def output_options(fn):
    """Add ``--format`` and ``--output`` to a command; it receives ``output_format`` and ``output``.

    Without ``--format`` the format follows the extension of ``--output``
    (``.csv``, ``.json``, ``.jsonl``, ``.md``, ``.tex``, ``.parquet``, ``.txt``), else ``table``.
    """

    @click.option(
        "-f",
        "--format",
        "output_format",
        type=click.Choice(FORMATS, case_sensitive=False),
        help="How to print the rows. parquet needs --output.  [default: from the -o extension, else table]",
    )
    @click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, writable=True, path_type=Path),
        help="Write to this file instead of standard output.",
    )
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        chosen, output = kwargs["output_format"], kwargs["output"]
        if chosen is None:
            chosen = formats.from_extension(output, FORMATS) if output is not None else "table"
        kwargs["output_format"] = chosen.lower()
        if formats.is_binary(kwargs["output_format"]) and output is None:
            raise click.UsageError(f"--format {chosen} writes a binary file: give it one with -o FILE")
        return fn(*args, **kwargs)

    return wrapper


def emit(frame: pl.DataFrame, output_format: str, output: Path | None) -> None:
    """Write ``frame`` in ``output_format`` to ``output`` or standard output.

    A file written says so on standard error (``Wrote 27 rows as csv to FILE.``), as ``export`` and ``plot``
    do: every command with ``-o`` that prints rows (``query``, ``analyze``, ``runs``, ``status``, ``plan``, ...).
    """
    if output is not None:
        rows.write(frame, output_format, output)
        click.echo(f"Wrote {n(frame.height, 'row')} as {output_format} to {output}.", err=True)
        return
    text = rows.render(frame, output_format)
    click.echo(text, nl=not text.endswith("\n"))


def write_figure(figure, output: Path) -> None:
    """Save a :class:`~ood_store._export.figure_files.PaperFigure` to ``output`` and say so; with its caption file
    when its note was too long for the figure."""
    from ood_store._export.figure_files import caption_path

    figure.save(output)
    click.echo(f"Wrote {figure.description} to {output}.", err=True)
    if figure.caption is not None:
        click.echo(
            f"The note would take more than a third of the figure: the figure shows its first lines, the whole "
            f"note is in {caption_path(output)}.",
            err=True,
        )
