"""A planted study of items: a latent ability over checkpoints answers the items of three testsets.

In-domain, X and Y are testsets of items of uniform difficulty; at checkpoint
``t`` item ``i`` of a testset is answered correctly with probability
``a_t + s_t - b_i``, with ``a_t`` the ability (a rising line with a wobble),
``s_t`` the testset's own signal (0 for the in-domain testset; X's and Y's
correlated ``rho`` at each checkpoint, independent over checkpoints) and
``b_i`` the item's difficulty. An item's answers persist over checkpoints (a
Gaussian AR(1) of correlation ``persistence`` thresholded at that
probability). The noise-free scores (the item population's means) are then
exactly linear in ``a_t`` and ``s_t``, so that X and Y are related only
through ability when ``rho`` is 0, and their noise-free partial correlation
given the in-domain score is the correlation of ``s^x`` and ``s^y`` with the
ability's line taken out: the truth each run is scored against.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from scipy import special

from ood_store._analysis import itemstats
from ood_store._analysis.bootstrap import percentile_ci
from ood_store._analysis.itemstats import partial_from_covariance

#: The planted study of the tests and of ``benchmarks/item_noise.py``: 30 checkpoints, OOD testsets of 1,000 items.
PLANTED: dict[str, Any] = {"signal_sd": 0.057, "span": 0.42, "wobble_sd": 0.028, "difficulty": 0.1}


@dataclass(frozen=True)
class PlantedRun:
    """One simulated run: item matrices (in-domain, X, Y) and the noise-free partial correlation of X and Y."""

    matrices: tuple[np.ndarray, ...]  # items × checkpoints, 0/1
    true_scores: np.ndarray  # checkpoints × 3: each testset's item population mean
    true_r: float  # partial correlation of the noise-free X and Y given the noise-free in-domain score


def planted_run(
    rng: np.random.Generator,
    *,
    checkpoints: int = 30,
    items: Sequence[int] = (100, 400, 400),
    rho: float = 0.0,
    signal_sd: float = 0.03,
    wobble_sd: float = 0.02,
    span: float = 0.3,
    difficulty: float = 0.2,
    persistence: float = 0.5,
    autocorrelation: float = 0.0,
) -> PlantedRun:
    """One run of the planted model (see the module); ``items`` are the in-domain, X and Y testsets' sizes.

    ``autocorrelation``: X's and Y's signals are stationary Gaussian AR(1) series over the checkpoints with
    this lag-1 correlation (0: independent, as the module says); their correlation at a checkpoint is still
    ``rho``. The same draws are used whatever it is.
    """
    T = checkpoints
    ability = 0.5 + span * np.linspace(-0.5, 0.5, T) + wobble_sd * rng.standard_normal(T)
    shared = _ar1(rng.standard_normal(T), autocorrelation)
    own = _ar1(rng.standard_normal((2, T)), autocorrelation)
    signals = np.zeros((3, T))
    signals[1:] = signal_sd * (np.sqrt(abs(rho)) * shared * np.array([[1.0], [np.sign(rho) or 1.0]]))
    signals[1:] += signal_sd * np.sqrt(1.0 - abs(rho)) * own
    true_scores = (ability + signals).T  # the population mean of a_t + s_t - b over b ~ U(-d, d)
    matrices = draw_items(rng, true_scores, items, difficulty=difficulty, persistence=persistence)
    centered = true_scores - true_scores.mean(axis=0)
    true_r = float(partial_from_covariance(centered.T @ centered / T)[0, 1])
    return PlantedRun(tuple(matrices), true_scores, true_r)


def _ar1(innovations: np.ndarray, phi: float) -> np.ndarray:
    """Stationary AR(1) series of unit variance along the last axis, from innovations z:
    e_0 = z_0, e_t = phi e_(t-1) + sqrt(1 - phi^2) z_t."""
    out = innovations.copy()
    scale = np.sqrt(1.0 - phi**2)
    for t in range(1, out.shape[-1]):
        out[..., t] = phi * out[..., t - 1] + scale * innovations[..., t]
    return out


def long_frame(runs: dict[str, Sequence[np.ndarray]], tasks: Sequence[str]) -> pl.DataFrame:
    """Planted runs' item matrices (items × checkpoints, one per task of ``tasks``) as the long frame that
    :func:`~ood_store._analysis.items.item_correlations` reads: ``run, step, task, item, value``, the
    checkpoints at steps 0, 10, 20, ..."""
    parts = []
    for run, matrices in runs.items():
        for task, Y in zip(tasks, matrices, strict=True):
            n, T = Y.shape
            parts.append(
                pl.DataFrame(
                    {
                        "run": run,
                        "step": np.tile(np.arange(T) * 10, n),
                        "task": task,
                        "item": np.repeat(np.arange(n), T),
                        "value": Y.ravel(),
                    }
                )
            )
    return pl.concat(parts)


def draw_items(
    rng: np.random.Generator,
    true_scores: np.ndarray,
    items: Sequence[int],
    *,
    difficulty: float = 0.2,
    persistence: float = 0.5,
) -> tuple[np.ndarray, ...]:
    """Item matrices (items × checkpoints, 0/1) of testsets whose item populations score ``true_scores`` (T × tasks)."""
    T = true_scores.shape[0]
    matrices = []
    for j, n in enumerate(items):
        b = rng.uniform(-difficulty, difficulty, n)
        p = np.clip(true_scores[:, j] - b[:, None], 0.0, 1.0)
        noise = np.empty((n, T))
        noise[:, 0] = rng.standard_normal(n)
        for t in range(1, T):
            noise[:, t] = persistence * noise[:, t - 1] + np.sqrt(1.0 - persistence**2) * rng.standard_normal(n)
        matrices.append((special.ndtr(noise) < p).astype(float))
    return tuple(matrices)


def simulate(
    rho: float,
    runs: int,
    resamples: int,
    rng: np.random.Generator,
    items: Sequence[int] = (200, 1000, 1000),
    simex: bool = False,
) -> dict[str, np.ndarray]:
    """``runs`` planted runs analyzed: per run the truth, the naive and corrected r and the corrected r's intervals.

    Keys: ``true`` (the run's noise-free partial r), ``r`` and its Fisher interval ``naive_lo``/``naive_hi``
    (``n - 4``), ``corrected``, ``item_lo``/``item_hi`` (the item-bootstrap interval of the corrected r,
    ``corrected_item_ci_*``), ``lo``/``hi`` (``corrected_ci_*``, :func:`~ood_store._analysis.itemstats.corrected_ci`)
    and ``pct_lo``/``pct_hi`` (the plain percentile interval of the convolved draws, for comparison), at 95 %.
    With ``simex``, also ``simex`` (SIMEX with the linear residualizer), ``gam`` (the naive GAM partial r) and
    ``simex_gam`` (SIMEX through the GAM).
    """
    from ood_store._analysis.partial import Options, _Fit

    gam = Options(in_domain="in-domain", residualizer="gam")
    rows = []
    for _ in range(runs):
        run = planted_run(rng, rho=rho, items=items, **PLANTED)
        scores, cov, error = itemstats.statistics(run.matrices)
        T = run.true_scores.shape[0]
        r = partial_from_covariance(cov)[0, 0, 1]
        corrected = partial_from_covariance(itemstats.corrected(cov, error))[0, 0, 1]
        _, draws = itemstats.item_bootstrap(run.matrices, resamples, rng)
        item_lo, item_hi = percentile_ci(draws[:, 0, 1:2])
        lo, hi = itemstats.corrected_ci(draws[:, 0, 1:2], np.array([corrected]), T)
        pct_lo, pct_hi = _percentile_convolved(draws[:, 0, 1], T)
        half = 1.959964 / np.sqrt(T - 4)
        naive = (np.tanh(np.arctanh(r) - half), np.tanh(np.arctanh(r) + half))
        extra = [np.nan] * 3
        if simex:
            linear, _ = itemstats.simex(scores[0], error[0], _linear, rng, naive=partial_from_covariance(cov[0]))
            fit = _Fit(scores[0][:, :1], scores[0][:, 1:], gam)
            through_gam, _ = itemstats.simex(scores[0], error[0], _through(fit), rng, naive=fit.corr)
            extra = [linear[0, 1], fit.corr[0, 1], through_gam[0, 1]]
        rows.append((run.true_r, r, *naive, corrected, item_lo[0], item_hi[0], lo[0], hi[0], pct_lo, pct_hi, *extra))
    names = "true r naive_lo naive_hi corrected item_lo item_hi lo hi pct_lo pct_hi simex gam simex_gam".split()
    return dict(zip(names, np.array(rows, dtype=float).T, strict=True))


def _through(fit: Any) -> Callable[[np.ndarray], np.ndarray]:
    """The partial correlations of a stack of score matrices (k × T × m) through a fitted analysis (``_Fit``)."""

    def correlations(stack: np.ndarray) -> np.ndarray:
        return np.asarray(fit.correlations_of(stack[:, :, :1], stack[:, :, 1:]))

    return correlations


def _linear(stack: np.ndarray) -> np.ndarray:
    """Linear partial correlations of a stack of score matrices (k × T × m): k × p × p."""
    centered = stack - stack.mean(axis=1, keepdims=True)
    return partial_from_covariance(np.einsum("kti,ktj->kij", centered, centered) / stack.shape[1])


def _percentile_convolved(draws: np.ndarray, n: int, grid: int = 200) -> tuple[float, float]:
    """The former interval, for comparison: percentile of the item draws (z) convolved with Fisher's normal."""
    z = np.arctanh(np.clip(draws[np.isfinite(draws)], -1 + 1e-6, 1 - 1e-6))
    if not z.size:
        return np.nan, np.nan
    quantiles = special.ndtri((np.arange(grid) + 0.5) / grid) / np.sqrt(n - 4)
    lo, hi = np.percentile((z[:, None] + quantiles[None, :]).ravel(), [2.5, 97.5])
    return float(np.tanh(lo)), float(np.tanh(hi))
