"""A store is born whole under any load: several processes creating it and ingesting at once, a writer
letting go while another process opens the store, a process killed while it creates or migrates it, an
empty file nobody is making, an empty file another process is making.

The processes are real: workers that import ood-store once and then take one task after another from
their standard input (for the concurrent ingests), and children forked from a forkserver that has
imported it (for the kills), so that the 50 rounds and the 100 kills run in about a minute each. The
files ingested are the repository's real lm-eval results of Pythia (tests/fixtures/README.md).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from multiprocessing.connection import wait
from pathlib import Path

import duckdb
import pytest

import ood_store
from conftest import INGEST_WORKER as WORKER
from conftest import pythia_files, store_of_version
from ood_store._cli import main
from ood_store._schema import latest_version
from ood_store._store.damage import REMEDY


def content_hashes(db: Path) -> list[str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [h for (h,) in con.execute("SELECT content_hash FROM evaluations").fetchall()]
    finally:
        con.close()


def sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- several processes at once ------------------------------------------------------------------------
@pytest.mark.parametrize("processes", [4, 8])
def test_processes_ingesting_into_a_fresh_store_at_once_each_store_every_file_once(tmp_path, processes):
    """N processes start ingesting into a store that does not exist yet, 50 times: none fails, every
    file is stored once, nothing is left beside the store. One of them ingests only a file that is
    refused, so that the store it may have made (and removes, as it stored nothing) vanishes while the
    others wait for it."""
    files = pythia_files()[: processes - 1]
    assert len(files) == processes - 1
    bad = tmp_path / "results_2024-01-01T00-00-00.json"
    bad.write_text('{"results": ')  # not JSON: refused, nothing stored
    expected = sorted(sha256(f) for f in files)
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tmp_path
        )
        for _ in range(processes)
    ]
    try:
        for worker in workers:
            assert worker.stdout.readline().strip() == "ready"
        for round_ in range(50):
            db = tmp_path / f"round{round_}.duckdb"
            # the worker that ingests the refused file is a different one each round
            tasks = [[str(f)] for f in files]
            tasks.insert(round_ % processes, [str(bad)])
            for worker, task in zip(workers, tasks, strict=True):
                worker.stdin.write(json.dumps({"db": str(db), "files": task}) + "\n")
                worker.stdin.flush()
            answers = [json.loads(worker.stdout.readline()) for worker in workers]
            for task, answer in zip(tasks, answers, strict=True):
                assert "error" not in answer, (round_, answer)
                if task == [str(bad)]:
                    assert answer["ingested"] == 0 and len(answer["rejected"]) == 1, answer
                else:
                    assert answer == {"ingested": 1, "rejected": []}, (round_, answer)
            assert sorted(content_hashes(db)) == expected, round_
            assert [p.name for p in tmp_path.iterdir() if p.name.startswith(f".{db.name}")] == []
    finally:
        for worker in workers:
            worker.stdin.close()
            worker.wait(timeout=60)


# Four processes open one DuckDB file for writing, insert a row and close, again and again.
WRITERS = """
import multiprocessing, sys, time
from pathlib import Path
import duckdb
from ood_store._store.connection import close, connect

PATH, CYCLES, OURS = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "ours"

def writer(i):
    for j in range(CYCLES):
        if OURS:
            con = connect(PATH, read_only=False, lock_timeout=120)
        else:
            while True:
                try:
                    con = duckdb.connect(str(PATH))
                    break
                except duckdb.IOException as exc:
                    if "Conflicting lock" not in str(exc):
                        raise
                    time.sleep(0.001)
        con.execute("INSERT INTO t VALUES (?, ?)", [i, j])
        con.execute("INSERT INTO pad SELECT range FROM range(20000)")  # the checkpoint on close moves blocks
        if OURS:
            close(con, PATH, writer=True)
        else:
            con.close()

if __name__ == "__main__":
    con = duckdb.connect(str(PATH))
    con.execute("CREATE TABLE t (i INTEGER, j INTEGER); CREATE TABLE pad (x BIGINT)")
    con.close()
    children = [multiprocessing.Process(target=writer, args=(i,)) for i in range(4)]
    for child in children:
        child.start()
    for child in children:
        child.join()
    con = duckdb.connect(str(PATH), read_only=True)
    print(con.execute("SELECT count(DISTINCT (i, j)) FROM t").fetchone()[0])
"""


@pytest.mark.skipif(shutil.which("strace") is None and os.environ.get("CI") != "true", reason="needs strace")
def test_a_writer_letting_go_between_an_openers_header_read_and_lock_loses_nothing(tmp_path):
    """DuckDB reads a file's headers before it takes the file's lock and trusts them once it has it. A
    writer that checkpoints and lets go in between leaves the opener with stale headers: its commit, once
    checkpointed, drops the other's. The window is made wide by delaying every ``fcntl`` call 30 ms
    (strace's fault injection), for 4 processes x 12 open-insert-close cycles: DuckDB alone loses commits
    (the hazard is there), the same cycles through ``connect`` and ``close`` lose none."""
    assert shutil.which("strace"), "strace is needed (Debian's strace; `make strace`)"
    script = tmp_path / "writers.py"
    script.write_text(WRITERS)
    counted = {}
    for mode in ("duckdb", "ours"):
        done = subprocess.run(
            ["strace", "-f", "-o", os.devnull, "-e", "trace=fcntl", "-e", "inject=fcntl:delay_enter=30000",
             sys.executable, str(script), str(tmp_path / f"{mode}.duckdb"), "8", mode],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        counted[mode] = int(done.stdout.split()[-1])
    hazard = f"DuckDB alone kept all {counted['duckdb']} commits: the test no longer shows the hazard"
    assert counted["duckdb"] < 32, hazard
    assert counted["ours"] == 32


# -- killed while it creates or migrates the store ---------------------------------------------------
def _ingest(db: str, files: list[str]) -> None:
    with ood_store.open(db) as store:
        store.ingest(files)


def _open(db: str) -> None:
    ood_store.open(db).close()


@pytest.fixture(scope="module")
def forkserver():
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["ood_store._api", "ood_store._ingest.pipeline", __name__])
    return context


def _kill_at_random_moments(forkserver, target, prepare, check, trials: int, seed: int) -> None:
    """Run ``target(*prepare(n))`` in children, four at a time, killed with SIGKILL at random moments of
    their run until ``trials`` of them were killed before they finished; ``check(db, killed)`` judges what
    each left. The run's length is first measured on four children that are let finish, and taken again
    from every child that finishes before its kill (a loaded machine runs them faster or slower)."""
    rng = random.Random(seed)
    ends = _batch(forkserver, target, prepare, check, [None] * 4, first=0)
    duration = sorted(ends)[1]
    killed, first = 0, 4
    while killed < trials:
        assert first < 4 * trials, f"only {killed} of {first} children were killed before they finished"
        ends = _batch(forkserver, target, prepare, check, [rng.uniform(0, duration) for _ in range(4)], first)
        killed += sum(end is None for end in ends)
        duration = min([duration, *(end for end in ends if end is not None)])
        first += 4


def _batch(forkserver, target, prepare, check, moments: list[float | None], first: int) -> list[float | None]:
    """Start one child for each of ``moments`` and kill it then (None: let it finish); the seconds each
    ran (None: killed before it finished)."""
    children = [(prepare(first + i), moment) for i, moment in enumerate(moments)]
    processes = [forkserver.Process(target=target, args=args) for args, _ in children]
    begun = time.monotonic()
    for process in processes:
        process.start()
    for process, (_, moment) in sorted(zip(processes, children, strict=True), key=lambda item: item[1][1] or 0.0):
        if moment is not None:
            time.sleep(max(0.0, begun + moment - time.monotonic()))
            process.kill()  # SIGKILL, unless it has finished already
    running = {process.sentinel: process for process in processes}
    seconds = {}
    while running:
        for ready in wait(list(running)):
            seconds[running.pop(ready).pid] = time.monotonic() - begun
    ends: list[float | None] = []
    for process, (args, _) in zip(processes, children, strict=True):
        process.join()
        was_killed = process.exitcode == -signal.SIGKILL
        assert was_killed or process.exitcode == 0, process.exitcode
        ends.append(None if was_killed else seconds[process.pid])
        check(args[0], killed=was_killed)
    return ends


def _whole_or_absent(db: Path) -> int | None:
    """The schema version of what a killed process left at ``db`` (None: nothing), checked whole."""
    if not db.exists():
        assert not db.with_name(db.name + ".wal").exists()
        return None
    con = duckdb.connect(str(db), read_only=True)
    try:
        version = con.execute("SELECT max(version) FROM schema_version").fetchone()[0]
        if version == latest_version():
            assert con.execute("SELECT count(*) FROM scores").fetchone()[0] >= 0
    finally:
        con.close()
    return version


def test_a_process_killed_while_it_creates_the_store_leaves_none_or_a_whole_one(tmp_path, forkserver):
    files = [str(pythia_files("160m")[0])]
    states = []

    def prepare(trial: int) -> tuple[str, list[str]]:
        folder = tmp_path / str(trial)
        folder.mkdir()
        return str(folder / "store.duckdb"), files

    def check(db: str, killed: bool) -> None:
        path = Path(db)
        version = _whole_or_absent(path)
        assert version in (None, latest_version()), version  # never a store half-made
        states.append(version)
        with ood_store.open(path) as store:  # the next process: a whole store, and no leftovers
            assert store.query("SELECT count(*) AS n FROM scores")["n"][0] >= 0
        # nothing beside it but DuckDB's write-ahead log (of an ingest killed after the store was made)
        assert {p.name for p in path.parent.iterdir()} <= {"store.duckdb", "store.duckdb.wal"}

    _kill_at_random_moments(forkserver, _ingest, prepare, check, trials=100, seed=32)
    # the kills fell both before the store appeared and after: both outcomes were tried
    assert None in states and latest_version() in states, states


def test_a_process_killed_while_it_migrates_the_oldest_store_leaves_it_whole(tmp_path, forkserver):
    oldest = tmp_path / "oldest.duckdb"
    store_of_version(
        oldest,
        1,
        "INSERT INTO runs VALUES ('r', NULL, NULL, NULL, NULL, NULL, '{}', now()::TIMESTAMP)",
    )
    versions = []

    def prepare(trial: int) -> tuple[str]:
        db = tmp_path / f"{trial}.duckdb"
        shutil.copy(oldest, db)
        return (str(db),)

    def check(db: str, killed: bool) -> None:
        path = Path(db)
        version = _whole_or_absent(path)
        assert version in (1, latest_version()), version  # at the version it had, or at the latest
        versions.append(version)
        with ood_store.open(path) as store:
            assert store.query("SELECT run FROM runs")["run"].to_list() == ["r"]
            assert store.schema_version == latest_version()

    _kill_at_random_moments(forkserver, _open, prepare, check, trials=100, seed=3200)
    assert 1 in versions, versions


# -- an empty file -----------------------------------------------------------------------------------
def test_an_empty_file_nobody_is_making_is_refused_untouched(tmp_path, runner):
    store = tmp_path / "store.duckdb"
    store.touch()
    for command in (["init"], ["ingest", str(pythia_files("160m")[0])], ["runs"]):
        result = runner.invoke(main, ["--db", str(store), "--lock-timeout", "5", *command])
        assert (result.exit_code, result.output) == (
            1,
            f"Error: {store}: the store file is damaged: it is empty (0 bytes); {REMEDY}\n",
        ), command
        assert store.read_bytes() == b""
        assert sorted(p.name for p in tmp_path.iterdir()) == ["store.duckdb"]


HOLDER = """
import fcntl, sys, time
with open(sys.argv[1], "r+b") as fh:
    fcntl.lockf(fh, fcntl.LOCK_EX)  # as DuckDB locks a file it has just made, before writing to it
    print("holding", flush=True)
    time.sleep(float(sys.argv[3]))
    fh.write(open(sys.argv[2], "rb").read())  # the store, laid out
    fh.flush()
"""


def test_an_empty_file_being_made_is_waited_for(tmp_path, runner):
    pristine = tmp_path / "pristine.duckdb"
    ood_store.open(pristine).close()
    store = tmp_path / "store.duckdb"
    store.touch()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store), str(pristine), "60"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        result = runner.invoke(main, ["--db", str(store), "--lock-timeout", "0.5", "runs"])
        assert result.exit_code == 1
        assert result.output.startswith(f"Error: {store}: the store is in use by process {holder.pid} ("), result.output
        assert store.read_bytes() == b""
    finally:
        holder.kill()
        holder.wait()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store), str(pristine), "1"], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "holding"
    result = runner.invoke(main, ["--db", str(store), "--lock-timeout", "30", "ingest", str(pythia_files("160m")[0])])
    holder.wait()
    assert result.exit_code == 0, result.output
    assert content_hashes(store) == [sha256(pythia_files("160m")[0])]
