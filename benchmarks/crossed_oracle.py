"""The power a test of the pooled r* would have were its exact null distribution known: 60 in-domain items, 8 runs.

    python benchmarks/crossed_oracle.py [--studies 400]

The pooled r* (:func:`ood_store._analysis.crossed.crossed`) over ``--studies`` planted nulls (``null-own-60`` of
benchmarks/crossed_verdicts.py) gives its null quantiles; the share of ``shared-0.5-60`` studies beyond them is
the power of a test that knew them (an oracle: a study cannot). Set beside crossed_verdicts' ``found_items``,
it says how much of the shortfall at 60 items is the signal's and how much the t test's estimate of the spread
from 8 runs (docs/explanation/statistics.md, "Where 8 runs and 60 in-domain items fall short").
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from ood_store._analysis import crossed
from ood_store._analysis.items import RunItems

sys.path.insert(0, str(Path(__file__).parent))
import common  # noqa: E402
from crossed_verdicts import SETTINGS  # noqa: E402


def pooled(args: tuple[str, int]) -> float:
    name, index = args
    study = common.planted(SETTINGS, name, index, 0, runs=8)  # crossed_verdicts' studies
    evidence = crossed.item_evidence({run: RunItems(study.steps, m) for run, m in study.runs.items()},
                                     ["in-domain", "x", "y"], [("x", "y")], resamples=20, seed=index)  # fmt: skip
    fit = crossed.crossed(evidence.tau[:, 0], evidence.scale[:, 0], evidence.draws_tau[:, :, 0],
                          evidence.draws_scale[:, :, 0], evidence.within[:, 0])  # fmt: skip
    return fit.estimate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=400)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    with ProcessPoolExecutor(args.processes) as pool:
        null = np.array(list(pool.map(pooled, [("null-own-60", i) for i in range(args.studies)])))
        alt = np.array(list(pool.map(pooled, [("shared-0.5-60", i) for i in range(args.studies)])))
    for alpha in (0.05, 0.025):
        low, high = np.quantile(null, [alpha / 2, 1 - alpha / 2])
        power = float(np.mean((alt > high) | (alt < low)))
        print(f"alpha {alpha}: null quantiles {low:.3f}, {high:.3f}; oracle power {power:.3f} "
              f"(median r* at partial r 0.5: {np.median(alt):.3f}; {args.studies} studies each)")  # fmt: skip


if __name__ == "__main__":
    main()
