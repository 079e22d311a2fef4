"""Parsing JSON text with errors that say where, and whether the file looks cut short."""

from __future__ import annotations

import json
from typing import Any

import orjson

from ood_store.errors import InputError


def loads(path: str, field: str | None, data: bytes) -> Any:
    """Parse ``data``; NaN/Infinity literals (which lm-eval can write) are allowed.

    Raises InputError naming ``path`` (and ``field``, e.g. a line of a JSONL file).
    """
    if not data.strip():
        raise InputError(path, field, "empty" if field else "empty file")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass  # orjson refuses NaN/Infinity: the standard library reads them, or explains the error
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, field, f"not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        cut_short = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
        what = "truncated JSON" if cut_short else "invalid JSON"
        where = f"line {exc.lineno}, column {exc.colno}" if field is None else f"column {exc.colno}"
        raise InputError(path, field, f"{what} at {where}: {exc.msg.removesuffix(' starting at')}") from None
    except RecursionError:
        raise InputError(path, field, "invalid JSON: nested too deeply") from None


def optional_text(value: Any) -> str | None:
    """A JSON value as text; null and the empty string as None."""
    return None if value is None or value == "" else str(value)


def describe(value: Any) -> str:
    """A JSON value as an error message names it: `string "abc"`, `null`, `a list`, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {json.dumps(value)}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {json.dumps(shown)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
