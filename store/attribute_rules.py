"""Run attributes for many runs at once: rules of a run name or glob and the attributes it gets.

Rules come from ``KEY=VALUE`` pairs for one run or glob (``Store.set_run_attributes(run or match,
attributes)``) or from an attribute file (``attribute_file``):

* CSV: a header row whose first column is ``run`` (a run name or a glob), the
  other columns attributes; an empty cell sets nothing.
* TOML or YAML (``.toml``, ``.yaml``/``.yml``): a table per run or glob,
  ``["EleutherAI/pythia-v1.1-160m"]`` / ``size = "160m"``, optionally under a
  top-level ``runs`` table.

A run gets the attributes of every rule that names it or whose glob matches
it, later rules winning. All of it is applied in one transaction.
"""

from __future__ import annotations

import csv
import fnmatch
import glob
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

import duckdb

from ood_store._errors import InputError
from ood_store._store.lake import retried
from ood_store._store.runs import load_run_file, parse_attributes, scalar_attributes, set_attributes
from ood_store._store.transaction import transaction


@dataclass(frozen=True)
class AttributeRule:
    """``attributes`` for the run named ``pattern``, or for every run its glob matches."""

    pattern: str
    attributes: Mapping[str, Any]
    where: str = ""  # where the rule was written, for messages: 'runs.csv: line 3'
    exact: bool = False  # the pattern is a run name, whatever characters it holds

    def matches(self, run: str) -> bool:
        if run == self.pattern:
            return True
        return not self.exact and glob.has_magic(self.pattern) and fnmatch.fnmatchcase(run, self.pattern)


def rule(pattern: str, pairs: Sequence[str] | Mapping[str, Any]) -> AttributeRule:
    """A rule from ``KEY=VALUE`` pairs (or a mapping), checked."""
    if not pattern:
        raise InputError(None, None, "no run or glob given")
    attributes = parse_attributes(pairs if isinstance(pairs, Mapping) else list(pairs))
    if not attributes:
        raise InputError(None, None, "no KEY=VALUE given", parameter="attributes")
    return AttributeRule(pattern, attributes)


def read_attribute_file(path: str | PathLike[str]) -> list[AttributeRule]:
    """The rules of a CSV, TOML or YAML attribute file (see the module's doc), in file order."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return _csv_rules(path)
    data = load_run_file(path, "attribute file")
    nested = data.get("runs")
    runs: dict[str, Any] = nested if isinstance(nested, dict) else data
    rules = []
    for pattern, attributes in runs.items():
        where = f"[{pattern!r}]"
        if not isinstance(attributes, dict):
            raise InputError(str(path), where, "expected a table of attributes for this run or glob")
        try:
            rules.append(AttributeRule(str(pattern), scalar_attributes(attributes), f"{path}: {where}"))
        except InputError as exc:
            raise InputError(str(path), f"{where}: {exc.field}" if exc.field else where, exc.message) from None
    if not rules:
        raise InputError(str(path), None, "holds no run")
    return rules


def _csv_rules(path: Path) -> list[AttributeRule]:
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            lines = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise InputError(str(path), None, f"cannot read the attribute file: {reason}") from None
    if not lines or not lines[0] or lines[0][0].strip() != "run":
        raise InputError(str(path), "line 1", "expected a header row whose first column is `run`")
    header = [name.strip() for name in lines[0]]
    rules = []
    for number, cells in enumerate(lines[1:], start=2):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) > len(header):
            raise InputError(str(path), f"line {number}", f"{len(cells)} cells for {len(header)} columns")
        pattern, *values = (cell.strip() for cell in cells)
        if not pattern:
            raise InputError(str(path), f"line {number}", "no run or glob in the first column")
        given = {key: value for key, value in zip(header[1:], values, strict=False) if value}
        try:
            rules.append(AttributeRule(pattern, parse_attributes(given), f"{path}: line {number}"))
        except InputError as exc:
            raise InputError(str(path), f"line {number}: {exc.field}", exc.message) from None
    if not rules:
        raise InputError(str(path), None, "holds no run")
    return rules


def for_run(run: str, rules: Sequence[AttributeRule]) -> dict[str, Any]:
    """What ``rules`` give one run (``evaluate``'s ``attribute_file``); a file with no rule for it is an error."""
    if rules and not any(item.matches(run) for item in rules):
        where = rules[0].where.split(": ")[0] if rules[0].where else None
        raise InputError(where, None, f"no run or glob here matches run {run!r}")
    return attributes_for(run, rules)


def attributes_for(run: str, rules: Iterable[AttributeRule]) -> dict[str, Any]:
    """What ``rules`` give ``run``: the attributes of every rule that matches it, later ones winning."""
    out: dict[str, Any] = {}
    for item in rules:
        if item.matches(run):
            out.update(item.attributes)
    return out


def unmatched(rules: Sequence[AttributeRule], runs: Iterable[str]) -> list[AttributeRule]:
    """The rules that match none of ``runs``."""
    runs = list(runs)
    return [item for item in rules if not any(item.matches(run) for run in runs)]


def apply_rules(con: duckdb.DuckDBPyConnection, rules: Sequence[AttributeRule], runs: Sequence[str]) -> list[str]:
    """Set the attributes ``rules`` give each of the store's ``runs``, in one transaction; returns the runs changed.

    A rule that matches no run is an error and nothing changes.
    """
    missing = unmatched(rules, runs)
    if missing:
        first = missing[0]
        what = "no run matches this glob" if glob.has_magic(first.pattern) and not first.exact else "no such run"
        where = f" ({first.where})" if first.where else ""
        more = f"; {len(missing) - 1} more match nothing" if len(missing) > 1 else ""
        raise InputError(first.pattern, None, f"{what} in the store{where}{more} (see `ood-store runs`)")
    changed = {run: attributes_for(run, rules) for run in runs}
    changed = {run: attrs for run, attrs in changed.items() if attrs}

    def write() -> None:
        with transaction(con, {"command": "set run attributes", "runs": sorted(changed)}):
            for run, attrs in sorted(changed.items()):
                set_attributes(con, run, attrs)

    retried(write)
    return sorted(changed)
