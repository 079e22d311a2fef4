"""What the reliability trials share: a work folder from the command line, and the table they print.

A trial is a row ``(class, trial, held, detail)``; the table lists every row, then tried / held /
failed per class, and the exit status is 1 when any failed.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Callable
from pathlib import Path

Row = tuple[str, str, bool, str]


def collect(trials: Callable[[Path], list[Row]], description: str) -> list[Row]:
    """The rows of ``trials``, run in ``--workdir`` (default: a temporary folder, removed afterwards)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--workdir", type=Path, help="Where the stores go (default: a temporary folder, removed).")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        workdir = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        workdir.mkdir(parents=True, exist_ok=True)
        return trials(workdir)


def report(rows: list[Row], *, every_row: bool = True) -> int:
    """Print each row (only those that failed, without ``every_row``), then tried / held / failed per class;
    the exit status (1 when any failed)."""
    kind_width = max(len(kind) for kind, _, _, _ in rows)
    shown = [row for row in rows if every_row or not row[2]]
    width = max((len(trial) for _, trial, _, _ in shown), default=0)
    for kind, trial, held, detail in shown:
        print(f"{kind:<{kind_width}}  {trial:<{width}}  {'held' if held else 'FAILED':<6}  {detail[:110]}")
    print(f"\n{'class':<{kind_width}}  {'tried':>5} {'held':>5} {'failed':>6}")
    for kind in dict.fromkeys(kind for kind, _, _, _ in rows):
        mine = [held for k, _, held, _ in rows if k == kind]
        print(f"{kind:<{kind_width}}  {len(mine):>5} {sum(mine):>5} {len(mine) - sum(mine):>6}")
    return 0 if all(held for _, _, held, _ in rows) else 1
