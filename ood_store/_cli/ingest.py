"""``ood-store ingest``: read lm-eval output files into the store."""

from __future__ import annotations

import shlex

import click

from ood_store._cli.flags import spelled
from ood_store._cli.options import attr_file_option
from ood_store._counts import n
from ood_store._ingest import IngestReport, Overrides
from ood_store._ingest.report import ConflictGroup, FileOutcome, MixGroup
from ood_store._store.attribute_rules import read_attribute_file
from ood_store._store.runs import parse_attributes

# How many groups of disagreeing scores (or of runs that mix campaigns) to name before summarizing the rest.
_SHOWN = 10
# How many skipped files to name without -v.
_NAMED = 3


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--run", help="Use this run for every file, whatever the files say.")
@click.option("--step", type=int, help="Use this step for every file.")
@click.option(
    "--model", help="Treat the files as evaluations of this model path or repo (run and step derive from it)."
)
@click.option(
    "--campaign",
    metavar="NAME",
    help="The evaluation campaign of these files.  [default: the folder each file sits in, e.g. zero-shot]",
)
@click.option(
    "--shots",
    type=click.IntRange(min=0),
    metavar="N",
    help="The few-shot count of every score whose file does not give one (inspect_ai logs, W&B histories, "
    "EEE results without it); a file's own count is kept.",
)
@click.option(
    "--attr",
    "attributes",
    multiple=True,
    metavar="KEY=VALUE",
    help="Set a run attribute (family, size, in_domain, seed, or any key) on the runs of these files. Repeatable.",
)
@attr_file_option
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
@click.option(
    "--dry-run",
    is_flag=True,
    help="Read and check every file and show, for each, its format, run, step and campaign and where they come "
    "from; store nothing.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar; print only problems, in one line where it can.")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Name every file skipped and the format each rejected file was read as; with an internal error (a bug to "
    "report), print its traceback too.",
)
@click.pass_obj
def ingest(settings, paths, run, step, model, campaign, shots, attributes, attribute_file, no_samples, wandb_map,
           wandb_step, wandb_config, dry_run, quiet, verbose) -> None:  # fmt: skip
    """Ingest results files, folders (searched recursively) or globs.

    Reads lm-eval results files, Every Eval Ever JSON, inspect_ai logs (.eval,
    .json) and W&B run histories (.csv, .parquet with a _step column).
    Run and step come from each file's model_args (revision=stepN, or a path
    ending in a checkpoint folder: checkpoint-N / step-N / global_stepN; never
    from a model's name such as org/name-step2000); --run, --step and --model
    override them. The campaign is the folder a file sits in (zero-shot/,
    five-shot/, ...), an EEE file's source, a W&B history's run, unless
    --campaign names it; --dry-run shows them all, and where each came from.
    Files already in the store, and evaluations it holds from another format,
    are left alone. A file with a problem is rejected whole and named with the
    reason, the other files go in; the exit status is then 1.
    """
    attrs = parse_attributes(list(attributes))  # checked before the store is opened
    if attribute_file is not None:
        read_attribute_file(attribute_file)
    with settings.open(read_only=dry_run and settings.db.exists()) as store:
        report = store.ingest(
            paths,
            overrides=Overrides(run=run, step=step, model=model, campaign=campaign, shots=shots),
            attributes=attrs,
            attribute_file=attribute_file,
            samples=not no_samples,
            progress=not quiet,
            wandb_map=wandb_map,
            wandb_step=wandb_step,
            wandb_config=wandb_config,
            dry_run=dry_run,
        )
    hint = f"ood-store --db {shlex.quote(str(settings.db))}"
    if dry_run:
        _plan(report, settings.db, verbose)
    else:
        (_quietly if quiet else _summarize)(report, settings.db, hint, verbose)
    _rejected(report.rejected, verbose)
    if not report.ok:
        raise SystemExit(1)


def _summarize(report: IngestReport, db, hint: str, verbose: bool) -> None:
    ingested = report.ingested
    scores = sum(f.scores for f in ingested)
    non_finite = sum(f.non_finite for f in ingested)
    samples = sum(f.samples for f in ingested)
    runs = len({f.run for f in ingested})
    odd = f" ({non_finite:,} of them NaN or infinite)" if non_finite else ""
    click.echo(
        f"Ingested {_files(len(ingested))} into {db}: {n(scores, 'score')}{odd}, {n(samples, 'sample')}, "
        f"{n(runs, 'run')}."
    )
    _collapsed(report)
    click.echo(f"Already present: {_files(len(report.present))}.")
    _skipped(report.skipped, verbose)
    _mixes(report.mix_groups(), hint)
    _conflicts(report.conflict_groups(), len(report.conflicts), hint)
    for warning in report.file_warnings:
        click.echo(f"Warning: {spelled(warning)}", err=True)
    rejected = report.rejected
    click.echo(f"Rejected: {_files(len(rejected))}{':' if rejected else '.'}", err=bool(rejected))


def _collapsed(report: IngestReport) -> None:
    """The line that says how many results files repeated byte for byte were stored once, if any were."""
    note = report.collapsed_note()
    if note:
        click.echo(note)


def _quietly(report: IngestReport, db, hint: str, verbose: bool) -> None:
    """-q: the rejected files, and one line for everything else worth knowing."""
    notes = []
    mixed = {run for group in report.mix_groups() for run in group.runs}
    if mixed:
        notes.append(f"{n(len(mixed), 'run')} now mix{'es' if len(mixed) == 1 else ''} campaigns")
    if report.conflicts:
        runs = len({c.run for c in report.conflicts})
        notes.append(f"evaluations disagree on {n(len(report.conflicts), 'score')} in {n(runs, 'run')}")
    if report.file_warnings:
        notes.append(n(len(report.file_warnings), "warning"))
    if notes:
        see = f"{hint} query {_shell_text('SELECT * FROM score_conflicts')}" if report.conflicts else f"{hint} runs"
        click.echo(f"Note: {'; '.join(notes)} (see {see}).", err=True)
    rejected = report.rejected
    if rejected:
        click.echo(f"Rejected: {_files(len(rejected))}:", err=True)


def _rejected(rejected: list[FileOutcome], verbose: bool) -> None:
    """One line per rejected file; with ``verbose``, the format it was read as and the traceback of an internal
    error after its line."""
    for outcome in rejected:
        click.echo(f"  {spelled(outcome.reason or '')}", err=True)
        if verbose and outcome.detected:
            click.echo(f"    read as {outcome.detected}", err=True)
        if verbose and outcome.traceback:
            click.echo(outcome.traceback.rstrip("\n"), err=True)


def _skipped(skipped: list[FileOutcome], verbose: bool) -> None:
    """The files a folder search skipped: the first few by name, or (``verbose``) each with what it is."""
    if not skipped:
        return
    names = [outcome.path for outcome in skipped]
    if verbose:
        click.echo(f"Skipped {_files(len(skipped))} (not results in a format ood-store reads):")
        for outcome in skipped:
            click.echo(f"  {outcome.path}: {spelled(outcome.reason or '')}")
        return
    listed = ", ".join(names[:_NAMED]) + (
        f" and {n(len(names) - _NAMED, 'more')} (-v names them)" if len(names) > _NAMED else ""
    )
    click.echo(f"Skipped {_files(len(skipped))} (not results in a format ood-store reads): {listed}.")


def _plan(report: IngestReport, db, verbose: bool) -> None:
    """``--dry-run``: each file, what it would be stored as and where that comes from; then the totals."""
    for outcome in report.files:
        if outcome.status == "planned":
            click.echo(outcome.path)
            for label, text in _planned_lines(outcome):
                click.echo(f"  {label:<9} {text}")
        elif outcome.status == "present":
            click.echo(f"{outcome.path}\n  already present: {outcome.reason}")
    planned = report.planned
    scores = sum(f.scores for f in planned)
    click.echo(
        f"Would ingest {_files(len(planned))} into {db}: {n(sum(f.evaluations for f in planned), 'evaluation')}, "
        f"{n(scores, 'score')}, {n(len({f.run for f in planned}), 'run')}; nothing was stored (--dry-run)."
    )
    _collapsed(report)
    click.echo(f"Already present: {_files(len(report.present))}.")
    _skipped(report.skipped, verbose)
    for warning in report.file_warnings:
        click.echo(f"Warning: {spelled(warning)}", err=True)
    rejected = report.rejected
    click.echo(f"Would reject: {_files(len(rejected))}{':' if rejected else '.'}", err=bool(rejected))


def _planned_lines(outcome: FileOutcome) -> list[tuple[str, str]]:
    steps = sorted({s for s in outcome.steps if s is not None})
    if len(outcome.steps) > 1:
        step = f"{n(len(steps), 'step')}, {steps[0]:,} to {steps[-1]:,}" if steps else "none"
    else:
        step = "none (a final model)" if outcome.step is None else f"{outcome.step:,}"
    identity_from = str(outcome.identity_from)
    return [
        ("format", outcome.detected or ""),
        ("run", outcome.run or ""),
        ("step", step),
        ("from", f"{outcome.identity_from}: {spelled(outcome.evidence)}" if outcome.evidence else identity_from),
        ("campaign", f"{_campaign(outcome.campaign)} ({spelled(outcome.campaign_from or '')})"),
        (
            "scores",
            f"{outcome.scores:,}" + (f" in {n(outcome.evaluations, 'evaluation')}" if outcome.evaluations > 1 else ""),
        ),
    ]


def _mixes(groups: list[MixGroup], hint: str) -> None:
    """One line per set of campaigns that runs now mix, saying what this ingest added."""
    if not groups:
        return
    for group in groups[:_SHOWN]:
        first = group.mixes[0]
        old = [name for name in group.campaigns if name not in group.added]
        if len(group.added) == 1 and old and len(group.mixes) == 1:
            new = group.added[0]
            only = dict(zip(group.campaigns, first.only, strict=True))[new]
            had = ", ".join(f"{count:,} from {_campaign(name)}" for name, count in first.campaigns if name != new)
            line = f"Campaign {_campaign(new)} adds {n(only, 'checkpoint')} to run {first.run}, which had {had}."
        else:
            counts = ", ".join(f"{_campaign(name)} {count:,}" for name, count in first.campaigns)
            which = f"run {first.run}" if len(group.mixes) == 1 else f"{len(group.mixes)} runs"
            example = f"{counts}" if len(group.mixes) == 1 else f"e.g. {first.run}: {counts}"
            line = f"Checkpoints of {which} come from campaigns {_campaigns(group.campaigns)} ({example})."
        click.echo(line)
    if len(groups) > _SHOWN:
        click.echo(f"  ... and {len(groups) - _SHOWN:,} more.")
    click.echo(
        f"Their series mix campaigns unless an analysis picks one with {spelled('`campaign`')} NAME "
        f"(checkpoints per campaign: {hint} runs)."
    )


def _conflicts(groups: list[ConflictGroup], total: int, hint: str) -> None:
    if not groups:
        return
    click.echo(
        f"Evaluations of the same checkpoint disagree on {n(total, 'score')}; "
        "`scores` shows the newest evaluation's value:",
        err=True,
    )
    for group in groups[:_SHOWN]:
        at = f"{n(group.scores, 'score')} at {n(group.steps, 'step')}"
        if len(group.campaigns) > 1:
            click.echo(f"  run {group.run}: {at} differ between campaigns {_campaigns(group.campaigns)}", err=True)
        else:
            what = f"campaign {_campaign(group.campaigns[0])}" if group.campaigns[0] is not None else "no campaign"
            click.echo(f"  run {group.run}: {at} differ between evaluations of {what}", err=True)
    if len(groups) > _SHOWN:
        click.echo(f"  ... and {len(groups) - _SHOWN:,} more.", err=True)
    runs = {g.run for g in groups}
    where = f" WHERE run = {_sql_text(next(iter(runs)))}" if len(runs) == 1 else ""
    click.echo(f"  See them: {hint} query {_shell_text('SELECT * FROM score_conflicts' + where)}", err=True)


def _campaigns(names: tuple[str | None, ...]) -> str:
    shown = [_campaign(name) for name in names]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _campaign(name: str | None) -> str:
    return "(none)" if name is None else name


def _shell_text(text: str) -> str:
    """``text`` as one shell word: in double quotes when that needs no escapes (SQL's quotes are single)."""
    if any(c in text for c in '"$`\\!'):
        return shlex.quote(text)
    return f'"{text}"'


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _files(count: int) -> str:
    return n(count, "file")


COMMANDS = [ingest]
