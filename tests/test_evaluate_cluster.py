"""evaluate on a real Slurm and a real Ray head: the happy path and the failure paths.

The cluster is the one tests/cluster/start.sh starts (``make cluster``; CI runs it): Debian's Slurm on
this machine as two clusters, ``plain`` (no accounting: sacct fails) and ``accounting`` (slurmdbd on
MariaDB, associations enforced, finished jobs gone from squeue after 5 s so that sacct must tell how
they ended), and a Ray head on 127.0.0.1 with token authentication. Without it these tests skip and
say why; under CI=true they fail.

Workers are held at chosen points by tests/cluster/hold/sitecustomize.py: a unit's evaluation is done
but its files are not yet in place, so that a test can cancel the array or let a task run into its
time limit with units in flight, and then release one of them. The reference rows are an inline
evaluation of the same checkpoints (tests/test_evaluate.py checks those against lm-eval's own files).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REFERENCE_TASKS, TOY_STEPS, evaluation_rows, toy_evaluate_args, wait_for
from ood_store._cli import main

pytestmark = pytest.mark.xdist_group("cluster")

CLUSTER = Path("/tmp/ood-store-test-cluster/cluster.json")
HOLD = Path(__file__).parent / "cluster" / "hold"
#: What a Slurm worker writes on its task's stderr when it has the SIGTERM of a cancel.
SIGTERM_TAKEN = "SIGTERM (cancelled, or at the time limit): taking no new unit"
BIN = Path(sys.executable).parent
TASKS = REFERENCE_TASKS
#: What evaluate says, once, on a cluster without accounting.
NO_ACCOUNTING = (
    "Note: Slurm accounting is off here (sacct: Slurm accounting storage is disabled): squeue and the work folder "
    "tell how the array's tasks end"
)


def _cluster_problem() -> str | None:
    if not CLUSTER.is_file():
        return "no test cluster running: `make cluster` starts one (as root; Debian's slurm-wlm, slurmdbd, munge)"
    pids = Path(json.loads(CLUSTER.read_text())["pids"])
    for file in sorted(pids.iterdir()):
        try:
            os.kill(int(file.read_text()), 0)
        except (OSError, ValueError):
            return f"the test cluster's {file.name} is not running (make cluster starts it again)"
    return None


@pytest.fixture(scope="module")
def cluster() -> dict:
    problem = _cluster_problem()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"{problem} (.ci/run starts it before `make test`)")
        pytest.skip(problem)
    return json.loads(CLUSTER.read_text())


def of_steps(rows: dict[str, list[tuple]], steps: set[int]) -> dict[str, list[tuple]]:
    """The reference rows of these steps only (every table but runs has the step second)."""
    return {name: [r for r in table if name == "runs" or r[1] in steps] for name, table in rows.items()}


def slurm_env(cluster: dict, name: str, hold: Path | None = None, **extra: str) -> dict[str, str]:
    env = {**os.environ, "SLURM_CONF": cluster["slurm"][name], "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    if hold is not None:
        env.update(PYTHONPATH=str(HOLD), OOD_STORE_TEST_HOLD=str(hold))
    return {**env, **extra}


def evaluate_command(toy_run, root: Path, *extra: str) -> list[str]:
    args = toy_evaluate_args(root / "store.duckdb", toy_run, root / "out", tasks=TASKS)
    return [str(BIN / "ood-store"), *args, "--work-dir", str(root / "work"), *extra]


def slurm(cluster: dict, name: str, *command: str) -> str:
    done = subprocess.run(command, env=slurm_env(cluster, name), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def array_of(work: Path) -> str:
    [attempt] = (work / "attempts").glob("*.json")
    jobs = json.loads(attempt.read_text())["jobs"]
    found = re.match(r"Slurm job array (\d+):", jobs or "")
    assert found is not None, jobs
    return found.group(1)


def stop(process: subprocess.Popen, cluster: dict, name: str, work: Path) -> None:
    """After a test, whatever it left running: the ood-store process, the array it submitted."""
    if process.poll() is None:
        process.kill()
        process.wait()
    if (work / "attempts").is_dir() and "Slurm job array" in _text(work / "attempts"):
        subprocess.run(["scancel", array_of(work)], env=slurm_env(cluster, name), timeout=60)


def step_of(work: Path, unit: str) -> int:
    return json.loads((work / "units" / f"{unit}.json").read_text())["step"]


def claims_by_step(work: Path) -> dict[int, dict]:
    return {step_of(work, p.stem): json.loads(p.read_text()) for p in (work / "claims").glob("*/*.json")}


@pytest.mark.parametrize("name", ["plain", "accounting"])
def test_scancel_of_a_running_array_returns_at_once_with_only_the_unfinished_units_lost(
    cluster, toy_run, reference, tmp_path, runner, name
):
    """Two array tasks of up to two units each (three units); each holds its first unit in flight. The array is
    cancelled, and one held unit released once its worker has the SIGTERM: the worker finishes it within
    Slurm's KillWait (5 s) and takes no new unit; the other task is killed. evaluate returns within 30 s: the
    finished unit stored (not called lost), the killed task's unit failed with Slurm's state (CANCELLED) and
    the end of the task's own stderr (once), the unit no worker took pending."""
    hold = tmp_path / "hold"
    hold.mkdir()
    command = evaluate_command(toy_run, tmp_path, "--executor", "slurm", "--units-per-task", "2", "--timeout-min", "10")
    process = subprocess.Popen(command, env=slurm_env(cluster, name, hold), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    kept, lost, untaken = TOY_STEPS  # the units are taken in step order, one by each task
    try:
        wait_for(lambda: len(list(hold.glob("holding-*"))) == 2, "2 units in flight", 600, process)
        work = tmp_path / "work"
        array = array_of(work)
        claims = claims_by_step(work)
        assert sorted(claims) == [kept, lost]  # whichever task started first took the first unit
        assert sorted(claim["job"] for claim in claims.values()) == [f"{array}_0", f"{array}_1"]
        cancelled = time.monotonic()
        slurm(cluster, name, "scancel", array)
        # scancel returns before slurmstepd signals the tasks: a unit released at once could be finished before
        # its worker has the SIGTERM, and the worker would then (rightly) claim the next unit. Release it once
        # the worker says, on its own stderr, that it has the signal.
        kept_log = work / "jobs" / "submitit" / f"{claims[kept]['job']}_0_log.err"
        wait_for(lambda: kept_log.is_file() and SIGTERM_TAKEN in kept_log.read_text(), "the SIGTERM", 30, process)
        (hold / f"release-{kept}").touch()
        out, err = process.communicate(timeout=120)
        seconds = time.monotonic() - cancelled
    finally:
        stop(process, cluster, name, tmp_path / "work")
    assert process.returncode == 1, (out, err)
    assert seconds < 30, f"evaluate took {seconds:.0f} s after scancel"
    assert out == ""
    assert sorted(claims_by_step(work)) == [kept, lost]  # the cancelled worker took no new unit

    job = claims[lost]["job"]
    log = work / "jobs" / "submitit" / f"{job}_0_log.err"
    tail = log.read_text().rstrip("\n").splitlines()[-8:]  # what slurmstepd and srun wrote when it was cancelled
    assert any(re.search(r"\*\*\* (JOB|STEP) [\d.]+ ON \S+ CANCELLED AT ", line) for line in tail), tail
    assert err.splitlines() == [
        *([NO_ACCOUNTING] if name == "plain" else []),
        "Failed: 1 checkpoint:",
        f"  step {lost}: Slurm job {job} ended: CANCELLED",
        "Not evaluated (pending): 1 checkpoint:",
        f"  step {untaken}: not started: the workers ended (CANCELLED)",
        f"Slurm job {job} ended: CANCELLED; the end of its stderr ({log}):",
        *[f"  {line}" for line in tail],
        f"The errors in full: ood-store status {work}; running the same command again retries.",
    ]

    # The unit finished during KillWait is stored as the inline evaluation stored it; the others are not.
    assert evaluation_rows(tmp_path / "store.duckdb") == of_steps(reference, {kept})
    status = runner.invoke(main, ["status", str(work), "-f", "json"])
    states = {row["step"]: (row["state"], row["job"], row["job_state"]) for row in json.loads(status.output)}
    assert states == {
        kept: ("stored", None, None), lost: ("failed", job, "CANCELLED"), untaken: ("pending", None, None)
    }  # fmt: skip
    shown = runner.invoke(main, ["status", str(work)]).output.splitlines()
    unit = next(p.stem for p in (work / "units").glob("*.json") if step_of(work, p.stem) == lost)
    at = shown.index(f"{unit} failed on {claims[lost]['host']}: Slurm job {job} ended: CANCELLED (running the same "
                     "command again evaluates it)")  # fmt: skip
    assert shown[at + 1 : at + 1 + len(tail)] == [f"  {line}" for line in tail]


def test_a_task_at_its_time_limit_is_requeued_and_then_stores_the_inline_rows(
    cluster, toy_run, reference, tmp_path, runner
):
    """One array task of three units with a one-minute limit; its units are held in flight in its first run
    only. SIGUSR2 comes before the limit: the worker takes no new unit, gives the unit it holds back (no
    failure marker: the unit is pending) shortly before the limit, and submitit requeues the task. Slurm holds
    a requeued job back two minutes; the test then starts it at once, with a longer limit, and the task
    evaluates all three units: the store holds exactly the inline evaluation's rows."""
    hold = tmp_path / "hold"
    hold.mkdir()
    command = evaluate_command(toy_run, tmp_path, "--executor", "slurm", "--units-per-task", "3", "--timeout-min", "1")
    env = slurm_env(cluster, "plain", hold, OOD_STORE_TEST_HOLD_FIRST_RUN="1")
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    work = tmp_path / "work"
    try:
        wait_for(lambda: (work / "attempts").is_dir() and "Slurm job array" in _text(work / "attempts"),
                 "the array submitted", 300, process)  # fmt: skip
        task = array_of(work)  # an array of one task is submitted as a plain job
        log = work / "jobs" / "submitit" / f"{task}_0_log.err"

        def requeued() -> bool:
            state = slurm(cluster, "plain", "squeue", "-h", "-j", task, "-o", "%T").split()
            return "requeueing this task for the units left" in _text(log) and state == ["PENDING"]

        wait_for(requeued, "the task requeued", 240, process)
        stderr = log.read_text()
        assert re.search(r"SIGUSR2, \d+ s before the time limit: taking no new unit", stderr), stderr
        assert "Requeued job" in _text(log.with_name(f"{task}_0_log.out"))  # submitit's log: it requeued the task
        held = list(hold.glob("holding-*"))  # a unit in flight when the limit came near (the usual case)
        given_back = re.search(r"gave back \S+ \(not finished before the time limit\)", stderr)
        assert bool(given_back) == bool(held), stderr
        assert not list(work.glob("failed/*.json")) and not list(work.glob("done/*.json"))
        assert not list(work.glob("claims/*/*.json"))  # nothing held: the requeued task takes every unit
        status = runner.invoke(main, ["status", str(work), "-f", "json"])
        assert {row["state"] for row in json.loads(status.output)} == {"pending"}
        # Not in the second of the requeue: slurmd refuses to start a job again while its last run's credential,
        # revoked by the requeue, is as new as the start ("Job credential revoked"), which is why Slurm waits.
        time.sleep(5)
        slurm(cluster, "plain", "scontrol", "update", f"JobId={task}", "TimeLimit=10", "StartTime=now")
        out, err = process.communicate(timeout=600)
    finally:
        stop(process, cluster, "plain", work)
    assert process.returncode == 0, (out, err)
    assert out == "" and err.splitlines() == [NO_ACCOUNTING]  # -q: nothing else (no submitit or sacct warnings)
    assert evaluation_rows(tmp_path / "store.duckdb") == reference
    shown = slurm(cluster, "plain", "scontrol", "show", "job", task)
    assert re.search(r"\bRestarts=1\b", shown), shown


def _text(path: Path) -> str:
    """A file's text, or every file's in a folder; "" while there is none."""
    files = sorted(path.glob("*")) if path.is_dir() else [path]
    return "".join(f.read_text(errors="replace") for f in files if f.is_file())


@pytest.mark.parametrize(
    ("name", "option", "error"),
    [
        ("plain", ["--slurm-partition", "nope"], "--slurm-partition: Slurm refuses the job array: sbatch: error: "
         "invalid partition specified: nope"),
        ("accounting", ["--slurm-param", "account=nope"], "--slurm-param: Slurm refuses the job array: allocation "
         "failure: Invalid account or account/partition combination specified"),
        ("accounting", ["--slurm-param", "qos=nope"], "--slurm-param: Slurm refuses the job array: allocation failure: "
         "Invalid qos specification"),
    ],
)  # fmt: skip
def test_what_slurm_would_refuse_is_refused_before_planning_in_one_line(
    cluster, toy_run, tmp_path, runner, monkeypatch, name, option, error
):
    monkeypatch.setenv("SLURM_CONF", cluster["slurm"][name])
    command = evaluate_command(toy_run, tmp_path, "--executor", "slurm", *option)
    result = runner.invoke(main, command[1:])
    assert result.exit_code == 1
    assert result.output.splitlines() == [f"Error: {error}"]
    assert not (tmp_path / "work").exists() and not (tmp_path / "out").exists()  # nothing left behind
    assert not (tmp_path / "store.duckdb").exists()


def ray_env(cluster: dict, **auth: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_AUTH")}
    return {**env, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0", "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1", **auth}  # fmt: skip


def test_ray_with_token_auth_connects_quietly_and_stores_the_inline_rows(cluster, toy_run, reference, tmp_path):
    address = cluster["ray"]["address"]
    env = ray_env(cluster, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=cluster["ray"]["token_path"])
    command = evaluate_command(toy_run, tmp_path, "--executor", "ray", "--ray-address", address, "--workers", "2")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""  # -q: not even Ray's line about RAY_BACKEND_LOG_LEVEL
    assert evaluation_rows(tmp_path / "store.duckdb") == reference


@pytest.mark.parametrize("auth", ["none", "wrong token"])
def test_a_ray_head_that_refuses_the_token_is_one_line_before_planning(cluster, toy_run, tmp_path, auth):
    address = cluster["ray"]["address"]
    if auth == "none":
        env = ray_env(cluster)
        error = (
            f"the Ray cluster at {address} requires token authentication: set RAY_AUTH_MODE=token, with the "
            "cluster's token in RAY_AUTH_TOKEN, in the file RAY_AUTH_TOKEN_PATH names, or in ~/.ray/auth_token"
        )
    else:
        env = ray_env(cluster, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="0" * 64)
        error = (
            f"the Ray cluster at {address} refused this machine's token (RAY_AUTH_TOKEN): give the cluster's "
            "token in RAY_AUTH_TOKEN, in the file RAY_AUTH_TOKEN_PATH names, or in ~/.ray/auth_token"
        )
    command = evaluate_command(toy_run, tmp_path, "--executor", "ray", "--ray-address", address)
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert done.stdout == "" and done.stderr.splitlines() == [f"Error: --ray-address: {error}"]
    assert not (tmp_path / "work").exists()
    assert time.monotonic() - started < 60  # not Ray's half minute of retries


# -- without a cluster: what Slurm writes, read as Slurm wrote it (tests/fixtures/slurm, captured from the
# test cluster; its README says how) ------------------------------------------------------------------------
SLURM_FILES = Path(__file__).parent / "fixtures" / "slurm"


def test_squeue_and_sacct_listings_are_read_task_by_task():
    from ood_store._evaluate.executors.slurm_queue import _listing

    running = _listing((SLURM_FILES / "sacct-running.txt").read_text())
    assert running == {"13_0": "RUNNING", "13_1": "PENDING", "13_2": "PENDING", "13_3": "PENDING"}
    ended = _listing((SLURM_FILES / "sacct-ended.txt").read_text())
    assert ended == {
        **{f"13_{task}": "CANCELLED" for task in range(4)},
        "8_0": "COMPLETED", "8_1": "COMPLETED", "11_0": "CANCELLED", "11_1": "CANCELLED",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("file", "state"), [("cancelled.err", "CANCELLED"), ("timeout.err", "TIMEOUT"), ("missing.err", None)]
)
def test_a_task_gone_from_squeue_without_accounting_is_known_by_what_slurmstepd_wrote(file, state):
    from ood_store._evaluate.executors.slurm_queue import ArrayQueue

    queue = ArrayQueue("31", ["31"], lambda task: SLURM_FILES / file)
    assert queue.state_from_stderr("31") == state
    ended = queue.ended({"31": state or "UNKNOWN"})["31"]
    assert ended.state == (state or "UNKNOWN")
    lines = (SLURM_FILES / file).read_text().splitlines() if state else []
    assert ended.tail == lines[-8:] and ended.log == (str(SLURM_FILES / file) if state else None)
