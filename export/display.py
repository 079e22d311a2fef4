"""Display concerns shared by tables and figures: display names for testsets and runs, and run order.

``--rename mnli=MNLI`` (or a mapping file) maps the names the store uses to
the ones a paper prints; runs are ordered by their attributes (family, then
size read as a number, then seed), not alphabetically, so that ``160m`` comes
before ``1.4b``.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import yaml

from ood_store.errors import AnalysisError, InputError
from ood_store.store.runs import attribute_columns

if TYPE_CHECKING:
    from ood_store.store import Store

#: Run attributes that order runs unless ``order_by`` says otherwise.
DEFAULT_ORDER = ("family", "size", "seed")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmbt]?)\s*$", re.IGNORECASE)
_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


def size_value(size: str | None) -> float | None:
    """A model size such as ``160m``, ``1.4b`` or ``7B`` as a number of parameters (None if not one).

    >>> size_value("1.4b") > size_value("410m")
    True
    """
    match = _SIZE.match(size) if size else None
    return float(match[1]) * _SCALE[match[2].lower()] if match else None


def names(pairs: Sequence[str] = (), file: str | Path | None = None, *, shipped: bool = True) -> dict[str, str]:
    """A mapping of store names to display names from ``NAME=DISPLAY`` pairs and a mapping file.

    The file is YAML, JSON or TOML holding one mapping of strings; pairs
    given on the command line win over the file's, and both over the names
    shipped with ood-store (``shipped``): those of the ood_nli suite's tasks
    (``ood_nli_snli`` -> ``SNLI``, ``ood_nli_hans__minimal`` -> ``HANS (minimal)``,
    :func:`ood_store.evaluate.suite.variant.display_names`).
    """
    mapping: dict[str, str] = shipped_names() if shipped else {}
    if file is not None:
        mapping.update(_read_names(Path(file)))
    for pair in pairs:
        name, sep, display = pair.partition("=")
        if not sep or not name.strip():
            raise AnalysisError(f"{pair!r}: expected NAME=DISPLAY, such as mnli=MNLI", parameter="rename")
        mapping[name.strip()] = display.strip()
    return mapping


def shipped_names() -> dict[str, str]:
    """The display names that ship with ood-store: the ood_nli suite's tasks under its shipped patterns."""
    from ood_store.evaluate.suite.variant import display_names

    return display_names()


def _read_names(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text (byte {exc.start})") from None
    try:
        if path.suffix.lower() == ".toml":
            data = tomllib.loads(text)
        elif path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            data = yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(path, None, f"not a valid mapping file: {first}") from None
    if not isinstance(data, Mapping):
        raise InputError(path, None, "expected a mapping of names to display names, such as `mnli: MNLI`")
    for key, value in data.items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise InputError(path, str(key), f"the display name must be text, not {type(value).__name__}")
    return {str(key): str(value) for key, value in data.items()}


def rename_values(frame: pl.DataFrame, mapping: Mapping[str, str], columns: Iterable[str]) -> pl.DataFrame:
    """``frame`` with the text values of ``columns`` mapped through ``mapping`` (others kept)."""
    if not mapping:
        return frame
    present = [c for c in columns if c in frame.columns and frame.schema[c] == pl.String]
    return frame.with_columns(pl.col(c).replace(dict(mapping)) for c in present)


def run_order(store: Store | None, runs: Iterable[str], order_by: Sequence[str] | None = None) -> list[str]:
    """``runs`` sorted by run attributes (default: family, size as a number, seed), then by name.

    Runs missing an attribute sort after those that have it. An attribute that
    no run has is an error when asked for by name, and ignored in the default order.
    """
    runs = list(dict.fromkeys(runs))
    explicit = order_by is not None
    order = list(dict.fromkeys(order_by if order_by is not None else DEFAULT_ORDER))
    if store is None or not order:
        return sorted(runs)
    frame = attribute_columns(store, order).filter(pl.col("run").is_in(runs))
    keys = []
    for name in order:
        if frame[name].is_null().all():
            if explicit:
                raise AnalysisError(f"no run has attribute {name!r}", parameter="order_by")
            continue
        keys.append(name)
    values = {row["run"]: row for row in frame.iter_rows(named=True)}

    def key(run: str) -> tuple:
        row = values.get(run, {})
        parts = []
        for name in keys:
            value = row.get(name)
            number = size_value(value) if name == "size" else _number(value)
            parts.append((value is None, number is None, number or 0.0, value or ""))
        return (*parts, run)

    return sorted(runs, key=key)


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
