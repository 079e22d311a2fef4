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

import subprocess
import sys
import time

from common import OOD_STORE
from items_speed import study_store


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode:
        sys.exit(done.stderr.decode())
    return elapsed


def main() -> None:
    args, folder, db, built = study_store(__doc__, 500, "compare-speed-")
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
