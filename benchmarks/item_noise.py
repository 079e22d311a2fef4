"""The noisy-control artefact, measured: planted runs analyzed naively and corrected for item noise.

    python benchmarks/item_noise.py [--runs 1000] [--resamples 400] [--seed 0] [--out benchmarks/results/item_noise.csv]
                                    [--only RHO:N_Z[:N_OOD] ...]

Each scenario simulates RUNS runs of :func:`ood_store._analysis.itemsim.planted_run`
(30 checkpoints; an in-domain testset of ``n_z`` items, X and Y of ``n_ood`` (1,000) each;
X and Y related only through the latent ability, or planted to share a signal
of partial correlation ``rho``) and reports, over the runs:

  naive_mean, naive_bias       the naive partial r (the in-domain score as it is measured) and its bias from rho
  naive_positive               the share of runs with a positive naive r
  naive_ci_covers              the share whose Fisher interval (n - 4) covers rho
  corrected_mean, corrected_bias, corrected_median_bias
                               the corrected r (covariances less the item error variances) and its bias
  corrected_nan                the share of runs without a corrected r (a corrected variance not positive)
  corrected_ci_covers, corrected_ci_mc
                               among runs with a corrected r, the share whose corrected interval
                               (``corrected_ci_low/high``, itemstats.corrected_ci) covers rho, and its Monte
                               Carlo error, 1.96 sqrt(p (1 - p) / runs)
  corrected_ci_unbounded       the share of runs whose corrected interval is all of [-1, 1] (corrected r at ±1)
  percentile_ci_covers         the same for the former interval (percentile of the convolved draws, not
                               bias-corrected), for comparison
  item_ci_covers, item_ci_mc   the share whose item-bootstrap interval of the corrected r
                               (``corrected_item_ci_low/high``) covers the run's own noise-free partial r
  simex_bias, gam_bias, simex_gam_bias
                               the bias from rho of SIMEX with the linear residualizer, of the naive GAM
                               partial r and of SIMEX through the GAM (noise added at lambda 0.5..2,
                               quadratic extrapolation to -1)

Written to OUT (CSV) and printed; ``--only`` runs some scenarios (e.g. ``--only 0:500 0.5:200 0:400:400``), each
seeded as in the full run, so that scenarios can run in separate processes and their rows be joined.
results/item_noise.csv: the defaults (about 12 minutes a scenario on the shared 2-core machine under load).
results/item_noise_test.csv: the configuration of tests/test_analysis_items.py, ``--only 0:1000 0.5:1000
--resamples 100`` at ``--seed 0`` and ``--seed 1`` (2,000 runs a scenario); results/item_noise_test400.csv:
``--only 0:400:400 0.5:400:400 --resamples 200 --runs 2000``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from ood_store._analysis.itemsim import simulate

SCENARIOS = [  # (rho, in-domain items, OOD items)
    (0.0, 100, 1000),
    (0.0, 200, 1000),
    (0.0, 500, 1000),
    (0.0, 1000, 1000),
    (0.0, 2000, 1000),
    (0.5, 100, 1000),
    (0.5, 200, 1000),
    (0.5, 500, 1000),
    (0.5, 1000, 1000),
]


def _mc(p: float, n: int) -> float:
    return float(1.959964 * np.sqrt(p * (1.0 - p) / n)) if n else float("nan")


def scenario(rho: float, n_z: int, n_ood: int, runs: int, resamples: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng([seed, n_z, int(rho * 100)] + ([] if n_ood == 1000 else [n_ood]))
    sim = simulate(rho, runs, resamples, rng, (n_z, n_ood, n_ood), simex=True)
    r, corrected, true = sim["r"], sim["corrected"], sim["true"]
    have = np.isfinite(corrected)
    covers = (sim["lo"][have] <= rho) & (sim["hi"][have] >= rho)
    percentile = (sim["pct_lo"][have] <= rho) & (sim["pct_hi"][have] >= rho)
    item = (sim["item_lo"][have] <= true[have]) & (sim["item_hi"][have] >= true[have])
    return {
        "rho": rho,
        "n_in_domain": n_z,
        "n_ood": n_ood,
        "runs": runs,
        "resamples": resamples,
        "naive_mean": float(r.mean()),
        "naive_bias": float(r.mean() - rho),
        "naive_positive": float((r > 0).mean()),
        "naive_ci_covers": float(np.mean((sim["naive_lo"] <= rho) & (sim["naive_hi"] >= rho))),
        "corrected_mean": float(np.nanmean(corrected)),
        "corrected_bias": float(np.nanmean(corrected) - rho),
        "corrected_median_bias": float(np.nanmedian(corrected) - rho),
        "corrected_nan": float((~have).mean()),
        "corrected_ci_covers": float(covers.mean()),
        "corrected_ci_mc": _mc(float(covers.mean()), int(have.sum())),
        "corrected_ci_unbounded": float(np.mean((sim["lo"] == -1.0) & (sim["hi"] == 1.0))),
        "percentile_ci_covers": float(percentile.mean()),
        "item_ci_covers": float(item.mean()),
        "item_ci_mc": _mc(float(item.mean()), int(have.sum())),
        "simex_bias": float(np.nanmean(sim["simex"]) - rho),
        "gam_bias": float(np.nanmean(sim["gam"]) - rho),
        "simex_gam_bias": float(np.nanmean(sim["simex_gam"]) - rho),
    }


def main() -> None:
    parser = scenario_parser(__doc__, runs=1000, out="item_noise.csv")
    parser.add_argument("--resamples", type=int, default=400)
    args = parser.parse_args()
    run_scenarios(
        SCENARIOS, args, lambda rho, n_z, n_ood: scenario(rho, n_z, n_ood, args.runs, args.resamples, args.seed)
    )


def scenario_parser(doc: str | None, *, runs: int, out: str) -> argparse.ArgumentParser:
    """The options of a planted-scenario benchmark: ``--runs``, ``--seed``, ``--out`` (in results/), ``--only``."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=runs)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / out)
    parser.add_argument("--only", nargs="+", metavar="RHO:N_Z[:N_OOD]", help="only these scenarios")
    return parser


def run_scenarios(
    scenarios: list[tuple[float, int, int]],
    args: argparse.Namespace,
    measure: Callable[[float, int, int], dict[str, float]],
) -> None:
    """``measure`` each scenario (rho, in-domain items, OOD items), or those of ``args.only`` (``RHO:N_Z[:N_OOD]``),
    saying how long each took; the rows written to ``args.out`` (CSV) and printed."""
    chosen = scenarios
    if args.only:
        chosen = []
        for item in args.only:
            parts = item.split(":")
            chosen.append((float(parts[0]), int(parts[1]), int(parts[2]) if len(parts) > 2 else 1000))
    results = []
    for rho, n_z, n_ood in chosen:
        start = time.perf_counter()
        results.append(measure(rho, n_z, n_ood))
        print(f"rho {rho}, {n_z} in-domain items, {n_ood} OOD: {time.perf_counter() - start:.0f} s", flush=True)
    table = pl.DataFrame(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.write_csv(args.out, float_precision=4)
    with pl.Config(tbl_cols=-1, tbl_width_chars=250):
        print(table)


if __name__ == "__main__":
    main()
