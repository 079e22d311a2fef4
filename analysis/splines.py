"""Cubic regression splines: mgcv's ``bs = "cr"`` basis and its curvature penalty, in NumPy.

A cubic regression spline with knots ``x_1 < ... < x_k`` is the natural cubic
spline through the values ``beta`` at the knots (Wood 2017, *Generalized
Additive Models*, 2nd ed., section 5.3.1). The basis is parameterised by those
values, so its columns are well conditioned whatever the spacing of the data,
and the penalty ``beta' S beta`` is exactly ``integral f''(x)^2 dx``. Knots
sit at quantiles of the *distinct* values of the covariate, as mgcv places
them, so tied values (an in-domain score stuck at 0 for the first
checkpoints) cannot make the design rank-deficient. Beyond the outer knots
the spline continues as a straight line, which is what a natural spline is.

Neither statsmodels nor scipy has this basis with this penalty (statsmodels'
``CyclicCubicSplines`` is cyclic, its ``BSplines`` put knots on quantiles of
all values and penalise a numerically integrated second derivative), hence
this module; it is checked against mgcv through the fits of
:mod:`~ood_store._analysis.smoothing` in ``tests/test_analysis_gam.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Values of the covariate closer than this share of its range count as one value when knots are placed:
# differences of 1e-12 are rounding, not data, and must not move the knots.
TIE_TOLERANCE = 1e-9


def distinct_values(x: np.ndarray, tolerance: float = TIE_TOLERANCE) -> np.ndarray:
    """Sorted distinct values of ``x``, values within ``tolerance`` × range of the previous one merged.

    Examples
    --------
    >>> distinct_values(np.array([0.0, 0.0, 1e-15, 0.5, 0.25, 0.5]))
    array([0.  , 0.25, 0.5 ])
    """
    values = np.sort(np.asarray(x, dtype=float))
    span = values[-1] - values[0]
    if span == 0:
        return values[:1]
    keep = np.r_[True, np.diff(values) > tolerance * span]
    return values[keep]


def place_knots(x: np.ndarray, k: int) -> np.ndarray:
    """``k`` knots at evenly spaced quantiles of the distinct values of ``x``, as mgcv's ``cr`` basis.

    mgcv: ``quantile(unique(x), seq(0, 1, length = k))`` (R's default, type 7, is NumPy's ``linear``).

    Examples
    --------
    Eleven tied zeros count once: the middle knot is the median of the six
    distinct values 0, 0.1, ..., 0.5, not of all sixteen (which is 0).

    >>> place_knots(np.r_[np.zeros(11), np.linspace(0.1, 0.5, 5)], 3)
    array([0.  , 0.25, 0.5 ])
    """
    values = distinct_values(x)
    if not 2 <= k <= values.size:
        raise ValueError(f"{k} knots need at least {k} distinct values; x has {values.size}")
    return np.quantile(values, np.linspace(0.0, 1.0, k))


@dataclass(frozen=True)
class CubicRegressionSpline:
    """The basis of natural cubic splines with the given knots, and their curvature penalty.

    ``design(x)`` is the n × k model matrix (columns: the splines that are 1
    at one knot and 0 at the others) and ``penalty`` the k × k matrix ``S``
    with ``beta' S beta = integral f''^2``; its null space, of dimension 2, is
    the straight lines.
    """

    knots: np.ndarray
    second_derivatives: np.ndarray  # k × k: F, beta -> f'' at the knots (zero at the outer two)
    penalty_root: np.ndarray  # (k - 2) × k: E = L^-1 D with B = L L', so that E'E = S and E (line) = 0 exactly
    penalty: np.ndarray  # k × k: S = D' B^-1 D = E'E

    @classmethod
    def from_knots(cls, knots: np.ndarray) -> CubicRegressionSpline:
        knots = np.asarray(knots, dtype=float)
        k = knots.size
        if k < 3 or not np.all(np.diff(knots) > 0):
            raise ValueError("a cubic regression spline needs at least 3 increasing knots")
        h = np.diff(knots)
        D = np.zeros((k - 2, k))
        idx = np.arange(k - 2)
        D[idx, idx] = 1.0 / h[:-1]
        D[idx, idx + 1] = -1.0 / h[:-1] - 1.0 / h[1:]
        D[idx, idx + 2] = 1.0 / h[1:]
        B = np.diag((h[:-1] + h[1:]) / 3.0)
        B[idx[:-1], idx[:-1] + 1] = B[idx[:-1] + 1, idx[:-1]] = h[1:-1] / 6.0
        inner = np.linalg.solve(B, D)  # B^-1 D: f'' at the inner knots (B is symmetric positive definite)
        F = np.zeros((k, k))
        F[1:-1] = inner
        root = np.linalg.solve(np.linalg.cholesky(B), D)
        return cls(knots, F, root, root.T @ root)

    @classmethod
    def on(cls, x: np.ndarray, k: int) -> CubicRegressionSpline:
        """The spline with ``k`` knots placed on ``x`` (:func:`place_knots`)."""
        return cls.from_knots(place_knots(x, k))

    @property
    def size(self) -> int:
        return self.knots.size

    def design(self, x: np.ndarray) -> np.ndarray:
        """The model matrix at ``x``: ``f(x) = design(x) @ beta``; straight lines beyond the outer knots."""
        x = np.asarray(x, dtype=float)
        knots, F = self.knots, self.second_derivatives
        k = knots.size
        j = np.clip(np.searchsorted(knots, x, side="right") - 1, 0, k - 2)
        h = knots[j + 1] - knots[j]
        left = np.clip(x, knots[0], knots[-1])  # cubic part evaluated inside the knots
        am = (knots[j + 1] - left) / h
        ap = (left - knots[j]) / h
        cm = ((knots[j + 1] - left) ** 3 / h - h * (knots[j + 1] - left)) / 6.0
        cp = ((left - knots[j]) ** 3 / h - h * (left - knots[j])) / 6.0
        X = cm[:, None] * F[j] + cp[:, None] * F[j + 1]
        rows = np.arange(x.size)
        X[rows, j] += am
        X[rows, j + 1] += ap
        below, above = x < knots[0], x > knots[-1]
        if below.any() or above.any():  # linear continuation: f(x_1) + f'(x_1) (x - x_1), likewise at x_k
            h0, hk = knots[1] - knots[0], knots[-1] - knots[-2]
            slope0 = -h0 / 6.0 * F[1]
            slope0[0] -= 1.0 / h0
            slope0[1] += 1.0 / h0
            slopek = hk / 6.0 * F[-2]
            slopek[-2] -= 1.0 / hk
            slopek[-1] += 1.0 / hk
            X[below] += (x[below] - knots[0])[:, None] * slope0
            X[above] += (x[above] - knots[-1])[:, None] * slopek
        return X
