"""Random-effects meta-analysis of Fisher-z correlations: pooled over runs, and compared between groups of runs.

Both work on arrays: ``effects`` (``atanh r`` per run) and their sampling
``variances`` (``1 / (n_eff - edf - 2)``). The definitions are metafor's
(``rma.uni``), and ``tests/test_analysis_reference.py`` checks the numbers
against it (``tests/reference/``):

- :func:`pool`: ``rma(yi, vi, method = "PM", test = "z" | "knha")``: the
  Paule–Mandel τ², the pooled estimate with its standard error, interval and
  p, Cochran's Q and its p, and metafor's I², ``τ² / (τ² + s²)`` with the
  "typical" sampling variance ``s² = (k - 1) Σw / ((Σw)² - Σw²)``
  (statsmodels' ``(Q - df) / Q`` is the DerSimonian–Laird version).
- :func:`subgroups`: the mixed-effects model ``rma(yi, vi, mods = ~ factor(group),
  method = "PM" | "REML", test = "z" | "knha")``: one mean per group, one
  residual τ² shared by the runs within every group, the test of moderators
  ``QM`` (between groups) and the test of residual heterogeneity ``QE``
  (within groups, χ² with k - g degrees of freedom). Neither statsmodels nor
  scipy has a meta-regression with a τ² estimator; with group indicators as
  the only moderators the weighted least squares is a weighted mean per
  group, so it is written out here.
- :func:`tau2_interval`: the Q-profile confidence interval of τ² (Viechtbauer
  2007), metafor's ``confint()`` of those models.

**The tests.** ``test = "z"`` refers the estimate to the normal distribution
and ``QM`` (a Wald statistic) to χ² with g - 1 degrees of freedom, as if τ²
and the sampling variances were known. ``test = "knha"`` is the Knapp–Hartung
(Hartung–Knapp–Sidik–Jonkman) adjustment: the variance of the estimates is
multiplied by ``s2w = Σ w (y - fitted)² / (k - p)`` (``w = 1 / (v + τ²)``, p
the number of means), the estimate is referred to Student's t and ``QM / (g -
1)`` to F, both with k - p degrees of freedom. With the Paule–Mandel τ²,
``s2w`` is exactly 1 whenever τ² > 0 (that is the PM equation) and below 1
when τ² = 0; the gain in honesty comes from the t and F references, which
know that τ² was estimated from k - p residuals. metafor does not truncate
``s2w`` at 1 (that is its ``test = "adhoc"``); neither is it here.

**Many at once.** Every function is the one-row case of its ``*_many``
counterpart, which takes a batch of rows (``B × k`` arrays of effects and
variances, NaN where a row has no such run; the groups shared by all rows)
and solves every row's τ² at once: Newton's steps on the generalized Q, whose
slope in τ² is known (``-Σ w² (y - fitted)²``), kept inside a bracket by
bisection (REML's score: bisection alone), to where scipy's ``brentq`` of
earlier versions stopped (a step below ``1e-15 + 4 eps τ²``), so that both
give the same τ² to rounding error.
:func:`~ood_store._analysis.compare.compare` pools all pairs of a comparison
in one call; :mod:`~ood_store._analysis.power` thousands of simulated studies.

statsmodels' ``combine_effects(method_re="iterated")`` is not used for the
Paule–Mandel τ²: its iteration returns τ² = 0 whenever an update overshoots
below the root, which on the Pythia pairs of ``tests/reference`` happens for
13 of 120 and moves the pooled r by up to 0.07 from metafor's. The root is
found here by bracketing instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

import numpy as np
from scipy import stats

TAU2_METHODS = ("PM", "REML")
TESTS = ("z", "knha")
_XTOL = 1e-15  # as the brentq of earlier versions: an absolute ...
_RTOL = 4 * np.finfo(float).eps  # ... and a relative tolerance on τ²
_MAX_STEPS = 400


def _check(method: str, test: str) -> None:
    if method not in TAU2_METHODS:
        raise ValueError(f"method must be one of {', '.join(TAU2_METHODS)}, not {method!r}")
    if test not in TESTS:
        raise ValueError(f"test must be one of {', '.join(TESTS)}, not {test!r}")


def critical(alpha: np.ndarray | float, df: np.ndarray | float) -> np.ndarray:
    """The two-sided critical value at level ``alpha``: normal where ``df`` is infinite, else Student's t."""
    alpha, df = np.broadcast_arrays(np.asarray(alpha, dtype=float), np.asarray(df, dtype=float))
    out = np.asarray(stats.norm.isf(alpha / 2.0), dtype=float).copy()
    finite = np.isfinite(df)
    if finite.any():
        out[finite] = stats.t.isf(alpha[finite] / 2.0, df[finite])
    return out


def _two_sided(statistic: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Two-sided p of ``statistic``: normal where ``df`` is infinite, Student's t with ``df`` otherwise."""
    statistic, df = np.broadcast_arrays(np.abs(statistic), np.asarray(df, dtype=float))
    out = np.asarray(2.0 * stats.norm.sf(statistic), dtype=float).copy()
    finite = np.isfinite(df)
    if finite.any():
        out[finite] = 2.0 * stats.t.sf(statistic[finite], df[finite])
    return out


# -- the batch: rows of runs, NaN where a row lacks a run -------------------------------------------------


@dataclass(frozen=True)
class _Rows:
    """A batch of rows: effects and variances (0 and 1 where absent), which runs each row has, their groups.

    The runs are reordered so that each group's are contiguous (``starts``): per-group sums are then one
    ``np.add.reduceat`` and a per-group value is spread back to its runs by ``np.repeat``.
    """

    y: np.ndarray  # B × k, 0 where absent
    v: np.ndarray  # B × k, 1 where absent (never used)
    present: np.ndarray  # B × k
    starts: np.ndarray  # g: each group's first run
    widths: np.ndarray  # g: each group's runs
    names: tuple[str, ...]

    @classmethod
    def of(cls, effects, variances, groups: Sequence[str] | None = None) -> _Rows:
        y = np.atleast_2d(np.asarray(effects, dtype=float))
        v = np.atleast_2d(np.asarray(variances, dtype=float))
        if y.shape != v.shape:
            raise ValueError(f"effects {y.shape} and variances {v.shape} differ in shape")
        names: tuple[str, ...] = ("all",)
        if groups is None:
            index = np.zeros(y.shape[1], dtype=np.intp)
        else:
            labels, index = np.unique(np.asarray(groups, dtype=str), return_inverse=True)
            names, index = tuple(str(label) for label in labels), index.reshape(-1)
            if index.size != y.shape[1]:
                raise ValueError(f"{index.size} groups for {y.shape[1]} runs")
        order = np.argsort(index, kind="stable")
        y, v = y[:, order], v[:, order]
        widths = np.bincount(index, minlength=len(names))
        present = np.isfinite(y) & np.isfinite(v) & (v > 0)
        starts = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.intp)
        return cls(np.where(present, y, 0.0), np.where(present, v, 1.0), present, starts, widths, names)

    def sums(self, values: np.ndarray) -> np.ndarray:
        """Per row and group, the sum of ``values`` (B × k, 0 where absent): B × g."""
        if values.shape[1] == 0:
            return np.zeros((values.shape[0], len(self.names)))
        return np.add.reduceat(values, self.starts, axis=1)

    def spread(self, per_group: np.ndarray) -> np.ndarray:
        """A value per row and group (B × g) as a value per row and run (B × k)."""
        return np.repeat(per_group, self.widths, axis=1)

    @property
    def k(self) -> np.ndarray:
        return self.present.sum(axis=1)

    @property
    def counts(self) -> np.ndarray:
        return self.sums(self.present.astype(float))

    @property
    def g(self) -> np.ndarray:
        return (self.counts > 0).sum(axis=1)

    def weights(self, tau2: np.ndarray) -> np.ndarray:
        return np.where(self.present, 1.0 / (self.v + np.asarray(tau2, dtype=float)[:, None]), 0.0)

    def fit(self, tau2: np.ndarray):
        """Weights, their group totals, the group means (NaN for an empty group) and the residuals for τ²."""
        w = self.weights(tau2)
        total = self.sums(w)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = self.sums(w * self.y) / total
        fitted = self.spread(np.where(total > 0, means, 0.0))
        return w, total, means, np.where(self.present, self.y - fitted, 0.0)


def _solve(
    equation: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray | None]], high: np.ndarray, active: np.ndarray
) -> np.ndarray:
    """For each active row, a root in ``(0, high]`` of ``equation``, positive at 0 for the active rows.

    ``equation(t)`` returns its values and slopes (None: none known). ``high`` is
    doubled until the equation is not positive there; then Newton steps that stay
    inside the bracket, bisection where they would leave it or no slope is known,
    until a step is below ``1e-15 + 4 eps t`` (scipy brentq's tolerance).
    """
    high = np.where(active, high, 1.0)
    for _ in range(_MAX_STEPS):
        unbounded = active & (equation(high)[0] > 0)
        if not unbounded.any():
            break
        high = np.where(unbounded, high * 2.0, high)
    low = np.zeros_like(high)
    t = low.copy()
    value, slope = equation(t)
    open_ = active.copy()
    for _ in range(_MAX_STEPS):
        with np.errstate(invalid="ignore", divide="ignore"):
            newton = t - value / slope if slope is not None else np.full_like(t, np.nan)
        inside = np.isfinite(newton) & (newton > low) & (newton < high)
        step = np.where(inside, newton, 0.5 * (low + high))
        done = np.abs(step - t) <= _XTOL + _RTOL * np.abs(step)
        t = np.where(open_, step, t)
        open_ &= ~done
        if not open_.any():
            break
        value, slope = equation(t)
        up = value > 0
        low = np.where(open_ & up, t, low)
        high = np.where(open_ & ~up, t, high)
        open_ &= value != 0
    return np.where(active, t, 0.0)


def _tau2(rows: _Rows, method: str, valid: np.ndarray) -> np.ndarray:
    """The residual τ² of the model with one mean per group, PM or REML, for each valid row; 0 without a positive
    root (PM: the generalized Q is below its expectation k - g at τ² = 0)."""
    k, g = rows.k, rows.g

    if method == "PM":
        return _q_root(rows, (k - g).astype(float), valid)

    def equation(tau2: np.ndarray) -> tuple[np.ndarray, None]:  # the REML score y'PPy - tr(P)
        w, total, _, resid = rows.fit(tau2)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_group = np.where(total > 0, rows.sums(w**2) / total, 0.0)
        return np.sum((w * resid) ** 2, axis=1) - (w.sum(axis=1) - per_group.sum(axis=1)), None

    return _solve(equation, _bracket(rows), valid & (equation(np.zeros(rows.y.shape[0]))[0] > 0))


def _q_root(rows: _Rows, target: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Where the generalized Q, ``Σ w (y - fitted)²`` with ``w = 1 / (v + τ²)``, equals ``target`` (0 where it is
    already below at τ² = 0). Its slope in τ² is ``-Σ w² (y - fitted)²`` (the group means minimize it: their own
    change does not count)."""

    def equation(tau2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w, _, _, resid = rows.fit(tau2)
        return np.sum(w * resid**2, axis=1) - target, -np.sum((w * resid) ** 2, axis=1)

    return _solve(equation, _bracket(rows), valid & (equation(np.zeros(rows.y.shape[0]))[0] > 0))


def _bracket(rows: _Rows) -> np.ndarray:
    """A first upper bound to try for τ²: the larger of the effects' variance and the largest sampling variance."""
    k = rows.k
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = rows.y.sum(axis=1) / k
        spread = np.sum(np.where(rows.present, (rows.y - mean[:, None]) ** 2, 0.0), axis=1) / k
    return np.fmax(np.nan_to_num(spread), np.max(np.where(rows.present, rows.v, 0.0), axis=1, initial=0.0))


def _typical(rows: _Rows, df: np.ndarray) -> np.ndarray:
    """metafor's typical sampling variance ``(k - p) / tr(P)`` of the fixed-effect model with one mean per group."""
    fe = np.where(rows.present, 1.0 / rows.v, 0.0)
    total = rows.sums(fe)
    with np.errstate(invalid="ignore", divide="ignore"):
        trace = fe.sum(axis=1) - np.where(total > 0, rows.sums(fe**2) / total, 0.0).sum(axis=1)
        return df / trace


def _fixed_q(rows: _Rows) -> np.ndarray:
    """Cochran's Q of the fixed-effect model with one mean per group (the residual heterogeneity QE)."""
    _, _, _, resid = rows.fit(np.zeros(rows.y.shape[0]))
    fe = np.where(rows.present, 1.0 / rows.v, 0.0)
    return np.sum(fe * resid**2, axis=1)


def _s2w(w: np.ndarray, resid: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Knapp–Hartung's ``Σ w (y - fitted)² / (k - p)``; 0 where the weighted residual sum is below machine epsilon,
    as metafor."""
    rss = np.sum(w * resid**2, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(rss <= np.finfo(float).eps, 0.0, rss / df)


@dataclass(frozen=True)
class PooledMany:
    """Random-effects pooled estimates of a batch of rows, on the Fisher-z scale (NaN for rows of fewer than 2 runs)."""

    k: np.ndarray  # runs pooled per row
    estimate: np.ndarray
    se: np.ndarray  # Knapp–Hartung's adjusted standard error with test "knha"
    df: np.ndarray  # the reference distribution's degrees of freedom: k - 1 (knha), inf (z)
    pvalue: np.ndarray
    q: np.ndarray  # Cochran's Q (fixed-effect weights), k - 1 degrees of freedom
    q_p: np.ndarray
    i2: np.ndarray  # metafor's I²: tau2 / (tau2 + s²), as a fraction
    tau2: np.ndarray
    test: str

    def interval(self, alpha: np.ndarray | float = 0.05) -> tuple[np.ndarray, np.ndarray]:
        """The ``1 - alpha`` interval of each row (``alpha`` one level, or one per row)."""
        half = critical(alpha, self.df) * self.se
        return self.estimate - half, self.estimate + half


def pool_many(effects, variances, test: str = "z") -> PooledMany:
    """:func:`pool` for each row of ``effects`` and ``variances`` (B × k; NaN, or a variance that is not positive,
    where a row has no such run).

    Examples
    --------
    The second row lacks its third run:

    >>> out = pool_many([[0.31, 0.33, 0.29], [0.31, 0.33, np.nan]], [[1 / 50, 1 / 100, 1 / 200]] * 2)
    >>> out.k.tolist(), out.estimate.round(6).tolist()
    ([3, 2], [0.304286, 0.323333])
    """
    _check("PM", test)
    rows = _Rows.of(effects, variances)
    k = rows.k
    valid = k >= 2
    tau2 = _tau2(rows, "PM", valid)
    w, total, means, resid = rows.fit(tau2)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = np.where(valid, means[:, 0], np.nan)
        se = 1.0 / np.sqrt(total[:, 0])
        df = np.full(k.shape, np.inf)
        if test == "knha":
            se = np.sqrt(_s2w(w, resid, k - 1.0)) * se
            df = (k - 1).astype(float)
        se = np.where(valid, se, np.nan)
        pvalue = _two_sided(estimate / se, df)
        q = np.where(valid, _fixed_q(rows), np.nan)
        i2 = tau2 / (tau2 + _typical(rows, k - 1.0))
    return PooledMany(
        k=k,
        estimate=estimate,
        se=se,
        df=np.where(valid, df, np.nan),
        pvalue=np.where(valid, pvalue, np.nan),
        q=q,
        q_p=np.where(valid, stats.chi2.sf(q, k - 1), np.nan),
        i2=np.where(valid, i2, np.nan),
        tau2=np.where(valid, tau2, np.nan),
        test=test,
    )


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
    df: float = np.inf  # of the t reference: k - 1 with Knapp–Hartung, inf for the normal one
    test: str = "z"


def pool(effects: Sequence[float], variances: Sequence[float], alpha: float = 0.05, test: str = "z") -> Pooled:
    """Paule–Mandel random-effects pooling of ``effects`` with sampling ``variances``; interval at ``1 - alpha``.

    ``test`` is ``"z"`` (normal reference) or ``"knha"`` (Knapp–Hartung: adjusted
    variance, Student's t with k - 1 degrees of freedom).

    Examples
    --------
    Three homogeneous runs: τ² = 0 and the estimate is the inverse-variance
    mean, (0.31·50 + 0.33·100 + 0.29·200) / 350:

    >>> out = pool([0.31, 0.33, 0.29], [1 / 50, 1 / 100, 1 / 200])
    >>> round(out.estimate, 6), out.tau2, out.i2
    (0.304286, 0.0, 0.0)

    Knapp–Hartung keeps the estimate and widens the interval (t with 2 degrees of freedom):

    >>> out = pool([0.31, 0.33, 0.29], [1 / 50, 1 / 100, 1 / 200], test="knha")
    >>> round(out.estimate, 6), out.df, bool(out.ci_high - out.ci_low > 0)
    (0.304286, 2.0, True)
    """
    many = pool_many([list(effects)], [list(variances)], test)
    low, high = many.interval(alpha)
    return _first(many, Pooled, ci_low=float(low[0]), ci_high=float(high[0]))


@dataclass(frozen=True)
class SubgroupsMany:
    """Mixed-effects models with one mean per group, for a batch of rows (NaN for a row without two groups and
    more runs than groups)."""

    groups: tuple[str, ...]
    sizes: np.ndarray  # B × g: runs per group
    means: np.ndarray  # B × g: Fisher z, NaN for a group without runs
    se: np.ndarray  # B × g (Knapp–Hartung's with test "knha")
    q_between: np.ndarray  # QM as metafor reports it: χ² (z) or F (knha)
    df_between: np.ndarray  # groups - 1 (F's numerator)
    p_between: np.ndarray
    q_within: np.ndarray  # QE: residual heterogeneity, k - g degrees of freedom (fixed-effect weights)
    df_within: np.ndarray  # k - g (also F's denominator)
    p_within: np.ndarray
    tau2: np.ndarray  # residual (within-group) between-run variance
    i2: np.ndarray  # residual I², metafor's tau2 / (tau2 + s²)
    test: str


def subgroups_many(effects, variances, groups: Sequence[str], method: str = "PM", test: str = "z") -> SubgroupsMany:
    """:func:`subgroups` for each row of ``effects`` and ``variances`` (B × k, NaN where a row has no such run), the
    runs' ``groups`` (k) the same for every row."""
    _check(method, test)
    rows = _Rows.of(effects, variances, groups)
    k, g, counts = rows.k, rows.g, rows.counts
    valid = (g >= 2) & (k > g)
    tau2 = _tau2(rows, method, valid)
    w, total, means, resid = rows.fit(tau2)
    df_within = (k - g).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        grand = np.nansum(total * np.nan_to_num(means), axis=1) / total.sum(axis=1)
        q_between = np.sum(np.where(counts > 0, total * (np.nan_to_num(means) - grand[:, None]) ** 2, 0.0), axis=1)
        se = 1.0 / np.sqrt(total)
        if test == "knha":
            s2w = _s2w(w, resid, df_within)
            se = np.sqrt(s2w)[:, None] * se
            q_between = q_between / (g - 1) / s2w
            p_between = stats.f.sf(q_between, g - 1, df_within)
        else:
            p_between = stats.chi2.sf(q_between, g - 1)
        q_within = _fixed_q(rows)
        i2 = tau2 / (tau2 + _typical(rows, df_within))

    def only(values: np.ndarray) -> np.ndarray:
        return np.where(valid.reshape((-1,) + (1,) * (values.ndim - 1)), values, np.nan)

    return SubgroupsMany(
        groups=rows.names,
        sizes=counts.astype(np.int64),
        means=only(np.where(counts > 0, means, np.nan)),
        se=only(np.where(counts > 0, se, np.nan)),
        q_between=only(q_between),
        df_between=only((g - 1).astype(float)),
        p_between=only(p_between),
        q_within=only(q_within),
        df_within=only(df_within),
        p_within=only(stats.chi2.sf(q_within, df_within)),
        tau2=only(tau2),
        i2=only(i2),
        test=test,
    )


@dataclass(frozen=True)
class Subgroups:
    """A mixed-effects meta-analysis with one mean per group and a residual τ² shared within groups."""

    groups: tuple[str, ...]
    sizes: np.ndarray  # runs per group
    means: np.ndarray  # per group, Fisher z
    se: np.ndarray  # per group
    q_between: float  # QM as metafor reports it: the Wald χ² (z) or F (knha), g - 1 (numerator) degrees of freedom
    df_between: int
    p_between: float
    q_within: float  # QE: residual heterogeneity, k - g degrees of freedom (fixed-effect weights)
    df_within: int
    p_within: float
    tau2: float  # residual (within-group) between-run variance
    i2: float  # residual I², metafor's tau2 / (tau2 + s²)
    test: str = "z"


def subgroups(
    effects: Sequence[float], variances: Sequence[float], groups: Sequence[str], method: str = "PM", test: str = "z"
) -> Subgroups:
    """``rma(yi, vi, mods = ~ factor(group), method = method, test = test)``: ``method`` PM or REML, ``test`` z or
    knha.

    Needs at least two groups and more runs than groups (else the residual τ² is not estimable).

    Examples
    --------
    >>> out = subgroups([0.7, 0.6, 0.8, -0.7, -0.6, -0.75], [0.04] * 6, ["a", "a", "a", "b", "b", "b"])
    >>> out.groups, out.means.round(3).tolist(), out.tau2, bool(out.p_between < 1e-10)
    (('a', 'b'), [0.7, -0.683], 0.0, True)

    Knapp–Hartung refers QM / (g - 1) to F with k - g = 4 degrees of freedom:

    >>> knha = subgroups([0.7, 0.6, 0.8, -0.7, -0.6, -0.75], [0.04] * 6, ["a", "a", "a", "b", "b", "b"], test="knha")
    >>> knha.df_between, knha.df_within, bool(knha.p_between > out.p_between)
    (1, 4, True)
    """
    _check(method, test)
    names = np.unique(np.asarray(groups, dtype=str))
    k = len(effects)
    if names.size < 2 or k <= names.size:
        raise ValueError(f"{k} runs in {names.size} groups: need two groups and more runs than groups")
    many = subgroups_many([list(effects)], [list(variances)], groups, method, test)
    return _first(many, Subgroups, df_between=int(many.df_between[0]), df_within=int(many.df_within[0]))


def _first(many, one: type, **given):
    """The one-row result ``one`` of a batch ``many``: each field its first row (a number, or a row of groups),
    the batch's own value where it is one for all rows (``test``, ``groups``), or as ``given``."""
    values = {}
    for item in fields(one):
        value = given[item.name] if item.name in given else getattr(many, item.name)
        if isinstance(value, np.ndarray):
            value = value[0] if value.ndim > 1 else value[0].item()
        values[item.name] = value
    return one(**values)


def tau2_interval_many(
    effects, variances, groups: Sequence[str] | None = None, alpha: float = 0.05
) -> tuple[np.ndarray, np.ndarray]:
    """Q-profile ``1 - alpha`` confidence interval of the residual τ² of each row (Viechtbauer 2007), as metafor's
    ``confint()`` of ``rma(yi, vi, mods = ~ factor(group), method = "PM")`` (one group when ``groups`` is None).

    The bounds are where the generalized Q, ``Σ w (y - fitted)²`` with ``w = 1 / (v + τ²)`` (decreasing in τ²),
    equals the χ² quantiles of k - g degrees of freedom: the lower at ``1 - alpha/2``, the upper at ``alpha/2``;
    a bound is 0 where Q at τ² = 0 is already below its quantile.

    Examples
    --------
    >>> low, high = tau2_interval_many([[0.7, 0.1, 0.4, -0.2, 0.5]], [[0.02] * 5])
    >>> bool(0 < low[0] < high[0])
    True
    """
    rows = _Rows.of(effects, variances, groups)
    df = (rows.k - rows.g).astype(float)
    valid = df >= 1
    bounds = []
    for level in (1.0 - alpha / 2.0, alpha / 2.0):
        target = stats.chi2.isf(1.0 - level, np.where(valid, df, 1.0))
        bounds.append(np.where(valid, _q_root(rows, target, valid), np.nan))
    return bounds[0], bounds[1]
