"""Whole-process timing of `ood-store ingest` on the 81 Pythia files, against baselines run alongside.

    python benchmarks/ingest_pythia.py [--repeats 5]

Baselines, measured in the same run on the same files:
  startup   `ood-store --version`: the cost of starting Python and importing ood-store;
  minimal   the fastest one-off script of the kind ood-store replaces: json.load every
            file, collect (run, step, task, metric, value, stderr) rows, insert them into
            DuckDB in one go through a Polars frame; no validation, no provenance, no
            idempotency, no samples;
  naive     the same script inserting with executemany, as such scripts often do
            (benchmarks/ingest_scale.py runs it with pandas, "pandas").
Reported: median wall seconds of each, and ratios. Machines here are noisy: read the
ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import OOD_STORE, PYTHIA

NAIVE = r"""
import json, sys, glob, duckdb
con = duckdb.connect(sys.argv[1])
con.execute("CREATE TABLE scores (run TEXT, step BIGINT, task TEXT, metric TEXT, value DOUBLE, stderr DOUBLE)")
rows = []
for path in sorted(glob.glob(sys.argv[2] + "/**/*.json", recursive=True)):
    doc = json.load(open(path))
    args = dict(kv.split("=", 1) for kv in doc["config"]["model_args"].split(","))
    step = int(args["revision"].removeprefix("step"))
    for task, entry in doc["results"].items():
        for key, value in entry.items():
            if not key.endswith("_stderr"):
                rows.append((args["pretrained"], step, task, key, value, entry.get(key + "_stderr")))
if sys.argv[3] == "bulk":
    import polars as pl
    frame = pl.DataFrame(rows, schema=["run", "step", "task", "metric", "value", "stderr"], orient="row")
    con.execute("INSERT INTO scores SELECT * FROM frame")
elif sys.argv[3] == "pandas":
    import pandas as pd
    frame = pd.DataFrame(rows, columns=["run", "step", "task", "metric", "value", "stderr"])
    con.execute("INSERT INTO scores SELECT * FROM frame")
else:
    con.executemany("INSERT INTO scores VALUES (?, ?, ?, ?, ?, ?)", rows)
con.close()
"""


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    files = sorted(PYTHIA.rglob("*.json"))
    times: dict[str, list[float]] = {"startup": [], "minimal": [], "naive": [], "ingest": [], "re-ingest": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            db = Path(tmp) / f"store{i}.duckdb"
            times["startup"].append(timed([OOD_STORE, "--version"]))
            for name, mode in (("minimal", "bulk"), ("naive", "executemany")):
                script_db = Path(tmp) / f"{name}{i}.duckdb"
                times[name].append(timed([sys.executable, "-c", NAIVE, str(script_db), str(PYTHIA), mode]))
            times["ingest"].append(timed([OOD_STORE, "--db", str(db), "ingest", "-q", str(PYTHIA)]))
            times["re-ingest"].append(timed([OOD_STORE, "--db", str(db), "ingest", "-q", str(PYTHIA)]))
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"{len(files)} files, {args.repeats} repeats, median whole-process wall time:")
    for name, value in median.items():
        print(f"  {name:<10} {value:6.2f} s")
    print(f"ingest / minimal script      {median['ingest'] / median['minimal']:.2f}x")
    print(f"ingest / naive script        {median['ingest'] / median['naive']:.2f}x")
    print(f"ingest / startup             {median['ingest'] / median['startup']:.2f}x")
    print(f"ingest - startup             {median['ingest'] - median['startup']:.2f} s of actual work")
    print(f"re-ingest (no-op) / startup  {median['re-ingest'] / median['startup']:.2f}x")


if __name__ == "__main__":
    main()
