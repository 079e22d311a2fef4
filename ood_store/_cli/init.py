"""``ood-store init``: create a store, or migrate an older one to the current schema."""

from __future__ import annotations

import click

from ood_store import _schema as schema
from ood_store._store.database import connection
from ood_store._store.lake import data_path_of as lake_data_path
from ood_store._store.lake import is_lake


@click.command()
@click.option(
    "--data-path",
    metavar="DIR_OR_S3_URL",
    help="For a lake (--db ducklake:...): where it keeps its Parquet files, a folder or s3://bucket/prefix/. "
    "Needed to create one; later commands read it from the catalog.",
)
@click.pass_obj
def init(settings, data_path: str | None) -> None:
    """Create the store, or bring an older one up to the current schema.

    \b
    Examples:
      ood-store --db results.duckdb init
      ood-store --db 'ducklake:postgres:dbname=lab host=db.lab user=me' init --data-path s3://lab-results/ood/
      ood-store --db ducklake:sqlite:lab.sqlite init --data-path lab-data/
    """
    if is_lake(settings.db):
        with settings.open(data_path=data_path) as store:
            created = store.migrations_applied
            version = store.schema_version
            where = lake_data_path(connection(store))
        if created:
            click.echo(f"Created the lake {store.path} (schema version {version}), its data in {where}.")
        else:
            click.echo(f"{store.path} is a lake at schema version {version}, its data in {where}.")
        return
    if data_path is not None:
        raise click.UsageError("--data-path is for a lake (--db ducklake:...), not a store file.")
    existed = settings.db.exists() and settings.db.stat().st_size > 0
    with settings.open() as store:
        applied = store.migrations_applied
        version = store.schema_version
    if not existed:
        click.echo(f"Created {settings.db} (schema version {version}).")
    elif applied:
        click.echo(f"Migrated {settings.db} to schema version {version} (applied {', '.join(map(str, applied))}).")
    else:
        click.echo(f"{settings.db} is at schema version {version}, the latest ({schema.latest_version()}).")


COMMANDS = [init]
