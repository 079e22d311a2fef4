"""Penalised least squares with one smoothing parameter, chosen by GCV or REML as mgcv does.

For a model matrix ``B`` (n × k, full column rank) and a penalty ``S`` whose
null space has dimension ``M`` (the straight lines of a cubic spline), the
fit of a response ``x`` for the weight ``lambda`` minimizes
``||x - B beta||^2 + lambda beta' S beta``. With ``B = QR`` and
``R^-T S R^-1 = U diag(d) U'`` (the Demmler–Reinsch form, Wood 2017, section
6.2), and ``y = U'Q'x``, every quantity is a sum over k components with
shrinkage ``a_j = lambda d_j / (1 + lambda d_j)``:

- fitted values ``QU (y (1 - a))``, effective degrees of freedom ``tau = sum(1 - a)``;
- ``RSS = e0 + sum(y^2 a^2)``, where ``e0`` is what no column of ``B`` explains;
- GCV, as mgcv's ``method = "GCV.Cp"`` with unknown scale: ``n RSS / (n - tau)^2``;
- REML, as mgcv's ``method = "REML"`` with the scale profiled out:
  ``(n - M)/2 log(RSS + lambda beta'S beta) + 1/2 sum log(1 + lambda d) - (k - M)/2 log(lambda)``,
  where ``RSS + lambda beta'S beta = e0 + sum(y^2 a)``.

One decomposition serves every response on the same rows, and the criteria
for all responses on a grid of ``log lambda`` are one array expression. The
minimum is then located exactly by bisection on the analytic derivative
within the best grid cell, so the chosen ``lambda`` is a continuous function
of the data (a grid alone would make it jump), determined to rounding error,
and the same on any machine.

statsmodels' ``GLMGam`` minimizes a different GCV (its ``gcv`` attribute),
and neither it nor scipy offers REML smoothness selection; the algebra here
uses scipy's and NumPy's decompositions. The agreement with R's mgcv is
tested in ``tests/test_analysis_gam.py`` against ``tests/reference/``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

CRITERIA = ("reml", "gcv")

# The grid of log(lambda): from 1e-8 / d_max (no component shrunk) to 1e8 / d_min (every one gone), this step.
_GRID_STEP = 0.5
_SPAN = np.log(1e8)
_BISECTIONS = 64
# The design must be this well conditioned for the decomposition to be exact to ~1e-12.
MAX_CONDITION = 1e8


class RankDeficient(ValueError):
    """The model matrix is (numerically) not of full column rank."""


@dataclass(frozen=True)
class Fit:
    """The penalised fits of the columns of a response matrix."""

    fitted: np.ndarray  # n × p
    residuals: np.ndarray  # n × p
    edf: np.ndarray  # p: trace of the hat matrix (null space included)
    smoothing_parameter: np.ndarray  # p: lambda (mgcv's sp)


class PenalizedRegression:
    """One model matrix and penalty on fixed rows, decomposed once for any number of responses.

    Parameters
    ----------
    design : ndarray, n × k
        The model matrix, full column rank (else :class:`RankDeficient`).
    penalty : ndarray, k × k
        Symmetric positive semi-definite penalty matrix.
    null_dim : int
        Dimension of the penalty's null space (2 for a cubic spline: constant and slope);
        that many eigenvalues of the transformed penalty are set to exactly zero.

    Examples
    --------
    A straight line through noise-free data is left alone by any penalty:

    >>> from ood_store._analysis.splines import CubicRegressionSpline
    >>> z = np.linspace(0, 1, 20)
    >>> spline = CubicRegressionSpline.on(z, 6)
    >>> fit = PenalizedRegression(spline.design(z), spline.penalty).fit((2 * z + 1)[:, None], "gcv")
    >>> bool(np.abs(fit.residuals).max() < 1e-12)
    True
    """

    def __init__(self, design: np.ndarray, penalty: np.ndarray, null_dim: int = 2):
        n, k = design.shape
        if n <= k:
            raise RankDeficient(f"{n} rows cannot determine {k} coefficients")
        Q, R = np.linalg.qr(design)
        singular = np.linalg.svd(R, compute_uv=False)
        if singular[-1] <= singular[0] / MAX_CONDITION:
            raise RankDeficient(f"the model matrix has condition number {singular[0] / max(singular[-1], 1e-300):.3g}")
        Rinv = np.linalg.solve(R, np.eye(k))  # (scipy's solve_triangular costs 8 ms a call here, numpy's 12 µs)
        transformed = Rinv.T @ penalty @ Rinv
        d, U = np.linalg.eigh((transformed + transformed.T) / 2.0)
        d[:null_dim] = 0.0  # the null space, exactly (eigh sorts ascending)
        self.d = np.maximum(d, 0.0)
        self.basis = Q @ U  # n × k, orthonormal columns
        self.n, self.k, self.null_dim = n, k, null_dim
        positive = self.d[self.d > 0]
        low = -_SPAN - np.log(positive.max())
        high = _SPAN - np.log(positive.min())
        self.grid = np.linspace(low, high, int(np.ceil((high - low) / _GRID_STEP)) + 1)

    def fit(self, X: np.ndarray, criterion: str = "reml", smoothing_parameter: np.ndarray | None = None) -> Fit:
        """Fit every column of ``X``; each ``lambda`` by ``criterion`` unless ``smoothing_parameter`` gives it."""
        X = np.asarray(X, dtype=float)
        y = self.basis.T @ X  # k × p
        e0 = np.sum((X - self.basis @ y) ** 2, axis=0)
        if smoothing_parameter is None:
            if criterion not in CRITERIA:
                raise ValueError(f"criterion must be one of {', '.join(CRITERIA)}, not {criterion!r}")
            rho = self._select(y, e0, criterion)
        else:
            rho = np.log(np.asarray(smoothing_parameter, dtype=float))
        keep = 1.0 / (1.0 + np.exp(rho)[None, :] * self.d[:, None])  # 1 - a, k × p
        fitted = self.basis @ (y * keep)
        return Fit(fitted, X - fitted, keep.sum(axis=0), np.exp(rho))

    # -- the criteria, on arrays: rho (g × p or p), y (k × p), e0 (p) -------------------------------

    def _parts(self, rho: np.ndarray, y2: np.ndarray):
        t = np.exp(rho)[..., None, :] * self.d[:, None]  # ... × k × p
        keep = 1.0 / (1.0 + t)
        return t, keep, 1.0 - keep, y2

    def _score(self, rho: np.ndarray, y2: np.ndarray, e0: np.ndarray, criterion: str) -> np.ndarray:
        t, keep, a, _ = self._parts(rho, y2)
        if criterion == "gcv":
            rss = e0 + np.sum(y2 * a**2, axis=-2)
            tau = np.sum(keep, axis=-2)
            return self.n * rss / (self.n - tau) ** 2
        penalised = e0 + np.sum(y2 * a, axis=-2)
        m = self.null_dim
        return (self.n - m) / 2.0 * np.log(penalised) + 0.5 * np.sum(np.log1p(t), axis=-2) - (self.k - m) / 2.0 * rho

    def _slope(self, rho: np.ndarray, y2: np.ndarray, e0: np.ndarray, criterion: str) -> np.ndarray:
        """The sign-carrying derivative of the criterion in log(lambda) (GCV: times a positive factor)."""
        _, keep, a, _ = self._parts(rho, y2)
        both = a * keep  # da/drho
        if criterion == "gcv":
            rss = e0 + np.sum(y2 * a**2, axis=-2)
            tau = np.sum(keep, axis=-2)
            return 2.0 * np.sum(y2 * a * both, axis=-2) * (self.n - tau) - 2.0 * rss * np.sum(both, axis=-2)
        penalised = e0 + np.sum(y2 * a, axis=-2)
        penalised_keep = np.sum(keep[..., self.null_dim :, :], axis=-2)
        return (self.n - self.null_dim) / 2.0 * np.sum(y2 * both, axis=-2) / penalised - 0.5 * penalised_keep

    def _select(self, y: np.ndarray, e0: np.ndarray, criterion: str) -> np.ndarray:
        """log(lambda) minimizing the criterion for each column: the best grid point, then bisection."""
        y2 = y**2
        grid = self.grid
        with np.errstate(divide="ignore", invalid="ignore"):
            scores = self._score(grid[:, None] + np.zeros(y.shape[1]), y2, e0, criterion)  # g × p
        scores = np.where(np.isfinite(scores), scores, np.inf)
        best = np.argmin(scores, axis=0)
        rho = grid[best]
        inside = (best > 0) & (best < grid.size - 1)
        if not inside.any():
            return rho
        cols = np.flatnonzero(inside)
        low, high = grid[best[cols] - 1], grid[best[cols] + 1]
        sub_y2, sub_e0 = y2[:, cols], e0[cols]
        slope_low = self._slope(low, sub_y2, sub_e0, criterion)
        slope_high = self._slope(high, sub_y2, sub_e0, criterion)
        bracketed = (slope_low < 0) & (slope_high > 0)
        for _ in range(_BISECTIONS):
            mid = 0.5 * (low + high)
            up = self._slope(mid, sub_y2, sub_e0, criterion) > 0
            high = np.where(up, mid, high)
            low = np.where(up, low, mid)
        rho[cols] = np.where(bracketed, 0.5 * (low + high), rho[cols])
        for i in np.flatnonzero(~bracketed):  # no single sign change in the cell: minimize the criterion itself
            j = cols[i]
            found = optimize.minimize_scalar(
                lambda r, j=j: float(self._score(np.array([r]), y2[:, [j]], e0[[j]], criterion)[0]),
                bounds=(grid[best[j] - 1], grid[best[j] + 1]),
                method="bounded",
                options={"xatol": 1e-12},
            )
            rho[j] = found.x
        return rho
