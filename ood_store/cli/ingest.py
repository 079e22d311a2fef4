"""``ood-store ingest``: read lm-eval output files into the store."""

from __future__ import annotations

import click

from ood_store.cli.flags import spelled
from ood_store.ingest import IngestReport, Overrides
from ood_store.store.runs import parse_attributes

# How many disagreeing keys to name before summarising the rest.
_CONFLICTS_SHOWN = 10


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--run", help="Use this run for every file, whatever the files say.")
@click.option("--step", type=int, help="Use this step for every file.")
@click.option(
    "--model", help="Treat the files as evaluations of this model path or repo (run and step derive from it)."
)
@click.option(
    "--attr",
    "attributes",
    multiple=True,
    metavar="KEY=VALUE",
    help="Set a run attribute (family, size, in_domain, seed, or any key) on the runs of these files. Repeatable.",
)
@click.option("--no-samples", is_flag=True, help="Skip the samples_<task>_<ts>.jsonl files beside results files.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar; print only problems.")
@click.pass_obj
def ingest(settings, paths, run, step, model, attributes, no_samples, quiet) -> None:
    """Ingest lm-eval results files, folders (searched recursively) or globs.

    Run and step come from each file's model_args (revision=stepN, or a path
    ending in checkpoint-N / step-N / global_stepN); --run, --step and
    --model override them. Files already in the store are left alone. A file
    with a problem is rejected whole and named with the reason; the exit
    status is then 1.
    """
    attrs = parse_attributes(list(attributes))  # checked before the store is opened
    with settings.open() as store:
        report = store.ingest(
            paths,
            overrides=Overrides(run=run, step=step, model=model),
            attributes=attrs,
            samples=not no_samples,
            progress=not quiet,
        )
    _summarise(report, settings.db, quiet)
    if not report.ok:
        raise SystemExit(1)


def _summarise(report: IngestReport, db, quiet: bool) -> None:
    ingested = report.ingested
    if not quiet:
        scores = sum(f.scores for f in ingested)
        samples = sum(f.samples for f in ingested)
        runs = len({f.run for f in ingested})
        click.echo(
            f"Ingested {_files(len(ingested))} into {db}: {scores:,} scores, {samples:,} samples, "
            f"{runs} run{'s' if runs != 1 else ''}."
        )
        click.echo(f"Already present: {_files(len(report.present))}.")
        if report.skipped:
            n = len(report.skipped)
            click.echo(f"Skipped {n:,} JSON file{'s' if n != 1 else ''} (not lm-eval results).")
    if report.conflicts:
        click.echo(
            f"Evaluations of the same checkpoint disagree on {len(report.conflicts):,} "
            f"score{'s' if len(report.conflicts) != 1 else ''}; `scores` shows the newest evaluation's value:",
            err=True,
        )
        for c in report.conflicts[:_CONFLICTS_SHOWN]:
            values = ", ".join(f"{v:g} ({p})" for v, p in c.values)
            click.echo(f"  {c.run} step {c.step} {c.task} {c.metric},{c.filter}: {values}; shown: {c.chosen}", err=True)
        if len(report.conflicts) > _CONFLICTS_SHOWN:
            click.echo(
                f"  ... and {len(report.conflicts) - _CONFLICTS_SHOWN:,} more: "
                "ood-store query 'SELECT * FROM score_conflicts'",
                err=True,
            )
    rejected = report.rejected
    if rejected or not quiet:
        click.echo(f"Rejected: {_files(len(rejected))}{':' if rejected else '.'}", err=bool(rejected))
    for outcome in rejected:
        click.echo(f"  {spelled(outcome.reason or '')}", err=True)


def _files(n: int) -> str:
    return f"{n:,} file{'s' if n != 1 else ''}"


COMMANDS = [ingest]
