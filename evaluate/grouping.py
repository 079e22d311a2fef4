"""Which unit a worker takes next: the units of one run stay on one worker, so that it loads the run's model once.

Every executor's workers take units from the same attempt with claim files
(:meth:`~ood_store._evaluate.workdir.WorkDir.claim`); a unit is still one
checkpoint with its own completion marker, and resuming works as before. What
this module adds is the order in which a worker tries them
(:meth:`UnitQueue.take`):

1. the next unclaimed unit of the run it is evaluating (its model is loaded);
2. else the first unclaimed unit of a run that no worker is evaluating;
3. else (more workers than runs with work left) a unit of the run with the
   most unclaimed units: the worker joins it, and loads that run's model once.

A worker leaves a run only when the run has no unclaimed unit left, so it
never comes back to it: each worker loads each run's model at most once.
:meth:`UnitQueue.upcoming` names the unit it would take next, so that its
checkpoint is read while the current one is scored.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ood_store._evaluate.workdir import Unit, WorkDir


class UnitQueue:
    """The units of ``attempt`` (ids in the attempt's order), taken in the order above by one worker."""

    def __init__(self, work: WorkDir, attempt: str, unit_ids: list[str]):
        self.work, self.attempt, self.order = work, attempt, list(unit_ids)
        self.run: str | None = None  # the run this worker evaluates
        self._units: dict[str, Unit] = {}

    def unit(self, unit_id: str) -> Unit:
        if unit_id not in self._units:
            self._units[unit_id] = self.work.unit(unit_id)
        return self._units[unit_id]

    def candidates(self) -> list[str]:
        """The unclaimed, unfinished units, in the order this worker would try them."""
        claimed, done = self.work.claimed(self.attempt), self.work.marked("done")
        finished = done | self.work.marked("failed")
        free = [u for u in self.order if u not in claimed and u not in done]
        busy = {self.unit(u).run for u in self.order if u in claimed and u not in finished}
        own = [u for u in free if self.unit(u).run == self.run] if self.run is not None else []
        idle = [u for u in free if self.unit(u).run not in busy and u not in own]
        left = Counter(self.unit(u).run for u in free)
        rest = sorted((u for u in free if u not in own and u not in idle), key=lambda u: -left[self.unit(u).run])
        return own + idle + rest

    def take(self) -> tuple[Unit, Path] | None:
        """Claim the next unit (see the module); None when every unit is taken or finished."""
        while True:
            candidates = self.candidates()
            if not candidates:
                return None
            for unit_id in candidates:
                claim = self.work.claim(self.attempt, unit_id)
                if claim is not None:
                    unit = self.unit(unit_id)
                    self.run = unit.run
                    return unit, claim

    def upcoming(self) -> Unit | None:
        """The unit of this worker's run that it would take next (not claimed: another worker may take it)."""
        if self.run is None:
            return None
        for unit_id in self.candidates():
            unit = self.unit(unit_id)
            return unit if unit.run == self.run else None
        return None
