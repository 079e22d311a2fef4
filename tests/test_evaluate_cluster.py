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

from conftest import TOY_STEPS, TOY_TASKS, evaluation_rows, toy_evaluate_args
from ood_store._cli import main

pytestmark = pytest.mark.xdist_group("cluster")

CLUSTER = Path("/tmp/ood-store-test-cluster/cluster.json")
HOLD = Path(__file__).parent / "cluster" / "hold"
BIN = Path(sys.executable).parent
TASKS = TOY_TASKS[:2]


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
            pytest.fail(f"{problem}; CI starts it with `make cluster`")
        pytest.skip(problem)
    return json.loads(CLUSTER.read_text())


@pytest.fixture(scope="module")
def reference(toy_run, tmp_path_factory):
    """The inline evaluation of the toy run's checkpoints on TASKS: the rows every executor must store."""
    root = tmp_path_factory.mktemp("reference")
    db = root / "store.duckdb"
    from click.testing import CliRunner

    result = CliRunner().invoke(main, toy_evaluate_args(db, toy_run, root / "out", tasks=TASKS))
    assert result.exit_code == 0, result.output
    return evaluation_rows(db)


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


def wait_for(condition, what: str, timeout: float, process: subprocess.Popen | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        if process is not None and process.poll() is not None:
            pytest.fail(f"ood-store ended (status {process.returncode}) before {what}: {process.communicate()}")
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


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


def step_of(work: Path, unit: str) -> int:
    return json.loads((work / "units" / f"{unit}.json").read_text())["step"]


def claims_by_step(work: Path) -> dict[int, dict]:
    return {step_of(work, p.stem): json.loads(p.read_text()) for p in (work / "claims").glob("*/*.json")}


@pytest.mark.parametrize("name", ["plain", "accounting"])
def test_scancel_of_a_running_array_returns_at_once_with_only_the_unfinished_units_lost(
    cluster, toy_run, reference, tmp_path, name
):
    """Two array tasks of up to two units each (three units); each holds its first unit in flight. The array is
    cancelled, and one held unit released at once: its worker (SIGTERM) finishes it within Slurm's KillWait
    (5 s) and takes no new unit; the other task is killed. evaluate returns within 30 s: the finished unit
    stored (not called lost), the killed task's unit failed with Slurm's state (CANCELLED) and the end of
    the task's own stderr (once), the unit no worker took pending."""
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
        assert {step: claim["job"] for step, claim in claims.items()} == {kept: f"{array}_0", lost: f"{array}_1"}
        cancelled = time.monotonic()
        slurm(cluster, name, "scancel", array)
        (hold / f"release-{kept}").touch()
        out, err = process.communicate(timeout=120)
        seconds = time.monotonic() - cancelled
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1, (out, err)
    assert seconds < 30, f"evaluate took {seconds:.0f} s after scancel"
    assert out == ""
    assert sorted(claims_by_step(work)) == [kept, lost]  # the cancelled worker took no new unit

    job = claims[lost]["job"]
    log = work / "jobs" / "submitit" / f"{job}_0_log.err"
    tail = log.read_text().rstrip("\n").splitlines()[-8:]  # what slurmstepd and srun wrote when it was cancelled
    assert any(re.search(r"\*\*\* (JOB|STEP) [\d.]+ ON \S+ CANCELLED AT ", line) for line in tail), tail
    note = ("Note: Slurm accounting is off here (sacct: Slurm accounting storage is disabled): squeue and the work "
            "folder tell how the array's tasks end")  # fmt: skip
    assert err.splitlines() == [
        *([note] if name == "plain" else []),
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
    status = subprocess.run([str(BIN / "ood-store"), "status", str(work), "-f", "json"],
                            capture_output=True, text=True, check=True)  # fmt: skip
    states = {row["step"]: (row["state"], row["job"], row["job_state"]) for row in json.loads(status.stdout)}
    assert states == {kept: ("stored", None, None), lost: ("failed", job, "CANCELLED"), untaken: ("pending", None, None)}
    shown = subprocess.run([str(BIN / "ood-store"), "status", str(work)], capture_output=True, text=True,
                           check=True).stdout.splitlines()  # fmt: skip
    unit = next(p.stem for p in (work / "units").glob("*.json") if step_of(work, p.stem) == lost)
    at = shown.index(f"{unit} failed on {claims[lost]['host']}: Slurm job {job} ended: CANCELLED (running the same "
                     "command again evaluates it)")  # fmt: skip
    assert shown[at + 1 : at + 1 + len(tail)] == [f"  {line}" for line in tail]


def test_a_task_at_its_time_limit_gives_its_unit_back_and_is_requeued_for_the_rest(
    cluster, toy_run, reference, tmp_path
):
    """One array task of three units with a one-minute limit; its first unit is held past the limit (in the
    task's first run only). SIGUSR2 before the limit: the worker takes no new unit, gives the held one back
    (not failed) shortly before the limit, and submitit requeues the task. Run again (the test moves its
    start time to now: Slurm holds requeued jobs back two minutes), it evaluates all three units, and the
    store holds exactly the inline evaluation's rows."""
    hold = tmp_path / "hold"
    hold.mkdir()
    command = evaluate_command(toy_run, tmp_path, "--executor", "slurm", "--units-per-task", "3", "--timeout-min", "1")
    env = slurm_env(cluster, "plain", hold, OOD_STORE_TEST_HOLD_FIRST_RUN="1")
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: list(hold.glob("holding-*")), "a unit in flight", 600, process)
        work = tmp_path / "work"
        task = f"{array_of(work)}_0"
        log = work / "jobs" / "submitit" / f"{task}_0_log.err"

        def requeued() -> bool:
            state = slurm(cluster, "plain", "squeue", "-h", "-j", task, "-o", "%T %r").split()
            return "requeueing this task" in log.read_text() and state[:1] == ["PENDING"]

        wait_for(requeued, "the task requeued", 180, process)
        assert not (work / "failed").exists() or not list((work / "failed").glob("*.json"))
        assert not list((work / "claims").glob("*/*.json"))  # the held unit was given back
        assert not list((work / "done").glob("*.json"))
        stderr = log.read_text()
        assert re.search(r"SIGUSR2, \d+ s before the time limit: taking no new unit", stderr), stderr
        assert "gave back unit-" in stderr and "Requeued job" in stderr, stderr
        slurm(cluster, "plain", "scontrol", "update", f"JobId={task}", "StartTime=now")
        out, err = process.communicate(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, (out, err)
    assert evaluation_rows(tmp_path / "store.duckdb") == reference
    restarts = slurm(cluster, "plain", "scontrol", "show", "job", task)
    assert re.search(r"\bRestarts=1\b", restarts), restarts


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
def test_what_slurm_would_refuse_is_refused_before_planning_in_one_line(cluster, toy_run, tmp_path, name, option, error):
    command = evaluate_command(toy_run, tmp_path, "--executor", "slurm", *option)
    started = time.monotonic()
    done = subprocess.run(command, env=slurm_env(cluster, name), capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert done.stdout == "" and done.stderr.splitlines() == [f"Error: {error}"]
    assert not (tmp_path / "work").exists() and not (tmp_path / "out").exists()  # nothing left behind
    assert not (tmp_path / "store.duckdb").exists()
    assert time.monotonic() - started < 120


def test_slurm_with_accounting_stores_the_inline_rows(cluster, toy_run, reference, tmp_path):
    command = evaluate_command(toy_run, tmp_path, "--executor", "slurm", "--units-per-task", "2", "--timeout-min", "10")
    done = subprocess.run(command, env=slurm_env(cluster, "accounting"), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""  # -q: quiet; and no note, accounting is on
    assert evaluation_rows(tmp_path / "store.duckdb") == reference
    array = array_of(tmp_path / "work")
    accounted = slurm(cluster, "accounting", "sacct", "-n", "-P", "-X", "-j", array, "-o", "JobID,State")
    assert sorted(accounted.split()) == [f"{array}_0|COMPLETED", f"{array}_1|COMPLETED"]


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
        error = (f"the Ray cluster at {address} requires token authentication: set RAY_AUTH_MODE=token, with the "
                 "cluster's token in RAY_AUTH_TOKEN, in the file RAY_AUTH_TOKEN_PATH names, or in ~/.ray/auth_token")
    else:
        env = ray_env(cluster, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="0" * 64)
        error = (f"the Ray cluster at {address} refused this machine's token (RAY_AUTH_TOKEN): give the cluster's "
                 "token in RAY_AUTH_TOKEN, in the file RAY_AUTH_TOKEN_PATH names, or in ~/.ray/auth_token")
    command = evaluate_command(toy_run, tmp_path, "--executor", "ray", "--ray-address", address)
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert done.stdout == "" and done.stderr.splitlines() == [f"Error: --ray-address: {error}"]
    assert not (tmp_path / "work").exists()
    assert time.monotonic() - started < 60  # not Ray's half minute of retries
