"""A store on DuckLake: the catalog in PostgreSQL (or SQLite, or a DuckDB file, for one host), the data as
Parquet files in a folder or on S3; many writers on many hosts, and every commit a snapshot.

A lake is named by a URL, ``ducklake:postgres:dbname=lab host=db.lab port=5432 user=me``,
``ducklake:sqlite:/path/lab.sqlite`` or ``ducklake:/path/lab.ducklake``, wherever a store file is
(``--db``, ``OOD_STORE_DB``, :func:`ood_store.open`). It is attached, under the name ``store``, to an
in-memory DuckDB database of its own, so the store's SQL runs on it unchanged.

What a lake lacks, and what stands in for it:

- DuckLake refuses ``PRIMARY KEY``, ``UNIQUE``, ``CHECK`` and sequences. The lake's tables are those of
  the file schema's latest version (made by its migrations in an in-memory database, read back from
  DuckDB's catalog) without them; the ingest code keeps the keys itself, as it does for a file store
  (evaluation ids are reserved from the one-row table ``lake_writes``).
- Writers on many hosts take no lock. Every write transaction begins by updating ``lake_writes``
  (:func:`begin_write`), so that two transactions that overlap conflict at commit: DuckLake refuses the
  second ("Transaction conflict"), which is run again from the start (:func:`retried`), and sees what
  the first stored (an ingest then finds its files present). tests/test_lake.py runs 8 writers at once.
- A commit is atomic in the catalog's database: a writer killed mid-ingest leaves Parquet files that no
  snapshot names (``ood-store vacuum`` deletes them) and nothing half-stored.

The extension: DuckDB's ``ducklake`` (with ``postgres_scanner``, ``sqlite_scanner``, ``httpfs`` as the
catalog and the data path need them) is loaded from the PyPI packages of the ``lake`` extra, built for
DuckDB 1.5.5, where their binary matches this DuckDB; with another DuckDB it is installed from DuckDB's
extension repository (a network connection), and where neither works the open fails in one line.
"""

from __future__ import annotations

import getpass
import importlib
import json
import os
import random
import re
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import StoreError, first_line, install_hint
from ood_store._store.connection import fetch_one

T = TypeVar("T")

SCHEME = "ducklake:"
#: The name the lake is attached under, on the store's connection and in the sandbox alike.
ALIAS = "store"
#: How long a writer retries a transaction that conflicted with another writer's, at most.
DEFAULT_RETRY_S = 120.0

_SQL = "ood_store._store"
_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
#: What DuckLake says when a commit conflicts with another writer's.
#: What a catalog that holds no lake yet is told.
NO_LAKE = "no lake here; create one with `ood-store init` and its `data_path` (a folder, or an S3 URL)"
_CONFLICT = ("Transaction conflict", "Failed to commit DuckLake transaction")
#: A commit the catalog refused for good (a reader's role), which no retry mends.
_REFUSED = re.compile(r"read-only transaction|permission denied|attempt to write a readonly database", re.IGNORECASE)


@dataclass(frozen=True)
class Lake:
    """A lake's URL: ``ducklake:`` and its catalog (``postgres:...``, ``sqlite:PATH`` or a DuckDB file's path)."""

    url: str

    @property
    def catalog(self) -> str:
        """The catalog's connection string, as DuckLake's ``ATTACH 'ducklake:...'`` takes it."""
        return self.url[len(SCHEME) :]

    @property
    def kind(self) -> str:
        """``postgres``, ``sqlite`` or ``duckdb``: the database the catalog lives in."""
        head = self.catalog.split(":", 1)[0]
        return head if head in ("postgres", "sqlite") and ":" in self.catalog else "duckdb"

    @property
    def shown(self) -> str:
        """The URL with its password (if any) left out: what every message shows."""
        return _PASSWORD.sub(r"\1***", self.url)

    def __str__(self) -> str:
        return self.shown

    def __fspath__(self) -> str:  # so that a lake stands where a store's path is shown or compared
        return self.shown


def is_lake(target: object) -> bool:
    """Whether ``target`` (a path, a string, a :class:`Lake`) names a lake rather than a store file.

    >>> is_lake("ducklake:postgres:dbname=lab host=db"), is_lake("results.duckdb")
    (True, False)
    """
    return isinstance(target, Lake) or str(target).startswith(SCHEME)


def shown(target: str | os.PathLike[str]) -> str:
    """A store as messages and pages name it: a lake's URL with its password left out, a file's path.

    >>> shown("ducklake:postgres:dbname=lab password=secret"), shown("results.duckdb")
    ('ducklake:postgres:dbname=lab password=***', 'results.duckdb')
    """
    return parse(target).shown if is_lake(target) else os.fspath(target)


def parse(target: str | os.PathLike[str]) -> Lake:
    """The :class:`Lake` a ``ducklake:`` URL names; file catalogs' relative paths made absolute.

    >>> parse("ducklake:sqlite:/data/lab.sqlite").kind
    'sqlite'
    >>> print(parse("ducklake:postgres:dbname=lab user=me password=secret"))
    ducklake:postgres:dbname=lab user=me password=***
    """
    url = os.fspath(target) if not isinstance(target, Lake) else target.url
    if isinstance(target, Lake):
        return target
    if not url.startswith(SCHEME) or not url[len(SCHEME) :].strip():
        raise StoreError(f"{url}: not a lake URL (ducklake:postgres:..., ducklake:sqlite:PATH or ducklake:PATH)")
    lake = Lake(url)
    if lake.kind == "sqlite":
        return Lake(f"{SCHEME}sqlite:{Path(lake.catalog[len('sqlite:') :]).expanduser().absolute()}")
    if lake.kind == "duckdb":
        return Lake(f"{SCHEME}{Path(lake.catalog).expanduser().absolute()}")
    return lake


# -- the extension ------------------------------------------------------------------------------------
def packaged_extension(name: str) -> Path | None:
    """The binary of extension ``name`` in its PyPI package (``duckdb-extension-NAME``) for this DuckDB, if any."""
    try:
        module = importlib.import_module(f"duckdb_extension_{name}")
    except ImportError:
        return None
    folder = Path(next(iter(module.__path__))) / "extensions" / f"v{duckdb.__version__}"
    binary = folder / f"{name}.duckdb_extension"
    return binary if binary.is_file() else None


def load_extensions(con: duckdb.DuckDBPyConnection, names: Sequence[str], where: str) -> None:
    """Load each extension: from its PyPI package where it matches this DuckDB, else from DuckDB's repository."""
    for name in names:
        binary = packaged_extension(name)
        try:
            if binary is not None:
                con.execute(f"LOAD {_literal(str(binary))}")
                continue
            con.execute(f"INSTALL {name}")
            con.execute(f"LOAD {name}")
        except duckdb.Error as exc:
            raise StoreError(
                f"{where}: a lake needs DuckDB's {name} extension, which DuckDB {duckdb.__version__} could not "
                f"load ({first_line(exc)}); `{install_hint('lake')}` installs it for DuckDB 1.5.5, without a "
                "network connection"
            ) from None


def _extensions(lake: Lake) -> list[str]:
    return ["ducklake"] + {"postgres": ["postgres_scanner"], "sqlite": ["sqlite_scanner"]}.get(lake.kind, [])


# -- opening ------------------------------------------------------------------------------------------
_CONFIG = {
    # the extension packages' binaries are not signed by DuckDB; nothing else is loaded (autoloading is off)
    "allow_unsigned_extensions": True,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "python_enable_replacements": False,
}


def connect(
    lake: Lake,
    *,
    read_only: bool,
    create: bool = False,
    data_path: str | None = None,
    snapshot: int | None = None,
    config: Mapping[str, Any] | None = None,
) -> duckdb.DuckDBPyConnection:
    """A connection with the lake attached as ``store`` (and in use): read-only, or at ``snapshot``.

    ``create`` makes the lake when its catalog holds none (with its data in ``data_path``); otherwise a
    catalog that holds no lake is refused in one line. Every refusal names the part at fault: the catalog's
    server, its login, its database, the data path, the extension.
    """
    con = duckdb.connect(":memory:", config={**_CONFIG, **(config or {})})
    try:
        load_extensions(con, _extensions(lake), lake.shown)
        if data_path is not None and _is_remote(data_path):
            load_extensions(con, ["httpfs"], lake.shown)
            s3_secret(con)
        options = []
        if data_path is not None:
            options.append(f"DATA_PATH {_literal(data_path)}")
        if read_only or snapshot is not None:
            options.append("READ_ONLY")
        if snapshot is not None:
            options.append(f"SNAPSHOT_VERSION {int(snapshot)}")
        if not create:
            options.append("CREATE_IF_NOT_EXISTS false")
        catalog = lake.catalog
        if lake.kind == "postgres":
            # the password goes into a DuckDB secret, which DuckDB never shows (duckdb_secrets() redacts it),
            # rather than into the attached path, which duckdb_databases() shows to every query
            catalog, password = _without_password(catalog)
            if password is not None:
                con.execute(f"CREATE SECRET (TYPE postgres, PASSWORD {_literal(password)})")
        attach = f"ATTACH {_literal(SCHEME + catalog)} AS {ALIAS} ({', '.join(options)})"
        try:
            con.execute(attach)
        except duckdb.Error as exc:
            if "requires the extension httpfs" not in str(exc):
                raise StoreError(open_problem(lake, exc, snapshot)) from None
            # its data is on S3 (the catalog says so): httpfs and the keys, then the lake again
            load_extensions(con, ["httpfs"], lake.shown)
            s3_secret(con)
            try:
                con.execute(attach)
            except duckdb.Error as again:
                raise StoreError(open_problem(lake, again, snapshot)) from None
        con.execute(f"USE {ALIAS}")
    except BaseException:
        con.close()
        raise
    return con


def _without_password(conninfo: str) -> tuple[str, str | None]:
    """A libpq connection string without its ``password=``, and the password (unquoted), if it had one.

    >>> _without_password("dbname=lab password='a b' user=me")
    ('dbname=lab user=me', 'a b')
    """
    match = _PASSWORD.search(conninfo)
    if match is None:
        return conninfo, None
    value = match.group(2)
    if value.startswith("'"):
        value = re.sub(r"\\(.)", r"\1", value[1:-1])
    rest = (conninfo[: match.start()] + conninfo[match.end() :]).split()
    return " ".join(rest), value


def catalog_file(lake: Lake) -> str:
    """The file a SQLite or DuckDB catalog lives in.

    >>> catalog_file(parse("ducklake:sqlite:/data/lab.sqlite")), catalog_file(parse("ducklake:/data/lab.ducklake"))
    ('/data/lab.sqlite', '/data/lab.ducklake')
    """
    return lake.catalog.removeprefix("sqlite:") if lake.kind == "sqlite" else lake.catalog


def open_problem(lake: Lake, exc: BaseException, snapshot: int | None = None) -> str:
    """One line for a lake that cannot be attached, naming which part failed."""
    text = str(exc)
    detail = text.rsplit("failed:", 1)[-1].strip().splitlines()[0] if "failed:" in text else first_line(exc)
    detail = _PASSWORD.sub(r"\1***", detail.removeprefix("FATAL:").strip())
    lowered = text.lower()
    where = lake.shown
    if (
        "password authentication failed" in lowered
        or "no password supplied" in lowered
        or ("role" in lowered and "does not exist" in lowered)
    ):
        return f"{where}: the catalog's PostgreSQL server refused the login ({detail})"
    if "database" in lowered and "does not exist" in lowered and lake.kind == "postgres":
        return f"{where}: the catalog's PostgreSQL server has no such database ({detail})"
    if "in connection info string" in lowered or "invalid connection option" in lowered:
        return f"{where}: not a PostgreSQL connection string (libpq's key=value pairs): {_libpq_words(text)}"
    if "unable to connect to postgres" in lowered or "could not translate host" in lowered:
        return f"{where}: cannot reach the catalog's PostgreSQL server ({detail})"
    mismatch = re.search(
        r'DATA_PATH parameter "([^"]*)" does not match existing data path in the catalog "([^"]*)"', text
    )
    if mismatch:
        return (
            f"{where}: the lake keeps its data in {mismatch[2]}, not {mismatch[1]}: a lake's `data_path` is set "
            "once, when it is created"
        )
    if lake.kind in ("sqlite", "duckdb"):
        folder = Path(catalog_file(lake)).parent
        if not folder.is_dir():
            return f"{where}: the catalog's folder {folder} does not exist"
        if not Path(catalog_file(lake)).exists():
            return f"{where}: {NO_LAKE}"
    if (
        "does not exist" in lowered
        and "create_if_not_exists" in lowered.replace(" ", "_")
        or ("not initialized" in lowered or "does not exist" in lowered and snapshot is None)
    ):
        return f"{where}: {NO_LAKE}"
    if snapshot is not None and "snapshot" in lowered:
        return f"{where}: no snapshot {snapshot} (`ood-store snapshots` lists them)"
    return f"{where}: cannot open the lake: {first_line(exc)}"


def _libpq_words(text: str) -> str:
    """What libpq said of a connection string, from DuckDB's longer message."""
    said = re.search(r'Unable to connect to Postgres at "[^"]*":\s*(.+)', text)
    return _PASSWORD.sub(r"\1***", (said[1] if said else text).strip().splitlines()[0])


def data_path_of(con: duckdb.DuckDBPyConnection) -> str:
    """The data path the lake's catalog records."""
    row = fetch_one(con, sqlfiles.load(_SQL, "lake_data_path"))
    return "" if row is None else str(row[0])


def _is_remote(path: str) -> bool:
    return bool(re.match(r"^(s3|s3a|gcs|gs|r2|https?)://", path))


def s3_secret(con: duckdb.DuckDBPyConnection) -> None:
    """An S3 secret from the standard AWS variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
    ``AWS_REGION``, and ``AWS_ENDPOINT_URL`` for a server other than AWS's), where they are set."""
    key = os.environ.get("AWS_ACCESS_KEY_ID")
    if not key:
        return
    params = {"KEY_ID": key, "SECRET": os.environ.get("AWS_SECRET_ACCESS_KEY", "")}
    if os.environ.get("AWS_SESSION_TOKEN"):
        params["SESSION_TOKEN"] = os.environ["AWS_SESSION_TOKEN"]
    params["REGION"] = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    parts = [f"{name} {_literal(value)}" for name, value in params.items()]
    if endpoint:
        ssl = not endpoint.startswith("http://")
        host = re.sub(r"^https?://", "", endpoint).rstrip("/")
        parts += [f"ENDPOINT {_literal(host)}", "URL_STYLE 'path'", f"USE_SSL {str(ssl).lower()}"]
    con.execute(f"CREATE OR REPLACE SECRET ood_store_s3 (TYPE s3, {', '.join(parts)})")


def check_data_path(data_path: str, where: str) -> str:
    """A local data path made absolute, its folder made and checked writable; one line naming it if not."""
    if _is_remote(data_path):
        return data_path if data_path.endswith("/") else data_path + "/"
    folder = Path(data_path).expanduser().absolute()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".ood-store-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise StoreError(f"{where}: the data path {folder} cannot be written ({exc.strerror})") from None
    return str(folder) + os.sep


# -- writing ------------------------------------------------------------------------------------------
def is_lake_connection(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the database ``con`` uses is a lake."""
    row = fetch_one(con, sqlfiles.load(_SQL, "current_database_type"))  # whole: DuckDB 2 blocks on the rest
    return row is not None and row[0] == "ducklake"


def begin_write(con: duckdb.DuckDBPyConnection) -> None:
    """The first statement of a write transaction on a lake: the update of ``lake_writes`` that makes two
    overlapping writers conflict."""
    con.execute(sqlfiles.load(_SQL, "lake_begin_write"))


def commit_message(con: duckdb.DuckDBPyConnection, note: Mapping[str, Any] | None) -> None:
    """The commit's author (:func:`author`), command and what it wrote (``note``), for ``ood-store snapshots``."""
    message = dict(note or {})
    con.execute(
        sqlfiles.load(_SQL, "lake_commit_message"),
        {
            "author": author(),
            "message": str(message.pop("command", "write")),
            "extra": json.dumps(message, sort_keys=True, default=str),
        },
    )


def author() -> str:
    """Who writes: user@host (process id)."""
    try:
        user = getpass.getuser()
    except Exception:  # no user name in this environment (a container without one)
        user = "unknown"
    return f"{user}@{socket.gethostname()} (pid {os.getpid()})"


def reserve_ids(con: duckdb.DuckDBPyConnection, n: int) -> list[int]:
    """``n`` new evaluation ids from ``lake_writes``, inside the caller's write transaction."""
    con.execute(sqlfiles.load(_SQL, "lake_reserve_ids"), {"n": n})
    start = int(con.execute(sqlfiles.load(_SQL, "lake_next_id"), {"n": n}).fetchall()[0][0])
    return list(range(start, start + n))


def is_refused(exc: BaseException) -> bool:
    """Whether ``exc`` is the catalog's refusal to be written by this role (a reader's)."""
    return bool(_REFUSED.search(str(exc)))


def is_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is DuckLake's refusal of a commit that conflicts with another writer's."""
    text = str(exc)
    return isinstance(exc, duckdb.Error) and any(words in text for words in _CONFLICT) and not _REFUSED.search(text)


def retried(
    work: Callable[[], T], *, timeout: float = DEFAULT_RETRY_S, on_retry: Callable[[], None] | None = None
) -> T:
    """``work()`` (a whole write transaction), run again while it conflicts with another writer's commit.

    Waits a random while between tries (growing, up to a second), so that writers that conflicted do not
    meet again; gives up after ``timeout`` seconds with the last conflict. ``on_retry`` runs before each
    new try (to read again what another writer stored).
    """
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        try:
            return work()
        except duckdb.Error as exc:
            if not is_conflict(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(random.uniform(0, delay))
        delay = min(delay * 2, 1.0)
        if on_retry is not None:
            on_retry()


# -- the schema ---------------------------------------------------------------------------------------
def create_schema(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Lay the latest schema out in a new lake, in one commit: the file schema's tables as its migrations
    make them (in an in-memory database), without the keys and sequences DuckLake refuses, its views, and
    ``lake_writes``. Returns the versions recorded; none when another process laid it out first."""
    from ood_store._store import migrations

    con.execute("ATTACH ':memory:' AS lake_template")
    try:
        con.execute("USE lake_template")
        migrations.migrate(con, "lake template")
        con.execute(f"USE {ALIAS}")
        statements = _table_statements(con)

        def lay_out() -> list[int]:
            con.execute("BEGIN TRANSACTION")
            try:
                if migrations.current_version(con):
                    con.execute("ROLLBACK")
                    return []
                for statement in statements:
                    con.execute(statement)
                con.execute(sqlfiles.load(_SQL, "lake_copy_versions"))
                con.execute(sqlfiles.load("ood_store._schema", "views"))
                con.execute(sqlfiles.load(_SQL, "lake_create_writes"))
                con.execute(
                    sqlfiles.load(_SQL, "lake_commit_message"),
                    {"author": author(), "message": "init", "extra": "{}"},
                )
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
            return [int(v) for (v,) in con.execute(sqlfiles.load(_SQL, "lake_versions")).fetchall()]

        return retried(lay_out)
    finally:
        con.execute(f"USE {ALIAS}")
        con.execute("DETACH lake_template")


def _table_statements(con: duckdb.DuckDBPyConnection) -> list[str]:
    """``CREATE TABLE`` for each table of the template: its columns, types and ``NOT NULL`` only."""
    columns: dict[str, list[str]] = {}
    for table, column, data_type, nullable in con.execute(sqlfiles.load(_SQL, "lake_template_columns")).fetchall():
        columns.setdefault(table, []).append(f"{_ident(column)} {data_type}{'' if nullable else ' NOT NULL'}")
    return [f"CREATE TABLE {_ident(table)} ({', '.join(cols)})" for table, cols in columns.items()]


_literal = sqlfiles.literal


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# -- history ------------------------------------------------------------------------------------------
def snapshots(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every snapshot, oldest first: its id, commit time (UTC), author, command, and what it wrote (files,
    evaluations, runs, rows) as the command recorded it; a commit not made by ood-store shows its changes."""
    out = []
    for snapshot, seconds, who, command, extra, changes in con.execute(
        sqlfiles.load(_SQL, "lake_snapshots")
    ).fetchall():
        try:
            wrote = json.loads(extra) if extra else {}
        except ValueError:
            wrote = {}
        runs = wrote.get("runs")
        out.append(
            {
                "snapshot": int(snapshot),
                "committed": _utc(seconds),
                "author": who,
                "command": command or ("" if snapshot else "lake created") or None,
                "files": wrote.get("files"),
                "runs": len(runs) if isinstance(runs, list) else runs,
                "rows": wrote.get("rows"),
                "changes": None if command else changes,
            }
        )
    return out


def _utc(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    import datetime as dt

    return dt.datetime.fromtimestamp(float(seconds), dt.UTC).replace(microsecond=0, tzinfo=None).isoformat()


@dataclass(frozen=True)
class VacuumReport:
    """What ``ood-store vacuum`` removed: snapshots expired, and data files deleted."""

    expired: tuple[int, ...]
    kept: tuple[int, ...]
    files_deleted: int

    def __str__(self) -> str:
        kept = f"; kept {len(self.kept)} older ones that saved analyses or `keep` name" if self.kept else ""
        return (
            f"Expired {len(self.expired)} snapshots{kept}; deleted {self.files_deleted} data files no snapshot names."
        )


def vacuum(
    con: duckdb.DuckDBPyConnection, older_than_days: float, *, keep: Sequence[int] = (), dry_run: bool = False
) -> VacuumReport:
    """Expire the snapshots older than ``older_than_days`` (but the latest, those in ``keep`` and those saved
    analyses were computed at), then delete the data files no snapshot names any more and those a killed
    writer left (DuckLake's ``ducklake_expire_snapshots``, ``ducklake_cleanup_old_files``,
    ``ducklake_delete_orphaned_files``)."""
    import datetime as dt

    cutoff = dt.datetime.now(dt.UTC).timestamp() - older_than_days * 86400
    everything = snapshots(con)
    latest = everything[-1]["snapshot"] if everything else None
    named = {int(v) for (v,) in con.execute(sqlfiles.load(_SQL, "lake_kept_snapshots")).fetchall() if v is not None}
    named |= {int(v) for v in keep}
    old = [s for s in everything if s["snapshot"] != latest and _seconds(s["committed"]) < cutoff]
    kept = tuple(s["snapshot"] for s in old if s["snapshot"] in named)
    expired = tuple(s["snapshot"] for s in old if s["snapshot"] not in named)
    if dry_run:
        return VacuumReport(expired, kept, 0)
    if expired:
        con.execute(sqlfiles.load(_SQL, "lake_expire"), {"versions": list(expired)})
    deleted = len(con.execute(sqlfiles.load(_SQL, "lake_cleanup")).fetchall())
    deleted += len(con.execute(sqlfiles.load(_SQL, "lake_orphans")).fetchall())
    return VacuumReport(expired, kept, deleted)


def _seconds(iso: str | None) -> float:
    import datetime as dt

    return 0.0 if iso is None else dt.datetime.fromisoformat(iso).replace(tzinfo=dt.UTC).timestamp()
