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
@click.option(
    "--wandb-map",
    multiple=True,
    metavar="PATTERN[=TASK:METRIC]",
    help="W&B histories: columns that are scores, e.g. 'eval/{task}_{metric}' or 'eval/hans_acc=hans:acc'. "
    "Repeatable; the first that matches wins.  [default: eval/{task}/{metric}, eval/{task}_{metric}]",
)
@click.option("--wandb-step", metavar="COLUMN", help="W&B histories: the step column.  [default: _step]")
@click.option(
    "--wandb-config",
    type=click.Path(exists=True, dir_okay=False),
    help="W&B histories: the run's config.yaml or config.json (its keys become run attributes).  "
    "[default: the one beside the history file]",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar; print only problems.")
@click.pass_obj
def ingest(settings, paths, run, step, model, attributes, no_samples, wandb_map, wandb_step, wandb_config,
           quiet) -> None:  # fmt: skip
    """Ingest results files, folders (searched recursively) or globs.

    Reads lm-eval results files, Every Eval Ever JSON, inspect_ai logs (.eval,
    .json) and W&B run histories (.csv, .parquet with a _step column).
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
            wandb_map=wandb_map,
            wandb_step=wandb_step,
            wandb_config=wandb_config,
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
            click.echo(f"Skipped {n:,} file{'s' if n != 1 else ''} (not results in a format ood-store reads).")
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
