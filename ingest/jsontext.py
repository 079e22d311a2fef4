"""Parsing JSON text with errors that say where, whether the file looks cut short, and limits.

The limits (see :mod:`ood_store._ingest.limits`) hold for every document, so
that no file can make ood-store fail other than by naming it:

* nesting deeper than :data:`~ood_store._ingest.limits.MAX_DEPTH` levels;
* a number that does not fit a DOUBLE (``1e999``, ``10**400``): a bad value,
  unlike the tokens ``NaN``, ``Infinity`` and ``-Infinity``, which lm-eval
  writes (Python's ``json`` does) and which are read as the non-finite floats;
* invalid Unicode: bytes that are not UTF-8, or an escaped lone surrogate
  (``"\\ud800"``) in any key or string.

orjson reads almost every file; it refuses all three (and the non-finite
tokens), and the standard library then reads the file again, slowly, to
accept the tokens and to name the field at fault.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from ood_store._errors import InputError
from ood_store._ingest.limits import MAX_DEPTH

_SURROGATE = re.compile("[\ud800-\udfff]")
_MAX_INT_DIGITS = 20  # longer integer literals are read as floats, as orjson does beyond 64 bits


class TooDeep(InputError):
    """JSON nested deeper than MAX_DEPTH levels (deeper than Python's parsers can be trusted to read)."""


class _TooLarge(str):
    """A numeric literal outside DOUBLE's range, kept as its text until its field is known."""


def loads(path: str, field: str | None, data: bytes, *, too_large: bool = True) -> Any:
    """Parse ``data``; NaN/Infinity literals (which lm-eval can write) are allowed.

    Raises InputError naming ``path`` (and ``field``, e.g. a line of a JSONL file);
    ``too_large`` as in :func:`check_tree`.
    """
    if not data.strip():
        raise InputError(path, field, "empty" if field else "empty file")
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return _loads_slowly(path, field, data, too_large)
    # Nesting cannot exceed the number of brackets: only documents with many are walked.
    if data.count(b"{") + data.count(b"[") > MAX_DEPTH and _too_deep(doc):
        check_tree(path, field, doc)  # names where
    return doc


def _too_deep(doc: Any) -> bool:
    """Whether containers nest more than MAX_DEPTH levels (orjson has checked everything else)."""
    level: list[Any] = [doc]  # the containers at one nesting level, 1 for the document
    for _ in range(MAX_DEPTH):
        level = [
            child
            for node in level
            for child in (node.values() if isinstance(node, dict) else node if isinstance(node, list) else ())
            if isinstance(child, dict | list)
        ]
        if not level:
            return False
    return True  # containers at level MAX_DEPTH + 1


def _loads_slowly(path: str, field: str | None, data: bytes, too_large: bool) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, field, f"not UTF-8 text (byte {exc.start})") from None
    try:
        doc = json.loads(text, parse_float=_float, parse_int=_int)
    except json.JSONDecodeError as exc:
        cut_short = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
        what = "truncated JSON" if cut_short else "invalid JSON"
        where = f"line {exc.lineno}, column {exc.colno}" if field is None else f"column {exc.colno}"
        raise InputError(path, field, f"{what} at {where}: {exc.msg.removesuffix(' starting at')}") from None
    except RecursionError:
        raise TooDeep(path, field, f"JSON nested more than {MAX_DEPTH} levels deep") from None
    check_tree(path, field, doc, too_large=too_large)
    return doc


def _float(text: str) -> float | _TooLarge:
    value = float(text)
    return _TooLarge(text) if value in (float("inf"), float("-inf")) else value


def _int(text: str) -> int | float | _TooLarge:
    if len(text.lstrip("-")) <= _MAX_INT_DIGITS:
        value = int(text)
        if -(2**63) <= value < 2**64:
            return value
    return _float(text)  # float() of a string has no digit limit and gives inf when it overflows


def check_tree(path: str, field: str | None, doc: Any, *, too_large: bool = True) -> None:
    """Raise InputError for the first node that breaks a limit, naming where it is.

    With ``too_large=False`` numbers outside DOUBLE's range are left in place
    (as their text, which :func:`describe` calls a number) for the caller to judge.
    """
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(doc, ())]
    while stack:
        node, where = stack.pop()
        if len(where) >= MAX_DEPTH and isinstance(node, dict | list):
            raise TooDeep(path, _join(field, where[:3]), f"JSON nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, dict):
            for key, value in node.items():
                if _SURROGATE.search(key):
                    raise InputError(path, _join(field, where), f"invalid Unicode in a key: {shown(key)}")
                stack.append((value, (*where, key)))
        elif isinstance(node, list):
            stack.extend((value, (*where, index)) for index, value in enumerate(node))
        elif isinstance(node, _TooLarge):
            if too_large:
                raise InputError(path, _join(field, where), f"{literal(node)} does not fit a DOUBLE")
        elif isinstance(node, str) and _SURROGATE.search(node):
            raise InputError(path, _join(field, where), f"invalid Unicode: {shown(node)}")


def _join(field: str | None, where: tuple[str | int, ...]) -> str | None:
    """``results["arc"]["acc"]``: the first key bare, the rest in brackets (a line's field after it)."""
    if not where:
        return field
    head, *rest = where
    text = str(head) if isinstance(head, str) else f"[{head}]"
    text += "".join(f"[{json.dumps(part)}]" for part in rest)
    return text if field is None else f"{field}: {text}"


def shown(text: str) -> str:
    """Text for a message: escaped (a lone surrogate cannot be printed), at most 40 characters."""
    short = text if len(text) <= 40 else text[:37] + "..."
    return json.dumps(short)


def as_object(value: Any) -> dict[str, Any]:
    """A JSON value that should be an object: itself, or an empty one when it is anything else."""
    return value if isinstance(value, dict) else {}


def optional_text(value: Any) -> str | None:
    """A JSON value as text; null and the empty string as None."""
    return None if value is None or value == "" else str(value)


def literal(text: str) -> str:
    """A numeric literal for a message, its digits elided past 40 characters."""
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text):,} characters)"


def describe(value: Any) -> str:
    """A JSON value as an error message names it: `string "abc"`, `null`, `a list`, ..."""
    if value is None:
        return "null"
    if isinstance(value, _TooLarge):
        return f"number {literal(value)}"
    if isinstance(value, bool):
        return f"boolean {json.dumps(value)}"
    if isinstance(value, str):
        return f"string {shown(value)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
