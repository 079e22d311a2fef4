"""``ood-store suite``: the ood_nli testset suite shipped with ood-store."""

from __future__ import annotations

from pathlib import Path

import click

from ood_store.cli.output import emit, output_options


@click.group()
def suite() -> None:
    """The ood_nli testset suite: NLI testsets cast to one Yes/No format (lm-eval tag ood_nli)."""


@suite.command("list")
@output_options
def list_tasks(output_format: str, output) -> None:
    """List the suite's tasks with their Hugging Face dataset, config and split."""
    import polars as pl

    from ood_store.evaluate.suite import tasks

    frame = pl.DataFrame(
        [(t.name, t.dataset_path, t.dataset_name, t.split) for t in tasks()],
        schema=["task", "dataset", "config", "split"],
        orient="row",
    )
    emit(frame, output_format, output)


@suite.command("export")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option("--task", "names", multiple=True, metavar="TASK", help="Export only this suite task. Repeatable.")
def export(folder: Path, names: tuple[str, ...]) -> None:
    """Download the suite's testsets into FOLDER as JSONL, for machines without internet.

    Run it where the Hugging Face hub is reachable, copy FOLDER over, and
    evaluate there with `ood-store evaluate ... --tasks ood_nli --data-dir FOLDER`.
    """
    from ood_store.evaluate.suite.export import export as export_suite

    def done(item) -> None:
        click.echo(f"  {item.task}: {item.rows:,} rows -> {item.path}")

    written = export_suite(folder, list(names) or None, on_done=done)
    click.echo(f"Exported {len(written)} testsets to {folder}; evaluate with --data-dir {folder}.")


COMMANDS = [suite]
