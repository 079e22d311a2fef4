"""``ood-store runs`` and ``ood-store tasks``: what the store holds."""

from __future__ import annotations

import click

from ood_store.cli.output import emit, output_options


@click.command()
@output_options
@click.pass_obj
def runs(settings, output_format: str, output) -> None:
    """List runs with their attributes, checkpoints, evaluations and tasks."""
    with settings.open(read_only=True) as store:
        frame = store.runs()
    emit(frame, output_format, output)


@click.command()
@click.option("--run", help="Only the tasks of this run.")
@output_options
@click.pass_obj
def tasks(settings, run: str | None, output_format: str, output) -> None:
    """List tasks with their metrics, filters and shots, and how many runs have them."""
    with settings.open(read_only=True) as store:
        frame = store.tasks(run=run)
    emit(frame, output_format, output)


COMMANDS = [runs, tasks]
