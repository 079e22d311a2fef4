"""``ood-store query``: run one read-only SQL statement against the store."""

from __future__ import annotations

import sys

import click

from ood_store._cli.options import allow_files_option
from ood_store._cli.output import emit, output_options


@click.command()
@click.argument("sql")
@click.option(
    "-p",
    "--param",
    "params",
    type=(str, str),
    multiple=True,
    metavar="NAME VALUE",
    help="A named parameter, used as $NAME in the SQL. Repeatable.",
)
@allow_files_option
@output_options
@click.pass_obj
def query(settings, sql: str, params: tuple[tuple[str, str], ...], allow_files, output_format: str, output) -> None:
    """Run a read-only SQL query (SQL, or - to read it from standard input).

    The query reads the store and nothing else: no other file (unless in a
    folder of --allow-files), no setting, no extension.

    \b
    Tables and views: scores (one row per run, step, task, num_fewshot,
    metric, filter), scores_all (every evaluation's rows), score_conflicts,
    runs, checkpoints, evaluations, samples, samples_all.

    \b
    Example:
      ood-store query 'SELECT step, value FROM scores WHERE task = $t' -p t hellaswag
    """
    if sql == "-":
        sql = sys.stdin.read()
    with settings.open(read_only=True, allow_files=allow_files) as store:
        frame = store.query(sql, **dict(params))
    emit(frame, output_format, output)  # with -o: 'Wrote N rows as FORMAT to FILE.'


COMMANDS = [query]
