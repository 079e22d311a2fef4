"""``ood-store demo``: the whole store workflow, offline, on bundled real lm-eval files."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import click

from ood_store import sqlfiles
from ood_store.cli.output import render
from ood_store.examples import extract_pythia

DEMO_DB = "ood-store-demo.duckdb"
_SIZES = ("160m", "410m", "1.4b")


@click.command()
@click.pass_context
def demo(ctx: click.Context) -> None:
    """Ingest the bundled Pythia checkpoint evaluations into a demo store and query them.

    Works offline. Uses ood-store-demo.duckdb in the working directory
    unless --db is given; running it again adds nothing.
    """
    settings = ctx.obj
    parent = ctx.parent
    if parent is not None and parent.get_parameter_source("db").name == "DEFAULT":
        settings.db = Path(DEMO_DB)
    click.echo(
        "Demo data: real lm-eval (v0.3 format) results of 27 checkpoints each of Pythia v1.1 "
        "160M, 410M and 1.4B on 87 tasks (EleutherAI/pythia, evals/pythia-v1)."
    )
    with tempfile.TemporaryDirectory(prefix="ood-store-demo-") as tmp, settings.open() as store:
        folder = extract_pythia(Path(tmp))
        totals = {"ingested": 0, "present": 0, "scores": 0}
        for size in _SIZES:
            report = store.ingest([folder / f"pythia-{size}"], attributes={"family": "pythia", "size": size})
            totals["ingested"] += len(report.ingested)
            totals["present"] += len(report.present)
            totals["scores"] += sum(f.scores for f in report.ingested)
            if not report.ok:  # the bundled files are known good; this would be a bug
                raise click.ClickException("; ".join(f.reason or f.path for f in report.rejected))
        click.echo(
            f"Store {settings.db}: ingested {totals['ingested']} files ({totals['scores']:,} scores), "
            f"{totals['present']} already present.\n"
        )
        frame = store.query(sqlfiles.load("ood_store.queries", "demo"))
    click.echo("LAMBADA (OpenAI) accuracy over training steps, from the `scores` table:\n")
    click.echo(render(frame, "table"))
    db, prog = settings.db, _program()
    click.echo(
        "\nNext, try:\n"
        f"  {prog} --db {db} runs\n"
        f"  {prog} --db {db} tasks\n"
        f'  {prog} --db {db} query "SELECT run, step, value FROM scores '
        "WHERE task = 'arc_easy' AND metric = 'acc' ORDER BY run, step\" --format csv\n"
        f"On your own lm-eval outputs: {prog} ingest PATH... (files, folders or globs)."
    )


def _program() -> str:
    """How to call ood-store again: its name if the shell finds this one, else its path (e.g. .venv/bin/...)."""
    running = Path(sys.argv[0])
    if running.name != "ood-store":
        return "ood-store"
    found = shutil.which("ood-store")
    if found and Path(found).resolve() == running.resolve():
        return "ood-store"
    return os.path.relpath(running)


COMMANDS = [demo]
