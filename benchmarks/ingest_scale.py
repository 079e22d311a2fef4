"""Ingest at study scale, whole processes side by side with the baselines the issues name (issues 14 and 32).

    python benchmarks/ingest_scale.py [--repeats 3] [--corpus DIR] [--big-gb 1.0] [--parts 1,2,3]

1. Results files: ``ood-store ingest`` of the 876-file Pythia-v1-shaped corpus
   (benchmarks/corpus.py; ``--corpus DIR`` for a real one, e.g. EleutherAI/pythia's
   evals/pythia-v1) against a naive json.load + pandas + DuckDB script over the
   same files. Target: within 1.5x. Then ingesting the unchanged corpus again:
   seconds per 1,000 files (target: well under 1 s).
2. Per-sample rows: ``ood-store ingest`` of one checkpoint with 300,000
   per-sample rows (three lm-eval 0.4.13 samples files) against DuckDB's own
   ``read_json`` of the same files into a table, and the peak memory of each.
   Targets: at least 0.9x its throughput, under 600 MiB.
3. Peak memory (maximum resident set of the process) of ``ood-store ingest``
   of one checkpoint whose samples file is ``--big-gb`` GB. Target: under 1 GB.
4. Per-sample rows of a checkpoint series: ``ood-store ingest`` of 10 checkpoints
   of one run, each with the same three samples files of ``--rows // 10`` lines
   (the same 300,000 rows in all), against ``read_json`` of them, as in 2. Part 2
   is the worst case for the documents ingest keeps (every line a document not
   held yet); a series holds each task's documents once, read from one file.

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


def side_by_side(
    tmp: Path,
    i: int,
    names: tuple[str, str],
    files: list[Path],
    folder: Path,
    times: dict[str, list[float]],
    peaks: dict[str, list[int]],
) -> None:
    """Repeat ``i``: read_json of ``files`` and ``ood-store ingest`` of ``folder``, each in a fresh process and a
    fresh store, the order alternating; their seconds and peak memory under ``names``."""
    bare = [sys.executable, "-c", READ_JSON, str(fresh(tmp / "bare.duckdb")), *map(str, files)]
    ours = ingest(fresh(tmp / f"ours{i}.duckdb"), folder)
    for name, command in list(zip(names, (bare, ours), strict=True))[:: 1 if i % 2 == 0 else -1]:
        seconds, peak = run(command)
        times[name].append(seconds)
        peaks[name].append(peak)
    (tmp / f"ours{i}.duckdb").unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--corpus", type=Path, help="A folder of results files to use instead of the generated one.")
    parser.add_argument("--rows", type=int, default=100_000, help="Per-sample rows per task (3 tasks).")
    parser.add_argument("--big-gb", type=float, default=1.0, help="Size of the samples file of the memory check.")
    parser.add_argument("--parts", default="1,2,3,4", help="Which of the four measurements to make (e.g. 2).")
    args = parser.parse_args()
    parts = {int(part) for part in args.parts.split(",")}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        files: list[Path] = []
        if 1 in parts:
            results = args.corpus or tmp_path / "pythia-v1"
            if args.corpus is None:
                corpus.results_corpus(results)
            files = sorted(results.rglob("*.json"))
        if 2 in parts or 3 in parts:
            checkpoint = tmp_path / "checkpoint"
            samples = corpus.samples_checkpoint(checkpoint, args.rows)
            size = sum(p.stat().st_size for p in samples)

        if 4 in parts:
            series = tmp_path / "series"
            series_files = corpus.samples_series(series, 10, args.rows // 10)
        times: dict[str, list[float]] = {k: [] for k in ("startup", "naive", "ingest", "re-ingest")}
        times |= {k: [] for k in ("read_json", "samples", "series read_json", "series")}
        peaks: dict[str, list[int]] = {"read_json": [], "samples": [], "series read_json": [], "series": []}
        for i in range(args.repeats):
            if 1 in parts:
                times["startup"].append(run([OOD_STORE, "--version"])[0])
                naive = [sys.executable, "-c", NAIVE, str(fresh(tmp_path / "naive.duckdb")), str(results), "pandas"]
                times["naive"].append(run(naive)[0])
                db = fresh(tmp_path / f"store{i}.duckdb")
                times["ingest"].append(run(ingest(db, results))[0])
                times["re-ingest"].append(run(ingest(db, results))[0])
            if 2 in parts:  # side by side, each in a fresh process and a fresh file, the order alternating
                side_by_side(tmp_path, i, ("read_json", "samples"), samples, checkpoint, times, peaks)
            if 4 in parts:
                side_by_side(tmp_path, i, ("series read_json", "series"), series_files, series, times, peaks)
        if 3 in parts:
            big = tmp_path / "big"
            rows_big = int(args.big_gb * 1e9 / (samples[0].stat().st_size / args.rows))
            big_samples = corpus.samples_checkpoint(big, rows_big, tasks=("toy_nli",))
            _, big_peak = run(ingest(fresh(tmp_path / "big.duckdb"), big))
            big_size = big_samples[0].stat().st_size
            shutil.rmtree(big)
        median = {name: statistics.median(values) for name, values in times.items() if values}

    print(f"{len(files)} results files, {args.repeats} repeats, median whole-process wall seconds:")
    for name, value in median.items():
        print(f"  {name:<10} {value:7.2f}")
    print()
    if 1 in parts:
        print(
            f"1. results: ingest / naive json.load+pandas+DuckDB script   {median['ingest'] / median['naive']:5.2f}x"
            "  (target <= 1.5)"
        )
        per_thousand = median["re-ingest"] * 1000 / len(files)
        work = (median["re-ingest"] - median["startup"]) * 1000 / len(files)
        print(
            f"   re-ingest of the unchanged files: {per_thousand:.2f} s per 1,000 files ({work:.2f} s beyond start-up)"
        )
    if 2 in parts:
        what = f"2. per-sample rows ({3 * args.rows:,} rows, {size / 1e6:.0f} MB): ingest throughput / read_json's"
        print(side_by_side_line(what, times["read_json"], times["samples"], "target >= 0.9; "))
        mib = {name: max(values) / 2**20 for name, values in peaks.items() if values}
        print(f"   peak memory: ingest {mib['samples']:.0f} MiB (target < 600), read_json {mib['read_json']:.0f} MiB")
    if 3 in parts:
        print(
            f"3. peak memory ingesting a {big_size / 1e9:.2f} GB samples file: {big_peak / 1e6:.0f} MB"
            f" = {big_peak / big_size:.2f}x the file  (target < 1 GB)"
        )
    if 4 in parts:
        what = (
            f"4. a series of 10 checkpoints ({3 * (args.rows // 10):,} rows each, the same documents): ingest "
            "throughput / read_json's"
        )
        print(side_by_side_line(what, times["series read_json"], times["series"], ""))


def side_by_side_line(what: str, bare: list[float], ours: list[float], target: str) -> str:
    """``what``, the ratio of the median times (bare over ours: a throughput ratio) and each run's ratio."""
    ratios = [b / o for b, o in zip(bare, ours, strict=True)]
    each = ", ".join(f"{r:.2f}" for r in ratios)
    return f"{what}   {statistics.median(bare) / statistics.median(ours):5.2f}x  ({target}each run: {each})"


if __name__ == "__main__":
    main()
