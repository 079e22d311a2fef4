"""``ood-store serve``: the local, read-only viewer of a store (:mod:`ood_store._serve`), on uvicorn."""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
import webbrowser
from pathlib import Path

import click

from ood_store._cli.options import FOLDER
from ood_store._errors import StoreLockedError, install_hint

#: Host names that reach this machine only.
LOOPBACK_NAMES = ("localhost",)
_TOKEN = re.compile(r"[A-Za-z0-9._~-]{16,}")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is reachable from this machine only."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@click.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to listen on. Any other than loopback (127.0.0.1, ::1, localhost) needs --token.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="The port to listen on (0: any free one).",
)
@click.option(
    "--token",
    envvar="OOD_STORE_SERVE_TOKEN",
    show_envvar=True,
    help="A secret (16 or more URL-safe characters) every request must carry; required off loopback.",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the viewer in a web browser.")
@click.option(
    "--work-dir",
    "work_dirs",
    multiple=True,
    type=FOLDER,
    metavar="DIR",
    help="An evaluation's work folder to show at /status, as `ood-store status` does (repeatable).",
)
@click.option(
    "--sql-rows",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="The most rows the SQL box shows and downloads.",
)
@click.option(
    "--sql-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Seconds after which a statement of the SQL box is stopped.",
)
@click.option(
    "--busy-wait",
    type=click.FloatRange(min=0),
    default=2.0,
    show_default=True,
    help="Seconds a page waits for a store that another process is writing before it says so.",
)
@click.pass_obj
def serve(settings, host: str, port: int, token: str | None, open_browser: bool, work_dirs: tuple[Path, ...],
          sql_rows: int, sql_timeout: float, busy_wait: float) -> None:  # fmt: skip
    """Browse the store in a web browser: runs, curves, analyses, SQL. Read-only; local by default.

    \b
    The viewer never writes to the store and opens it read-only for one page
    at a time, so that `ingest`, `evaluate` and `collect` can run meanwhile.
    It listens on 127.0.0.1 (this machine only) unless --host says otherwise,
    and then every request must carry --token. Needs the serve extra:
      pip install -e ".[serve]"
    Example:
      ood-store --db planted.duckdb serve --open
    """
    try:
        import uvicorn

        from ood_store._serve.app import Settings, create_app
        from ood_store._serve.sqlbox import Limits
        from ood_store._store.lake import shown as shown_store
    except ImportError as exc:
        raise click.ClickException(
            f"ood-store serve needs the serve extra ({exc.name} is missing): {install_hint('serve')}"
        ) from None
    loopback = is_loopback(host)
    if not loopback and token is None:
        raise click.UsageError(
            f"--host {host} lets other machines connect: give --token TOKEN as well (make one with "
            "python -c 'import secrets; print(secrets.token_urlsafe())')"
        )
    if token is not None and not _TOKEN.fullmatch(token):
        raise click.BadParameter("must be 16 or more letters, digits or any of . _ ~ -", param_hint="--token")
    for folder in work_dirs:
        from ood_store._evaluate.workdir import WorkDir

        WorkDir(folder).require()
    try:
        settings.open(read_only=True).close()  # a store to show: one-line errors now rather than on every page
    except StoreLockedError:
        click.echo(
            f"Note: {shown_store(settings.db)} is being written by another process; pages will say so until it is done."
        )
    listening = _listen(host, port)
    port = listening.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    address = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    hosts = frozenset({"127.0.0.1", "localhost", "::1", host.strip("[]").lower()}) if loopback else None
    app = create_app(
        Settings(
            settings.db,
            token=token,
            hosts=hosts,
            work_dirs=tuple(work_dirs),
            sql=Limits(rows=sql_rows, seconds=sql_timeout),
            lock_timeout=busy_wait,
        )  # fmt: skip
    )
    where = "this machine only" if loopback else "other machines too; requests need the token"
    click.echo(f"Serving {shown_store(settings.db)} read-only at {address} ({where}). Ctrl-C stops.", err=False)
    if open_browser:
        threading.Timer(0.5, webbrowser.open, [address]).start()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off"))
    server.run(sockets=[listening])


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port``, ready for uvicorn; a one-line error when the address is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host.strip("[]"), port))
        listening.listen(2048)  # from now on connections wait for uvicorn: the address printed works at once
    except OSError as exc:
        listening.close()
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return listening


COMMANDS = [serve]
