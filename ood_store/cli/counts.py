"""Counts in messages: ``n(3, "checkpoint")`` is ``3 checkpoints``, ``n(1, "unit")`` is ``1 unit``."""

from __future__ import annotations


def n(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'s' if count != 1 else ''}"
