"""Coverage of the item analysis' intervals, measured on planted runs: the BCa item intervals and the block bootstrap.

    python benchmarks/item_boot_coverage.py [--runs 2000] [--bootstrap 200] [--items 100] [--seed 0]
                                            [--out benchmarks/results/item_boot_coverage.csv]
                                            [--only RHO:N_Z[:N_OOD] ...] [--autocorrelation 0]

``ood_store.item_correlations(..., bootstrap=M)`` resamples the checkpoints in blocks together with the
items and reports ``boot_ci_low/high`` (of the naive r) and ``corrected_boot_ci_low/high`` (of the r
corrected for item noise): percentile intervals of those draws, widened to contain their estimate. This
script measures how often they cover the planted partial correlation ``rho`` of the process, through the
shipped function itself: RUNS runs of :func:`ood_store._analysis.itemsim.planted_run` (the planted study of
``benchmarks/item_noise.py`` and ``tests/test_analysis_items.py``: 30 checkpoints, X and Y related only
through ability at rho 0, sharing a signal of partial correlation rho otherwise) are analyzed in frames
of 100 runs. Per scenario it reports, over the runs with a corrected r:

  corrected_boot_covers, _mc   the share of corrected_boot_ci that covers rho, and its Monte Carlo error
                               1.96 sqrt(p (1 - p) / runs)
  corrected_boot_width         their median width
  corrected_covers             the same for corrected_ci (Fisher's part instead of the block bootstrap), for
                               comparison in the same runs
  boot_covers                  the share of boot_ci (the naive r's) that covers rho
  block_length                 the median block length chosen (Politis-White)
  corrected_item_covers, _mc, corrected_item_width
                               the share of corrected_item_ci (the BCa interval of the item draws of the corrected
                               r) that covers the run's own noise-free partial r (PlantedRun.true_r: what that
                               interval is for, these checkpoints with infinitely many items), its Monte Carlo
                               error and median width
  item_covers                  the share of item_ci (BCa of the naive r's item draws) that covers the run's own
                               noise-free partial r (the naive r's limit with infinitely many items)
  contain_estimate             the share of rows whose printed intervals (item_ci, corrected_ci, corrected_item_ci,
                               boot_ci, corrected_boot_ci) all contain their estimate (r or r_corrected): 1
  unbounded                    the share of runs whose corrected_ci is all of [-1, 1]

``--autocorrelation PHI`` makes X's and Y's signals AR(1) series over the checkpoints (lag-1 correlation PHI;
their correlation at a checkpoint still rho), so that the residuals are autocorrelated, which Fisher's part of
``corrected_ci`` does not allow for and the block bootstrap is meant to.

Written to OUT (CSV) and printed. results/item_boot_coverage.csv: the defaults; results/item_boot_coverage_ar.csv:
``--autocorrelation 0.6``; results/item_bca_coverage.csv: the BCa intervals at the issue's sizes, 60 and 5,000
in-domain items, ``--only 0:60 0.5:60 0:5000 0.5:5000 --runs 400 --items 1000 --bootstrap 200``.
"""

from __future__ import annotations

import argparse

import numpy as np
import polars as pl
from item_noise import run_scenarios, scenario_parser  # benchmarks/, on the path of a script run from it

import ood_store
from ood_store._analysis.items import ITEM_INTERVALS
from ood_store._analysis.itemsim import PLANTED, long_frame, planted_run

SCENARIOS = [(0.0, 200, 1000), (0.0, 1000, 1000), (0.5, 200, 1000), (0.5, 1000, 1000)]
TASKS = ("in-domain", "x", "y")
CHUNK = 100


def scenario(rho: float, n_z: int, n_ood: int, args: argparse.Namespace) -> dict[str, float]:
    runs, items, bootstrap, seed, phi = args.runs, args.items, args.bootstrap, args.seed, args.autocorrelation
    rng = np.random.default_rng([seed, n_z, int(rho * 100), n_ood])
    tables, truth = [], {}
    for start in range(0, runs, CHUNK):
        planted = {
            f"r{i:05d}": planted_run(rng, rho=rho, items=(n_z, n_ood, n_ood), autocorrelation=phi, **PLANTED)
            for i in range(start, min(runs, start + CHUNK))
        }
        truth.update({name: run.true_r for name, run in planted.items()})
        result = ood_store.item_correlations(
            long_frame({name: run.matrices for name, run in planted.items()}, TASKS),
            in_domain="in-domain",
            items=items,
            bootstrap=bootstrap,
            seed=seed + start,
        )
        tables.append(result.table)
    table = pl.concat(tables).with_columns(pl.col("run").replace_strict(truth).alias("true_r"))
    defined = table.filter(pl.col("r_corrected").is_finite())
    contain = pl.lit(True)
    for low, high, estimate in ITEM_INTERVALS:
        contain &= (pl.col(low).is_nan() | (pl.col(low) <= pl.col(estimate))) & (
            pl.col(high).is_nan() | (pl.col(high) >= pl.col(estimate))
        )

    def covers(low: str, high: str) -> float:
        return float(((defined[low] <= rho) & (defined[high] >= rho)).mean())

    def covers_run(low: str, high: str, frame: pl.DataFrame) -> float:
        return float(((frame[low] <= frame["true_r"]) & (frame[high] >= frame["true_r"])).mean())

    boot = covers("corrected_boot_ci_low", "corrected_boot_ci_high")
    item = covers_run("corrected_item_ci_low", "corrected_item_ci_high", defined)
    n = defined.height
    return {
        "rho": rho,
        "n_in_domain": n_z,
        "n_ood": n_ood,
        "runs": runs,
        "item_resamples": items,
        "bootstrap": bootstrap,
        "autocorrelation": phi,
        "defined": n / table.height,
        "corrected_boot_covers": boot,
        "corrected_boot_mc": float(1.959964 * np.sqrt(boot * (1 - boot) / n)),
        "corrected_boot_width": float((defined["corrected_boot_ci_high"] - defined["corrected_boot_ci_low"]).median()),
        "corrected_covers": covers("corrected_ci_low", "corrected_ci_high"),
        "corrected_width": float((defined["corrected_ci_high"] - defined["corrected_ci_low"]).median()),
        "boot_covers": covers("boot_ci_low", "boot_ci_high"),
        "block_length": float(defined["block_length"].median()),
        "corrected_item_covers": item,
        "corrected_item_mc": float(1.959964 * np.sqrt(item * (1 - item) / n)),
        "corrected_item_width": float((defined["corrected_item_ci_high"] - defined["corrected_item_ci_low"]).median()),
        "item_covers": covers_run("item_ci_low", "item_ci_high", table),
        "contain_estimate": float(table.select(contain.mean()).item()),
        "unbounded": float(((defined["corrected_ci_low"] == -1) & (defined["corrected_ci_high"] == 1)).mean()),
    }


def main() -> None:
    parser = scenario_parser(__doc__, runs=2000, out="item_boot_coverage.csv")
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--autocorrelation", type=float, default=0.0, help="of X's and Y's signals (AR(1))")
    args = parser.parse_args()
    run_scenarios(
        SCENARIOS,
        args,
        lambda rho, n_z, n_ood: scenario(rho, n_z, n_ood, args),
    )


if __name__ == "__main__":
    main()
