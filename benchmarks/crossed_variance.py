"""Which variance the pooled r* over items and runs may use: the runs' spread (shipped) or each run's own.

    python benchmarks/crossed_variance.py [--studies 400] [--resamples 100] [--seed 0] [--only NAME ...]
                                          [--processes 2] [--out benchmarks/results/crossed_variance.csv]

The pooled ``r* = sum tau / sum scale`` (:func:`ood_store._analysis.crossed.crossed`) is tested with
``Var(mean u) = own / R + C`` (``u`` its linearization, ``C`` the covariance the shared items give two runs).
Three estimates of ``own``, the part each run's checkpoints and answers give its ``u``, and one test that weighs
the runs otherwise:

  spread    the runs' spread of u, Student's t on Satterthwaite's df (~3.6 at 8 runs of unequal scale): shipped
  jackknife each run's own delete-a-block jackknife variance of u (in the blocks its r*'s jackknife uses,
            :func:`~ood_store._analysis.crossed.block_length`: 3 checkpoints, longer where the signals drift),
            averaged (runs as fixed: exact under the null that every run is 0), t on the jackknifes' pooled df
  larger    the larger of the two, with the df of the one chosen (the random-effects moment estimate
            tau² = max(0, spread - jackknife), as the modified Knapp-Hartung method takes it)
  weighted  not the ratio but the runs' r* weighted by their precision (1 / each run's jackknife variance of
            r*, ``ItemEvidence.within``), with Hartung & Knapp's (2001) variance, the weighted spread
            ``sum w (r* - mean)² / ((R - 1) sum w)``, plus the shared items' weighted covariance, on R - 1 df:
            the random-effects test that weighs a precise run more, at the cost of weights estimated from
            the same data

Per setting (:data:`SETTINGS`: crossed_verdicts' nulls and shared signals at 60 and 500 in-domain items, 8
runs; each also with X's and Y's signals drifting over training, ``-drift``: an AR(1) over checkpoints of lag-1
correlation 0.8, ``planted_study(signal_persistence=0.8)``) it reports the share of studies whose pooled test
rejects at 0.05 (``*_05``) and at 0.025 (``*_025``: the level of a row's pooled test after Holm over its two
tests, the pooled and Cochran's Q, as ``compare`` adjusts them for one pair), and their Monte Carlo error.

It is why the shipped test divides by the runs' spread though the jackknife would find more (docs/explanation/
statistics.md, "Where 8 runs and 60 in-domain items fall short").
"""

from __future__ import annotations

from pathlib import Path

import common
import numpy as np
import polars as pl
from scipy import stats

from ood_store._analysis import crossed
from ood_store._analysis.items import RunItems

OUT = Path(__file__).parent / "results" / "crossed_variance.csv"
BASE = {
    "null-own-60": {"items": 60, "signal": 0.3, "shared": 0.0},
    "null-pure-60": {"items": 60, "signal": 0.0, "shared": 0.0},
    "shared-0.5-60": {"items": 60, "signal": 0.3, "shared": 0.5},
    "null-own-500": {"items": 500, "signal": 0.3, "shared": 0.0},
    "shared-0.5-500": {"items": 500, "signal": 0.3, "shared": 0.5},
}
SETTINGS = {**BASE, **{f"{name}-drift": {**setting, "signal_persistence": 0.8} for name, setting in BASE.items()}}
METHODS = ("spread", "jackknife", "larger", "weighted")


def leave_block(matrices: tuple[np.ndarray, ...], block: int) -> tuple[np.ndarray, np.ndarray]:
    """One run's tau and scale of the pair (x, y) with each ``block`` of checkpoints left out (as
    :func:`~ood_store._analysis.crossed.run_tetrads` leaves them out for its r*)."""
    control = matrices[0]
    ood = np.stack([Y.mean(axis=0) for Y in matrices[1:]], axis=-1)
    T = ood.shape[0]
    taus, scales = [], []
    for start in range(0, T - block + 1, block):
        keep = np.ones(T, dtype=bool)
        keep[start : start + block] = False
        tau, scale, _ = crossed.tetrads(control[:, keep], ood[keep])
        taus.append(tau[0, 1])
        scales.append(scale[0, 1])
    return np.array(taus), np.array(scales)


def pvalues(tau, scale, draws_tau, draws_scale, leave_tau, leave_scale, within) -> dict[str, float]:
    """The pooled test's p with each estimate of the runs' own variance (:data:`METHODS`)."""
    R, g = leave_tau.shape
    ratio = tau.sum() / scale.sum()
    u = tau - ratio * scale
    cov = np.cov(draws_tau - ratio * draws_scale, rowvar=False)
    shared = max((cov.sum() - np.trace(cov)) / (R * (R - 1)), 0.0)
    spread = u.var(ddof=1)
    spread_df = max((scale**2).sum() ** 2 / (scale**4).sum() - 1.0, 1.0)  # as crossed.crossed
    left = leave_tau - ratio * leave_scale
    own = (g - 1) / g * ((left - left.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    jackknife, jackknife_df = own.mean(), own.sum() ** 2 / ((own**2) / (g - 1)).sum()
    chosen = (spread, spread_df) if spread > jackknife else (jackknife, jackknife_df)
    out = {}
    for method, (variance, df) in zip(
        METHODS[:3], [(spread, spread_df), (jackknife, jackknife_df), chosen], strict=True
    ):
        statistic = ratio * scale.mean() / np.sqrt(variance / R + shared)
        out[method] = float(2.0 * stats.t.sf(abs(statistic), df))
    out["weighted"] = hartung_knapp(tau / scale, 1.0 / within, draws_tau / draws_scale)
    return out


def hartung_knapp(r: np.ndarray, weights: np.ndarray, draws: np.ndarray) -> float:
    """p of the ``weights``-weighted mean of the runs' ``r`` (Hartung & Knapp 2001's variance, t on R - 1 df),
    with the covariance the shared items give two runs' ``r`` across ``draws`` (resamples × runs) added."""
    R, total = r.size, weights.sum()
    mean = (weights * r).sum() / total
    spread = (weights * (r - mean) ** 2).sum() / ((R - 1) * total)
    cov = np.outer(weights, weights) * np.cov(draws, rowvar=False)
    shared = max((cov.sum() - np.trace(cov)) / total**2, 0.0)
    return float(2.0 * stats.t.sf(abs(mean) / np.sqrt(spread + shared), R - 1))


def one_study(args: tuple[str, int, int, int]) -> dict:
    name, index, resamples, seed = args
    study = common.planted(SETTINGS, name, index, seed, runs=8)
    matrices = {run: RunItems(study.steps, m) for run, m in study.runs.items()}
    evidence = crossed.item_evidence(matrices, ["in-domain", "x", "y"], [("x", "y")], resamples=resamples, seed=index)
    block = int(evidence.blocks[0])
    left = [leave_block(m, block) for m in study.runs.values()]
    leave_tau, leave_scale = (np.array(part) for part in zip(*left, strict=True))
    tau, scale, within = evidence.tau[:, 0], evidence.scale[:, 0], evidence.within[:, 0]
    draws_tau, draws_scale = evidence.draws_tau[:, :, 0], evidence.draws_scale[:, :, 0]
    # the runs crossed.crossed pools (a run whose r* or jackknife is not finite is left out there too)
    use = np.isfinite(tau) & np.isfinite(scale) & (scale > 0) & np.isfinite(within)
    use &= np.isfinite(draws_tau).all(axis=0) & np.isfinite(draws_scale).all(axis=0)
    use &= np.isfinite(leave_tau).all(axis=1) & np.isfinite(leave_scale).all(axis=1)
    ps = pvalues(
        tau[use], scale[use], draws_tau[:, use], draws_scale[:, use], leave_tau[use], leave_scale[use], within[use]
    )
    shipped = crossed.crossed(tau, scale, draws_tau, draws_scale, within)
    assert np.isclose(ps["spread"], shipped.pvalue, rtol=1e-9, atol=0), (ps["spread"], shipped.pvalue)
    return {"setting": name, **ps}


def summarize(rows: pl.DataFrame) -> pl.DataFrame:
    out = []
    for (name,), part in rows.group_by("setting", maintain_order=True):
        row: dict[str, object] = {"setting": name, "studies": part.height}
        for method in METHODS:
            for alpha, label in ((0.05, "05"), (0.025, "025")):
                share = float((part[method] < alpha).mean())
                row[f"{method}_{label}"] = share
                row[f"{method}_{label}_mc"] = 1.96 * np.sqrt(share * (1 - share) / part.height)
        out.append(row)
    return pl.DataFrame(out)


def main() -> None:
    parser = common.planted_arguments(__doc__.splitlines()[0], SETTINGS, OUT)
    parser.set_defaults(resamples=100)
    args = parser.parse_args()
    common.write_table(*common.run_planted(args, SETTINGS, one_study, summarize, " × 8 runs"), args.out)


if __name__ == "__main__":
    main()
