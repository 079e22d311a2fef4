"""``ood-store runs`` (and ``runs set``) and ``ood-store tasks``: what the store holds."""

from __future__ import annotations

import click

from ood_store._cli.options import attr_file_option
from ood_store._cli.output import emit, output_options
from ood_store._counts import n


@click.group(invoke_without_command=True)
@output_options
@click.pass_context
def runs(ctx: click.Context, output_format: str, output) -> None:
    """List runs with their attributes, checkpoints (by campaign), evaluations and tasks.

    `ood-store runs set` sets attributes of runs.
    """
    if ctx.invoked_subcommand is not None:
        return
    with ctx.obj.open(read_only=True) as store:
        frame = store.runs()
    emit(frame, output_format, output)


@runs.command(name="set")
@click.argument("arguments", nargs=-1, metavar="[RUN] KEY=VALUE...")
@click.option("--match", metavar="GLOB", help="Every run whose name matches GLOB, e.g. 'EleutherAI/*-160m'.")
@attr_file_option
@click.pass_obj
def set_attributes(settings, arguments: tuple[str, ...], match: str | None, attribute_file) -> None:
    """Set attributes (family, size, in_domain, seed, or any key) of runs, all in one transaction.

    \b
    Examples:
      ood-store runs set EleutherAI/pythia-v1.1-160m size=160m family=pythia
      ood-store runs set --match 'EleutherAI/pythia-*-deduped' dedup=yes
      ood-store runs set --attr-file sizes.csv      # header: run,size,...; a run name or glob per row
    """
    run = None
    pairs = list(arguments)
    if match is None and pairs and "=" not in pairs[0]:
        run = pairs.pop(0)
    if (run or match) and not pairs:
        raise click.UsageError("Give the attributes to set as KEY=VALUE.")
    if pairs and not (run or match):
        raise click.UsageError("Name the run (RUN or --match GLOB) whose attributes to set.")
    if not (pairs or attribute_file):
        raise click.UsageError("Give RUN KEY=VALUE..., --match GLOB KEY=VALUE... or --attr-file FILE.")
    with settings.open() as store:
        changed = store.set_run_attributes(run, pairs or None, match=match, attribute_file=attribute_file)
    click.echo(f"Set attributes of {n(len(changed), 'run')} in {settings.db}.")


@click.command()
@click.option("--run", help="Only the tasks of this run.")
@output_options
@click.pass_obj
def tasks(settings, run: str | None, output_format: str, output) -> None:
    """List tasks with their metrics, filters, shots and campaigns, and how many runs have them."""
    with settings.open(read_only=True) as store:
        frame = store.tasks(run=run)
    emit(frame, output_format, output)


COMMANDS = [runs, tasks]
