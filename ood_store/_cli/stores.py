"""``ood-store dump``, ``load`` and ``merge``: moving results between stores, and publishing them."""

from __future__ import annotations

from pathlib import Path

import click

from ood_store._cli.options import FILE, FOLDER
from ood_store._counts import n
from ood_store._store.merge import PREFER, MergeReport

_prefer = click.option(
    "--prefer",
    type=click.Choice(PREFER),
    help="Settle values the stores disagree on: take theirs, or keep ours without reporting failure.  "
    "[default: keep ours, list the conflicts, exit status 1]",
)


@click.command()
@click.argument("folder", type=FOLDER)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar, no summary.")
@click.pass_obj
def dump(settings, folder: Path, quiet: bool) -> None:
    """Write every table of the store as Parquet into FOLDER (new or empty), with a manifest.

    Tables of evaluations, scores and samples are partitioned by run
    (FOLDER/evaluation_scores/run=NAME/data_0.parquet); manifest.json lists the
    schema and ood-store versions, each table's rows and every file's sha256.
    `ood-store load FOLDER` adds it to another store; DuckDB, Polars and pandas
    read the files as they are.
    """
    with settings.open(read_only=True) as store:
        report = store.dump(folder, progress=not quiet)
    if not quiet:
        scores = report.tables["evaluation_scores"].rows
        evaluations = report.tables["evaluations"].rows
        runs = report.tables["runs"].rows
        click.echo(
            f"Dumped {settings.db} to {folder}: {n(evaluations, 'evaluation')}, {n(scores, 'score')}, "
            f"{n(runs, 'run')} in {n(len(report.tables), 'table')} "
            f"(schema version {report.schema_version})."
        )


@click.command()
@click.argument("folder", type=FOLDER)
@_prefer
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.pass_obj
def load(settings, folder: Path, prefer: str | None, quiet: bool) -> None:
    """Add the dump in FOLDER (from `ood-store dump`, of this or an older schema) to the store.

    Evaluations already in the store (same content hash) are not added again,
    so loading twice adds nothing. Runs, checkpoints and saved analyses are
    reconciled: a value the two disagree on is listed and the store's own kept,
    unless --prefer says otherwise. Everything goes in in one transaction.
    """
    with settings.open() as store:
        report = store.load(folder, prefer=prefer, progress=not quiet)
    _summarize("Loaded", report, settings.db)


@click.command()
@click.argument("other", type=FILE)
@_prefer
@click.pass_obj
def merge(settings, other: Path, prefer: str | None) -> None:
    """Add every result of the store OTHER (opened read-only) to the store; the rules of `ood-store load`."""
    with settings.open() as store:
        report = store.merge(other, prefer=prefer)
    _summarize("Merged", report, settings.db)


def _summarize(verb: str, report: MergeReport, db: Path) -> None:
    analyses = report.analyses_added + report.analyses_replaced
    click.echo(
        f"{verb} {report.source} into {db}: {n(report.evaluations_added, 'evaluation')} "
        f"({n(report.scores_added, 'score')}, {n(report.samples_added, 'sample')}), "
        f"{n(report.runs_added, 'run')}, {n(report.checkpoints_added, 'checkpoint')}, "
        f"{n(len(analyses), 'analysis', 'analyses')}."
    )
    click.echo(
        f"Already present: {n(report.evaluations_present, 'evaluation')}, "
        f"{n(len(report.analyses_present), 'analysis', 'analyses')}."
    )
    if report.runs_updated:
        click.echo(f"Updated the attributes of {n(report.runs_updated, 'run')}.")
    if report.conflicts:
        how = (
            f"settled by --prefer {report.prefer}"
            if report.prefer
            else "this store's values kept; choose with --prefer theirs|ours"
        )
        click.echo(f"Conflicts: {len(report.conflicts):,} ({how}):", err=True)
        for conflict in report.conflicts:
            click.echo(f"  {conflict.describe(report.source)}", err=True)
    if not report.ok:
        raise SystemExit(1)


COMMANDS = [dump, load, merge]
