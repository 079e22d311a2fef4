"""``ood-store snapshots`` and ``ood-store vacuum``: a lake's history, and its upkeep."""

from __future__ import annotations

import click

from ood_store._cli.flags import spelled
from ood_store._cli.output import emit, output_options


@click.command()
@output_options
@click.pass_obj
def snapshots(settings, output_format: str, output) -> None:
    """List a lake's snapshots: when each was committed, by whom, and what it added (files, runs, rows).

    Every saved analysis and every export records the snapshot it was read at; `analyze --at`,
    `compare --at` and `export --at` read the lake as it was then.

    \b
    Example:
      ood-store --db 'ducklake:postgres:dbname=lab host=db.lab' snapshots
    """
    with settings.open(read_only=True) as store:
        frame = store.snapshots()
    emit(frame, output_format, output)


@click.command()
@click.option(
    "--older-than",
    "older_than",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    metavar="DAYS",
    help="Expire the snapshots older than this many days (never the latest, nor one a saved analysis names).",
)
@click.option("--keep", multiple=True, type=click.IntRange(min=0), metavar="SNAPSHOT", help="Also keep this snapshot.")
@click.option("--dry-run", is_flag=True, help="Say what would be expired; change nothing.")
@click.pass_obj
def vacuum(settings, older_than: float, keep: tuple[int, ...], dry_run: bool) -> None:
    """Expire a lake's old snapshots and delete the data files no snapshot names.

    Files that only expired snapshots named, and those a writer killed before it committed left, are
    deleted. Snapshots that saved analyses were computed at are kept (as are those given with --keep):
    `--at` opens them as before. Expired snapshots can no longer be opened with `--at`.

    \b
    Example:
      ood-store --db 'ducklake:postgres:dbname=lab host=db.lab' vacuum --older-than 90 --keep 1234
    """
    with settings.open() as store:
        report = store.vacuum(older_than, keep=keep, dry_run=dry_run)
    if dry_run:
        click.echo(f"Would expire {len(report.expired)} snapshots: {', '.join(map(str, report.expired)) or 'none'}.")
        return
    click.echo(spelled(str(report)))


COMMANDS = [snapshots, vacuum]
