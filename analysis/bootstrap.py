"""Block-bootstrap confidence intervals for partial correlations of training curves.

Checkpoints are resampled in blocks of consecutive steps (``arch.bootstrap``:
circular or stationary), so that each resample keeps the curves'
autocorrelation; the residualiser is re-fitted inside every resample.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

BOOTSTRAP_KINDS = ("circular", "stationary")


def block_length(residuals: np.ndarray, kind: str) -> int:
    """Politis–White (2004, with Patton et al. 2009's correction) block length: median over the series.

    ``arch.bootstrap.optimal_block_length`` gives one length per residual
    series; the median, rounded up, is used for all of them, between 1 and n.
    """
    from arch.bootstrap import optimal_block_length

    n = residuals.shape[0]
    lengths = optimal_block_length(residuals)[kind].to_numpy()
    lengths = lengths[np.isfinite(lengths)]
    if lengths.size == 0:
        return 1
    return int(np.clip(np.ceil(np.median(lengths)), 1, n))


def percentile_ci(
    z: np.ndarray,
    X: np.ndarray,
    pairs: tuple[np.ndarray, np.ndarray],
    correlate: Callable[[np.ndarray, np.ndarray], np.ndarray],
    *,
    reps: int,
    length: int,
    kind: str,
    seed: np.random.Generator,
    confidence: float = 0.95,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of each pair's r over ``reps`` block-bootstrap resamples of the checkpoints.

    ``correlate(z, X)`` returns the correlation matrix of the residualised
    columns of ``X`` (re-fitting the residualiser on the resample); resamples
    where a pair's r is undefined (a constant resampled series) are left out.
    """
    from arch.bootstrap import CircularBlockBootstrap, StationaryBootstrap

    cls = CircularBlockBootstrap if kind == "circular" else StationaryBootstrap
    resampler = cls(length, np.arange(z.shape[0]), seed=seed)
    draws = np.full((reps, pairs[0].size), np.nan)
    for b, (data, _) in enumerate(resampler.bootstrap(reps)):
        idx = data[0]
        zb = z[idx]
        if (np.ptp(zb, axis=0) == 0).any():
            continue
        draws[b] = correlate(zb, X[idx])[pairs]
    tail = (1.0 - confidence) / 2.0 * 100.0
    valid = np.isfinite(draws).sum(axis=0) > 0
    low = np.full(pairs[0].size, np.nan)
    high = np.full(pairs[0].size, np.nan)
    if valid.any():
        low[valid], high[valid] = np.nanpercentile(draws[:, valid], [tail, 100.0 - tail], axis=0)
    return low, high
