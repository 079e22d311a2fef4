"""``ood-store collect WORK_DIR`` and ``ood-store status WORK_DIR``: the work folder of an evaluation."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from ood_store._cli.options import FOLDER
from ood_store._cli.output import emit, output_options
from ood_store._counts import n
from ood_store._evaluate.collect import collect as collect_units
from ood_store._evaluate.timings import where_the_time_went
from ood_store._evaluate.workdir import UnitStatus, WorkDir, rounded, status_table

_WORK_DIR = click.argument("work_dir", type=FOLDER, metavar="WORK_DIR")
_STATES = ("stored", "done", "running", "pending", "failed")


@click.command()
@_WORK_DIR
@click.option("-q", "--quiet", is_flag=True, help="Print only problems.")
@click.pass_obj
def collect(settings, work_dir: Path, quiet: bool) -> None:
    """Store the units that workers of `evaluate` have finished (idempotent: run it as often as you like).

    \b
    Each unit is ingested in a commit of its own, into the store it was
    planned for (--db to choose another). Units still running are left for
    the next collect, e.g. from cron while a detached evaluation runs:
      ood-store collect lm-eval-results-work
    """
    work = WorkDir(work_dir).require()
    store = settings.db if settings.db_given else None
    results = collect_units(work, store=store, lock_timeout=settings.lock_timeout)
    statuses = work.status()
    states = Counter(s.state for s in statuses)
    stored = [r for r in results if r.status != "rejected"]
    refused = [r for r in results if r.status == "rejected"]
    if not quiet:
        stores = sorted(
            {str(store)} if store else {s.unit.store for s in statuses if s.unit.id in {r.unit for r in stored}}
        )
        into = f" into {', '.join(stores)}" if stores else ""
        scores, samples = sum(r.scores for r in stored), sum(r.samples for r in stored)
        click.echo(f"Stored {n(len(stored), 'unit')}{into}: {n(scores, 'score')}, {n(samples, 'sample')}.")
        click.echo(_summary(states))
    for r in refused:
        click.echo(f"Not stored: {r.unit}: {r.reason}", err=True)
    if refused:
        raise SystemExit(1)


@click.command()
@_WORK_DIR
@output_options
@click.pass_obj
def status(settings, work_dir: Path, output_format: str, output) -> None:
    """Show every unit of an evaluation's work folder: stored, done (not yet stored), running, pending or failed.

    \b
    Finished units show how their model was loaded (from_pretrained,
    in_place, adapter_swap) and their seconds loading, in forward passes, in
    lm-eval's bookkeeping and writing files; the line above the table adds
    them up: whether the evaluation is load-, compute- or overhead-bound.

    \b
    Failed units are shown with the end of their error and of lm-eval's log;
    running the evaluation again retries them, and `ood-store collect` stores
    the done ones.
    """
    work = WorkDir(work_dir).require()
    statuses = work.status()
    frame = status_table(statuses)
    if output_format != "table" or output is not None:
        emit(frame, output_format, output)
        return
    click.echo(_summary(Counter(s.state for s in statuses)))
    went = where_the_time_went(s.timings for s in statuses)
    if went:
        click.echo(went)
    shown = rounded(frame).drop("error")  # to a tenth of a second here; csv, json and parquet keep every digit
    if shown["job"].is_null().all():  # no scheduler's job: local or Ray workers
        shown = shown.drop("job", "job_state")
    emit(shown, output_format, None)
    tails: set[tuple[str, ...]] = set()  # a job's tail, shown once for all the units it held
    for s in statuses:
        if s.state == "failed" or (s.state == "pending" and s.error):
            click.echo(f"\n{_what_happened(s)}: {s.error}")
            tail = tuple(s.error_tail)
            if tail and (s.job is None or tail not in tails):
                for line in tail:
                    click.echo(f"  {line}")
                tails.add(tail)


def _what_happened(s: UnitStatus) -> str:
    """``UNIT failed on HOST``, or ``UNIT pending`` (the error then says why, and which job's state)."""
    where = f" on {s.host}" if s.host else ""
    return f"{s.unit.id} {s.state}{where}"


def _summary(states: Counter) -> str:
    total = sum(states.values())
    parts = [f"{states[state]} {state}" for state in _STATES if states[state]]
    hint = " (ood-store collect stores them)" if states["done"] else ""
    return f"{n(total, 'unit')}: {', '.join(parts) or 'none'}{hint}."


COMMANDS = [collect, status]
