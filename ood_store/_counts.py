"""Counts in messages: ``n(3, "checkpoint")`` is ``3 checkpoints``, ``n(1, "unit")`` is ``1 unit``,
``n(2, "query", "queries")`` is ``2 queries``. One place, so that no message says "1 scores"."""

from __future__ import annotations


def n(count: int, noun: str, nouns: str | None = None) -> str:
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"
