"""Checked values for the importers of other formats: each problem is an InputError naming the file and field."""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

from ood_store._errors import InputError
from ood_store._ingest.jsontext import describe, shown


def score_value(path: str, field: str, raw: Any) -> float | None:
    """A score, by the rule of lm-eval files: a number; NaN is stored as NULL (None), ±Infinity as it is.

    An integer too large for a DOUBLE is a bad value, not infinity.
    """
    value = double(path, field, raw)
    return None if math.isnan(value) else value


def double(path: str, field: str, raw: Any) -> float:
    """A JSON number as a DOUBLE, NaN and ±Infinity as they are; anything else (or an integer too large) a bad value."""
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise InputError(path, field, f"expected a number, got {describe(raw)}")
    try:
        return float(raw)
    except OverflowError:
        raise InputError(path, field, f"{str(raw)[:20]}... does not fit a DOUBLE") from None


def optional_score_value(path: str, field: str, raw: Any) -> float | None:
    """A standard error: as :func:`score_value`, or nothing (null)."""
    return None if raw is None else score_value(path, field, raw)


def count(path: str, field: str, raw: Any, *, limit: int = 2**63) -> int | None:
    """A count (shots, documents, a step): an integer from 0 below ``limit``, given as a number or as digits."""
    if raw is None:
        return None
    value = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    elif isinstance(raw, float) and raw.is_integer():
        value = int(raw)
    elif isinstance(raw, str) and raw.strip().isascii() and raw.strip().isdigit():
        value = int(raw) if len(raw.strip()) <= 19 else limit  # int() refuses over 4,300 digits
    if value is None:
        raise InputError(path, field, f"expected an integer, got {describe(raw)}")
    if not 0 <= value < limit:
        raise InputError(path, field, f"{shown(raw) if isinstance(raw, str) else json.dumps(raw)} is out of range")
    return value


def timestamp(path: str, field: str, raw: Any) -> dt.datetime | None:
    """A time in UTC (naive): Unix seconds (a number or its text) or ISO 8601 text."""
    if raw is None or raw == "":
        return None
    try:
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            return dt.datetime.fromtimestamp(raw, dt.UTC).replace(tzinfo=None)
        if isinstance(raw, str):
            try:
                return dt.datetime.fromtimestamp(float(raw), dt.UTC).replace(tzinfo=None)
            except ValueError:
                parsed = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
                return parsed.astimezone(dt.UTC).replace(tzinfo=None) if parsed.tzinfo else parsed
    except (OverflowError, OSError, ValueError):
        pass
    raise InputError(path, field, f"expected Unix seconds or an ISO 8601 time, got {describe(raw)}")
