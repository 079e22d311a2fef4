"""Tests and intervals for (partial) correlations, vectorised over arrays of pairs.

Every function takes NumPy arrays of the same shape (one element per pair)
and returns arrays; NaN in, NaN out.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

ADJUST_METHODS = ("holm", "fdr_bh", "bonferroni", "none")


def t_test(r: np.ndarray, dof: np.ndarray) -> np.ndarray:
    """Two-sided p-value of ``t = r sqrt(dof / (1 - r^2))`` on Student's t with ``dof`` degrees of freedom.

    For a partial correlation with ``k`` linear controls ``dof = n - 2 - k``
    (pingouin, R ``ppcor``); ``|r| = 1`` gives 0. ``dof <= 0`` gives NaN.
    """
    r = np.asarray(r, dtype=float)
    dof = np.asarray(dof, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = r * np.sqrt(dof / (1.0 - r**2))
        p = 2.0 * special.stdtr(dof, -np.abs(t))  # what scipy.stats.t.sf(|t|, dof) computes, without its checks
    return np.where(dof > 0, p, np.nan)


def fisher_ci(r: np.ndarray, se_dof: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Confidence interval for r by Fisher's z: ``tanh(atanh(r) ± z_crit / sqrt(se_dof))``.

    ``se_dof`` is ``n - k - 3`` for ``k`` linear controls; ``se_dof <= 0`` gives NaN.
    """
    r = np.asarray(r, dtype=float)
    se_dof = np.asarray(se_dof, dtype=float)
    crit = stats.norm.ppf(1.0 - (1.0 - confidence) / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.arctanh(r)
        half = crit / np.sqrt(se_dof)
        low, high = np.tanh(z - half), np.tanh(z + half)
    bad = ~(se_dof > 0)
    return np.where(bad, np.nan, low), np.where(bad, np.nan, high)


def lag1_autocorrelation(residuals: np.ndarray) -> np.ndarray:
    """Lag-1 sample autocorrelation of each column, as ``statsmodels.tsa.stattools.acf(x, nlags=1)[1]``.

    ``sum((e_t - m)(e_{t+1} - m)) / sum((e_t - m)^2)``, rows in step order.
    """
    e = residuals - residuals.mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (e[1:] * e[:-1]).sum(axis=0) / (e**2).sum(axis=0)


def effective_n(n: np.ndarray, acf_x: np.ndarray, acf_y: np.ndarray) -> np.ndarray:
    """Effective sample size of a correlation between two autocorrelated series.

    Bretherton et al. (1999), eq. 31: ``n (1 - r1 r2) / (1 + r1 r2)`` with
    ``r1``, ``r2`` the lag-1 autocorrelations; ``n`` itself when the product
    is negative (no inflation of significance to correct).
    """
    product = np.asarray(acf_x, dtype=float) * np.asarray(acf_y, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        shrunk = n * (1.0 - product) / (1.0 + product)
    return np.where(product > 0, shrunk, n)


def adjust(p: np.ndarray, method: str) -> np.ndarray:
    """Multiple-testing adjustment of the finite p-values in ``p`` (NaN stays NaN, and counts for none).

    ``method`` is one of ``holm``, ``fdr_bh``, ``bonferroni`` or ``none``:
    Benjamini–Hochberg is SciPy's ``false_discovery_control(p, method="bh")``;
    SciPy has no family-wise adjustment, so Holm's step-down (:func:`_holm`) and
    Bonferroni's ``min(m p, 1)`` are written out here. All three equal
    statsmodels' ``multipletests(p, method=...)[1]``, ties and extremes included
    (``tests/test_analysis_partial.py`` checks them against it, the oracle of the
    test extra), without importing statsmodels and pandas for it.

    Examples
    --------
    >>> adjust(np.array([0.01, 0.04, np.nan, 0.03]), "holm").round(4).tolist()
    [0.03, 0.06, nan, 0.06]
    >>> adjust(np.array([0.01, 0.04, np.nan, 0.03]), "fdr_bh").round(4).tolist()
    [0.03, 0.04, nan, 0.04]
    """
    if method not in ADJUST_METHODS:
        raise ValueError(f"adjust must be one of {', '.join(ADJUST_METHODS)}, not {method!r}")
    p = np.asarray(p, dtype=float)
    out = np.full_like(p, np.nan)
    finite = np.isfinite(p)
    if not finite.any():
        return out
    values = p[finite]
    if method == "none":
        out[finite] = values
    elif method == "holm":
        out[finite] = _holm(values)
    elif method == "bonferroni":
        out[finite] = np.minimum(values * values.size, 1.0)
    else:
        out[finite] = stats.false_discovery_control(values, method="bh")
    return out


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment: ``max_{j <= i} min((m - j + 1) p_(j), 1)`` for the i-th smallest p.

    Ties are ordered by position (a stable sort), as statsmodels does.
    """
    order = np.argsort(p, kind="stable")
    m = p.size
    stepped = np.minimum(np.maximum.accumulate(p[order] * np.arange(m, 0, -1)), 1.0)
    out = np.empty_like(stepped)
    out[order] = stepped
    return out


def adjusted_level(p: np.ndarray, method: str, alpha: float) -> float:
    """The level ``alpha'`` of the intervals that go with :func:`adjust`: a test's interval at ``1 - alpha'``
    excludes its null value exactly when its adjusted p (over the family ``p``) is below ``alpha``.

    With ``m`` finite p-values of which ``R`` have an adjusted p below ``alpha``:
    Bonferroni ``alpha / m``; Holm ``alpha / (m - R)`` (``alpha`` when all are
    rejected), the level at which its step-down stopped; Benjamini–Hochberg
    ``R alpha / m`` (``alpha / m`` when none is rejected), Benjamini and
    Yekutieli's (2005) false-coverage-rate intervals for the selected
    parameters; ``none`` ``alpha``. Bonferroni's intervals are simultaneous and
    BH's control the false coverage rate among the rejected; Holm's are not
    simultaneous intervals (none exist that agree with Holm's decisions and are
    informative for every parameter), only the ones that agree with its decisions.

    Examples
    --------
    Holm over four p-values rejects two at 0.05 (0.001 × 4, 0.01 × 3), stopping at 0.04 × 2 = 0.08:

    >>> p = np.array([0.001, 0.01, 0.04, 0.3])
    >>> adjusted_level(p, "holm", 0.05), adjusted_level(p, "bonferroni", 0.05), adjusted_level(p, "fdr_bh", 0.05)
    (0.025, 0.0125, 0.025)
    """
    if method not in ADJUST_METHODS:
        raise ValueError(f"adjust must be one of {', '.join(ADJUST_METHODS)}, not {method!r}")
    p = np.asarray(p, dtype=float)
    m = int(np.isfinite(p).sum())
    if method == "none" or m == 0:
        return alpha
    rejected = int((adjust(p, method) < alpha).sum())
    if method == "bonferroni":
        return alpha / m
    if method == "holm":
        return alpha / (m - rejected) if rejected < m else alpha
    return max(rejected, 1) * alpha / m
