"""Block-bootstrap confidence intervals for partial correlations of training curves.

Checkpoints are resampled in blocks of consecutive steps (``arch.bootstrap``:
circular or stationary), so that each resample keeps the curves'
autocorrelation; the residualizer is re-fitted inside every resample, all
resamples of a run at once (:meth:`ood_store._analysis.partial`'s fits).

arch is an optional dependency, the ``bootstrap`` extra (``pip install -e
".[bootstrap]"``): it requires statsmodels and pandas (about 1.5 s and
600 modules to import), which nothing else in the analysis needs, and the
bootstrap is off unless asked for. It is imported here only, when a bootstrap
runs; without it :func:`require_arch` stops the analysis in one line before
anything is computed.
"""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType

import numpy as np

from ood_store._errors import AnalysisError, install_hint

BOOTSTRAP_KINDS = ("circular", "stationary")
EXTRA = "bootstrap"  # the optional dependency group of pyproject.toml that installs arch


def require_arch() -> ModuleType:
    """``arch.bootstrap``, or an :class:`~ood_store._errors.AnalysisError` naming the extra that installs it."""
    try:
        return importlib.import_module("arch.bootstrap")
    except ImportError:
        raise AnalysisError(
            f"the block bootstrap needs the arch package: {install_hint(EXTRA)}", parameter="bootstrap"
        ) from None


def block_length(residuals: np.ndarray, kind: str) -> int:
    """Politis–White (2004, with Patton et al. 2009's correction) block length: median over the series.

    ``arch.bootstrap.optimal_block_length`` gives one length per residual
    series; the median, rounded up, is used for all of them, between 1 and n.
    Series for which it is undefined (arch divides by zero on a series with
    no autocorrelation to speak of, and warns) are left out; with none left the length is 1.
    """
    optimal_block_length = require_arch().optimal_block_length
    n = residuals.shape[0]
    residuals = residuals[:, np.isfinite(residuals).all(axis=0)]
    if residuals.shape[1] == 0:
        return 1
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        lengths = optimal_block_length(residuals)[kind].to_numpy()
    lengths = lengths[np.isfinite(lengths)]
    if lengths.size == 0:
        return 1
    return int(np.clip(np.ceil(np.median(lengths)), 1, n))


def resample_indices(n: int, reps: int, length: int, kind: str, seed: np.random.Generator) -> np.ndarray:
    """``reps`` × ``n`` indices of checkpoints, one block-bootstrap resample per row (arch's resamplers)."""
    arch = require_arch()
    cls = arch.CircularBlockBootstrap if kind == "circular" else arch.StationaryBootstrap
    resampler = cls(length, np.arange(n), seed=seed)
    return np.stack([data[0] for data, _ in resampler.bootstrap(reps)]) if reps else np.zeros((0, n), dtype=int)


def percentile_ci(draws: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of each column of ``draws`` (resamples × pairs), NaN draws left out.

    A column without any finite draw gives NaN.
    """
    tail = (1.0 - confidence) / 2.0 * 100.0
    valid = np.isfinite(draws).sum(axis=0) > 0
    low = np.full(draws.shape[1], np.nan)
    high = np.full(draws.shape[1], np.nan)
    if valid.any():
        low[valid], high[valid] = np.nanpercentile(draws[:, valid], [tail, 100.0 - tail], axis=0)
    return low, high
