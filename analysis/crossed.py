"""Verdicts that generalize over items as well as runs: the in-domain testset's noise out, items crossed with runs.

A study scores every run on the same items. Two things follow, and a verdict
across runs that ignores them can call a pair "consistently positive" when X
and Y are related only through in-domain ability:

1. **The control is noisy.** The in-domain score is a mean over a sample of
   items, so it measures ability with error. Regressing X and Y on it leaves
   in both residuals the part of ability that the error hid, and the residuals
   correlate: the partial correlation is biased away from 0 in every run, by
   the same mechanism, and more runs do not help.
2. **The items are shared.** Every run is scored on the same items, so
   whatever a draw of items does to a run's estimate it does to every run:
   the runs' estimates are not independent, and pooling them as if they were
   overstates what is known (Clark 1973's "language-as-fixed-effect fallacy";
   Baayen, Davidson & Bates 2008). Here the runs are the subjects.

**The test: a vanishing tetrad.** Two distinct in-domain items measure the
same ability with independent errors. If X and Y are related only through
ability (a linear one-factor model for X, Y and the items), their covariances
obey Spearman's tetrad equation ``s_XY s_ij = s_Xi s_Yj`` for any two distinct
items ``i`` and ``j`` (Spearman 1904; Wishart 1928; Bollen & Ting 1993). The
statistic is the tetrad difference averaged over every ordered pair of
distinct items (a U-statistic, :func:`tetrads`),

    ``tau = s_XY V - C_XY``,   ``V = mean s_ij``,   ``C_XY = mean s_Xi s_Yj``,

which needs no estimate of the control's error variance and divides by no
noisy quantity. Given the ability's path over the checkpoints, each product
in it pairs covariances whose errors come from disjoint, independent sources
(X's items, Y's, item ``i``'s, item ``j``'s), so under the null its expectation
is exactly 0, for any distribution of the answers and any autocorrelation of
their noise over checkpoints. ``tau / V`` is the errors-in-variables partial
covariance ``s_XY - C_XY / V`` (Fuller 1987, ch. 1), defined where X and Y are
nearly pure functions of ability. Each run's ``r* = tau / scale``, with
``scale = V sqrt(v_X v_Y)`` (``v`` the residual variances of the linear fit
on the full in-domain score), is that covariance on the naive partial
correlation's scale: the naive r with the control's noise taken out, 0 under
the null. (It keeps X's and Y's own item noise in its denominator, so it is
attenuated by their reliability, unlike ``r_corrected`` of ``analyze --items``.)

**Crossed inference over runs and items.** The pooled ``r*`` is the ratio
``sum tau / sum scale`` over the ``R`` runs. Its linearization ``u_r = tau_r -
r* scale_r`` errs by a part of each run's own (its checkpoints, and the answers
its model gave) and a part that the shared items give every run alike:

    ``Var(mean u) = Var(u_own) / R + C``,

where the spread of the ``u_r`` over runs estimates the first term (it carries
the checkpoints' and each run's own answers' noise, and any real difference
between runs) and ``C`` is the covariance between two runs' ``u`` across draws
of items: the mean off-diagonal covariance over ``resamples`` study-wide
resamples of the items, each testset's items drawn with replacement once for
the whole study and the same draw used in every run. This is the
method-of-moments variance of a crossed design (the spread over subjects plus
the covariance items induce between them, as in Clark's F' and Owen's 2007
pigeonhole bootstrap, without its double count of the interaction). The
pooled estimate is referred to Student's t with Satterthwaite's degrees of
freedom for the runs' spread: the ratio weighs each run by its scale, so a
run's ``u`` varies as its scale, and the spread of ``R`` runs of unequal
scales counts as ``(sum scale²)² / sum scale⁴`` runs, less the one the mean
takes (``R - 1`` for equal scales; ``R - 1`` with unequal ones rejected 7 to 10 %
of 100-150 planted nulls at 5 %). Its interval is
symmetric about the estimate, so it never excludes it, and clipped to [-1, 1].

**Per run** (significance, heterogeneity): each run's ``r*`` has a
delete-a-block jackknife variance over its checkpoints, in blocks of
consecutive checkpoints so that autocorrelated training curves are not
treated as independent draws. The block is :data:`JACKKNIFE_BLOCK` (3)
checkpoints, longer where X's and Y's residuals on the in-domain score drift
over training (:func:`block_length`): a block of ``b`` misses up to
``2 rho / (b (1 - rho²))`` of the variance of a statistic whose terms
correlate ``rho^k`` at lag ``k`` (``rho`` the product of the two residual
series' lag-1 autocorrelations, Bretherton et al. 1999's, as the runs-only
effective sample size uses), and the block is the shortest that keeps this
below :data:`BLOCK_SHORTFALL`. With blocks of 3 throughout, OOD signals that
drift over training (an AR(1) of 0.8 over 30 checkpoints) made Cochran's Q
call 15 % of 120 planted nulls heterogeneous at 5 %, and 5.8 % with these
blocks (``tests/test_analysis_crossed.py``). The heterogeneity test
is Cochran's Q of the runs' ``r*`` with their mean jackknife variance (one
run's own, from ten blocks, is too rough to divide by), referred to a scaled
χ² whose two moments match those of Q given the runs' own variances
(Satterthwaite 1946): with runs of unequal precision, χ² with ``R - 1`` degrees
of freedom called 7 % of planted nulls heterogeneous at 5 %. The jackknife's
variance is biased upward (Efron & Stein 1981), so the test errs towards not
calling a pair model-dependent.

**What it does not correct.** The tetrad is the linear one-factor model's: a
pair whose noise-free scores both curve the same way against the in-domain
score (a linear residualizer's misfit) is not absorbed by it.
``docs/explanation/statistics.md`` shows the level on planted studies, that
case included, and says which interval to report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from scipy import stats

from ood_store._analysis import inference, itemstats, residuals
from ood_store._analysis.series import read_series_sql
from ood_store._errors import AnalysisError
from ood_store._progress import progress_bar

if TYPE_CHECKING:
    from ood_store._analysis.items import RunItems
    from ood_store._analysis.partial import Options
    from ood_store._store import Database

#: ``item_inference`` of :func:`~ood_store._analysis.compare.compare`: ``auto`` (items and runs where the store
#: holds per-sample rows of every task, else runs only), ``items`` (fail without them), ``runs`` (as before).
ITEM_INFERENCE = ("auto", "items", "runs")
#: Study-wide item resamples behind the shared items' covariance between runs.
RESAMPLES = 500
#: Item resamples handled in one matrix product.
CHUNK = 500
#: Consecutive checkpoints deleted at once by the per-run jackknife, at the least (:func:`block_length`).
JACKKNIFE_BLOCK = 3
#: Fewest checkpoints a run needs for a tetrad (and a jackknife of at least 3 blocks).
MIN_CHECKPOINTS = 2 * JACKKNIFE_BLOCK + 3
#: The largest share of a run's variance that its jackknife's blocks may miss through autocorrelation.
BLOCK_SHORTFALL = 0.05
#: Fewest blocks the jackknife keeps, however long the drift asks its blocks to be.
MIN_BLOCKS = 5

BASIS_ITEMS = "items and runs"
BASIS_RUNS = "runs only (item noise not included)"


@dataclass(frozen=True)
class ItemEvidence:
    """Per run and pair, what the crossed inference needs (pairs in the order given to :func:`item_evidence`)."""

    runs: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]
    tau: np.ndarray  # runs × pairs: the tetrad difference
    scale: np.ndarray  # runs × pairs: its scale, s_AB sqrt(v_X v_Y)
    reliability: np.ndarray  # runs: the in-domain testset's reliability over the run's checkpoints
    within: np.ndarray  # runs × pairs: the sampling variance of each run's r* over its checkpoints (jackknife)
    draws_tau: np.ndarray  # resamples × runs × pairs: tau on study-wide item resamples
    draws_scale: np.ndarray  # resamples × runs × pairs: the scale on the same resamples
    r_noise: np.ndarray  # runs × pairs: the naive r the item noise alone would give
    resamples: int
    blocks: np.ndarray  # pairs: the checkpoints each jackknife block of ``within`` deletes (block_length)


def tetrads(control: np.ndarray, ood: np.ndarray, weights: np.ndarray | None = None):
    """Tetrad differences ``tau`` and their scales (… × p × p each), and the control's reliability (…), over
    the checkpoints of one run, averaged over every pair of distinct in-domain items.

    ``control``: the in-domain items × T (0/1 or any per-item metric); ``ood``: the OOD scores, T × p, or
    resamples × T × p with ``weights`` (resamples × items: how often each in-domain item was drawn). With
    ``S_ij`` the covariance of items ``i`` and ``j`` over the checkpoints and ``S_Xi`` that of X's score and
    item ``i``, the U-statistics over pairs ``i != j`` of distinct items (each counted as often as it was
    drawn) are

    - ``V = mean S_ij``: the variance of the in-domain score free of its items' noise (two distinct items'
      noises are independent): the covariance ``s_AB`` of two halves of the items, averaged over every halving;
    - ``C_XY = mean S_Xi S_Yj``: ``s_XA s_YB`` averaged likewise;

    and ``tau = s_XY V - C_XY`` (symmetric in X and Y). Its scale is ``V sqrt(v_X v_Y)``, ``v`` each OOD
    series' residual variance after the linear fit on the in-domain score, so that ``tau / scale`` is the
    errors-in-variables partial covariance ``s_XY - C_XY / V`` over the naive fit's residual standard
    deviations; the reliability is ``V / s_ZZ``.

    Examples
    --------
    An in-domain testset of 40 items answered with probability ``p`` (a logistic of a rising ability) over
    2,000 checkpoints, and two OOD series, each ``p`` plus noise of its own: the tetrad equation holds, so
    ``tau / scale`` is 0 on average over draws, while the naive partial correlation is far from it; the
    reliability is about ``var(p) / (var(p) + mean(p (1 - p)) / 40)``:

    >>> p = 1 / (1 + np.exp(-np.linspace(-1, 1, 2000)))
    >>> ratios, naive = [], []
    >>> for seed in range(20):
    ...     rng = np.random.default_rng(seed)
    ...     items = (rng.random((40, 2000)) < p).astype(float)
    ...     xy = np.stack([0.5 * p + 0.02 * rng.standard_normal(2000) for _ in range(2)], axis=-1)
    ...     tau, scale, reliability = tetrads(items, xy)
    ...     ratios.append(tau[0, 1] / scale[0, 1])
    ...     z = items.mean(axis=0)  # the naive partial correlation, given the noisy in-domain score
    ...     ex, ey = (xy[:, j] - np.polyval(np.polyfit(z, xy[:, j], 1), z) for j in (0, 1))
    ...     naive.append(np.corrcoef(ex, ey)[0, 1])
    >>> bool(abs(np.mean(ratios)) < 0.03), round(float(np.mean(naive)), 1)
    (True, 0.7)
    >>> truth = p.var() / (p.var() + (p * (1 - p)).mean() / 40)
    >>> round(float(truth), 3), bool(abs(reliability - truth) < 0.02)
    (0.766, True)
    """
    centered = control - control.mean(axis=1, keepdims=True)
    n, T = centered.shape
    w = np.ones((1, n)) if weights is None else weights.astype(float)
    w2 = w * w
    sums = w @ centered  # resamples × T: the drawn items' summed (centered) scores
    drawn, drawn2 = w.sum(axis=1), w2.sum(axis=1)
    pairs = drawn**2 - drawn2
    own = w2 @ (centered * centered).sum(axis=1) / T  # sum of w_i^2 S_ii
    total = (sums * sums).sum(axis=1) / T
    V = (total - own) / pairs
    s_zz = total / drawn**2
    x = ood if ood.ndim == 3 else ood[None]
    x = x - x.mean(axis=-2, keepdims=True)
    sx = np.einsum("bt,btp->bp", sums, x) / T  # sum of w_i S_Xi
    if weights is None:
        gram = (centered.T @ centered)[None]  # T × T: sum of Yc_i Yc_i'
    else:
        # the one large product: single precision where it is large (its terms are each item's own, so the
        # rounding is relative to each term, not to their difference)
        single = w.shape[0] * n * T * T > 5e7
        yc = centered.astype(np.float32 if single else float)
        outer = (yc[:, :, None] * yc[:, None, :]).reshape(n, T * T)
        gram = (w2.astype(yc.dtype) @ outer).astype(float).reshape(-1, T, T)
    own_xy = np.einsum("btp,bts,bsq->bpq", x, gram, x) / T**2  # sum of w_i^2 S_Xi S_Yi
    cross = (sx[:, :, None] * sx[:, None, :] - own_xy) / pairs[:, None, None]
    s_xx = np.einsum("btp,btq->bpq", x, x) / T
    tau = s_xx * V[:, None, None] - cross
    with np.errstate(divide="ignore", invalid="ignore"):
        s_xz = sx / drawn[:, None]
        residual = np.diagonal(s_xx, axis1=-2, axis2=-1) - s_xz**2 / s_zz[:, None]
        residual = np.where(residual > 0, residual, np.nan)
        scale = V[:, None, None] * np.sqrt(residual[:, :, None] * residual[:, None, :])
        reliability = V / s_zz
    if ood.ndim == 2:
        return tau[0], scale[0], reliability[0]
    return tau, scale, reliability


def residual_lag1(matrices: Sequence[np.ndarray]) -> np.ndarray:
    """The lag-1 autocorrelation of each OOD score's residual on the in-domain score (linear fit) over one run's
    checkpoints (one per OOD task; NaN for a constant residual)."""
    ood = np.stack([Y.mean(axis=0) for Y in matrices[1:]], axis=-1).astype(float)  # T × p
    return inference.lag1_autocorrelation(residuals.linear(matrices[0].mean(axis=0).astype(float), ood).values)


def block_length(lag1: np.ndarray, pairs: tuple[np.ndarray, np.ndarray], checkpoints: int) -> np.ndarray:
    """Per pair, the jackknife's block: the shortest ``b >= JACKKNIFE_BLOCK`` with ``2 rho / (b (1 - rho²))`` at
    most :data:`BLOCK_SHORTFALL`, ``rho`` the median over the runs of the product of X's and Y's residual lag-1
    autocorrelations (0 where negative: Bretherton et al. 1999's product), and no longer than keeps
    :data:`MIN_BLOCKS` blocks in ``checkpoints`` (the fewest a run has).

    ``lag1``: runs × OOD tasks (:func:`residual_lag1`); ``pairs``: indices into the OOD tasks (``ix, iy``).

    Examples
    --------
    Residuals without autocorrelation keep blocks of 3; lag-1 autocorrelations of 0.5 in both (rho 0.25) ask
    for ``2 · 0.25 / (0.05 · (1 - 0.0625)) = 10.7``, so 11 of 100 checkpoints; 0.9 in both (rho 0.81) would ask
    for 95, and 100 checkpoints keep 5 blocks of 20; 30 checkpoints keep 5 blocks of 6:

    >>> lag1 = np.array([[0.0, 0.5, 0.9], [0.1, 0.5, 0.9]])
    >>> pairs = (np.array([0, 1, 2]), np.array([1, 1, 2]))
    >>> block_length(lag1, pairs, 100).tolist(), block_length(lag1, pairs, 30).tolist()
    ([3, 11, 20], [3, 6, 6])
    """
    ix, iy = pairs
    product = np.clip(lag1[:, ix] * lag1[:, iy], 0.0, 0.99)
    product[~np.isfinite(product)] = 0.0  # a constant residual: nothing that drifts
    rho = np.median(product, axis=0) if product.size else np.zeros(ix.size)
    wanted = np.ceil(2.0 * rho / (BLOCK_SHORTFALL * (1.0 - rho**2)) - 1e-9)
    longest = max(JACKKNIFE_BLOCK, checkpoints // MIN_BLOCKS)
    return np.clip(wanted, JACKKNIFE_BLOCK, longest).astype(int)


def run_tetrads(matrices: Sequence[np.ndarray], pairs: tuple[np.ndarray, np.ndarray], blocks: np.ndarray | None = None):
    """One run's tetrads and scales per pair, its in-domain testset's reliability, and the delete-a-block
    jackknife variance of its ``r* = tau / scale`` over the checkpoints.

    ``matrices``: items × T per task, in-domain first; ``pairs``: indices into the OOD tasks (``ix, iy``);
    ``blocks``: each pair's block of consecutive checkpoints (:func:`block_length`; default
    :data:`JACKKNIFE_BLOCK`).
    """
    ix, iy = pairs
    control = matrices[0]
    ood = np.stack([Y.mean(axis=0) for Y in matrices[1:]], axis=-1)  # T × p
    T = ood.shape[0]
    tau, scale, reliability = tetrads(control, ood)
    blocks = np.full(ix.size, JACKKNIFE_BLOCK) if blocks is None else np.asarray(blocks)
    variance = np.full(ix.size, np.nan)
    for block in np.unique(blocks).tolist():
        chosen = blocks == block
        leave = []
        for start in range(0, T - block + 1, block):
            keep = np.ones(T, dtype=bool)
            keep[start : start + block] = False
            t_k, s_k, _ = tetrads(control[:, keep], ood[keep])
            with np.errstate(divide="ignore", invalid="ignore"):
                leave.append(t_k[ix[chosen], iy[chosen]] / s_k[ix[chosen], iy[chosen]])
        values = np.array(leave)  # blocks × pairs (inf or NaN where a block's scale is 0 or undefined: NaN out)
        g = values.shape[0]
        with np.errstate(invalid="ignore"):
            variance[chosen] = (g - 1) / g * ((values - values.mean(axis=0)) ** 2).sum(axis=0)  # delete-a-group
    return tau[ix, iy], scale[ix, iy], float(reliability), variance


def item_evidence(
    by_run: dict[str, RunItems],
    tasks: Sequence[str],
    pairs: Sequence[tuple[str, str]],
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
    progress: bool = False,
) -> ItemEvidence:
    """The crossed inference's raw material for ``pairs`` of OOD ``tasks`` (``tasks[0]`` is the in-domain one).

    ``by_run``: each run's item matrices in the order of ``tasks``
    (:func:`~ood_store._analysis.items.load_items`), the same items in every
    run. The item resamples are drawn once (seeded by ``seed`` and each
    testset's name) and used in every run.
    """
    runs = tuple(by_run)
    if not runs:
        raise AnalysisError("no run has per-sample rows of every task")
    sizes = {tuple(Y.shape[0] for Y in by_run[run].matrices) for run in runs}
    if len(sizes) > 1:
        raise AnalysisError("the runs were scored on different numbers of items: item inference needs the same items")
    sizes_one = next(iter(sizes))
    index = {name: k for k, name in enumerate(tasks[1:])}
    ix = np.array([index[x] for x, _ in pairs], dtype=int)
    iy = np.array([index[y] for _, y in pairs], dtype=int)
    draws = itemstats.Draws(seed)
    weights = [draws.weights(name, n, resamples, 3) for name, n in zip(tasks, sizes_one, strict=True)]
    R, P = len(runs), len(pairs)
    tau = np.full((R, P), np.nan)
    scale = np.full((R, P), np.nan)
    within = np.full((R, P), np.nan)
    reliability = np.full(R, np.nan)
    noise = np.full((R, P), np.nan)
    drawn_tau = np.full((resamples, R, P), np.nan)
    drawn_scale = np.full((resamples, R, P), np.nan)
    usable = [r for r, run in enumerate(runs) if by_run[run].matrices[0].shape[1] >= MIN_CHECKPOINTS]
    bounds = np.cumsum([0] + [by_run[runs[r]].matrices[0].shape[1] for r in usable])
    lag1 = np.array([residual_lag1(by_run[runs[r]].matrices) for r in usable]).reshape(len(usable), len(tasks) - 1)
    blocks = block_length(lag1, (ix, iy), int(np.diff(bounds).min()) if usable else MIN_CHECKPOINTS)
    with progress_bar(progress, len(usable) + len(tasks) - 1, "items across runs") as advance:
        # every run's resampled OOD scores in one product per testset (the same items, so the same draws)
        resampled = []
        for j in range(1, len(tasks)):
            if usable:
                side = np.hstack([by_run[runs[r]].matrices[j] for r in usable]).astype(np.float32)
                resampled.append((weights[j].astype(np.float32) @ side).astype(float) / side.shape[0])
            advance(1, description=tasks[j])
        for k, r in enumerate(usable):
            matrices = by_run[runs[r]].matrices
            tau[r], scale[r], reliability[r], within[r] = run_tetrads(matrices, (ix, iy), blocks)
            _, cov, error = itemstats.statistics(matrices)
            noise[r] = itemstats.noise_only(cov, error)[0][ix, iy]
            span = slice(int(bounds[k]), int(bounds[k + 1]))
            ood = np.stack([part[:, span] for part in resampled], axis=-1)  # resamples × T × p
            for start in range(0, resamples, CHUNK):
                part = slice(start, min(start + CHUNK, resamples))
                tau_b, scale_b, _ = tetrads(matrices[0], ood[part], weights[0][part])
                drawn_tau[part, r] = tau_b[:, ix, iy]
                drawn_scale[part, r] = scale_b[:, ix, iy]
            advance(1, description=runs[r])
    return ItemEvidence(runs, tuple(pairs), tau, scale, reliability, within, drawn_tau, drawn_scale, noise,
                        resamples, blocks)  # fmt: skip


@dataclass(frozen=True)
class Crossed:
    """The crossed pooling of one row's runs (floats; NaN where it cannot be had)."""

    estimate: float  # r*: the runs' tetrads summed over their scales summed
    variance: float  # the estimate's: Var(mean u) / mean(scale)², u the ratio's linearization
    run_variance: float  # the part from the runs' spread (of u, over R)
    item_covariance: float  # the part the shared items give every run (C of u, floored at 0)
    df: float  # the runs' effective number (Satterthwaite's) less 1
    pvalue: float
    q_stat: float  # Cochran's Q of the runs' r*, with their mean jackknife variance
    q_p: float
    i2: float
    tau2: float  # the variance of r* between runs beyond their sampling variance (DerSimonian–Laird)

    def interval(self, alpha: float) -> tuple[float, float]:
        """The pooled r*'s interval at ``1 - alpha``: Student's t with ``df``, symmetric about the estimate
        (so never excluding it), clipped to [-1, 1]."""
        if not (np.isfinite(self.estimate) and np.isfinite(self.variance)):
            return np.nan, np.nan
        half = stats.t.isf(alpha / 2.0, self.df) * np.sqrt(self.variance)
        return float(max(self.estimate - half, -1.0)), float(min(self.estimate + half, 1.0))


def crossed(tau: np.ndarray, scale: np.ndarray, draws_tau: np.ndarray, draws_scale: np.ndarray,
            within: np.ndarray) -> Crossed:  # fmt: skip
    """Pool one pair's runs: their tetrads and scales (runs), the same on study-wide item resamples
    (resamples × runs) and the jackknife variances of their r* (runs); runs with a NaN anywhere are left out.

    The estimate is the ratio ``sum tau / sum scale``; its variance is that of the mean of
    ``u_r = tau_r - r* scale_r`` (the ratio's linearization) over ``mean(scale)²``, the mean's variance being
    the runs' spread over R plus the covariance the shared items give two runs' ``u`` (the mean off-diagonal
    covariance over the resamples; :mod:`the module <ood_store._analysis.crossed>`).

    Examples
    --------
    Five runs whose tetrads differ by their own noise only, and item resamples that move every run alike:
    the variance of the mean is the runs' spread over 5 plus the shared items' covariance.

    >>> rng = np.random.default_rng(1)
    >>> tau, scale = np.array([0.1, 0.3, 0.2, 0.25, 0.15]), np.ones(5)
    >>> shared = 0.02 * rng.standard_normal((4000, 1))
    >>> pooled = crossed(tau, scale, tau + shared, scale + 0 * shared, np.full(5, 0.01))
    >>> round(pooled.estimate, 3), round(pooled.run_variance, 5), round(pooled.item_covariance, 5)  # 0.00625 / 5
    (0.2, 0.00125, 0.0004)
    """
    use = np.isfinite(tau) & np.isfinite(scale) & (scale > 0) & np.isfinite(within)
    use &= np.isfinite(draws_tau).all(axis=0) & np.isfinite(draws_scale).all(axis=0)
    R = int(use.sum())
    nan = float("nan")
    if R < 2:
        value = float(np.clip(tau[use][0] / scale[use][0], -1, 1)) if R == 1 else nan
        return Crossed(value, nan, nan, nan, nan, nan, nan, nan, nan, nan)
    tau, scale, within = tau[use], scale[use], within[use]
    draws_tau, draws_scale = draws_tau[:, use], draws_scale[:, use]
    ratio = float(tau.sum() / scale.sum())
    u = tau - ratio * scale
    u_drawn = draws_tau - ratio * draws_scale
    spread = float(u.var(ddof=1)) / R
    cov = np.cov(u_drawn, rowvar=False)
    shared = max(float((cov.sum() - np.trace(cov)) / (R * (R - 1))), 0.0)
    mean_scale = float(scale.mean())
    variance = (spread + shared) / mean_scale**2
    # Satterthwaite's degrees of freedom of the runs' spread when run r's u varies as its scale (the ratio weighs
    # the runs by it): (sum scale²)² / sum scale⁴ runs, less the one the mean takes; R - 1 for equal scales
    runs_eff = float((scale**2).sum() ** 2 / (scale**4).sum())
    df = max(runs_eff - 1.0, 1.0)
    statistic = ratio / np.sqrt(variance) if variance > 0 else nan
    p = float(2.0 * stats.t.sf(abs(statistic), df)) if np.isfinite(statistic) else nan
    r_runs = np.clip(tau / scale, -1.0, 1.0)
    typical = float(within.mean())
    if typical > 0:
        q_stat = float(((r_runs - r_runs.mean()) ** 2).sum() / typical)
        q_p = _q_p(q_stat, within / typical)
        i2 = max(0.0, (q_stat - (R - 1)) / q_stat) if q_stat > 0 else 0.0
        tau2 = max(0.0, float(r_runs.var(ddof=1)) - typical)
    else:
        q_stat = q_p = i2 = tau2 = nan
    return Crossed(float(np.clip(ratio, -1.0, 1.0)), variance, spread / mean_scale**2, shared / mean_scale**2,
                   float(df), p, q_stat, q_p, i2, tau2)  # fmt: skip


@dataclass(frozen=True)
class CrossedGroups:
    """The crossed test between groups of one row's runs (floats; NaN where it cannot be had)."""

    groups: tuple[str, ...]  # the groups with a usable run, in the order of ``means``
    sizes: np.ndarray  # usable runs per group
    means: np.ndarray  # per group: its runs' tetrads summed over their scales summed (r*)
    statistic: float  # the Wald statistic of equal group means, over its numerator degrees of freedom (F or χ²)
    df_between: float  # groups - 1
    df_within: float  # Satterthwaite's: each group's effective runs less one, summed
    pvalue: float
    q_within: float  # Cochran's Q of the runs' r* about their group's mean, with their mean jackknife variance
    q_within_df: float  # its scaled χ²'s degrees of freedom
    q_within_p: float
    i2: float
    tau2: float  # the variance of r* between runs of a group beyond their sampling variance


def crossed_groups(tau: np.ndarray, scale: np.ndarray, draws_tau: np.ndarray, draws_scale: np.ndarray,
                   within: np.ndarray, labels: Sequence[str], test: str = "knha") -> CrossedGroups:  # fmt: skip
    """Do the runs' ``r*`` differ between groups (``labels``, one per run) beyond the spread of runs within groups,
    with the runs' shared items crossed? Inputs as :func:`crossed`; runs with a NaN anywhere are left out.

    Each group's estimate is its ratio ``m_g = sum tau / sum scale``; its error, linearized, is the mean of its
    runs' ``u_r = tau_r - m_g scale_r`` over their mean scale. The covariance matrix of the group estimates is the
    runs' spread within each group over its size (on the diagonal) plus the covariance the shared items give two
    different runs, averaged over the pairs of runs of the two groups (from the study-wide item resamples, the
    same draw in every run; made positive semi-definite). Items shared by every group move the groups' estimates
    together, so they add to each group's variance and cancel from their differences, as a crossed design should.
    The groups' equality is Wald's test of the ``G - 1`` differences from the first group, ``W / (G - 1)`` referred
    to F with ``G - 1`` and Satterthwaite's within-group degrees of freedom (``test="knha"``; ``runs - groups``
    for equal scales) or ``W`` to χ² with ``G - 1`` (``test="z"``).

    Examples
    --------
    Two groups of four runs with equal scales and no item noise: ``W`` is then Welch's t² of the runs' r*.

    >>> tau = np.array([0.1, 0.3, 0.2, 0.25, -0.2, -0.1, 0.0, -0.15])
    >>> still = np.zeros((50, 8))
    >>> fit = crossed_groups(tau, np.ones(8), still + tau, still + 1, np.full(8, 0.01), list("aaaabbbb"))
    >>> welch = stats.ttest_ind(tau[:4], tau[4:], equal_var=False).statistic
    >>> bool(np.isclose(fit.statistic, welch**2)), fit.df_between, fit.df_within
    (True, 1.0, 6.0)
    """
    labels_all = np.asarray(labels, dtype=object)
    use = np.isfinite(tau) & np.isfinite(scale) & (scale > 0) & np.isfinite(within)
    use &= np.isfinite(draws_tau).all(axis=0) & np.isfinite(draws_scale).all(axis=0)
    names = tuple(dict.fromkeys(labels_all[use].tolist()))
    G = len(names)
    sizes = np.array([int((labels_all[use] == g).sum()) for g in names], dtype=np.int64)
    nan = float("nan")
    tau, scale, within, labels_use = tau[use], scale[use], within[use], labels_all[use]
    draws_tau, draws_scale = draws_tau[:, use], draws_scale[:, use]
    code = np.array([names.index(g) for g in labels_use], dtype=int)
    means = np.array([tau[code == g].sum() / scale[code == g].sum() for g in range(G)])
    if G < 2 or sizes.min() < 2:
        return CrossedGroups(names, sizes, np.clip(means, -1, 1), nan, nan, nan, nan, nan, nan, nan, nan, nan)
    u = tau - means[code] * scale
    u_drawn = draws_tau - means[code][None, :] * draws_scale
    cov = np.cov(u_drawn, rowvar=False)
    member = np.eye(G)[code]  # runs × groups
    off = cov - np.diag(np.diag(cov))  # two different runs only: a run's own item noise is in the spread
    pairs = member.T @ (1.0 - np.eye(code.size)) @ member
    shared = (member.T @ off @ member) / pairs
    values, vectors = np.linalg.eigh((shared + shared.T) / 2.0)
    shared = (vectors * np.clip(values, 0.0, None)) @ vectors.T
    mean_scale = np.array([scale[code == g].mean() for g in range(G)])
    spread = np.array([u[code == g].var(ddof=1) / sizes[g] for g in range(G)])
    sigma = (np.diag(spread) + shared) / np.outer(mean_scale, mean_scale)
    contrast = np.hstack([-np.ones((G - 1, 1)), np.eye(G - 1)])
    difference = contrast @ means
    wald = float(difference @ np.linalg.pinv(contrast @ sigma @ contrast.T) @ difference)
    effective = [(scale[code == g] ** 2).sum() ** 2 / (scale[code == g] ** 4).sum() for g in range(G)]
    df_within = max(float(sum(e - 1.0 for e in effective)), 1.0)
    if test == "z":
        statistic, p = wald, float(stats.chi2.sf(wald, G - 1))
    else:
        statistic = wald / (G - 1)
        p = float(stats.f.sf(statistic, G - 1, df_within))
    r_runs = np.clip(tau / scale, -1.0, 1.0)
    group_mean = np.array([r_runs[code == g].mean() for g in range(G)])
    typical = float(within.mean())
    q_stat = q_df = q_p = i2 = tau2 = nan
    if typical > 0:
        q_stat = float(((r_runs - group_mean[code]) ** 2).sum() / typical)
        q_p, q_df = _q_p_groups(q_stat, within / typical, code)
        dof = code.size - G
        i2 = max(0.0, (q_stat - dof) / q_stat) if q_stat > 0 else 0.0
        pooled_var = float(((r_runs - group_mean[code]) ** 2).sum() / dof)
        tau2 = max(0.0, pooled_var - typical)
    return CrossedGroups(names, sizes, np.clip(means, -1.0, 1.0), statistic, float(G - 1), df_within, p, q_stat,
                         q_df, q_p, i2, tau2)  # fmt: skip


def _q_p_groups(q_stat: float, relative: np.ndarray, code: np.ndarray) -> tuple[float, float]:
    """The p (and degrees of freedom) of Q about each group's mean, as :func:`_q_p` with the centering done
    within each group (``code``: each run's group)."""
    member = np.eye(int(code.max()) + 1)[code]
    centering = np.eye(code.size) - member @ np.diag(1.0 / member.sum(axis=0)) @ member.T
    M = centering @ np.diag(relative) @ centering
    first, second = float(np.trace(M)), float(np.trace(M @ M))
    return float(stats.chi2.sf(q_stat * first / second, first**2 / second)), first**2 / second


def _q_p(q_stat: float, relative: np.ndarray) -> float:
    """The p of Cochran's Q with the runs' mean variance, ``sum (r - mean r)² / mean v``, when the runs' own
    variances differ (``relative``: each over their mean): Q is then a quadratic form ``r' A Λ A r`` (``A`` the
    centering) whose null distribution is referred to ``c χ²_ν`` with its first two moments (Satterthwaite 1946:
    ``c = tr(M²) / tr(M)``, ``ν = tr(M)² / tr(M²)``, ``M = A Λ A``); χ² with ``R - 1`` when the variances are equal.

    >>> round(_q_p(7.0, np.ones(8)), 4) == round(float(stats.chi2.sf(7.0, 7)), 4)
    True
    """
    R = relative.size
    centering = np.eye(R) - 1.0 / R
    M = centering @ np.diag(relative) @ centering
    first, second = float(np.trace(M)), float(np.trace(M @ M))
    return float(stats.chi2.sf(q_stat * first / second, first**2 / second))


def calibrated(r: np.ndarray, variance: np.ndarray, estimate: float) -> np.ndarray:
    """The runs' calibrated estimates (Wang & Lee 2019): each run's r* drawn towards the pooled ``estimate`` by
    ``sqrt(tau² / (tau² + v_r))``, ``v_r`` its own sampling variance (the jackknife's) and ``tau²`` the
    DerSimonian–Laird variance between runs, so that their spread is ``tau²``'s, not ``tau²`` plus each run's
    noise. Mathur & VanderWeele (2019) estimate from them the share of runs whose true effect lies beyond a
    threshold; :func:`~ood_store._analysis.compare.compare` counts their signs (``sign_agreement``) where the
    runs' r* are too noisy for their own signs to tell. NaN where a run has no finite r* or variance.

    Examples
    --------
    Runs that differ by no more than their noise (tau² 0) all calibrate to the pooled estimate; with a
    spread far beyond the noise they stay nearly where they are:

    >>> calibrated(np.array([0.5, -0.1, 0.3, 0.2]), np.full(4, 0.09), 0.2)
    array([0.2, 0.2, 0.2, 0.2])
    >>> np.round(calibrated(np.array([0.9, -0.8, 0.85, -0.9]), np.full(4, 0.001), 0.0), 2)
    array([ 0.9 , -0.8 ,  0.85, -0.9 ])
    """
    out = np.full(r.shape, np.nan)
    ok = np.isfinite(r) & np.isfinite(variance) & (variance > 0)
    if not ok.any() or not np.isfinite(estimate):
        return out
    x, v = r[ok], variance[ok]
    w = 1.0 / v
    mean = float((w * x).sum() / w.sum())
    q = float((w * (x - mean) ** 2).sum())
    denominator = float(w.sum() - (w**2).sum() / w.sum())
    tau2 = max(0.0, (q - (x.size - 1)) / denominator) if denominator > 0 else 0.0
    out[ok] = estimate + np.sqrt(tau2 / (tau2 + v)) * (x - estimate)
    return out


def per_run_p(r: np.ndarray, within: np.ndarray) -> np.ndarray:
    """Each run's two-sided p of ``r* = 0`` (normal), with the runs' mean jackknife variance (runs × pairs in,
    the mean over the runs of each pair; one run's own jackknife variance, from a few blocks, is too rough
    to divide by)."""
    with np.errstate(divide="ignore", invalid="ignore", all="ignore"):
        typical = np.nanmean(within, axis=0, keepdims=True)
        return 2.0 * stats.norm.sf(np.abs(r) / np.sqrt(typical))


def control_noise(store: Database, options: Options, runs: Sequence[str], tasks: Sequence[str]) -> pl.DataFrame:
    """Per run, the item-noise variance of each task's score averaged over the run's checkpoints, from what the
    store knows without per-sample rows: lm-eval's stderr (squared), else ``p (1 - p) / n`` from the testset's
    size. Columns ``run``, ``task``, ``noise`` (NULL where neither is known), ``checkpoints``."""
    rows = read_series_sql(
        store,
        "item_noise",
        metric=options.metric,
        filter=options.filter,
        tasks=list(tasks),
        runs=list(runs),
        num_fewshot=options.num_fewshot,
        campaign=options.campaign,
    )
    value = pl.col("value").cast(pl.Float64)
    size = pl.col("n_samples").cast(pl.Float64)
    variance = (
        pl.when(pl.col("stderr").is_not_null())
        .then(pl.col("stderr").cast(pl.Float64) ** 2)
        .when((size > 0) & value.is_between(0, 1))
        .then(value * (1 - value) / size)
    )
    return (
        rows.select("run", "task", variance.alias("noise"))
        .group_by("run", "task")
        .agg(pl.col("noise").mean(), pl.col("noise").null_count().alias("unknown"), pl.len().alias("checkpoints"))
        .with_columns(pl.when(pl.col("unknown") == 0).then(pl.col("noise")).alias("noise"))
        .drop("unknown")
    )


def noise_r(
    scores: pl.DataFrame, noise: pl.DataFrame, in_domain: str, pairs: Sequence[tuple[str, str]]
) -> pl.DataFrame:
    """Per run and pair, the naive linear partial r that the testsets' noise alone would give
    (:func:`~ood_store._analysis.itemstats.noise_only`), from the score series (``run, step, task, value``)
    and each task's noise variance per run (:func:`control_noise`). Columns ``run, task_x, task_y, r_noise``."""
    out = []
    variances = {(run, task): v for run, task, v in noise.select("run", "task", "noise").iter_rows()}
    for (run,), part in scores.partition_by("run", as_dict=True, maintain_order=True).items():
        wide = part.pivot(on="task", index="step", values="value", aggregate_function="first").drop_nulls()
        for x, y in pairs:
            names = [in_domain, x, y]
            error = [variances.get((run, name)) for name in names]
            value = np.nan
            if all(name in wide.columns for name in names) and None not in error and wide.height > 4:
                matrix = wide.select(names).to_numpy().astype(float)
                centered = matrix - matrix.mean(axis=0)
                cov = centered.T @ centered / matrix.shape[0]
                value = float(itemstats.noise_only(cov, np.array(error, dtype=float))[0, 1])
            out.append((run, x, y, value))
    return pl.DataFrame(out, schema={"run": pl.String, "task_x": pl.String, "task_y": pl.String,
                                     "r_noise": pl.Float64}, orient="row")  # fmt: skip


def pooled_noise(values: np.ndarray) -> float:
    """The runs' noise-only r pooled as their r is: tanh of the mean Fisher z (NaN without a finite one)."""
    finite = values[np.isfinite(values)]
    if not finite.size:
        return float("nan")
    return float(np.tanh(np.arctanh(np.clip(finite, -1 + 1e-12, 1 - 1e-12)).mean()))


def could_produce(r_noise: float, low: float | None, high: float | None) -> bool | None:
    """Whether the control's noise could produce the pooled r: its interval meets ``[0, r_noise]`` (or
    ``[r_noise, 0]``), the naive r between no partial correlation free of noise and the noise's full effect
    (the stderr-based noise is an upper bound on the part that varies over checkpoints)."""
    if low is None or high is None or not np.isfinite(r_noise):
        return None
    return bool(low <= max(0.0, r_noise) and high >= min(0.0, r_noise))
