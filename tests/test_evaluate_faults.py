"""Nothing is lost and nothing is stored twice when a worker or the collector dies, or a checkpoint is broken.

Processes are killed for real (SIGKILL) at chosen points. The collector's points are its transactions
and its opens of the store: a wrapper (COLLECTOR below) runs the real `ood-store collect` with
``ood_store._store.transaction``'s ``transaction`` and the collector's ``Database`` wrapped so that it signals,
through files, just before each commit, just after it, and once the store is closed again; at the
points it is told to, it then waits until the test releases it (a file), so that what the test sees
at each point never depends on how fast the machine is. The reference store is an inline evaluation
of the same checkpoints (tests/test_evaluate.py checks that against lm-eval's own files).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import ood_store
from conftest import REFERENCE_TASKS, TOY_RUN, TOY_STEPS, evaluation_rows, toy_evaluate_args, wait_for
from ood_store._cli import main

pytestmark = pytest.mark.xdist_group("faults")

BIN = Path(sys.executable).parent
TASKS = REFERENCE_TASKS
PER_UNIT_SCORES = len(TASKS)  # one metric (acc) per toy task

COLLECTOR = r"""
import sys, time
from contextlib import contextmanager
from pathlib import Path

signals, pause_at = Path(sys.argv[1]), set(sys.argv[2].split(","))
import importlib
module = importlib.import_module("ood_store._store.transaction")  # before ingest imports its `transaction`
real_transaction = module.transaction
commits = opens = 0

def point(name):
    (signals / name).touch()
    if name in pause_at:  # wait until the test releases this point (or kills the process)
        deadline = time.monotonic() + 600
        while not (signals / f"release-{name}").exists() and time.monotonic() < deadline:
            time.sleep(0.01)

@contextmanager
def transaction(con, note=None):
    global commits
    with real_transaction(con, note) as inner:
        yield inner
        commits += 1
        point(f"commit-{commits}-before")  # every row of the transaction written, not yet committed
    point(f"commit-{commits}-after")  # committed; the store still open

@contextmanager
def store_open(*args, **kwargs):
    global opens
    with real_open(*args, **kwargs) as store:
        yield store
    opens += 1
    point(f"closed-{opens}")  # the store closed again: other processes may open it

module.transaction = transaction
collect = importlib.import_module("ood_store._evaluate.collect")  # its ingest takes the wrapped transaction
real_open, collect.Database = collect.Database, store_open
from ood_store._cli import main
main(sys.argv[3:], prog_name="ood-store")
"""


def ood_store_command(*args: str) -> list[str]:
    return [str(BIN / "ood-store"), *args]


@pytest.fixture(scope="module")
def finished_work(toy_run, tmp_path_factory):
    """A work folder whose 3 units local workers have finished (detached), none of them stored yet."""
    from click.testing import CliRunner

    root = tmp_path_factory.mktemp("finished")
    work = root / "work"
    args = [*toy_evaluate_args(root / "plan.duckdb", toy_run, root / "out", tasks=TASKS), "--work-dir", str(work)]
    result = CliRunner().invoke(main, [*args, "--executor", "local", "--workers", "2", "--detach"])
    assert result.exit_code == 0, result.output
    wait_for(lambda: len(list((work / "done").glob("*.json"))) == 3, "3 completion markers")
    assert not (work / "stored").exists()
    return work


def fresh_copy(work: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the work folder (its units' files stay where they are) and an empty store to collect into."""
    copy = tmp_path / "work"
    shutil.copytree(work, copy)
    db = tmp_path / "store.duckdb"
    ood_store.open(db).close()
    return copy, db


@pytest.mark.parametrize(
    ("kill_at", "stored_before_collect"),
    [
        ("1-before", 0),  # the first unit's rows written, not committed: rolled back
        ("2-after", 2),  # the second unit committed, its `stored` marker not yet written: found by its hash
    ],
)
def test_a_collector_killed_mid_commit_loses_nothing_and_stores_nothing_twice(
    finished_work, reference, tmp_path, kill_at, stored_before_collect
):
    work, db = fresh_copy(finished_work, tmp_path)
    signals = tmp_path / "signals"
    signals.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-c", COLLECTOR, str(signals), f"commit-{kill_at}", "--db", str(db), "collect", str(work)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_for(lambda: (signals / f"commit-{kill_at}").exists(), f"commit {kill_at}", process=process)  # held there
    os.kill(process.pid, signal.SIGKILL)
    process.wait()

    with ood_store.open(db, read_only=True) as store:
        assert store.query("SELECT count(*) AS n FROM evaluations")["n"][0] == stored_before_collect
    collected = subprocess.run(ood_store_command("--db", str(db), "collect", str(work)), capture_output=True, text=True)
    assert collected.returncode == 0, collected.stderr
    assert collected.stdout.splitlines()[-1] == "3 units: 3 stored."
    assert evaluation_rows(db) == reference


def test_a_query_during_collection_waits_for_the_commit_and_gets_in_between_commits(finished_work, tmp_path):
    import threading

    work, db = fresh_copy(finished_work, tmp_path)
    signals = tmp_path / "signals"
    signals.mkdir()
    # The collector is held once the first unit is committed and the store closed, in the second unit's
    # transaction (all its rows written, not committed), and once that is committed and the store closed,
    # each time until this test releases it.
    collector = subprocess.Popen(
        [sys.executable, "-c", COLLECTOR, str(signals), "closed-1,commit-2-before,closed-2", "--db", str(db),
         "collect", str(work)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip

    def query() -> tuple[int, int]:
        """This process reads the store as `ood-store query` does: a read-only open that waits for the lock."""
        with ood_store.open(db, read_only=True, lock_timeout=120) as store:
            return store.query("SELECT count(DISTINCT evaluation_id) AS e, count(*) AS s FROM scores_all").row(0)

    def release(point: str) -> None:
        (signals / f"release-{point}").touch()

    wait_for(lambda: (signals / "closed-1").exists(), "the first commit", process=collector)
    between = query()  # between the first and the second unit: the store is free
    release("closed-1")
    wait_for(lambda: (signals / "commit-2-before").exists(), "the second unit's transaction", process=collector)
    during: list[tuple[int, int]] = []
    reader = threading.Thread(target=lambda: during.append(query()))
    reader.start()
    reader.join(1.0)
    waiting = reader.is_alive()  # the store is held while the commit is under way: the read waits for it
    release("commit-2-before")  # the collector commits, closes the store and is held again: the read gets in
    reader.join(120)
    release("closed-2")
    assert collector.wait(120) == 0
    after = query()
    assert between == (1, PER_UNIT_SCORES)
    assert waiting and during == [(2, 2 * PER_UNIT_SCORES)]  # the whole commit, never part of it
    assert after == (3, 3 * PER_UNIT_SCORES)


def test_a_worker_killed_mid_unit_leaves_only_that_unit_to_evaluate_again(toy_run, reference, tmp_path):
    db, out, work = tmp_path / "store.duckdb", tmp_path / "out", tmp_path / "work"
    args = [*toy_evaluate_args(db, toy_run, out, tasks=TASKS), "--work-dir", str(work)]
    args = [a for a in args if a != "-q"] + ["--executor", "local", "--workers", "2"]
    driver = subprocess.Popen(ood_store_command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def in_flight() -> tuple[str, int] | None:
        """A unit a worker is evaluating right now (lm-eval is writing its log): (unit id, worker pid)."""
        for claim in (work / "claims").glob("*/*.json"):
            folder = Path(json.loads((work / "units" / claim.name).read_text())["output"])
            logging = list(folder.parent.glob(f".{folder.name}.*.tmp/lm-eval.log"))
            if logging and not (work / "done" / claim.name).exists():
                return claim.stem, json.loads(claim.read_text())["pid"]  # the worker wrote its claim before its log
        return None

    unit, pid = wait_for(in_flight, "a unit in flight", process=driver)
    os.kill(pid, signal.SIGKILL)
    stdout, stderr = driver.communicate(timeout=300)
    assert driver.returncode == 1, stdout + stderr
    step = int(unit.split(".step-")[1].split(".")[0])
    assert f"step {step}: not evaluated: local worker process {pid} was killed by signal 9" in stderr
    with ood_store.open(db, read_only=True) as store:
        assert store.query("SELECT DISTINCT step FROM evaluations ORDER BY step")["step"].to_list() == [
            s for s in TOY_STEPS if s != step
        ]
    finished = {p.name: p.read_text() for p in (work / "done").glob("*.json")}

    again = subprocess.run(ood_store_command(*args), capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    lines = again.stdout.splitlines()
    assert lines[0] == f"Evaluated 1 checkpoint of run {TOY_RUN} into {db}: 2 scores, 32 samples."
    assert lines[1].startswith(f"  step {step}: {', '.join(TASKS)} (")
    assert lines[2] == "Already in the store: 2 checkpoints (--force evaluates them again)."
    assert {p.name: p.read_text() for p in (work / "done").glob("*.json") if p.name in finished} == finished
    assert evaluation_rows(db) == reference  # every unit once: no duplicate scores or samples


def test_units_finished_but_not_stored_are_stored_by_the_next_evaluate_not_evaluated_again(
    toy_run, reference, tmp_path, runner, monkeypatch
):
    """Workers finished every unit (--detach), nothing collected; the same command again (inline now) plans the
    same unit ids, finds their completion markers, and stores the units without running lm-eval."""
    import lm_eval

    db, out, work = tmp_path / "store.duckdb", tmp_path / "out", tmp_path / "work"
    args = [*toy_evaluate_args(db, toy_run, out, tasks=TASKS), "--work-dir", str(work)]
    detached = runner.invoke(main, [*args, "--executor", "local", "--workers", "2", "--detach"])
    assert detached.exit_code == 0, detached.output
    wait_for(lambda: len(list((work / "done").glob("*.json"))) == len(TOY_STEPS), "3 completion markers")
    finished = {p.name: p.read_text() for p in (work / "done").glob("*.json")}

    calls: list[str] = []
    real = lm_eval.simple_evaluate
    monkeypatch.setattr(lm_eval, "simple_evaluate", lambda *a, **k: calls.append(k["model_args"]) or real(*a, **k))
    again = runner.invoke(main, [a for a in args if a != "-q"])
    assert again.exit_code == 0, again.output
    assert again.output.splitlines()[0] == f"Evaluated 3 checkpoints of run {TOY_RUN} into {db}: 6 scores, 96 samples."
    assert calls == []  # lm-eval never ran: the finished units were stored as they were
    assert sorted(p.name for p in (work / "units").glob("*.json")) == sorted(finished)  # no new unit planned
    assert {p.name: p.read_text() for p in (work / "done").glob("*.json")} == finished
    assert evaluation_rows(db) == reference


def test_a_broken_checkpoint_fails_alone_and_is_retried_when_fixed(toy_run, reference, tmp_path, runner):
    run = tmp_path / "run"
    shutil.copytree(toy_run["run"], run)
    weights = run / "checkpoint-4" / "model.safetensors"
    weights.write_bytes(b"not a safetensors file")
    db, work = tmp_path / "store.duckdb", tmp_path / "work"
    args = toy_evaluate_args(db, {**toy_run, "run": run}, tmp_path / "out", tasks=TASKS) + ["--work-dir", str(work)]
    result = runner.invoke(main, args)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == "Failed: 1 checkpoint:"
    assert lines[1].startswith("  step 4: SafetensorError: "), lines
    assert lines[2] == f"The errors in full: ood-store status {work.resolve()}; running the same command again retries."
    with ood_store.open(db, read_only=True) as store:
        assert store.query("SELECT DISTINCT step FROM evaluations ORDER BY step")["step"].to_list() == [0, 8]

    shown = runner.invoke(main, ["status", str(work)]).output.splitlines()
    assert shown[0] == "3 units: 2 stored, 1 failed."
    failed = next(i for i, line in enumerate(shown) if " failed on " in line)
    assert ".step-4." in shown[failed] and ": SafetensorError: " in shown[failed]
    assert shown[-1].startswith("  safetensors") and "SafetensorError" in shown[-1]  # the traceback's last line

    shutil.copyfile(toy_run["run"] / "checkpoint-4" / "model.safetensors", weights)
    again = runner.invoke(main, args)
    assert again.exit_code == 0, again.output
    rows = evaluation_rows(db)  # the same weights as the reference's, in another folder
    assert {k: rows[k] for k in ("scores", "samples")} == {k: reference[k] for k in ("scores", "samples")}
