"""The calibration table of docs/how-to/planning.md: the type I error of each test, by `ood-store plan`.

    python benchmarks/plan_calibration.py [--replications 20000] [--threads 2] [--seed 0]

Under no difference, with 24 evenly spaced checkpoints a run, residual curves
of lag-1 autocorrelation 0.6 and no item noise, for 2, 3, 5 and 8 seeds a
family and a seed spread tau of 0, 0.2 and 0.4 on Fisher z, it estimates with
`power_analysis` (the simulations run through the analysis' own code):

  between   the test between two families (compare --between family --within seed): no difference
            between them, both at r = 0;
  pooled    one family's pooled estimate (compare): its r = 0.

for the z test and Knapp-Hartung, each cell from --replications simulated
studies (Monte Carlo standard error about 0.0015 at 20,000). A cell is
calibrated when its estimate is within 2 standard errors of 0.05; above that
the test is liberal, below conservative. The rows go to
benchmarks/results/plan_calibration.csv; the page's table is
:func:`markdown` of that file (tests/test_analysis_power.py checks both).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import polars as pl

from ood_store._analysis.power import power_analysis
from ood_store._analysis.simulate import Curves

RESULTS = Path(__file__).resolve().parent / "results" / "plan_calibration.csv"
SEEDS = (2, 3, 5, 8)
TAUS = (0.0, 0.2, 0.4)
CHECKPOINTS = 24
AR1 = 0.6
ALPHA = 0.05


def calibration(kind: str, test: str, tau: float, replications: int, seed: int = 0, threads: int = 1) -> pl.DataFrame:
    """The type I error of ``test`` for ``kind`` (between or pooled) at seed spread ``tau``, one row per seed count."""
    effects = [0.0, 0.0] if kind == "between" else [0.0]
    result = power_analysis(
        effects, seeds=SEEDS, checkpoints=[CHECKPOINTS], tau=tau, curves=Curves(ar1=AR1), test=test,
        adjust_pairs="none", alpha=ALPHA, replications=replications, seed=seed, threads=threads,
    )  # fmt: skip
    return result.table.select(
        pl.lit(kind).alias("kind"), pl.lit(test).alias("test"), "seeds", pl.lit(tau).alias("tau"), "type1",
        "type1_se", pl.lit(replications).alias("replications"),
    ).with_columns(calibrated=(pl.col("type1") - ALPHA).abs() <= 2 * pl.col("type1_se"))  # fmt: skip


def verdict(row: dict) -> str:
    """A cell as the page prints it: the estimate, marked when not within 2 standard errors of 0.05."""
    mark = "" if row["calibrated"] else (" (liberal)" if row["type1"] > ALPHA else " (conservative)")
    return f"{row['type1']:.3f}{mark}"


def markdown(frame: pl.DataFrame, kind: str) -> str:
    """The page's table for ``kind``: a row per seed count, a column per test and tau."""
    part = frame.filter(pl.col("kind") == kind)
    header = ["seeds per family" if kind == "between" else "seeds"]
    columns = [(test, tau) for test in ("z", "knha") for tau in TAUS]
    header += [f"{'Knapp–Hartung' if test == 'knha' else 'z'}, τ {tau:g}" for test, tau in columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for seeds in SEEDS:
        cells = [str(seeds)]
        for test, tau in columns:
            row = part.filter((pl.col("seeds") == seeds) & (pl.col("test") == test) & (pl.col("tau") == tau))
            cells.append(verdict(row.row(0, named=True)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replications", type=int, default=20000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    parts = []
    for kind in ("between", "pooled"):
        for test in ("z", "knha"):
            for tau in TAUS:
                parts.append(calibration(kind, test, tau, args.replications, args.seed, args.threads))
                print(f"{kind} {test} tau {tau:g}: {time.perf_counter() - started:.0f} s", flush=True)
    frame = pl.concat(parts)
    RESULTS.parent.mkdir(exist_ok=True)
    frame.write_csv(RESULTS)
    se = math.sqrt(ALPHA * (1 - ALPHA) / args.replications)
    print(f"\n{args.replications} replications a cell (standard error at 0.05: {se:.4f}); wrote {RESULTS}\n")
    for kind in ("between", "pooled"):
        print(markdown(frame, kind))


if __name__ == "__main__":
    main()
