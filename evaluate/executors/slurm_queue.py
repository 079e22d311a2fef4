"""How a Slurm job array's tasks stand, from the scheduler that is there, every task in one call.

``squeue`` tells what is queued, running or ending (``-t all`` also lists the
tasks that ended within the controller's ``MinJobAge``, with their final
state); a task it no longer lists has left the queue. Where accounting is on,
``sacct`` then gives that task's final state; where it is off (``sacct``
fails: no slurmdbd), the end of the task's own stderr does (slurmstepd writes
``*** JOB 123 ON node CANCELLED AT ... DUE TO TIME LIMIT ***`` there), and
otherwise the state is ``UNKNOWN``: the task has ended all the same, and the
work folder says which of its units it finished. Nothing here waits for
submitit's result files (which it polls for 15 s per dead task, one task
after another) or calls ``sacct`` in a loop that never ends without it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ood_store._evaluate.executors import JobEnd

#: Slurm's job states in which a job has ended (squeue's %T, sacct's State). Any other state
#: (PENDING, RUNNING, COMPLETING, REQUEUED, SUSPENDED, ...) is a job still in the queue.
FINAL = frozenset(
    {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "PREEMPTED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL",
     "DEADLINE", "REVOKED", "SPECIAL_EXIT", "UNKNOWN"}
)  # fmt: skip
#: The last lines of a task's stderr that are shown when it ended abnormally.
TAIL_LINES = 8
#: How long one squeue or sacct call may take.
COMMAND_TIMEOUT_S = 60

# What slurmstepd writes into a job's stderr when Slurm ends it.
_STEPD = re.compile(r"\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+(?: DUE TO (?P<why>[A-Z ]+?))? \*\*\*")
_DUE_TO = {"TIME LIMIT": "TIMEOUT", "NODE FAILURE": "NODE_FAIL", "PREEMPTION": "PREEMPTED"}
_OOM = re.compile(r"oom[-_ ]kill", re.IGNORECASE)


@dataclass(frozen=True)
class Poll:
    """One look at the array: the state of each task squeue lists, or None when squeue could not answer."""

    states: dict[str, str] | None
    error: str | None = None


def first_word(state: str) -> str:
    """``CANCELLED by 0`` -> ``CANCELLED``; ``CANCELLED+`` -> ``CANCELLED``."""
    return state.split()[0].rstrip("+") if state.strip() else "UNKNOWN"


def run(command: list[str]) -> tuple[int, str, str]:
    """Run a Slurm command: its exit status, standard output and the first line of its standard error."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 1, "", f"{command[0]}: {exc}"
    error = next((line.strip() for line in done.stderr.splitlines() if line.strip()), "")
    return done.returncode, done.stdout, error


def _listing(text: str) -> dict[str, str]:
    """``JOBID|STATE`` lines as {job: state}; pending ranges (``4242_[3-8%2]``) expanded."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        job, sep, state = line.strip().partition("|")
        if not sep:
            continue
        range_ = re.fullmatch(r"(\d+)_\[([\d,\-]+)(?:%\d+)?\]", job)
        if range_ is None:
            out[job] = first_word(state)
            continue
        for part in range_.group(2).split(","):
            low, _, high = part.partition("-")
            for task in range(int(low), int(high or low) + 1):
                out[f"{range_.group(1)}_{task}"] = first_word(state)
    return out


class ArrayQueue:
    """The tasks of one Slurm job array (``ARRAY_0``, ``ARRAY_1``, ...; one task alone is submitted as
    a plain job, ``ARRAY``), as the scheduler sees them."""

    def __init__(self, array: str, tasks: list[str], stderr: Callable[[str], Path]):
        self.array = array
        self.tasks = tasks
        self.stderr = stderr  # a task's stderr file
        self._accounting: str | None = None  # why accounting is off ("" when it is on), once asked
        self._final: dict[str, str] = {}  # tasks known to have ended, and how

    # -- accounting ----------------------------------------------------------
    def accounting_off(self) -> str | None:
        """Why ``sacct`` cannot tell how tasks ended (its error), or None when accounting is on. Asked once."""
        if self._accounting is None:
            if shutil.which("sacct") is None:
                self._accounting = "no sacct here"
            else:
                code, _, error = run(["sacct", "-n", "-P", "-X", "-j", self.array, "-o", "JobID,State"])
                self._accounting = "" if code == 0 else f"sacct: {error or f'exit status {code}'}"
        return self._accounting or None

    def _sacct(self) -> dict[str, str]:
        code, out, _ = run(["sacct", "-n", "-P", "-X", "-j", self.array, "-o", "JobID,State"])
        return _listing(out) if code == 0 else {}

    # -- polling -------------------------------------------------------------
    def poll(self) -> Poll:
        """Every task's state in one squeue call: listed tasks as listed, the others ended (how: :meth:`state`)."""
        code, out, error = run(["squeue", "-h", "-r", "-t", "all", "-j", self.array, "-o", "%i|%T"])
        if code != 0 and "invalid job id" in error.lower():  # every task has left the queue (MinJobAge)
            code, out = 0, ""
        if code != 0:
            return Poll(None, f"squeue: {error or f'exit status {code}'}")
        listed = _listing(out)
        states = {}
        for task in self.tasks:
            state = listed.get(task)
            if state is None:  # left the queue: ended, however it ended
                state = self._left(task)
            states[task] = state
            if state in FINAL:
                self._final[task] = state
        return Poll(states)

    def _left(self, task: str) -> str:
        """The final state of a task squeue no longer lists: sacct's, else its stderr's, else UNKNOWN."""
        if task in self._final:
            return self._final[task]
        if self.accounting_off() is None:
            state = self._sacct().get(task)
            if state in FINAL:
                return state
        return self.state_from_stderr(task) or "UNKNOWN"

    def state_from_stderr(self, task: str) -> str | None:
        """What slurmstepd wrote into the task's stderr when Slurm ended it, as a state; None if nothing."""
        text = _read_tail(self.stderr(task), 64 * 1024)
        found = None
        for line in text.splitlines():
            match = _STEPD.search(line)
            if match is not None:
                found = _DUE_TO.get((match.group("why") or "").strip(), "CANCELLED")
            elif _OOM.search(line):
                found = "OUT_OF_MEMORY"
        return found

    def ended(self, states: dict[str, str]) -> dict[str, JobEnd]:
        """The tasks of ``states`` that ended without completing, with the end of their stderr."""
        out = {}
        for task, state in states.items():
            if state in FINAL and state != "COMPLETED":
                log = self.stderr(task)
                tail = _read_tail(log, 16 * 1024).rstrip("\n").splitlines()[-TAIL_LINES:]
                out[task] = JobEnd(task, state, tail, str(log) if log.is_file() else None)
        return out

    def cancel(self) -> None:
        """Cancel every task of the array (one scancel)."""
        run(["scancel", self.array])


def _read_tail(path: Path, size: int) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - size))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
