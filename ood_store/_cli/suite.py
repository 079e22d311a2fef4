"""``ood-store suite``: the ood_nli testset suite shipped with ood-store."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ood_store._cli.options import FOLDER
from ood_store._cli.output import emit, output_options


@click.group()
def suite() -> None:
    """The ood_nli testset suite: NLI testsets cast to one Yes/No format, with any prompt variant."""


@suite.command("list")
@output_options
def list_tasks(output_format: str, output) -> None:
    """List the suite's tasks: display name, Hugging Face dataset, config, evaluated and few-shot splits."""
    import polars as pl

    from ood_store._evaluate.suite.testsets import testsets

    frame = pl.DataFrame(
        [(t.name, t.display, t.source(), t.split, t.fewshot_split, min(t.rows[t.split])) for t in testsets()],
        schema=["task", "display", "dataset", "split", "fewshot_split", "rows"],
        orient="row",
    )
    emit(frame, output_format, output)


@suite.command("patterns")
@output_options
def patterns(output_format: str, output) -> None:
    """List the shipped prompt patterns (--pattern NAME) with their verbalizers and sources."""
    import polars as pl

    from ood_store._evaluate.suite.variant import PATTERNS, Variant

    frame = pl.DataFrame(
        [
            (
                name,
                p.text.replace("\n", "\\n"),
                " / ".join(repr(v) for v in p.verbalizers),
                Variant.of(name).task_name("ood_nli_snli"),
                p.source,
            )
            for name, p in PATTERNS.items()
        ],
        schema=["pattern", "text", "verbalizers", "example_task", "source"],
        orient="row",
    )
    emit(frame, output_format, output)


@suite.command("variants")
@click.option("--run", "runs", multiple=True, metavar="RUN", help="Only this run. Repeatable.")
@output_options
@click.pass_obj
def variants(settings, runs: tuple[str, ...], output_format: str, output) -> None:
    """List the prompt variants the store holds, per run: key, pattern, verbalizers, neutral scheme."""
    from ood_store._evaluate.suite.stored import variants as stored_variants

    with settings.open(read_only=True) as store:
        emit(stored_variants(store, list(runs) or None), output_format, output)


@suite.command("export")
@click.argument("folder", type=FOLDER)
@click.option("--task", "names", multiple=True, metavar="TASK", help="Export only this suite task. Repeatable.")
@click.option("--fewshot", is_flag=True, help="Also export the training splits (TASK.train.jsonl), for --num-fewshot.")
def export(folder: Path, names: tuple[str, ...], fewshot: bool) -> None:
    """Download the suite's testsets into FOLDER as JSONL, for machines without internet.

    Run it where the Hugging Face hub is reachable, copy FOLDER over, check it
    there with `ood-store suite check FOLDER`, and evaluate with
    `ood-store evaluate ... --tasks ood_nli --data-dir FOLDER`.
    """
    from ood_store._evaluate.suite.export import export as export_suite

    def done(item) -> None:
        click.echo(f"  {item.task} ({item.split}): {item.rows:,} rows -> {item.path}")

    written = export_suite(folder, list(names) or None, fewshot=fewshot, on_done=done)
    click.echo(f"Exported {len(written)} files to {folder}; evaluate with --data-dir {folder}.")


@suite.command("check")
@click.argument("folder", type=FOLDER)
@click.option("--fewshot", is_flag=True, help="Require the training splits (TASK.train.jsonl) too.")
def check(folder: Path, fewshot: bool) -> None:
    """Check a data folder for --data-dir: one line per problem; exit status 1 if there is any.

    Finds missing files, lines that are not JSON objects, unknown column
    layouts, premises or hypotheses that are not text, unknown labels, and row
    counts that differ from the size of the split on the hub.
    """
    from ood_store._evaluate.suite.check import check as check_folder

    checked = check_folder(folder, fewshot=fewshot)
    for problem in checked.problems:
        click.echo(str(problem))
    if not checked.ok:
        sys.exit(1)
    click.echo(f"{folder}: {checked.files} files, {checked.rows:,} rows: ready for --data-dir {folder}.")


COMMANDS = [suite]
