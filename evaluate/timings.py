"""Where a unit's time goes: loading the model, forward passes, lm-eval's (or the scorer's) bookkeeping, files.

Every completion marker holds a unit's ``timings`` (:meth:`Timings.record`);
``ood-store status`` shows them per unit and adds them up
(:func:`where_the_time_went`), so that a study shows whether it is bound by
loading checkpoints, by the model's arithmetic, or by the Python around it.

* ``load_s``: the checkpoint's weights made ready (``from_pretrained``, a copy
  into the loaded model, an adapter swap; waiting for a prefetch included);
  ``load`` says which, ``prefetched`` whether its tensors had been read in
  the background while the unit before was scored.
* ``forward_s``: inside the model's forward passes (lm-eval's
  ``HFLM._model_call``; the verbalizer scorer's passes with their last
  position's softmax), synchronized on a GPU; ``tokens``: the positions they
  ran (rows × padded length), for throughput and FLOP utilization.
* ``write_s``: lm-eval's results and samples files written, the unit's folder
  renamed into place, the results file's digest.
* ``bookkeeping_s``: the rest of the unit's wall time: building tasks and
  requests, tokenizing, metrics, lm-eval's per-request Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: The parts of a unit's time, in the order status shows them.
PARTS = ("load_s", "forward_s", "bookkeeping_s", "write_s")
_NAMES = {"load_s": "loading", "forward_s": "forward passes", "bookkeeping_s": "bookkeeping", "write_s": "writing"}
_BOUND = {"load_s": "load", "forward_s": "compute", "bookkeeping_s": "overhead", "write_s": "write"}


@dataclass
class Timings:
    """One unit's seconds by part (see the module); ``load`` is how its model was made ready."""

    load: str | None = None
    prefetched: bool = False  # the checkpoint's tensors were read in the background while the one before was scored
    note: str | None = None  # why a checkpoint of a run was loaded afresh rather than into the loaded model
    tokens: int = 0  # positions run through the model in its forward passes (rows x padded length)
    load_s: float = 0.0
    forward_s: float = 0.0
    bookkeeping_s: float = 0.0
    write_s: float = 0.0

    def close(self, total_s: float) -> Timings:
        """Bookkeeping is what the other parts leave of the unit's ``total_s``."""
        self.bookkeeping_s = max(0.0, total_s - self.load_s - self.forward_s - self.write_s)
        return self

    def record(self) -> dict[str, Any]:
        """As the completion marker holds it: seconds to the millisecond."""
        parts = {part: round(getattr(self, part), 3) for part in PARTS}
        extra = {"note": self.note} if self.note else {}
        return {"load": self.load, "prefetched": self.prefetched, **extra, "tokens": self.tokens, **parts}

    @classmethod
    def of(cls, record: Mapping[str, Any] | None) -> Timings | None:
        """The timings a marker holds, or None (markers written before units were timed)."""
        if not isinstance(record, Mapping):
            return None
        values = {part: record.get(part) for part in PARTS}
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values.values()):
            return None
        load = record.get("load")
        seconds = {k: float(v) for k, v in values.items()}  # type: ignore[arg-type]
        note, tokens = record.get("note"), record.get("tokens")
        return cls(
            load if isinstance(load, str) else None, record.get("prefetched") is True,
            note if isinstance(note, str) else None, tokens if isinstance(tokens, int) else 0, **seconds,
        )  # fmt: skip


def where_the_time_went(timings: Iterable[Timings | None]) -> str | None:
    """One line for people: each part's share of the timed units' time, the largest first, and what bounds them.

    >>> first = Timings("from_pretrained", load_s=30, forward_s=50, bookkeeping_s=15, write_s=5)
    >>> where_the_time_went([first, Timings("in_place", True, load_s=2, forward_s=50, bookkeeping_s=15, write_s=3)])
    'Time of 2 units (170 s): forward passes 59%, loading 19%, bookkeeping 18%, writing 5%: compute-bound.'
    >>> where_the_time_went([None]) is None
    True
    """
    timed = [t for t in timings if t is not None]
    totals = {part: sum(getattr(t, part) for t in timed) for part in PARTS}
    whole = sum(totals.values())
    if not timed or whole <= 0:
        return None
    shares = {part: 100 * seconds / whole for part, seconds in totals.items()}
    order = sorted(PARTS, key=lambda p: -totals[p])
    parts = ", ".join(f"{_NAMES[p]} {shares[p]:.0f}%" for p in order)
    units = f"{len(timed)} unit{'' if len(timed) == 1 else 's'}"
    return f"Time of {units} ({whole:,.0f} s): {parts}: {_BOUND[order[0]]}-bound."
