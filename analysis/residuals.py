"""Residualizers: remove what the in-domain score explains from each OOD series.

Both take the in-domain series ``z`` (length n) and a matrix ``X`` (n × p) of
OOD series on the same checkpoints, and return the residual matrix together
with the effective degrees of freedom of each fit (intercept included, so a
straight line has 2).

The GAM is a penalised cubic regression spline of ``z``, mgcv's
``s(z, bs = "cr", k = gam_df)``: knots at quantiles of the distinct values of
``z`` (:mod:`~ood_store._analysis.splines`), curvature penalty, smoothing
parameter of each series by REML or GCV exactly as mgcv defines them
(:mod:`~ood_store._analysis.smoothing`). The basis is built once per set of
checkpoints and shared by every series on them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ood_store._analysis.smoothing import CRITERIA, PenalizedRegression, RankDeficient
from ood_store._analysis.splines import CubicRegressionSpline, distinct_values

RESIDUALIZERS = ("linear", "gam")
SMOOTHING = CRITERIA  # ("reml", "gcv"): how the GAM's smoothing parameter is chosen
GAM_DF = 10  # mgcv's default basis dimension for s(z, bs = "cr")
GAM_MIN_DF = 3  # the smallest cubic regression spline: three knots


@dataclass(frozen=True)
class Residuals:
    """Residuals of each column of ``X`` after regressing it on ``z``."""

    values: np.ndarray  # n × p
    edf: np.ndarray  # p: effective degrees of freedom of each fit, intercept included
    smoothing_parameter: np.ndarray  # p: the GAM's smoothing parameter lambda, mgcv's sp (NaN for linear)
    basis_size: int = 2  # functions in the basis, intercept included (2: a straight line)
    note: str | None = None  # why the GAM's basis is smaller than asked for, or a line


def linear(z: np.ndarray, X: np.ndarray) -> Residuals:
    """OLS of every column of ``X`` on ``[1, z]``: ``X`` less its projection on the design, ``X - Q Q'X`` (``Q`` of
    the design's QR decomposition), every column at once.

    ``z`` may also be a matrix of ``k`` controls (n × k); the fits then have ``k + 1`` degrees of freedom.
    """
    controls = z.reshape(z.shape[0], -1)
    design = np.column_stack([np.ones(controls.shape[0]), controls - controls.mean(axis=0)])
    Q, _ = np.linalg.qr(design)
    p = X.shape[1]
    return Residuals(X - Q @ (Q.T @ X), np.full(p, float(design.shape[1])), np.full(p, np.nan), design.shape[1])


def gam_basis_size(n: int, distinct: int, df: int) -> int:
    """The basis dimension used for ``n`` checkpoints with ``distinct`` in-domain values: ``min(df, distinct, n - 3)``.

    ``n - 3`` keeps ``n - edf - 2`` (the Fisher interval's degrees of freedom) positive.
    """
    return min(df, distinct, n - 3)


class GamSmoother:
    """The penalised spline of one in-domain series, to fit any OOD series on the same checkpoints.

    ``z`` is rescaled to [0, 1] (the fit does not depend on it; the smoothing
    parameter ``lambda`` then multiplies ``integral f''(u)^2 du`` on [0, 1]).
    When ``z`` has too few distinct values for the basis asked for, the basis
    shrinks (``note`` says so); below three it is the straight line
    (``spline`` is None).
    """

    def __init__(self, z: np.ndarray, df: int = GAM_DF):
        z = np.asarray(z, dtype=float)
        self.n = z.size
        self.offset = float(z.min())
        self.span = float(z.max() - z.min()) or 1.0
        u = (z - self.offset) / self.span
        distinct = distinct_values(u).size
        k = gam_basis_size(self.n, distinct, df)
        self.spline: CubicRegressionSpline | None = None
        self.regression: PenalizedRegression | None = None
        while k >= GAM_MIN_DF:
            spline = CubicRegressionSpline.on(u, k)
            try:
                self.regression = PenalizedRegression(spline.design(u), spline.penalty)
            except RankDeficient:
                k -= 1
                continue
            self.spline = spline
            break
        self.basis_size = k if self.spline is not None else 2
        self.note = None
        if self.spline is None:
            self.note = f"the in-domain score has {distinct} distinct values: the GAM is a straight line"
        elif k < df:
            self.note = (
                f"GAM basis of {k} functions, not {df}: {distinct} distinct in-domain values on {self.n} checkpoints"
            )
        self._z = z

    def fit(self, X: np.ndarray, smoothing: str = "reml", smoothing_parameter: np.ndarray | None = None) -> Residuals:
        """Residuals of every column of ``X``; ``lambda`` by ``smoothing`` per column unless ``smoothing_parameter``
        gives it."""
        if self.regression is None:
            line = linear(self._z, X)
            return Residuals(line.values, line.edf, line.smoothing_parameter, 2, self.note)
        fit = self.regression.fit(X, smoothing, smoothing_parameter)
        return Residuals(fit.residuals, fit.edf, fit.smoothing_parameter, self.basis_size, self.note)

    def design(self, z: np.ndarray) -> np.ndarray:
        """The model matrix at in-domain values ``z`` (same knots and scaling as the fit)."""
        u = (np.asarray(z, dtype=float) - self.offset) / self.span
        if self.spline is None:
            return np.column_stack([np.ones_like(u), u])
        return self.spline.design(u)

    @property
    def penalty(self) -> np.ndarray:
        """The penalty matrix ``S`` (zero for the straight line)."""
        return np.zeros((2, 2)) if self.spline is None else self.spline.penalty

    @property
    def penalty_root(self) -> np.ndarray:
        """``E`` with ``E'E = S``, exactly zero on straight lines (no rows for the straight line)."""
        return np.zeros((0, 2)) if self.spline is None else self.spline.penalty_root


def gam(
    z: np.ndarray,
    X: np.ndarray,
    df: int = GAM_DF,
    smoothing_parameter: np.ndarray | None = None,
    smoothing: str = "reml",
) -> Residuals:
    """Penalised cubic regression spline of each column of ``X`` on ``z``, as mgcv's ``s(z, bs = "cr", k = df)``.

    The basis has ``min(df, distinct values of z, n - 3)`` functions,
    intercept included; the penalty is on the second derivative, so a large
    ``lambda`` gives back the straight line. Unless ``smoothing_parameter`` is given (one
    ``lambda`` per column, for ``z`` rescaled to [0, 1]), each column's
    ``lambda`` minimizes ``smoothing``: ``"reml"`` (mgcv ``method = "REML"``)
    or ``"gcv"`` (mgcv ``method = "GCV.Cp"``, ``n RSS / (n - edf)^2``).

    Examples
    --------
    Eleven checkpoints tied at 0, as Pythia's zero-shot LAMBADA: the same
    ``z`` and ``lambda`` give the same effective degrees of freedom for every series.

    >>> rng = np.random.default_rng(0)
    >>> z = np.r_[np.zeros(11), np.linspace(0.04, 0.52, 16)]
    >>> X = rng.normal(size=(27, 3)) * 0.01 + z[:, None]
    >>> fit = gam(z, X, smoothing_parameter=np.full(3, 1e-4))
    >>> fit.basis_size, bool(fit.edf[0] == fit.edf[1] == fit.edf[2])
    (10, True)
    """
    return GamSmoother(z, df).fit(X, smoothing, smoothing_parameter)


def linear_resampled(Z: np.ndarray, X: np.ndarray) -> np.ndarray:
    """:func:`linear` on a stack of resamples: ``Z`` r × n × k controls, ``X`` r × n × p; residuals r × n × p."""
    centered = Z - Z.mean(axis=1, keepdims=True)
    design = np.concatenate([np.ones(Z.shape[:2] + (1,)), centered], axis=2)
    Q, _ = np.linalg.qr(design)
    return X - Q @ (np.swapaxes(Q, 1, 2) @ X)


def penalized_resampled(
    design: np.ndarray, X: np.ndarray, root: np.ndarray, smoothing_parameter: np.ndarray
) -> np.ndarray:
    """Penalised least squares with a fixed ``lambda`` per column, on a stack of resamples at once.

    ``design`` r × n × k (the same basis evaluated at each resample's in-domain
    values), ``X`` r × n × p, ``root`` m × k (``E`` with ``E'E`` the penalty),
    ``smoothing_parameter`` p (each column's ``lambda``). Every (resample, column) is the least-squares solve of
    ``[design; sqrt(lambda) E] beta = [x; 0]`` (by QR, as stable as the
    problem allows), all in one batched NumPy call. Returns the residuals, r × n × p.
    """
    r, n, k = design.shape
    m = root.shape[0]
    weights = np.sqrt(np.asarray(smoothing_parameter, dtype=float))
    stacked = np.concatenate(
        [
            np.broadcast_to(design[:, None], (r, weights.size, n, k)),
            np.broadcast_to(weights[None, :, None, None] * root, (r, weights.size, m, k)),
        ],
        axis=2,
    )  # r × p × (n + m) × k
    Q, R = np.linalg.qr(stacked)
    rhs = np.einsum("rpnk,rnp->rpk", Q[:, :, :n, :], X)
    coef = np.linalg.solve(R, rhs[..., None])[..., 0]  # r × p × k
    return X - np.einsum("rnk,rpk->rnp", design, coef)
