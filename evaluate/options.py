"""Checks of the per-run lm-eval options, the same for keyword arguments and study files.

Each check returns the value as the runner uses it, or raises
:class:`~ood_store.errors.InputError` naming the parameter.
"""

from __future__ import annotations

from typing import Any

from ood_store.errors import InputError


def batch_size(value: Any) -> int | str:
    """A positive number, ``auto`` or ``auto:N`` (lm-eval's forms); digits in a string count as a number."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    text = str(value).strip() if isinstance(value, str) else None
    if text is not None:
        if text.isdigit() and int(text) > 0:
            return int(text)
        if text == "auto" or (text.startswith("auto:") and text[5:].isdigit()):
            return text
    raise InputError(None, None, f"expected a positive number, auto or auto:N, got {value!r}", parameter="batch_size")


def limit(value: Any) -> int | float:
    """Documents per task: a whole number, or a fraction below 1."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise InputError(None, None, f"expected a number above 0, got {value!r}", parameter="limit")
    return int(value) if value >= 1 and value == int(value) else value


def num_fewshot(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(None, None, f"expected a whole number, 0 or more, got {value!r}", parameter="num_fewshot")
    return value


def flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InputError(None, None, f"expected true or false, got {value!r}", parameter=name)
    return value


def text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(None, None, f"expected a non-empty string, got {value!r}", parameter=name)
    return value


_CHECKS = {
    "batch_size": batch_size,
    "limit": limit,
    "num_fewshot": num_fewshot,
    "samples": lambda v: flag("samples", v),
    "device": lambda v: text("device", v),
    "dtype": lambda v: text("dtype", v),
    "base_model": lambda v: text("base_model", v),
}


def check(name: str, value: Any) -> Any:
    """``value`` of option ``name`` checked (None stays None); options without a check here pass as given."""
    if value is None:
        return None
    checker = _CHECKS.get(name)
    return value if checker is None else checker(value)
