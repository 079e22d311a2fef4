"""Display concerns shared by tables and figures: display names for testsets and runs, and run order.

``names(["mnli=MNLI"])`` (or a mapping file) maps the names the store uses to
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

from ood_store._analysis.results import PartialCorrelations
from ood_store._errors import AnalysisError, InputError
from ood_store._store.runs import attribute_columns

if TYPE_CHECKING:
    from ood_store._store import Database

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


def natural_key(value: object) -> tuple:
    """A sort key that puts values in their natural order: sizes by parameter count, numbers by value, then text.

    >>> sorted(["1.4b", "160m", None, "410m"], key=natural_key)
    ['160m', '410m', '1.4b', None]
    """
    text = "" if value is None else str(value)
    number = size_value(text)
    return (value is None, number is None, number or 0.0, text)


def is_number(text: str) -> bool:
    """Whether ``text`` is a bare number (a seed, a shot count), which reads better after its attribute's name."""
    return re.fullmatch(r"-?\d+(?:\.\d+)?", text.strip()) is not None


def names(pairs: Sequence[str] = (), file: str | Path | None = None, *, shipped: bool = True) -> dict[str, str]:
    """A mapping of store names to display names from ``NAME=DISPLAY`` pairs and a mapping file.

    The file is YAML, JSON or TOML holding one mapping of strings; pairs
    given on the command line win over the file's, and both over the names
    shipped with ood-store (``shipped``): those of the ood_nli suite's tasks
    (``ood_nli_snli`` -> ``SNLI``, ``ood_nli_hans__minimal`` -> ``HANS (minimal)``,
    :func:`ood_store._evaluate.suite.variant.display_names`).
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
    from ood_store._evaluate.suite.variant import display_names

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


def task_order(table: pl.DataFrame, tasks: Sequence[str] | None = None) -> list[str]:
    """The tasks of ``table`` in order of first appearance (task_x before task_y), or ``tasks`` checked against it.

    A partial-correlation table lists pairs in the order of its OOD tasks, so
    this is the order the analysis was given them in.
    """
    seen = list(dict.fromkeys(t for x, y in table.select("task_x", "task_y").iter_rows() for t in (x, y)))
    if tasks is None:
        return seen
    wanted = list(dict.fromkeys(tasks))
    absent = [t for t in wanted if t not in seen]
    if absent:
        raise AnalysisError(
            f"no task {', '.join(map(repr, absent))} in the table; it has: {', '.join(seen)}", parameter="tasks"
        )
    return wanted


def analysis_order(source: PartialCorrelations | pl.DataFrame, tasks: Sequence[str] | None = None) -> list[str]:
    """The tasks in the order the analysis was given them (its ``ood`` option), else as :func:`task_order`.

    A saved analysis comes back with its rows sorted by name; its options keep the order it was asked for.
    """
    frame = source.table if isinstance(source, PartialCorrelations) else source
    seen = task_order(frame)
    if tasks is None and isinstance(source, PartialCorrelations) and source.options.ood:
        given = [t for t in source.options.ood if t in seen]
        return given + [t for t in seen if t not in given]
    return task_order(frame, tasks)


def pair_order(frame: pl.DataFrame, order: Sequence[str]) -> pl.DataFrame:
    """``frame`` (with ``task_x``, ``task_y``) sorted by its pairs' places in the task ``order``, stably."""
    index = {task: i for i, task in enumerate(order)}
    ranks = [
        (
            min(index.get(x, len(index)), index.get(y, len(index))),
            max(index.get(x, len(index)), index.get(y, len(index))),
        )
        for x, y in frame.select("task_x", "task_y").iter_rows()
    ]
    return (
        frame.with_columns(_pair=pl.Series([a * (len(index) + 1) + b for a, b in ranks]))
        .sort("_pair", maintain_order=True)
        .drop("_pair")
    )


def run_order(store: Database | None, runs: Iterable[str], order_by: Sequence[str] | None = None) -> list[str]:
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


# -- short names ------------------------------------------------------------------------------------------
_TOKEN_END = re.compile(r"(?<=[-_/:\s])")  # names split after each separator, which stays with its token
_SEPARATORS = "-_/: "


def affixes(names: Sequence[str]) -> tuple[str, str]:
    """The leading and trailing parts that all of ``names`` share, cut where a separator (``- _ / :`` or space) ends.

    Cutting only at separators keeps ``1.4b`` whole beside ``1.3b``; what is
    left of every name is never empty. One name has no common parts.

    >>> affixes(["ood-lab/ft-pythia-160m-deduped", "ood-lab/ft-opt-1.3b-deduped"])
    ('ood-lab/ft-', '-deduped')
    >>> affixes(["pythia-1.4b", "pythia-1.3b"])
    ('pythia-', '')
    """
    unique = list(dict.fromkeys(names))
    if len(unique) < 2:
        return "", ""
    tokens = [_TOKEN_END.split(name) for name in unique]
    shortest = min(len(t) for t in tokens)
    lead = 0
    while lead < shortest - 1 and len({t[lead] for t in tokens}) == 1:
        lead += 1
    trail = 0
    while lead + trail < shortest - 1 and len({t[-1 - trail] for t in tokens}) == 1:
        trail += 1
    prefix = "".join(tokens[0][:lead])
    suffix = "".join(tokens[0][len(tokens[0]) - trail :]) if trail else ""
    if suffix:  # the separator that ends the name before the suffix belongs to the suffix
        rest = unique[0][len(prefix) : len(unique[0]) - len(suffix)]
        moved = len(rest) - len(rest.rstrip(_SEPARATORS))
        suffix = rest[len(rest) - moved :] + suffix if moved else suffix
    return prefix, suffix


def shorten(names: Sequence[str]) -> tuple[list[str], str, str]:
    """``names`` without the parts they all share (:func:`affixes`), and those parts.

    >>> shorten(["Pythia-160M", "Pythia-410M", "Pythia-1.4B"])
    (['160M', '410M', '1.4B'], 'Pythia-', '')
    """
    prefix, suffix = affixes(names)
    short = [name[len(prefix) : len(name) - len(suffix)].strip(_SEPARATORS) or name for name in names]
    return short, prefix, suffix


def abbreviated(prefix: str, suffix: str) -> str:
    """The shared parts of shortened names written around an ellipsis: ``Pythia-…`` or ``ood-lab/…-deduped``."""
    return f"{prefix}\u2026{suffix}" if prefix or suffix else ""


_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def codes(names: Sequence[str]) -> dict[str, str]:
    """A distinct two-character code for each name, for tables too narrow for the names: ``ARC-e`` → ``AE``.

    The initials of the first two words (``WinoGrande`` → ``WG``), a letter and
    the number that ends a name (``ANLI-R2`` → ``A2``), or the first two
    letters (``PIQA`` → ``PI``); the first that no earlier name took.

    >>> codes(["SNLI", "SciTail", "ANLI-R1", "ANLI-R2", "WinoGrande", "wnli"])
    {'SNLI': 'SN', 'SciTail': 'ST', 'ANLI-R1': 'A1', 'ANLI-R2': 'A2', 'WinoGrande': 'WG', 'wnli': 'WN'}
    """
    taken: dict[str, str] = {}
    out = {}
    for name in dict.fromkeys(names):
        choice = next((c for c in _code_candidates(name) if c not in taken), None)
        if choice is None:  # every candidate taken: a letter and a running number
            letter = (re.sub(r"[^A-Za-z0-9]", "", name) or "X")[0].upper()
            choice = next(f"{letter}{i}" for i in range(10**6) if f"{letter}{i}" not in taken)
        taken[choice] = name
        out[name] = choice
    return out


def _code_candidates(name: str) -> list[str]:
    words = _WORDS.findall(name)
    letters = re.sub(r"[^A-Za-z0-9]", "", name).upper()
    candidates = []
    if len(words) >= 2 and words[-1].isdigit():
        candidates.append(words[0][0].upper() + words[-1][-1])
    if len(words) >= 2:
        candidates.append((words[0][0] + words[1][0]).upper())
    candidates.append(letters[:2])
    candidates.extend(letters[0] + later for later in letters[2:])
    return [c for c in dict.fromkeys(candidates) if len(c) == 2]
