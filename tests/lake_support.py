"""Lakes for the tests: a new, empty catalog for each, in the PostgreSQL server CI starts (tests/lake/start.sh
writes its connection string to build/lake/pg.env; `make test-lake` puts it in OOD_STORE_TEST_LAKE), else
in a SQLite file of the test's own (one host; enough for all but the many-writer tests).

The lake tests are marked ``lake``: they need DuckDB's ducklake extension, which the ``lake`` extra installs
for DuckDB 1.5.5 (`make test-lake` runs them in .venv-lake). ``make test`` leaves them out (``-m "not lake"``
in pyproject's addopts); in an environment without the extension they fail and say why.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

#: A PostgreSQL catalog's connection string, ``postgres:dbname=... host=... port=... user=...``.
LAKE_ENV = "OOD_STORE_TEST_LAKE"


def require_extension() -> None:
    from ood_store._store.lake import packaged_extension

    if packaged_extension("ducklake") is None:
        pytest.fail(
            f"the lake tests need DuckDB's ducklake extension for DuckDB {duckdb.__version__}: run them with "
            "`make test-lake` (a venv with the lake extra, DuckDB 1.5.5)"
        )


def postgres() -> str | None:
    """The PostgreSQL server's connection string (``postgres:...``), when the tests have one."""
    spec = os.environ.get(LAKE_ENV)
    if not spec and os.environ.get("CI") == "true":
        pytest.fail(f"CI runs the lake tests on PostgreSQL: set {LAKE_ENV} (make test-lake does)")
    return spec or None


def conninfo(spec: str, **changed: str) -> str:
    """A libpq connection string: ``spec`` (without ``postgres:``) with ``changed`` keys replaced."""
    pairs = dict(re.findall(r"(\w+)=(\S+)", spec.removeprefix("postgres:")))
    pairs.update(changed)
    return " ".join(f"{key}={value}" for key, value in pairs.items())


def psql(spec: str, sql: str) -> None:
    psql_path = shutil.which("psql") or "/usr/lib/postgresql/15/bin/psql"
    subprocess.run([psql_path, conninfo(spec), "-qAt", "-v", "ON_ERROR_STOP=1", "-c", sql], check=True,
                   capture_output=True, text=True, timeout=60)  # fmt: skip


def new_catalog(tmp_path: Path, *, need_postgres: bool = False) -> str:
    """A ``ducklake:`` URL of a catalog that holds nothing yet."""
    require_extension()
    spec = postgres()
    if spec is None:
        if need_postgres:
            pytest.skip(f"many writers need a PostgreSQL catalog ({LAKE_ENV}; `make test-lake` starts one)")
        return f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    name = f"ood_test_{secrets.token_hex(6)}"
    psql(spec, f"CREATE DATABASE {name}")
    return "ducklake:postgres:" + conninfo(spec, dbname=name)


def new_lake(tmp_path: Path, *, need_postgres: bool = False) -> str:
    """A new lake (its schema laid out), its data in ``tmp_path/lake-data``; its URL."""
    import ood_store

    url = new_catalog(tmp_path, need_postgres=need_postgres)
    ood_store.open(url, data_path=tmp_path / "lake-data").close()
    return url


def new_store(kind: str, tmp_path: Path) -> str:
    """A new, empty store of ``kind`` (``file`` or ``lake``): what ``--db`` takes."""
    if kind == "lake":
        return new_lake(tmp_path)
    return str(tmp_path / "store.duckdb")


#: Parametrize a test over a store file and a lake; the lake's case is marked ``lake``.
KINDS = pytest.mark.parametrize("kind", ["file", pytest.param("lake", marks=pytest.mark.lake)])


def s3_server(folder: Path, bucket: str):
    """A context: moto's S3 server on 127.0.0.1 (a free port), ``bucket`` made in it; yields its endpoint URL.

    The server runs in a process of its own, stopped when the block ends. Offline: moto serves S3's API
    from memory.
    """
    import contextlib
    import socket
    import sys
    import time
    import urllib.request

    @contextlib.contextmanager
    def serving():
        try:
            import boto3
            import moto.server  # noqa: F401
        except ImportError:
            pytest.fail("the S3 lake tests need moto[server] and boto3 (make .venv-lake/.installed installs them)")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        log = (folder / "moto.log").open("w")
        server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                  stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        endpoint = f"http://127.0.0.1:{port}"
        try:
            for _ in range(120):
                try:
                    urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close()
                    break
                except OSError:
                    if server.poll() is not None:
                        pytest.fail(f"moto's server exited: {(folder / 'moto.log').read_text()[-2000:]}")
                    time.sleep(0.25)
            client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                                  aws_secret_access_key="test", region_name="us-east-1")  # fmt: skip
            client.create_bucket(Bucket=bucket)
            yield endpoint, client
        finally:
            server.terminate()
            server.wait(timeout=30)
            log.close()

    return serving()
