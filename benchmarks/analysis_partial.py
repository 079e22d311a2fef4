"""Speed of the partial-correlation analysis: linear against pingouin, GAM and bootstrap against linear.

    python benchmarks/analysis_partial.py [--part all|linear|gam] [--runs 3] [--tasks 90] [--checkpoints 40]
                                          [--repeats 3] [--gam-runs 26] [--gam-tasks 7] [--reps 200]

Part "linear" (the first table)
-------------------------------

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

Part "gam" (the second table)
-----------------------------
A store shaped like the full Pythia-v1 zero-shot corpus: GAM_RUNS runs × 27
log-spaced checkpoints (steps 0, 1, 2, 4, ..., 512, 1000, 3000, 13000, ...,
143000), an in-domain curve stuck at exactly 0 for the first 11 steps (as
Pythia's LAMBADA) and GAM_TASKS OOD tasks (trend plus AR(1) noise). Timed side
by side, as whole processes (`ood-store analyze ... --format csv -o FILE`,
start-up included, medians over --repeats) and in process
(`partial_correlations(store, ...)`):

  linear                 --residualizer linear
  gam                    --residualizer gam (REML, the default)
  gam, gcv               --residualizer gam --smoothing gcv
  gam + bootstrap        --residualizer gam --bootstrap REPS

reported as ratios to the linear analysis in the same run. The targets: the
GAM within 2× the linear analysis, the GAM with 200 block-bootstrap resamples
within 5× (as whole processes).

Read the ratio, not the seconds: these machines are noisy.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import PYTHIA

import ood_store
from ood_store._analysis import partial_correlations


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


# Pythia's 27 checkpoints: 0, 1, 2, 4, ..., 512 (11 steps), 1000, 3000, 13000, 23000, ..., 143000.
PYTHIA_STEPS = (0, *(2**i for i in range(10)), 1000, *range(3000, 143001, 10000))


def write_pythia_shaped(folder: Path, runs: int, tasks: int, seed: int = 0) -> None:
    """lm-eval v0.3 files of ``runs`` runs on Pythia's steps: task00 is 0 on the first 11 steps, then rises."""
    rng = np.random.default_rng(seed)
    steps = np.array(PYTHIA_STEPS)
    progress = np.log1p(steps) / np.log1p(steps[-1])
    names = [f"task{i:02d}" for i in range(tasks + 1)]
    for r in range(runs):
        in_domain = np.where(steps <= 512, 0.0, 0.05 + 0.5 * (progress - progress[10]) / (1 - progress[10]))
        scores = [np.round(in_domain + rng.normal(0, 0.01, steps.size) * (steps > 512), 4).clip(0, 1)]
        for _ in range(tasks):
            noise = np.zeros(steps.size)
            for t in range(1, steps.size):
                noise[t] = 0.6 * noise[t - 1] + rng.normal(0, 0.01)
            curve = 0.25 + rng.uniform(0, 0.3) * progress ** rng.uniform(1, 3) + noise
            scores.append(np.round(curve, 4))
        for c, step in enumerate(steps):
            doc = {
                "results": {n: {"acc": float(v[c]), "acc_stderr": 0.01} for n, v in zip(names, scores, strict=True)},
                "versions": dict.fromkeys(names, 0),
                "config": {"model": "hf-causal", "model_args": f"pretrained=shaped/run{r:02d},revision=step{step}",
                           "num_fewshot": 0, "batch_size": 1, "limit": None},
            }  # fmt: skip
            (folder / f"run{r:02d}-step{step}.json").write_text(json.dumps(doc))


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def gam_part(args: argparse.Namespace) -> None:
    command = Path(sys.executable).with_name("ood-store")
    configurations = [
        ("linear", []),
        ("gam (REML)", ["--residualizer", "gam"]),
        ("gam (GCV)", ["--residualizer", "gam", "--smoothing", "gcv"]),
        (f"gam + bootstrap {args.reps}", ["--residualizer", "gam", "--bootstrap", str(args.reps)]),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        files = Path(tmp) / "results"
        files.mkdir()
        write_pythia_shaped(files, args.gam_runs, args.gam_tasks)
        db = Path(tmp) / "shaped.duckdb"
        with ood_store.open(db) as store:
            assert store.ingest([files]).ok
        process, in_process = {}, {}
        for label, extra in configurations:
            argv = [str(command), "--db", str(db), "analyze", "--in-domain", "task00", "--format", "csv",
                    "-o", str(Path(tmp) / "out.csv"), *extra]  # fmt: skip
            process[label] = median_time(lambda argv=argv: subprocess.run(argv, check=True), args.repeats)
        with ood_store.open(db, read_only=True) as store:
            for label, extra in configurations:
                kwargs = {}
                if "--residualizer" in extra:
                    kwargs["residualizer"] = "gam"
                if "--smoothing" in extra:
                    kwargs["smoothing"] = "gcv"
                if "--bootstrap" in extra:
                    kwargs["bootstrap"] = args.reps
                in_process[label] = median_time(
                    lambda kwargs=kwargs: partial_correlations(store, "task00", **kwargs), args.repeats
                )
    print(f"\ndata: {args.gam_runs} runs × {len(PYTHIA_STEPS)} log-spaced checkpoints (in-domain tied at 0 on 11), "
          f"{args.gam_tasks} OOD tasks")  # fmt: skip
    print(f"{'what':<28} {'process s':>10} {'÷ linear':>9} {'in-process s':>13} {'÷ linear':>9}")
    for label, _ in configurations:
        print(f"{label:<28} {process[label]:>10.2f} {process[label] / process['linear']:>8.2f}× "
              f"{in_process[label]:>13.3f} {in_process[label] / in_process['linear']:>8.2f}×")  # fmt: skip
    print("targets (whole processes): gam within 2×, gam + bootstrap 200 within 5× the linear analysis")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("all", "linear", "gam"), default="all")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=90)
    parser.add_argument("--checkpoints", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gam-runs", type=int, default=26)
    parser.add_argument("--gam-tasks", type=int, default=7)
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args()
    if args.part in ("all", "linear"):
        linear_part(args)
    if args.part in ("all", "gam"):
        gam_part(args)


def linear_part(args: argparse.Namespace) -> None:
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
