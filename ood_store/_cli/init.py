"""``ood-store init``: create a store, or migrate an older one to the current schema."""

from __future__ import annotations

import click

from ood_store import _schema as schema


@click.command()
@click.pass_obj
def init(settings) -> None:
    """Create the store, or bring an older one up to the current schema."""
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
