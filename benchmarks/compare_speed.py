"""Speed of verdicts over items and runs: ``ood-store compare`` on a study of 36 million per-sample rows.

    python benchmarks/compare_speed.py [--runs 24] [--checkpoints 30] [--tasks 10] [--items 5000]
                                       [--resamples 500] [--folder DIR] [--keep]

The store of ``benchmarks/items_speed.py`` (made, not timed: RUNS runs × CHECKPOINTS checkpoints × TASKS
tasks of ITEMS documents, per-sample rows included). Then, side by side as whole processes:

  baseline   ``ood-store compare --in-domain task00 --item-inference runs``: the comparison over runs
             only, as it was before verdicts over items (the partial correlations, then pooling)
  items      ``ood-store compare --in-domain task00`` (``--item-inference auto``, RESAMPLES study-wide item
             resamples): the same, and the per-sample rows read and the crossed inference on the 45 pairs

Printed: the seconds of each, their ratio, and the target (items under 60 s on the project's 2-core machine).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import OOD_STORE, fresh
from items_speed import build


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode:
        sys.exit(done.stderr.decode())
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=24)
    parser.add_argument("--checkpoints", type=int, default=30)
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--resamples", type=int, default=500)
    parser.add_argument("--folder", type=Path)
    parser.add_argument("--keep", action="store_true", help="Keep a store made before (same folder) instead.")
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="compare-speed-"))
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "items.duckdb"
    start = time.perf_counter()
    if not (args.keep and db.exists()):
        build(fresh(db), args.runs, args.checkpoints, args.tasks, args.items)
    built = time.perf_counter() - start
    base = [OOD_STORE, "--db", str(db), "compare", "--in-domain", "task00", "--format", "csv"]
    baseline = timed([*base, "--item-inference", "runs", "-o", str(folder / "runs.csv")])
    items = timed([*base, "--item-resamples", str(args.resamples), "-o", str(folder / "items.csv")])
    rows = args.runs * args.checkpoints * args.tasks * args.items
    print(f"{args.runs} runs × {args.checkpoints} checkpoints × {args.tasks} tasks × {args.items} items "
          f"({rows:,} per-sample rows), {args.resamples} item resamples")  # fmt: skip
    print(f"store built in {built:.1f} s (not timed)")
    print(f"ood-store compare --item-inference runs (baseline): {baseline:.1f} s")
    print(f"ood-store compare (verdicts over items and runs):    {items:.1f} s (target: under 60 s)")
    print(f"ratio items / baseline: {items / baseline:.1f}")


if __name__ == "__main__":
    main()
