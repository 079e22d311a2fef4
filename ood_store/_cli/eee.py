"""``ood-store export-eee``: the store's evaluations as Every Eval Ever files."""

from __future__ import annotations

from pathlib import Path

import click

from ood_store._cli.options import FOLDER
from ood_store._counts import n as count
from ood_store._export.eee import RELATIONSHIPS, EeeSource


@click.command("export-eee")
@click.argument("folder", type=FOLDER)
@click.option("--run", "runs", multiple=True, metavar="RUN", help="Only this run. Repeatable.  [default: every run]")
@click.option(
    "--collection",
    default="ood-store",
    show_default=True,
    help="The EEE collection (the datastore's benchmark folder): FOLDER/data/COLLECTION/...",
)
@click.option(
    "--organization", default="unknown", show_default=True, help="Who made the results (source_organization_name)."
)
@click.option(
    "--relationship",
    type=click.Choice(RELATIONSHIPS),
    default="first_party",
    show_default=True,
    help="The evaluator's relationship to the models (evaluator_relationship).",
)
@click.pass_obj
def export_eee(settings, folder: Path, runs, collection, organization, relationship) -> None:
    """Write each evaluation as an Every Eval Ever file under FOLDER, its per-sample rows beside it.

    Files go to FOLDER/data/COLLECTION/DEVELOPER/MODEL/UUID.json (schema 0.3.0),
    the EEE datastore's layout, with UUID_samples.jsonl beside; the UUID is
    derived from the evaluation's content hash, so exporting again writes the
    same files. Run, step, campaign and run attributes are in
    model_info.additional_details (ood_store.run, ...), shots and filters in each
    result, the evaluation's whole row in ood_store.evaluation. An evaluation
    imported from an EEE file is written back as that file, in its own schema
    version and with its source. `ood-store ingest FOLDER` reads them back.
    """
    with settings.open(read_only=True) as store:
        source = EeeSource(collection, organization, relationship)
        report = store.export_eee(folder, runs=list(runs) or None, source=source)
    n = len(report.files)
    samples = (
        f", {count(report.samples, 'per-sample row')} in {count(len(report.samples_files), 'samples file')}"
        if report.samples_files
        else ""
    )
    click.echo(
        f"Wrote {count(n, 'Every Eval Ever file')} ({count(report.scores, 'score')}{samples}) to "
        f"{folder / 'data' / collection}."
    )
    if report.imported:
        click.echo(f"{count(report.imported, 'of them', 'of them')} came from EEE files: written with the source, "
                   "model and metric details they came with.")  # fmt: skip
    if report.not_finite:
        click.echo(
            f"{count(report.not_finite, 'score')} not a finite number, which EEE's score cannot hold: kept only in "
            "each file's ood_store.evaluation record (ood-store reads it back).",
            err=True,
        )
    for line in report.not_written:
        click.echo(f"Not written: {line}", err=True)


COMMANDS = [export_eee]
