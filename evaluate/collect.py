"""The collector: the one writer. Ingests the units that workers finished, one commit per unit.

For each unit with a completion marker and not yet stored, it checks the
results file against the marker's SHA-256, opens the store, ingests the file
with :meth:`Store.ingest <ood_store._api.Store.ingest>` (the same
idempotent path as ``ood-store ingest``), closes the store, and then writes
the unit's ``stored`` marker. The store is held only for that commit, so that
``ood-store runs``, ``query`` and ``analyze`` in other processes get in
between units (a read-only open waits while a commit is under way; DuckDB
never shows it half done). A collector killed at any point loses nothing: a
unit whose commit did not finish is ingested again by the next ``collect``,
and one whose commit finished is recognized by its content hash.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ood_store._evaluate.workdir import Failure, Stored, Unit, WorkDir
from ood_store._ingest import ingest
from ood_store._ingest.identity import Overrides
from ood_store._store.connection import DEFAULT_LOCK_TIMEOUT, MAX_RETRY_DELAY_S
from ood_store._store.database import Database, connection
from ood_store._store.database import target as store_target

#: Pause after each commit when more units are waiting, so that a process waiting for the store
#: (it tries again every MAX_RETRY_DELAY_S) gets in between commits.
YIELD_S = 2.5 * MAX_RETRY_DELAY_S


@dataclass(frozen=True)
class Collected:
    """What the collector did with one finished unit."""

    unit: str
    status: Literal["ingested", "present", "rejected"]
    evaluation_id: int | None = None
    scores: int = 0
    samples: int = 0
    reason: str | None = None


def collect(
    work_dir: str | WorkDir,
    *,
    store: str | Path | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    units: Iterable[Unit] | None = None,
    on_collected: Callable[[Unit, Collected], None] | None = None,
) -> list[Collected]:
    """Ingest every finished, not yet stored unit of ``work_dir`` (or of ``units``); idempotent.

    Parameters
    ----------
    work_dir
        The work folder of an evaluation.
    store
        The store to ingest into; by default the one each unit was planned for.
    lock_timeout
        Seconds to wait for the store when another process holds it.
    units
        Only these units (default: all of the folder's).
    on_collected
        Called after each unit's commit (progress bars).

    Returns
    -------
    list of Collected
        One entry per unit ingested now (``ingested``, or ``present`` when its
        file was in the store already) or refused (``rejected``: the unit is
        marked failed with the reason).
    """
    work = work_dir if isinstance(work_dir, WorkDir) else WorkDir(work_dir).require()
    candidates = work.units() if units is None else list(units)
    done, stored = work.marked("done"), work.marked("stored")
    ready = [u for u in candidates if u.id in done and u.id not in stored]
    out: list[Collected] = []
    for index, unit in enumerate(ready):
        if index:
            time.sleep(YIELD_S)
        marker = work.done(unit.id)
        if marker is None:  # listed a moment ago: its folder was changed meanwhile
            continue
        results = Path(marker.results)
        problem = _check(results, marker.sha256)
        if problem is None:
            with Database(store_target(store or unit.store), lock_timeout=lock_timeout) as target:
                report = ingest(
                    connection(target),
                    [str(results)],
                    overrides=Overrides(run=unit.run, step=unit.step),
                    attributes=unit.attributes,
                    samples=unit.samples,
                )
            outcome = report.files[0] if len(report.files) == 1 else None
            if outcome is not None and (outcome.status == "ingested" or outcome.status == "present"):
                collected = Collected(
                    unit.id,
                    outcome.status,
                    outcome.evaluation_id,
                    outcome.scores,
                    outcome.samples,
                )
                work.mark_stored(
                    Stored(
                        unit.id, str(store or unit.store), outcome.status, outcome.evaluation_id, outcome.scores,
                        outcome.samples,
                    )
                )  # fmt: skip
            else:
                problem = "; ".join(f.reason or f.path for f in report.files if f.status != "ingested") or "nothing"
        if problem is not None:
            collected = Collected(unit.id, "rejected", reason=f"lm-eval's output could not be stored: {problem}")
            work.mark_failed(Failure(unit.id, collected.reason or "not stored", stage="collect"))
        out.append(collected)
        if on_collected is not None:
            on_collected(unit, collected)
    return out


def _check(results: Path, sha256: str | None) -> str | None:
    """Why the results file cannot be ingested as the marker describes it, or None."""
    try:
        data = results.read_bytes()
    except OSError as exc:
        return f"{results}: cannot read: {exc.strerror}"
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        return f"{results}: changed since the worker wrote it (SHA-256 differs from its completion marker)"
    return None
