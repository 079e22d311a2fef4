"""Timing of `Store.dump`, `load` and `merge` on the 81 Pythia files, against ingesting the raw
files again, run alongside in the same process.

    python benchmarks/stores.py [--repeats 5]

Combining stores used to mean re-ingesting every raw file (where they still exist); this
measures what a dump and a merge cost instead, on the same machine in the same run, through
the Python API (process start-up, the same for every command, left out):
  ingest      81 files into a new store (the baseline);
  dump        that store to a new folder;
  load        the dump into a new store; `load again`: into the same one (nothing is added);
  merge       the first store into a new one; `merge again`: into the same one.
Reported: median wall seconds of each and the ratio to ingest. Read the ratios.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from common import PYTHIA

import ood_store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[float]] = {n: [] for n in ("ingest", "dump", "load", "load again", "merge", "merge again")}

    def timed(name: str, db: Path, action) -> None:
        with ood_store.open(db) as store:
            start = time.perf_counter()
            action(store)
            times[name].append(time.perf_counter() - start)

    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            source, loaded, merged = (Path(tmp) / f"{name}{i}.duckdb" for name in ("source", "loaded", "merged"))
            dump = Path(tmp) / f"dump{i}"
            timed("ingest", source, lambda s: s.ingest([PYTHIA]))
            timed("dump", source, lambda s, dump=dump: s.dump(dump))
            timed("load", loaded, lambda s, dump=dump: s.load(dump))
            timed("load again", loaded, lambda s, dump=dump: s.load(dump))
            timed("merge", merged, lambda s, source=source: s.merge(source))
            timed("merge again", merged, lambda s, source=source: s.merge(source))
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"81 files (13,932 scores), {args.repeats} repeats, median wall time in one process:")
    for name, value in median.items():
        ratio = "" if name == "ingest" else f"   {value / median['ingest']:.2f}x ingest"
        print(f"  {name:<12} {value:6.3f} s{ratio}")


if __name__ == "__main__":
    main()
