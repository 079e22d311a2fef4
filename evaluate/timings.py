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
* ``prepare_s``: the fast scorer's preparation of the run's requests (lm-eval
  building and tokenizing them once per run, or reading them from the cache;
  the other scorers do this inside lm-eval, in ``bookkeeping_s``).
* ``write_s``: lm-eval's results and samples files written, the unit's folder
  renamed into place, the results file's digest.
* ``bookkeeping_s``: the rest of the unit's wall time: building tasks and
  requests, tokenizing, metrics, lm-eval's per-request Python (the fast
  scorer's: its arithmetic on the scores and building the files' lines).
* ``documents``: the documents the unit scored (for documents/s).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: The parts of a unit's time, in the order status shows them.
PARTS = ("load_s", "prepare_s", "forward_s", "bookkeeping_s", "write_s")
_NAMES = {"load_s": "loading", "prepare_s": "preparing", "forward_s": "forward passes", "bookkeeping_s": "bookkeeping",
          "write_s": "writing"}  # fmt: skip
_BOUND = {"load_s": "load", "prepare_s": "overhead", "forward_s": "compute", "bookkeeping_s": "overhead",
          "write_s": "write"}  # fmt: skip
#: Parts shown by where_the_time_went even when no unit spent time in them.
_ALWAYS = ("load_s", "forward_s", "bookkeeping_s", "write_s")


@dataclass
class Timings:
    """One unit's seconds by part (see the module); ``load`` is how its model was made ready."""

    load: str | None = None
    prefetched: bool = False  # the checkpoint's tensors were read in the background while the one before was scored
    note: str | None = None  # why a checkpoint of a run was loaded afresh rather than into the loaded model
    tokens: int = 0  # positions run through the model in its forward passes (rows x padded length)
    load_s: float = 0.0
    prepare_s: float = 0.0
    forward_s: float = 0.0
    bookkeeping_s: float = 0.0
    write_s: float = 0.0
    documents: int = 0  # documents scored

    def close(self, total_s: float) -> Timings:
        """Bookkeeping is what the other parts leave of the unit's ``total_s``."""
        self.bookkeeping_s = max(0.0, total_s - self.load_s - self.prepare_s - self.forward_s - self.write_s)
        return self

    def record(self) -> dict[str, Any]:
        """As the completion marker holds it: seconds to the millisecond."""
        parts = {part: round(getattr(self, part), 3) for part in PARTS}
        extra = {"note": self.note} if self.note else {}
        return {"load": self.load, "prefetched": self.prefetched, **extra, "tokens": self.tokens,
                "documents": self.documents, **parts}  # fmt: skip

    @classmethod
    def of(cls, record: Mapping[str, Any] | None) -> Timings | None:
        """The timings a marker holds, or None (markers written before units were timed)."""
        if not isinstance(record, Mapping):
            return None
        values = {part: record.get(part, 0.0 if part == "prepare_s" else None) for part in PARTS}  # older markers
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values.values()):
            return None
        load = record.get("load")
        seconds = {k: float(v) for k, v in values.items()}
        note, tokens, documents = record.get("note"), record.get("tokens"), record.get("documents")
        return cls(
            load if isinstance(load, str) else None, record.get("prefetched") is True,
            note if isinstance(note, str) else None, tokens if isinstance(tokens, int) else 0, **seconds,
            documents=documents if isinstance(documents, int) and not isinstance(documents, bool) else 0,
        )  # fmt: skip


def where_the_time_went(timings: Iterable[Timings | None]) -> str | None:
    """One line for people: each part's share of the timed units' time, the largest first, what bounds them, and
    the documents scored per second (end to end, and outside the forward passes) where the units counted them.

    >>> first = Timings("from_pretrained", load_s=30, forward_s=50, bookkeeping_s=15, write_s=5)
    >>> where_the_time_went([first, Timings("in_place", True, load_s=2, forward_s=50, bookkeeping_s=15, write_s=3)])
    'Time of 2 units (170 s): forward passes 59%, loading 19%, bookkeeping 18%, writing 5%: compute-bound.'
    >>> fast = Timings("in_place", load_s=1, prepare_s=2, forward_s=12, bookkeeping_s=1, write_s=2, documents=63_489)
    >>> parts, bound = where_the_time_went([fast]).rsplit(": ", 1)
    >>> parts
    'Time of 1 unit (18 s): forward passes 67%, preparing 11%, writing 11%, loading 6%, bookkeeping 6%'
    >>> bound
    'compute-bound; 3,527 documents/s, 79 µs a document outside the forward passes.'
    >>> where_the_time_went([None]) is None
    True
    """
    timed = [t for t in timings if t is not None]
    totals = {part: sum(getattr(t, part) for t in timed) for part in PARTS}
    whole = sum(totals.values())
    if not timed or whole <= 0:
        return None
    shares = {part: 100 * seconds / whole for part, seconds in totals.items()}
    order = sorted((p for p in PARTS if p in _ALWAYS or totals[p] > 0), key=lambda p: -totals[p])
    parts = ", ".join(f"{_NAMES[p]} {shares[p]:.0f}%" for p in order)
    units = f"{len(timed)} unit{'' if len(timed) == 1 else 's'}"
    documents = sum(t.documents for t in timed)
    rate = ""
    if documents and all(t.documents for t in timed):
        outside = (whole - totals["forward_s"] - totals["load_s"]) / documents * 1e6
        rate = f"; {documents / whole:,.0f} documents/s, {outside:,.0f} µs a document outside the forward passes"
    return f"Time of {units} ({whole:,.0f} s): {parts}: {_BOUND[order[0]]}-bound{rate}."
