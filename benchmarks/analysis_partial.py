"""Speed of the linear partial-correlation analysis, against a loop of pingouin.partial_corr on the same data.

    python benchmarks/analysis_partial.py [--runs 3] [--tasks 90] [--checkpoints 40] [--repeats 3]

A store is filled (through `ood-store ingest`, not timed) with synthetic lm-eval
v0.3 results: RUNS runs × CHECKPOINTS checkpoints × TASKS tasks, task00 the
in-domain one. Then, medians over --repeats:

  ood-store (all runs)   partial_correlations(store, "task00").table: every pair of the
                         TASKS - 1 OOD tasks in every run, the SQL query included;
  ood-store (one run)    the same for the first run only;
  pingouin loop          pingouin.partial_corr(x, y, covar="task00") for every pair
                         of that one run, on a pandas frame built beforehand (the
                         baseline a researcher would write; run once, it is slow);
  pythia                 partial_correlations on the 81 bundled Pythia files
                         (3 runs × 27 checkpoints, lambada_openai in-domain, the 64
                         other tasks with acc).

The ratio column is pingouin's time per pair (measured on one run) times the
row's pairs, over the row's time: exact for the one-run row, a linear
extrapolation of the loop for the others.

Read the ratio, not the seconds: these machines are noisy.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import ood_store
from ood_store.analysis import partial_correlations

ROOT = Path(__file__).resolve().parents[1]
PYTHIA = ROOT / "tests" / "fixtures" / "lm-eval-real" / "pythia-v1"


def write_results(folder: Path, runs: int, tasks: int, checkpoints: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    names = [f"task{i:02d}" for i in range(tasks)]
    for r in range(runs):
        progress = np.sort(rng.uniform(0, 1, checkpoints))
        slopes = rng.uniform(-0.2, 0.4, tasks)
        for c in range(checkpoints):
            values = np.clip(0.3 + slopes * progress[c] + rng.normal(0, 0.02, tasks), 0, 1)
            doc = {
                "results": {n: {"acc": float(v), "acc_stderr": 0.01} for n, v in zip(names, values, strict=True)},
                "versions": dict.fromkeys(names, 0),
                "config": {"model": "hf-causal", "model_args": f"pretrained=bench/run{r},revision=step{(c + 1) * 100}",
                           "num_fewshot": 0, "batch_size": 1, "limit": None},
            }  # fmt: skip
            (folder / f"run{r}-step{c}.json").write_text(json.dumps(doc))


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=90)
    parser.add_argument("--checkpoints", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import pingouin as pg

    with tempfile.TemporaryDirectory() as tmp:
        files = Path(tmp) / "results"
        files.mkdir()
        write_results(files, args.runs, args.tasks, args.checkpoints)
        db = Path(tmp) / "bench.duckdb"
        with ood_store.open(db) as store:
            assert store.ingest([files]).ok
            assert store.ingest([PYTHIA]).ok
        with ood_store.open(db, read_only=True) as store:
            synthetic = store.query("SELECT * FROM scores WHERE run LIKE 'bench/%'")
            pairs = (args.tasks - 1) * (args.tasks - 2) // 2
            all_runs = median_time(lambda: partial_correlations(synthetic, "task00").table, args.repeats)
            store_all = median_time(
                lambda: partial_correlations(store, "task00", runs=[f"bench/run{r}" for r in range(args.runs)]).table,
                args.repeats,
            )
            one_run = median_time(
                lambda: partial_correlations(store, "task00", runs=["bench/run0"]).table, args.repeats
            )
            pythia = median_time(lambda: partial_correlations(store, "lambada_openai", runs=[
                f"EleutherAI/pythia-v1.1-{s}" for s in ("160m", "410m", "1.4b")]).table, args.repeats)  # fmt: skip
            wide = (
                synthetic.filter(synthetic["run"] == "bench/run0")
                .pivot(on="task", index="step", values="value")
                .sort("step")
                .to_pandas()
            )
            ood = [f"task{i:02d}" for i in range(1, args.tasks)]
            start = time.perf_counter()
            for x, y in itertools.combinations(ood, 2):
                pg.partial_corr(wide, x=x, y=y, covar="task00")
            loop = time.perf_counter() - start

    print(f"data: {args.runs} runs × {args.checkpoints} checkpoints × {args.tasks} tasks "
          f"({pairs:,} pairs per run, {pairs * args.runs:,} in all)")  # fmt: skip
    per_pair = loop / pairs
    print(f"{'what':<44} {'pairs':>8} {'seconds':>9} {'pingouin ÷ this':>16}")
    rows = [
        ("pingouin.partial_corr loop, one run", pairs, loop),
        ("ood-store, one run, from the store", pairs, one_run),
        (f"ood-store, all {args.runs} runs, from the store", pairs * args.runs, store_all),
        (f"ood-store, all {args.runs} runs, from a frame", pairs * args.runs, all_runs),
        ("ood-store, Pythia 3 runs × 64 OOD tasks", 3 * 64 * 63 // 2, pythia),
    ]
    for label, count, seconds in rows:
        print(f"{label:<44} {count:>8,} {seconds:>9.3f} {per_pair * count / seconds:>15.0f}×")
    print("pingouin ÷ this: the pingouin loop's measured time per pair, times this row's pairs, over this row's time")
    print("(measured directly for the one-run row; extrapolated linearly for the others).")


if __name__ == "__main__":
    main()
