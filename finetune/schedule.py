"""Which training steps are saved: ``log`` (dense early), ``even`` or ``manual``; step 0 and the last step always.

Step 0 is the base model (or the untrained adapter): its OOD scores are the
baseline every curve starts from. The steps depend on the run's number of
optimizer steps, which only the Trainer knows for certain (it depends on the
devices a worker sees), so a schedule is resolved when training starts
(:meth:`Schedule.steps`).

>>> Schedule("log", checkpoints=6).steps(100)
[0, 1, 3, 10, 32, 100]
>>> Schedule("even", checkpoints=5).steps(48)
[0, 12, 24, 36, 48]
>>> Schedule("manual", manual=(5, 20)).steps(30)
[0, 5, 20, 30]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ood_store._errors import InputError

KINDS = ("log", "even", "manual")
DEFAULT_CHECKPOINTS = 24


@dataclass(frozen=True)
class Schedule:
    """A checkpoint schedule: ``kind`` and either ``checkpoints`` (log, even: how many, 0 and the last included) or
    the ``manual`` steps (0 and the last step are added)."""

    kind: str = "log"
    checkpoints: int | None = None  # log, even: how many (default DEFAULT_CHECKPOINTS)
    manual: tuple[int, ...] = ()  # manual: the steps given

    def steps(self, last: int) -> list[int]:
        """The steps saved in a run of ``last`` optimizer steps, 0 and ``last`` included, in order.

        ``log``: ``checkpoints`` steps spaced evenly in log(step) from 1 to
        ``last`` (rounded, each at least one after the one before), and 0.
        ``even``: ``checkpoints`` steps spaced evenly from 0 to ``last``
        (rounded). ``manual``: the steps given, 0 and ``last``; a step after
        ``last`` is an error.
        """
        if last < 0:
            raise ValueError(f"a run of {last} steps")
        if self.kind == "manual":
            late = [s for s in self.manual if s > last]
            if late:
                raise InputError(None, "schedule.steps", f"step {late[0]} is after the run's last step ({last})")
            return sorted({0, last, *self.manual})
        count = self.checkpoints or DEFAULT_CHECKPOINTS
        if self.kind == "even":
            return sorted({round(i * last / (count - 1)) for i in range(count)})
        return [0, *_log_steps(last, count - 1)] if last > 0 else [0]

    def record(self) -> dict[str, Any]:
        """As a study file writes it: ``{"kind": "log", "checkpoints": 24}``, ``{"kind": "manual", "steps": [...]}``."""
        if self.kind == "manual":
            return {"kind": "manual", "steps": list(self.manual)}
        return {"kind": self.kind, "checkpoints": self.checkpoints}


def _log_steps(last: int, count: int) -> list[int]:
    """``count`` distinct steps in [1, last], log-spaced, ``last`` included (all of 1..last when there are fewer)."""
    if count >= last:
        return list(range(1, last + 1))
    if count == 1:
        return [last]
    wanted = [round(math.exp(math.log(last) * i / (count - 1))) for i in range(count)]
    steps: list[int] = []
    for value in wanted:  # at least one step after the one before ...
        steps.append(max(value, steps[-1] + 1) if steps else max(value, 1))
    steps[-1] = last
    for i in range(count - 2, -1, -1):  # ... and at least one before the one after
        steps[i] = min(steps[i], steps[i + 1] - 1)
    return steps


def parse(value: Any, field: str = "schedule") -> Schedule:
    """A schedule from a study file's table (``{kind = "log", checkpoints = 24}``) or a command line's text
    (``log:24``, ``even:10``, ``manual:0,50,100``); InputError naming ``field`` (or its key) when wrong."""
    if isinstance(value, Schedule):
        return value
    if isinstance(value, str):
        kind, _, rest = value.partition(":")
        table: dict[str, Any] = {"kind": kind.strip()}
        if rest.strip():
            try:
                numbers = [int(part) for part in rest.split(",") if part.strip()]
            except ValueError:
                raise InputError(
                    None, field, f"expected log:N, even:N or manual:STEP,STEP,..., got {value!r}"
                ) from None
            if table["kind"] == "manual":
                table["steps"] = numbers
            elif len(numbers) == 1:
                table["checkpoints"] = numbers[0]
            else:
                raise InputError(None, field, f"expected {table['kind']}:N (how many checkpoints), got {value!r}")
        value = table
    if not isinstance(value, Mapping):
        raise InputError(None, field, 'expected a table such as { kind = "log", checkpoints = 24 }')
    kind = value.get("kind", "log")
    if kind not in KINDS:
        raise InputError(None, f"{field}.kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
    allowed = {"kind", "steps"} if kind == "manual" else {"kind", "checkpoints"}
    unknown = sorted(set(value) - allowed)
    if unknown:
        what = "steps = [...]" if kind == "manual" else "checkpoints = N"
        raise InputError(None, f"{field}.{unknown[0]}", f"not a key of a {kind} schedule (it takes {what})")
    if kind == "manual":
        steps = value.get("steps")
        if not isinstance(steps, list) or not all(_whole(s, 0) for s in steps):
            raise InputError(None, f"{field}.steps", "expected a list of steps, whole numbers 0 or more")
        return Schedule("manual", manual=tuple(sorted(set(steps))))
    checkpoints = value.get("checkpoints", DEFAULT_CHECKPOINTS)
    if not _whole(checkpoints, 2):
        what = "a whole number, 2 or more (step 0 and the last)"
        raise InputError(None, f"{field}.checkpoints", f"expected {what}, got {checkpoints!r}")
    return Schedule(kind, checkpoints=checkpoints)


def _whole(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least
