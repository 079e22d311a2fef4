"""One writing process at a time: others wait a bounded time, then learn who holds the store."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

import ood_store
from conftest import pythia_files
from ood_store._cli import main

HOLDER = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


@pytest.fixture
def hold(db):
    """Start a process that writes-locks the store for ``seconds``; yields its Popen."""
    ood_store.open(db).close()
    started = []

    def start(seconds: float) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(db), str(seconds)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout.readline().strip() == "holding"
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("command", [["ingest", str(pythia_files("160m")[0])], ["query", "SELECT 1"], ["runs"]])
def test_second_process_waits_then_names_the_holder(runner, db, hold, command):
    holder = hold(60)
    started = time.monotonic()
    result = runner.invoke(main, ["--db", str(db), "--lock-timeout", "1", *command])
    waited = time.monotonic() - started
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {db}: the store is in use by process {holder.pid} (")
    assert sys.executable in result.output or "python" in result.output  # the holder's command line
    assert "gave up after waiting 1s. DuckDB allows one writing process" in result.output
    assert "Traceback" not in result.output
    assert 1.0 <= waited < 10


def test_a_writer_that_finishes_in_time_lets_the_next_one_in(runner, db, hold):
    hold(1.5)
    started = time.monotonic()
    result = runner.invoke(
        main, ["--db", str(db), "--lock-timeout", "30", "ingest", "-q", str(pythia_files("160m")[0])]
    )
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started >= 1.0
    with ood_store.open(db, read_only=True) as store:
        assert store.query("SELECT count(*) AS n FROM evaluations")["n"][0] == 1


def test_lock_timeout_from_the_environment(runner, db, hold):
    holder = hold(60)
    result = runner.invoke(main, ["--db", str(db), "runs"], env={"OOD_STORE_LOCK_TIMEOUT": "0.5"})
    assert result.exit_code == 1
    assert f"in use by process {holder.pid}" in result.output and "after waiting 0.5s" in result.output


def test_python_api_raises_store_locked_error(db, hold):
    holder = hold(60)
    with pytest.raises(ood_store.StoreLockedError, match=f"process {holder.pid}"):
        ood_store.open(db, lock_timeout=0.2)


def test_a_store_taken_while_a_query_ran_is_opened_again_when_next_used(db, monkeypatch):
    """Store.query on a store opened for writing releases it while the sandbox reads it. When another
    process takes it in that moment (planted: the first reopen finds it held), the query's rows still
    come back, and the store is opened again, waiting for the holder, when it is next used."""
    from ood_store._store import database as api

    with ood_store.open(db) as store:
        store.ingest([pythia_files("160m")[0]])
        expected = store.query("SELECT count(*) AS n FROM scores")["n"].item()
        runs = store.runs()
        real, refused = api.connect, []

        def held_once(*args, **kwargs):
            if not refused:
                refused.append(True)
                raise ood_store.StoreLockedError(f"{db}: the store is in use by process 1 (python)")
            return real(*args, **kwargs)

        monkeypatch.setattr(api, "connect", held_once)
        assert store.query("SELECT count(*) AS n FROM scores")["n"].item() == expected
        assert refused == [True] and store._live is None  # not reopened yet: the holder has it
        assert store.runs().equals(runs)  # opened again on use
        assert store._live is not None
