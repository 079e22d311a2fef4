"""``ood-store suite check DIR``: is a data folder what ``data_dir`` (of ``evaluate``) needs? One line per problem.

A data folder holds, per task of the suite, ``<task>.jsonl`` (the evaluated
split) and, for in-context examples, ``<task>.train.jsonl`` (the training
split), as ``suite export`` writes them: one JSON object per line in the
dataset's own schema. The check finds missing files, lines that are not JSON
objects, files in no known column layout, premises or hypotheses that are not
text, labels the label map does not know, and row counts that differ from the
split's size on the hub.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ood_store._errors import InputError
from ood_store._evaluate.suite import labels
from ood_store._evaluate.suite.testsets import Testset, testsets


@dataclass(frozen=True)
class Problem:
    """One problem of a data folder: the file (and line) and what is wrong."""

    path: Path
    message: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.path}{'' if self.line is None else f':{self.line}'}: {self.message}"


@dataclass(frozen=True)
class Checked:
    """What the check read: files and rows, and the problems found."""

    files: int
    rows: int
    problems: list[Problem]

    @property
    def ok(self) -> bool:
        return not self.problems


def check(folder: str | Path, *, fewshot: bool = False) -> Checked:
    """Check a data folder for ``data_dir``; see the module docstring.

    Parameters
    ----------
    folder
        The data folder.
    fewshot
        Require the training splits (``<task>.train.jsonl``) too; without it
        they are checked only where present.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(str(folder), None, "no such data folder")
    problems: list[Problem] = []
    files = rows = 0
    for task in testsets():
        for split, path, required in (
            (task.split, task.data_file(folder), True),
            (task.fewshot_split, task.fewshot_file(folder), fewshot),
        ):
            if not path.is_file():
                if required:
                    problems.append(Problem(path, f"missing: {_what(task, split)}"))
                continue
            files += 1
            count, found = _check_file(task, split, path)
            rows += count
            problems.extend(found)
    return Checked(files, rows, problems)


def _what(task: Testset, split: str) -> str:
    return f"{labels.LABEL_MAPS[task.labels].dataset} {split} split ({_sizes(task, split)} rows from {task.source()})"


def _sizes(task: Testset, split: str) -> str:
    return " or ".join(f"{n:,}" for n in sorted(task.rows[split]))


def _check_file(task: Testset, split: str, path: Path) -> tuple[int, list[Problem]]:
    label_map = labels.LABEL_MAPS[task.labels]
    try:
        lines = list(_lines(path))
    except (OSError, UnicodeDecodeError) as exc:
        return 0, [Problem(path, f"cannot read: {getattr(exc, 'strerror', None) or exc}")]
    problems: list[Problem] = []
    rows: list[tuple[int, dict[str, Any]]] = []
    for number, text in lines:
        try:
            row = json.loads(text)
        except ValueError as exc:
            problems.append(Problem(path, f"not JSON: {exc}", number))
            continue
        if not isinstance(row, dict):
            problems.append(Problem(path, f"not a JSON object but {type(row).__name__}", number))
            continue
        rows.append((number, row))
    if not rows:
        return len(lines), [*problems, Problem(path, "no rows")]
    layout = label_map.layout(list(rows[0][1]))
    if layout is None:
        found = ", ".join(rows[0][1]) or "none"
        message = (
            f"no {label_map.dataset} column layout: expected columns {label_map.expected_layouts()}, found {found}"
        )
        return len(lines), [*problems, Problem(path, message, rows[0][0])]
    problems.extend(_row_problems(task, path, layout, rows))
    problems.sort(key=lambda p: p.line or 0)
    if len(lines) not in task.rows[split]:
        problems.append(
            Problem(path, f"{len(lines):,} rows; the {label_map.dataset} {split} split has {_sizes(task, split)}")
        )
    return len(lines), problems


def _row_problems(
    task: Testset, path: Path, layout: tuple[str, str, str], rows: list[tuple[int, dict]]
) -> list[Problem]:
    label_map = labels.LABEL_MAPS[task.labels]
    premise, hypothesis, label = layout
    missing: dict[str, list[int]] = {}
    not_text: dict[str, list[int]] = {}
    unknown: dict[Any, list[int]] = {}
    for number, row in rows:
        for column in layout:
            if column not in row:
                missing.setdefault(column, []).append(number)
        for column in (premise, hypothesis):
            if column in row and not isinstance(row[column], str):
                not_text.setdefault(column, []).append(number)
        if label in row and label_map.meaning(row[label]) is None:
            unknown.setdefault(json.dumps(row[label]), []).append(number)
    out = [Problem(path, f"no column {c!r}{_where(n)}", n[0]) for c, n in missing.items()]
    out += [Problem(path, f"column {c!r} is not text{_where(n)}", n[0]) for c, n in not_text.items()]
    for value, numbers in unknown.items():
        message = labels.unknown_label_message(task.labels, label, json.loads(value))
        out.append(Problem(path, message + _where(numbers), numbers[0]))
    return out


def _where(numbers: list[int]) -> str:
    return "" if len(numbers) == 1 else f" ({len(numbers):,} rows; this is the first)"


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if text.strip():
                yield number, text.rstrip("\r\n")
