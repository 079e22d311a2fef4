"""Ingest at study scale, whole processes side by side with the baselines the issue names (issue 14).

    python benchmarks/ingest_scale.py [--repeats 3] [--corpus DIR] [--big-gb 1.0]

1. Results files: ``ood-store ingest`` of the 876-file Pythia-v1-shaped corpus
   (benchmarks/corpus.py; ``--corpus DIR`` for a real one, e.g. EleutherAI/pythia's
   evals/pythia-v1) against a naive json.load + pandas + DuckDB script over the
   same files. Target: within 1.5x. Then ingesting the unchanged corpus again:
   seconds per 1,000 files (target: well under 1 s).
2. Per-sample rows: ``ood-store ingest`` of one checkpoint with 300,000
   per-sample rows (three lm-eval 0.4.13 samples files) against DuckDB's own
   ``read_json`` of the same files into a table. Target: at least 0.8x its
   throughput.
3. Peak memory (maximum resident set of the process) of ``ood-store ingest``
   of one checkpoint whose samples file is ``--big-gb`` GB. Target: under 1 GB.

Times are medians of ``--repeats`` runs, each in a fresh store. This machine
is shared and noisy: read the ratios, which compare runs made side by side.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402
from common import OOD_STORE, fresh  # noqa: E402
from ingest_pythia import NAIVE  # noqa: E402  (json.load every file, collect rows, insert them in one go)

READ_JSON = r"""
import sys, duckdb
con = duckdb.connect(sys.argv[1])
con.execute("CREATE TABLE samples AS SELECT * FROM read_json($files)", {"files": sys.argv[2:]})
con.close()
"""


def run(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak resident bytes of one process."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"failed ({status}): {' '.join(command)}")
    return seconds, usage.ru_maxrss * 1024


def ingest(db: Path, *paths: Path) -> list[str]:
    return [OOD_STORE, "--db", str(db), "ingest", "-q", *map(str, paths)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--corpus", type=Path, help="A folder of results files to use instead of the generated one.")
    parser.add_argument("--rows", type=int, default=100_000, help="Per-sample rows per task (3 tasks).")
    parser.add_argument("--big-gb", type=float, default=1.0, help="Size of the samples file of the memory check.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        results = args.corpus or tmp_path / "pythia-v1"
        if args.corpus is None:
            corpus.results_corpus(results)
        files = sorted(results.rglob("*.json"))
        checkpoint = tmp_path / "checkpoint"
        samples = corpus.samples_checkpoint(checkpoint, args.rows)
        big = tmp_path / "big"
        rows_big = int(args.big_gb * 1e9 / (samples[0].stat().st_size / args.rows))
        big_samples = corpus.samples_checkpoint(big, rows_big, tasks=("toy_nli",))

        times: dict[str, list[float]] = {
            k: [] for k in ("startup", "naive", "ingest", "re-ingest", "read_json", "samples")
        }
        for i in range(args.repeats):
            times["startup"].append(run([OOD_STORE, "--version"])[0])
            naive = [sys.executable, "-c", NAIVE, str(fresh(tmp_path / "naive.duckdb")), str(results), "pandas"]
            times["naive"].append(run(naive)[0])
            db = fresh(tmp_path / f"store{i}.duckdb")
            times["ingest"].append(run(ingest(db, results))[0])
            times["re-ingest"].append(run(ingest(db, results))[0])
            bare = fresh(tmp_path / "bare.duckdb")
            times["read_json"].append(run([sys.executable, "-c", READ_JSON, str(bare), *map(str, samples)])[0])
            times["samples"].append(run(ingest(fresh(tmp_path / f"samples{i}.duckdb"), checkpoint))[0])
        _, peak = run(ingest(fresh(tmp_path / "big.duckdb"), big))
        median = {name: statistics.median(values) for name, values in times.items()}
        size = sum(p.stat().st_size for p in samples)
        big_size = big_samples[0].stat().st_size
        shutil.rmtree(big)

    print(f"{len(files)} results files, {args.repeats} repeats, median whole-process wall seconds:")
    for name, value in median.items():
        print(f"  {name:<10} {value:7.2f}")
    print()
    print(
        f"1. results: ingest / naive json.load+pandas+DuckDB script   {median['ingest'] / median['naive']:5.2f}x"
        "  (target <= 1.5)"
    )
    per_thousand = median["re-ingest"] * 1000 / len(files)
    work = (median["re-ingest"] - median["startup"]) * 1000 / len(files)
    print(f"   re-ingest of the unchanged files: {per_thousand:.2f} s per 1,000 files ({work:.2f} s beyond start-up)")
    throughput = median["read_json"] / median["samples"]
    print(
        f"2. per-sample rows ({3 * args.rows:,} rows, {size / 1e6:.0f} MB): ingest throughput / read_json's"
        f"   {throughput:5.2f}x  (target >= 0.8)"
    )
    print(
        f"3. peak memory ingesting a {big_size / 1e9:.2f} GB samples file: {peak / 1e6:.0f} MB"
        f" = {peak / big_size:.2f}x the file  (target < 1 GB)"
    )


if __name__ == "__main__":
    main()
