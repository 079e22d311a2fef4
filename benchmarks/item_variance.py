"""Why the corrected item intervals over-cover at 60 in-domain items: the item draws' spread against the truth's.

    python benchmarks/item_variance.py [--runs 40] [--redraws 60] [--resamples 200] [--fieller 400]
                                       [--calibrated 50] [--seed 0] [--out benchmarks/results/item_variance.csv]

``corrected_item_ci`` of ``analyze --items`` is a BCa interval of the item draws of ``r_corrected``
(:func:`ood_store._analysis.itemstats.item_bootstrap`, ``boundary=True``): it is as wide as those draws
scatter. Here the truth's scatter is known. For each of RUNS planted runs
(:func:`ood_store._analysis.itemsim.planted_run`, the planted study of benchmarks/item_boot_coverage.py, whose
``item_bca_coverage.csv`` measured 98.3-99.7 % coverage at 60 in-domain items) the run's noise-free scores are
kept and its items drawn again REDRAWS times (:func:`~ood_store._analysis.itemsim.draw_items`: fresh items, as
another study would have drawn them). Per run, over those draws:

  true_scale   the scale of r_corrected across the fresh draws: the interquartile range over 1.349 (a
               normal's standard deviation; the draws of a ratio have long tails, so not their SD)
  draws_scale  the same scale of one analysis' item draws (RESAMPLES of them), averaged over the REDRAWS
               analyses: what the interval is built from

and their ratio. Per setting (rho, in-domain items) it writes the median over runs of the ratio and its
quartiles. A ratio of 1 is an interval as wide as the truth asks; the 95 % interval of a normal whose scale
is overstated by a factor k covers 2 Φ(1.96 k) - 1 (k = 1.25: 98.6 %).

It also measures the interval a test inversion would give instead (Fieller 1954, as for a ratio whose
denominator may be 0), over FIELLER fresh planted runs a setting: ``r_corrected = c / g`` (``c`` the corrected
partial covariance of X and Y given the in-domain score, ``g`` the root of the product of their corrected
partial variances); r0 is in the set where ``(c - r0 g)² <= 1.96² Var*(c* - r0 g*)``, the variance over 1,000
plain item resamples (each testset's items drawn with replacement; the corrected covariance of each). It
always contains ``c / g``. ``fieller_covers``: the share of runs with a corrected r whose set holds the run's
own noise-free partial r (``PlantedRun.true_r``, what ``corrected_item_ci`` is for); ``fieller_width``: the
median length of the set (within [-1, 1]).

And whether a second level of resamples calibrates that set (the bootstrap-t of the inversion; Hall 1992), over
CALIBRATED fresh runs with 60 in-domain items (at 5,000 it would take hours): 200 outer item resamples, each
with its own 200 inner ones, give the studentized ``(c* - r g*)² / Var**(c** - r g**)`` at the run's own
estimate ``r``; its 95th percentile replaces 1.96² (``calibrated_critical``, the median over runs) in the set
(``calibrated_covers``, beside ``plain_covers`` of the same runs' uncalibrated sets).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl

from ood_store._analysis import itemstats
from ood_store._analysis.itemsim import PLANTED, draw_items, planted_run

OUT = Path(__file__).parent / "results" / "item_variance.csv"
SETTINGS = ((0.0, 60), (0.5, 60), (0.0, 5000), (0.5, 5000))
N_OOD = 1000


def scale(values: np.ndarray) -> float:
    """Interquartile range over 1.349 of the finite ``values`` (a normal's SD), NaN if fewer than 4."""
    finite = values[np.isfinite(values)]
    if finite.size < 4:
        return float("nan")
    q1, q3 = np.percentile(finite, [25, 75])
    return float((q3 - q1) / 1.349)


def conditional(cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``c`` and ``g`` of (corrected) covariance matrices (… × 3 × 3; in-domain first): X's and Y's covariance
    given the in-domain score, and the root of the product of their variances given it (0 where one is not
    positive)."""
    s00, s0 = cov[..., 0, 0], cov[..., 0, 1:]
    given = cov[..., 1:, 1:] - s0[..., :, None] * s0[..., None, :] / s00[..., None, None]
    return given[..., 0, 1], np.sqrt(np.clip(given[..., 0, 0], 0, None) * np.clip(given[..., 1, 1], 0, None))


def fieller(rng: np.random.Generator, rho: float, n_z: int, resamples: int = 1000) -> tuple[bool, float] | None:
    """One fresh planted run's Fieller set on a grid of r0 over [-1, 1]: does it hold the run's true r, and its
    length. None where the run has no corrected r."""
    run = planted_run(rng, rho=rho, items=(n_z, N_OOD, N_OOD), **PLANTED)
    _, cov, error = itemstats.statistics(run.matrices)
    corrected = itemstats.corrected(cov[0], error[0])
    c, g = conditional(corrected)
    if not (corrected[0, 0] > 0 and g > 0):
        return None
    weights = [itemstats.item_weights(Y.shape[0], resamples, rng) for Y in run.matrices]
    _, cov_b, error_b = itemstats.statistics(run.matrices, weights)
    c_b, g_b = conditional(itemstats.corrected(cov_b, error_b))
    grid = np.linspace(-1.0, 1.0, 401)
    inside = (c - grid * g) ** 2 <= 1.959964**2 * np.var(c_b[:, None] - grid[None, :] * g_b[:, None], axis=0)
    return bool(inside[np.argmin(np.abs(grid - run.true_r))]), float(inside.mean() * 2.0)


def calibrated(rng: np.random.Generator, rho: float, n_z: int, outer: int = 200, inner: int = 200):
    """One fresh planted run's Fieller set, plain and calibrated by a second level of resamples: (plain holds
    the run's true r, calibrated holds it, the calibrated critical value); None without a corrected r."""
    run = planted_run(rng, rho=rho, items=(n_z, N_OOD, N_OOD), **PLANTED)

    def estimate(matrices, reps: int = 0):
        _, cov, error = itemstats.statistics(matrices)
        c, g = conditional(itemstats.corrected(cov[0], error[0]))
        if not reps:
            return c, g, cov[0, 0, 0] - error[0, 0]
        weights = [itemstats.item_weights(Y.shape[0], reps, rng) for Y in matrices]
        _, cov_b, error_b = itemstats.statistics(matrices, weights)
        return conditional(itemstats.corrected(cov_b, error_b))

    c, g, control = estimate(run.matrices)
    if not (control > 0 and g > 0):
        return None
    r = float(np.clip(c / g, -1.0, 1.0))
    studentized = []
    for _ in range(outer):
        drawn = [Y[rng.integers(0, Y.shape[0], Y.shape[0])] for Y in run.matrices]
        c_o, g_o, _ = estimate(drawn)
        c_i, g_i = estimate(drawn, inner)
        spread = np.var(c_i - r * g_i)
        studentized.append((c_o - r * g_o) ** 2 / spread if spread > 0 else np.inf)
    critical = float(np.quantile(studentized, 0.95))
    c_b, g_b = estimate(run.matrices, 1000)
    grid = np.linspace(-1.0, 1.0, 401)
    k = np.argmin(np.abs(grid - run.true_r))
    statistic = (c - grid[k] * g) ** 2 / np.var(c_b - grid[k] * g_b)
    return bool(statistic <= 1.959964**2), bool(statistic <= critical), critical


def one_run(rng: np.random.Generator, rho: float, n_z: int, redraws: int, resamples: int) -> dict[str, float]:
    """One planted run's true and drawn scales of r_corrected (pair x, y), over ``redraws`` fresh item draws."""
    run = planted_run(rng, rho=rho, items=(n_z, N_OOD, N_OOD), **PLANTED)
    estimates, drawn = [], []
    for _ in range(redraws):
        matrices = draw_items(rng, run.true_scores, (n_z, N_OOD, N_OOD), difficulty=PLANTED["difficulty"])
        _, cov, error = itemstats.statistics(matrices)
        estimates.append(itemstats.partial_from_covariance(itemstats.corrected(cov[0], error[0]))[0, 1])
        _, fixed = itemstats.item_bootstrap(matrices, resamples, rng, boundary=True)
        drawn.append(scale(fixed[:, 0, 1]))
    true_scale, draws_scale = scale(np.array(estimates)), float(np.nanmean(drawn))
    return {"true_r": run.true_r, "true_scale": true_scale, "draws_scale": draws_scale}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--redraws", type=int, default=60)
    parser.add_argument("--fieller", type=int, default=400, help="fresh planted runs for the Fieller sets")
    parser.add_argument("--calibrated", type=int, default=50, help="fresh runs for the calibrated sets (60 items)")
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    for name in ("runs", "redraws", "resamples", "fieller"):
        if getattr(args, name) < 4:  # an interquartile range, and a Fieller share, need a few
            parser.error(f"--{name} must be at least 4, not {getattr(args, name)}")
    if args.calibrated < 0:
        parser.error(f"--calibrated must be a number of runs (0 to skip), not {args.calibrated}")
    rows = []
    for rho, n_z in SETTINGS:
        rng = np.random.default_rng([args.seed, n_z, int(rho * 100)])
        runs = pl.DataFrame([one_run(rng, rho, n_z, args.redraws, args.resamples) for _ in range(args.runs)])
        ratio = (runs["draws_scale"] / runs["true_scale"]).to_numpy()
        q1, median, q3 = np.nanpercentile(ratio, [25, 50, 75])
        sets = [fieller(rng, rho, n_z) for _ in range(args.fieller)]
        held = np.array([s for s in sets if s is not None]).reshape(-1, 2)
        covers = float(held[:, 0].mean()) if len(held) else float("nan")  # NaN: no run had a corrected r
        width = float(np.median(held[:, 1])) if len(held) else float("nan")
        tried = [calibrated(rng, rho, n_z) for _ in range(args.calibrated if n_z <= 60 else 0)]
        calib = np.array([t for t in tried if t is not None]).reshape(-1, 3)
        some = len(calib) > 0
        calibration = {
            "calibrated_runs": len(calib),
            "plain_covers": float(np.mean(calib[:, 0])) if some else None,
            "calibrated_covers": float(np.mean(calib[:, 1])) if some else None,
            "calibrated_critical": float(np.median(calib[:, 2])) if some else None,
        }
        rows.append({"rho": rho, "n_in_domain": n_z, "runs": args.runs, "redraws": args.redraws,
                     "resamples": args.resamples, "ratio_median": median, "ratio_q1": q1, "ratio_q3": q3,
                     "true_scale_median": float(runs["true_scale"].median()), "fieller_runs": len(held),
                     "fieller_covers": covers, "fieller_width": width,
                     **calibration})  # fmt: skip
        print(f"rho {rho}, {n_z} in-domain items: draws' scale / truth's {median:.2f} ({q1:.2f}-{q3:.2f}), "
              f"{args.runs} runs × {args.redraws} draws; Fieller covers {covers:.3f} of {len(held)} "
              f"runs, median length {width:.2f}", flush=True)  # fmt: skip
    pl.DataFrame(rows).write_csv(args.out, float_precision=4)


if __name__ == "__main__":
    main()
