"""Random-effects meta-analysis of Fisher-z correlations: pooled over runs, and compared between groups of runs.

Both work on arrays: ``effects`` (``atanh r`` per run) and their sampling
``variances`` (``1 / (n_eff - edf - 2)``). The definitions are metafor's
(``rma.uni``), and ``tests/test_analysis_reference.py`` checks the numbers
against it (``tests/reference/``):

- :func:`pool`: ``rma(yi, vi, method = "PM")``: the Paule–Mandel τ², the
  pooled estimate with its standard error, normal interval and p, Cochran's
  Q and its p, and metafor's I², ``τ² / (τ² + s²)`` with the "typical"
  sampling variance ``s² = (k - 1) Σw / ((Σw)² - Σw²)`` (statsmodels'
  ``(Q - df) / Q`` is the DerSimonian–Laird version).
- :func:`subgroups`: the mixed-effects model ``rma(yi, vi, mods = ~ factor(group),
  method = "PM" | "REML")``: one mean per group, one residual τ² shared by
  the runs within every group, the test of moderators ``QM`` (between groups,
  χ² with g - 1 degrees of freedom) and the test of residual heterogeneity
  ``QE`` (within groups, k - g). Neither statsmodels nor scipy has a
  meta-regression with a τ² estimator; with group indicators as the only
  moderators the weighted least squares is a weighted mean per group, so it
  is written out here, τ² found with scipy's ``brentq`` (PM: the generalised
  Q equals k - g; REML: the restricted likelihood's score is zero).

statsmodels' ``combine_effects(method_re="iterated")`` is not used for the
Paule–Mandel τ²: its iteration returns τ² = 0 whenever an update overshoots
below the root, which on the Pythia pairs of ``tests/reference`` happens for
13 of 120 and moves the pooled r by up to 0.07 from metafor's. The root is
found here by bracketing instead, the same way for :func:`pool` (one group)
and :func:`subgroups`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

TAU2_METHODS = ("PM", "REML")


@dataclass(frozen=True)
class Pooled:
    """A random-effects pooled estimate on the Fisher-z scale."""

    k: int
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    pvalue: float
    q: float  # Cochran's Q (fixed-effect weights), k - 1 degrees of freedom
    q_p: float
    i2: float  # metafor's I²: tau2 / (tau2 + s²), as a fraction
    tau2: float


def pool(effects: Sequence[float], variances: Sequence[float], alpha: float = 0.05) -> Pooled:
    """Paule–Mandel random-effects pooling of ``effects`` with sampling ``variances``; interval at ``1 - alpha``.

    Examples
    --------
    Three homogeneous runs: τ² = 0 and the estimate is the inverse-variance
    mean, (0.31·50 + 0.33·100 + 0.29·200) / 350:

    >>> out = pool([0.31, 0.33, 0.29], [1 / 50, 1 / 100, 1 / 200])
    >>> round(out.estimate, 6), out.tau2, out.i2
    (0.304286, 0.0, 0.0)
    """
    y = np.asarray(effects, dtype=float)
    v = np.asarray(variances, dtype=float)
    k = y.size
    index = np.zeros(k, dtype=np.intp)
    tau2 = _tau2(y, v, index, 1, "PM")
    w = 1.0 / (v + tau2)
    mean = float(np.sum(w * y) / w.sum())
    se = float(1.0 / np.sqrt(w.sum()))
    crit = stats.norm.isf(alpha / 2.0)
    fe = 1.0 / v
    q = float(np.sum(fe * (y - np.sum(fe * y) / fe.sum()) ** 2))
    typical = (k - 1) * fe.sum() / (fe.sum() ** 2 - (fe**2).sum())
    return Pooled(
        k=k,
        estimate=mean,
        se=se,
        ci_low=mean - crit * se,
        ci_high=mean + crit * se,
        pvalue=float(2.0 * stats.norm.sf(abs(mean / se))),
        q=q,
        q_p=float(stats.chi2.sf(q, k - 1)),
        i2=float(tau2 / (tau2 + typical)),
        tau2=tau2,
    )


def _fit(y: np.ndarray, v: np.ndarray, index: np.ndarray, g: int, tau2: float):
    """Weights, their group totals, the group means and the residuals for a given τ²."""
    w = 1.0 / (v + tau2)
    total = np.bincount(index, weights=w, minlength=g)
    means = np.bincount(index, weights=w * y, minlength=g) / total
    return w, total, means, y - means[index]


def _tau2(y: np.ndarray, v: np.ndarray, index: np.ndarray, g: int, method: str) -> float:
    """The residual τ² of the model with one mean per group: PM or REML, 0 where the equation has no positive root."""
    k = y.size

    if method == "PM":

        def equation(tau2: float) -> float:  # generalised Q minus its expectation, decreasing in tau2
            w, _, _, resid = _fit(y, v, index, g, tau2)
            return float(np.sum(w * resid**2) - (k - g))

    else:

        def equation(tau2: float) -> float:  # the REML score y'PPy - tr(P), P = W - W X (X'WX)^-1 X'W
            w, total, _, resid = _fit(y, v, index, g, tau2)
            trace = w.sum() - np.sum(np.bincount(index, weights=w**2, minlength=g) / total)
            return float(np.sum((w * resid) ** 2) - trace)

    if not equation(0.0) > 0:
        return 0.0
    high = max(float(np.var(y)), float(v.max()))
    while equation(high) > 0:
        high *= 2.0
    return float(optimize.brentq(equation, 0.0, high, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=1000))


@dataclass(frozen=True)
class Subgroups:
    """A mixed-effects meta-analysis with one mean per group and a residual τ² shared within groups."""

    groups: tuple[str, ...]
    sizes: np.ndarray  # runs per group
    means: np.ndarray  # per group, Fisher z
    se: np.ndarray  # per group
    q_between: float  # QM: the test of moderators, g - 1 degrees of freedom
    df_between: int
    p_between: float
    q_within: float  # QE: residual heterogeneity, k - g degrees of freedom (fixed-effect weights)
    df_within: int
    p_within: float
    tau2: float  # residual (within-group) between-run variance
    i2: float  # residual I², metafor's tau2 / (tau2 + s²)


def subgroups(
    effects: Sequence[float], variances: Sequence[float], groups: Sequence[str], method: str = "PM"
) -> Subgroups:
    """``rma(yi, vi, mods = ~ factor(group), method = method)`` for ``method`` in ``PM``, ``REML``.

    Needs at least two groups and more runs than groups (else the residual τ² is not estimable).

    Examples
    --------
    >>> out = subgroups([0.7, 0.6, 0.8, -0.7, -0.6, -0.75], [0.04] * 6, ["a", "a", "a", "b", "b", "b"])
    >>> out.groups, out.means.round(3).tolist(), out.tau2, bool(out.p_between < 1e-10)
    (('a', 'b'), [0.7, -0.683], 0.0, True)
    """
    if method not in TAU2_METHODS:
        raise ValueError(f"method must be one of {', '.join(TAU2_METHODS)}, not {method!r}")
    y = np.asarray(effects, dtype=float)
    v = np.asarray(variances, dtype=float)
    names, index = np.unique(np.asarray(groups, dtype=str), return_inverse=True)
    g, k = names.size, y.size
    if g < 2 or k <= g:
        raise ValueError(f"{k} runs in {g} groups: need two groups and more runs than groups")

    tau2 = _tau2(y, v, index, g, method)
    w, total, means, _ = _fit(y, v, index, g, tau2)
    grand = np.sum(total * means) / total.sum()
    q_between = float(np.sum(total * (means - grand) ** 2))  # the Wald test of equal group means
    fe_w = 1.0 / v
    fe_total = np.bincount(index, weights=fe_w, minlength=g)
    fe_means = np.bincount(index, weights=fe_w * y, minlength=g) / fe_total
    q_within = float(np.sum(fe_w * (y - fe_means[index]) ** 2))
    trace = fe_w.sum() - np.sum(np.bincount(index, weights=fe_w**2, minlength=g) / fe_total)
    typical = (k - g) / trace
    return Subgroups(
        groups=tuple(str(name) for name in names),
        sizes=np.bincount(index, minlength=g),
        means=means,
        se=1.0 / np.sqrt(total),
        q_between=q_between,
        df_between=g - 1,
        p_between=float(stats.chi2.sf(q_between, g - 1)),
        q_within=q_within,
        df_within=k - g,
        p_within=float(stats.chi2.sf(q_within, k - g)),
        tau2=float(tau2),
        i2=float(tau2 / (tau2 + typical)),
    )
