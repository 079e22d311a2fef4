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
    """Write each evaluation as an Every Eval Ever (schema 0.3.0) file under FOLDER.

    Files go to FOLDER/data/COLLECTION/DEVELOPER/MODEL/UUID.json, the EEE
    datastore's layout; the UUID is derived from the evaluation's content hash,
    so exporting again writes the same files. Run, step, campaign and run
    attributes are in model_info.additional_details (ood_store.run, ...); shots
    and filters in each result. `ood-store ingest FOLDER` reads them back.
    """
    with settings.open(read_only=True) as store:
        source = EeeSource(collection, organization, relationship)
        report = store.export_eee(folder, runs=list(runs) or None, source=source)
    n = len(report.files)
    click.echo(
        f"Wrote {count(n, 'Every Eval Ever file')} ({count(report.scores, 'score')}) to {folder / 'data' / collection}."
    )
    if report.not_finite:
        click.echo(f"Left out {report.not_finite:,} scores that are not finite numbers (EEE holds none).", err=True)


COMMANDS = [export_eee]
