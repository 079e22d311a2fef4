"""Residualisers: remove what the in-domain score explains from each OOD series.

Both take the in-domain series ``z`` (length n) and a matrix ``X`` (n × p) of
OOD series on the same checkpoints, and return the residual matrix together
with the effective degrees of freedom of each fit (intercept included, so a
straight line has 2).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

RESIDUALIZERS = ("linear", "gam")

# GAM penalty weights searched, for z scaled to [0, 1] and each series to unit variance:
# four per decade from 1e-8 (nearly an unpenalised spline) to 1e4 (a straight line).
GAM_ALPHAS = 10.0 ** np.linspace(-8.0, 4.0, 49)
GAM_DEGREE = 3


@dataclass(frozen=True)
class Residuals:
    """Residuals of each column of ``X`` after regressing it on ``z``."""

    values: np.ndarray  # n × p
    edf: np.ndarray  # p: effective degrees of freedom of each fit, intercept included
    alpha: np.ndarray  # p: GAM penalty weight chosen (NaN for linear)


def linear(z: np.ndarray, X: np.ndarray) -> Residuals:
    """OLS of every column of ``X`` on ``[1, z]`` in one least-squares solve.

    ``z`` may also be a matrix of ``k`` controls (n × k); the fits then have ``k + 1`` degrees of freedom.
    """
    controls = z.reshape(z.shape[0], -1)
    design = np.column_stack([np.ones(controls.shape[0]), controls - controls.mean(axis=0)])
    coef, *_ = np.linalg.lstsq(design, X, rcond=None)
    p = X.shape[1]
    return Residuals(X - design @ coef, np.full(p, float(design.shape[1])), np.full(p, np.nan))


def gam_basis_size(n: int, df: int) -> int:
    """The B-spline basis size used for ``n`` checkpoints: ``min(df, n - 3)``."""
    return min(df, n - 3)


def gam(z: np.ndarray, X: np.ndarray, df: int = 8, alpha: np.ndarray | None = None) -> Residuals:
    """Penalised cubic B-spline of each column of ``X`` on ``z`` (statsmodels ``GLMGam`` + ``BSplines``).

    The basis has ``min(df, n - 3)`` functions plus the intercept; the penalty
    is on the second derivative, so a large weight gives back the straight
    line. Unless ``alpha`` is given (one weight per column), each column's
    weight is the one of :data:`GAM_ALPHAS` that minimises statsmodels'
    generalised cross-validation score (GCV), with ``z`` scaled to [0, 1] and
    the column to unit variance so that the grid does not depend on units.
    """
    from statsmodels.gam.api import BSplines, GLMGam
    from statsmodels.tools.sm_exceptions import PerfectSeparationError

    n, p = X.shape
    span = z.max() - z.min()
    zs = (z - z.min()) / span
    size = gam_basis_size(n, df)
    basis = BSplines(zs[:, None], df=[size], degree=[GAM_DEGREE])
    ones = np.ones((n, 1))
    values = np.empty_like(X, dtype=float)
    edf = np.empty(p)
    chosen = np.empty(p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for j in range(p):
            x = X[:, j]
            centre, scale = x.mean(), x.std()
            xs = (x - centre) / scale
            candidates = GAM_ALPHAS if alpha is None else [alpha[j]]
            best = None
            try:
                for a in candidates:
                    fit = GLMGam(xs, exog=ones, smoother=basis, alpha=a).fit()
                    if not _sane(fit, size + 1):  # numerically broken (near-singular) fits are skipped
                        continue
                    if best is None or fit.gcv < best[0]:
                        best = (fit.gcv, a, fit)
            except PerfectSeparationError:  # the smooth fits the column exactly: nothing is left
                values[:, j], edf[j], chosen[j] = 0.0, np.nan, np.nan
                continue
            if best is None:
                values[:, j], edf[j], chosen[j] = np.nan, np.nan, np.nan
                continue
            _, chosen[j], fit = best
            values[:, j] = np.asarray(fit.resid_response) * scale
            edf[j] = float(np.sum(fit.edf))
    return Residuals(values, edf, chosen)


def _sane(fit, parameters: int) -> bool:
    """A fit whose GCV score and effective degrees of freedom are possible (1 <= edf <= parameters)."""
    edf = float(np.sum(fit.edf))
    return bool(np.isfinite(fit.gcv) and fit.gcv > 0 and np.isfinite(edf) and 1.0 - 1e-6 <= edf <= parameters + 1e-6)
