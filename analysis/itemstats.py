"""The statistics of scores made from items: item resampling, error variances, the corrected partial correlation.

One run's data are item matrices, one per task (in-domain first): ``items ×
checkpoints`` arrays of the per-item metric (0/1 for accuracy), the same items
at every checkpoint. A score is the mean over items. A resample draws each
task's items with replacement (multinomial weights ``w``, summing to the
number of items) and, when asked, the checkpoints too (counts ``c`` over the
checkpoints, summing to their number): all resamples of a run are a few
matrix products, not a loop.

**Item error variance.** A score at checkpoint ``t`` is its item population's
mean plus an error ``e_t`` from the draw of items. Over the checkpoints of a
run, what the error adds to a series' variance is, in expectation over draws
of items, ``(1 / n) (1 / T) sum_t Var_i(y_it - ybar_i)``: the variance over
items of each item's outcome centered on its own mean over the checkpoints
(an item answered alike at every checkpoint adds nothing, however hard it is).
:func:`statistics` estimates it with the sample variance over items (``n - 1``),
so that it is unbiased for any dependence of an item's outcomes across
checkpoints. Errors of different testsets are independent (their items are
distinct), so they add to the diagonal of the covariance matrix only.

**Corrected partial correlation.** Subtracting the error variances from the
diagonal of the observed covariance matrix of (in-domain, X, Y) over the
checkpoints gives an unbiased estimate of the covariance matrix of the
noise-free scores; the partial correlation computed from it is the
errors-in-variables (disattenuated) partial correlation (Spearman 1904;
Kahneman 1965; Fuller 1987, ch. 1; Westfall & Yarkoni 2016). It is NaN when a
corrected variance is not positive (the series is all noise). Its interval,
:func:`corrected_ci`, is the item draws' percentile interval moved to the
bias-corrected estimate. Residualizers other than the linear one get
:func:`simex` (Cook & Stefanski 1994), which needs only the estimator.

**Intervals.** The item-bootstrap intervals are BCa intervals (:func:`bca_ci`,
Efron 1987), their acceleration from a delete-a-group jackknife over each
testset's items (:func:`jackknife_scores`, :func:`acceleration`). A draw whose
corrected variance is not positive counts at the boundary it lies beyond
(``boundary=True``), and every interval contains its estimate (:func:`containing`).
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Callable, Sequence

import numpy as np
from scipy import special


def item_weights(n_items: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    """``reps`` × ``n_items`` multinomial counts: how often each item is drawn in each resample (rows sum to n)."""
    draws = rng.integers(0, n_items, size=(reps, n_items), dtype=np.int32)
    offsets = (np.arange(reps) * n_items)[:, None]
    counts = np.bincount((draws + offsets).ravel(), minlength=reps * n_items).reshape(reps, n_items)
    return counts.astype(np.uint16 if n_items < 65536 else np.float64)


def checkpoint_counts(indices: np.ndarray, n_checkpoints: int) -> np.ndarray:
    """Counts of each checkpoint in each resample, from resampled indices (resamples × T): resamples × T."""
    reps = indices.shape[0]
    offsets = (np.arange(reps) * n_checkpoints)[:, None]
    flat = np.bincount((indices + offsets).ravel(), minlength=reps * n_checkpoints)
    return flat.reshape(reps, n_checkpoints).astype(float)


def statistics(
    matrices: Sequence[np.ndarray],
    weights: Sequence[np.ndarray | None] | None = None,
    counts: np.ndarray | None = None,
    sums: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores, their covariance matrix over checkpoints and each task's item error variance, per resample.

    ``matrices``: one ``items × T`` array per task. ``weights``: per task a
    ``reps × items`` array of item counts (None: every item once). ``counts``:
    ``reps × T`` checkpoint counts (None: every checkpoint once). Returns
    ``scores`` (reps × T × tasks, the resampled items' mean at each original
    checkpoint), ``cov`` (reps × tasks × tasks, population covariance over the
    checkpoints weighted by ``counts``) and ``error`` (reps × tasks, the
    estimated error variance that item sampling adds to each diagonal of ``cov``).
    ``sums`` (without ``counts``): each task's resampled scores and within-item
    sums as :func:`resampled_sums` made them for these ``weights``, not made again.
    """
    tasks = len(matrices)
    T = matrices[0].shape[1]
    reps = _reps(weights, counts)
    c = np.ones((reps, T)) if counts is None else np.asarray(counts, dtype=float)
    scores = np.empty((reps, T, tasks))
    error = np.empty((reps, tasks))
    for j, Y in enumerate(matrices):
        n = Y.shape[0]
        w = None if weights is None else weights[j]
        # single precision where it is exact (counts of 0/1 items, sums below 2^24): twice as fast
        single = w is not None and n < 2**24 and np.isin(Y, (0.0, 1.0)).all()
        w = None if w is None else w.astype(np.float32 if single else float)
        dtype = np.float32 if single else float
        if sums is not None and counts is None:
            scores[:, :, j], total = sums[j]
        elif w is None:
            scores[:, :, j] = Y.mean(axis=0)[None, :]
        else:
            scores[:, :, j] = (w @ Y.astype(dtype)).astype(float) / n
        # sum over resampled checkpoints of each item's squared deviation from its own mean: items (× reps)
        if sums is not None and counts is None:
            pass
        elif counts is None:
            item_sums, squares = Y.sum(axis=1), (Y * Y).sum(axis=1)
            within = squares - item_sums * item_sums / T
            total = np.full(reps, within.sum()) if w is None else (w @ within.astype(dtype)).astype(float)
        else:
            item_sums, squares = Y @ c.T, (Y * Y) @ c.T
            within = squares - item_sums * item_sums / T
            total = within.sum(axis=0) if w is None else np.einsum("ri,ir->r", w, within)
        mean = np.einsum("rt,rt->r", c, scores[:, :, j]) / T
        spread = np.einsum("rt,rt->r", c, (scores[:, :, j] - mean[:, None]) ** 2)  # n T var_t(score) / n
        error[:, j] = (total - n * spread) / ((n - 1) * T * n)
    mean = np.einsum("rt,rtj->rj", c, scores) / T
    centered = scores - mean[:, None, :]
    cov = np.einsum("rt,rti,rtj->rij", c, centered, centered) / T
    return scores, cov, error


def resampled_sums(matrices: Sequence[np.ndarray], weights: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """One task's resampled scores (reps × T) and weighted within-item sums (reps) in several runs, in one product.

    ``matrices``: the task's items × T array in each run (the same items, so
    the same ``weights``, reps × items). The runs' columns side by side make one
    wide matrix product instead of one thin product per run, several times
    faster; in single precision where that is exact (counts of 0/1 items).
    """
    n = matrices[0].shape[0]
    single = n < 2**24 and all(np.isin(Y, (0.0, 1.0)).all() for Y in matrices)
    dtype = np.float32 if single else np.float64
    parts = []
    for Y in matrices:
        within = (Y * Y).sum(axis=1) - Y.sum(axis=1) ** 2 / Y.shape[1]
        parts += [Y, within[:, None]]
    product = (weights.astype(dtype) @ np.hstack(parts).astype(dtype)).astype(float)
    out, start = [], 0
    for Y in matrices:
        T = Y.shape[1]
        out.append((product[:, start : start + T] / n, product[:, start + T]))
        start += T + 1
    return out


def _reps(weights: Sequence[np.ndarray | None] | None, counts: np.ndarray | None) -> int:
    if counts is not None:
        return int(np.asarray(counts).shape[0])
    for w in weights or ():
        if w is not None:
            return int(w.shape[0])
    return 1


def partial_from_covariance(cov: np.ndarray, *, boundary: bool = False) -> np.ndarray:
    """Partial correlations of every pair of tasks 1..p given task 0, from covariance matrices (… × m × m).

    ``r_jk.0 = (s_jk - s_j0 s_k0 / s_00) / sqrt((s_jj - s_j0² / s_00)(s_kk - s_k0² / s_00))``;
    NaN where a conditional variance (or ``s_00``) is not positive. Returns … × p × p.

    ``boundary``: where ``s_00`` is positive but a conditional variance is not, the pair's r is the sign of
    its conditional covariance (±1) instead of NaN: the limit of the ratio as that variance falls to 0 from
    above (clipped to [-1, 1], as every r here is). The item draws of a corrected r use it, so that a draw
    whose corrected variance is not positive counts at the boundary it lies beyond rather than being dropped.

    >>> cov = np.array([[1.0, 0.5, 0.5], [0.5, 0.2, 0.3], [0.5, 0.3, 1.0]])  # X's variance given task 0: -0.05
    >>> partial_from_covariance(cov)[0, 1], partial_from_covariance(cov, boundary=True)[0, 1]
    (np.float64(nan), np.float64(1.0))
    """
    s00 = cov[..., 0, 0]
    s0 = cov[..., 0, 1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        conditional = cov[..., 1:, 1:] - s0[..., :, None] * s0[..., None, :] / s00[..., None, None]
        conditional = np.where((s00 > 0)[..., None, None], conditional, np.nan)
        variance = np.diagonal(conditional, axis1=-2, axis2=-1)
        positive = variance > 0
        scale = np.sqrt(np.where(positive, variance, np.nan))
        r = conditional / (scale[..., :, None] * scale[..., None, :])
        if boundary:
            beyond = ~(positive[..., :, None] & positive[..., None, :]) & np.isfinite(conditional)
            beyond &= ~np.eye(cov.shape[-1] - 1, dtype=bool)  # pairs, not a series with itself
            r = np.where(beyond & (conditional != 0), np.sign(conditional), r)
    return np.clip(r, -1.0, 1.0)


def corrected(cov: np.ndarray, error: np.ndarray) -> np.ndarray:
    """``cov`` with each task's item error variance taken off its diagonal (the noise-free scores' covariance)."""
    out = np.array(cov, dtype=float, copy=True)
    idx = np.arange(cov.shape[-1])
    out[..., idx, idx] -= error
    return out


def noise_only(cov: np.ndarray, error: np.ndarray) -> np.ndarray:
    """The naive partial correlations the item noise alone would give (… × p × p), were the noise-free ones 0.

    The corrected covariance matrix with every OOD pair's covariance set to what
    the in-domain score explains (``s_j0 s_k0 / s_00``, a partial correlation of
    0), its error variances added back, and the naive partial correlation taken.
    """
    true = corrected(cov, error)
    s00 = true[..., 0, 0]
    s0 = true[..., 0, 1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        explained = s0[..., :, None] * s0[..., None, :] / s00[..., None, None]
    null = np.array(true, copy=True)
    off = ~np.eye(cov.shape[-1] - 1, dtype=bool)
    block = null[..., 1:, 1:]
    block[..., off] = explained[..., off]
    null[..., 1:, 1:] = block
    null = np.where((s00 > 0)[..., None, None], null, np.nan)
    idx = np.arange(cov.shape[-1])
    null[..., idx, idx] += error
    return partial_from_covariance(null)


def split_half(
    matrix: np.ndarray, splits: int = 200, rng: np.random.Generator | None = None, halves: np.ndarray | None = None
) -> tuple[float, np.ndarray]:
    """Split-half reliability of one series over checkpoints, Spearman–Brown corrected, averaged over splits.

    Each split puts a random half of the items (``floor(n / 2)``) in one half,
    the rest in the other; the two halves' mean scores are correlated over the
    checkpoints (Pearson) and stepped up, ``2 r / (1 + r)``. ``halves``
    (splits × items, True for the first half) gives the splits; else ``splits``
    are drawn with ``rng``. Returns the mean over splits and the split masks.
    As ``psych::splitHalf`` with checkpoints as its cases and items as its
    items (its mean of the random splits' coefficients).
    """
    n = matrix.shape[0]
    if halves is None:
        rng = rng or np.random.default_rng(0)
        halves = random_halves(n, splits, rng)
    first = halves.astype(float)
    a = first @ matrix / first.sum(axis=1, keepdims=True)
    b = (1.0 - first) @ matrix / (1.0 - first).sum(axis=1, keepdims=True)
    a -= a.mean(axis=1, keepdims=True)
    b -= b.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
        stepped = 2.0 * r / (1.0 + r)
    return float(np.mean(stepped)), halves


def random_halves(n: int, splits: int, rng: np.random.Generator) -> np.ndarray:
    """``splits`` random halves of ``n`` items (splits × n, True for the ``floor(n / 2)`` items of the first)."""
    order = np.argpartition(rng.random((splits, n)), n // 2 - 1, axis=1) if n > 1 else np.zeros((splits, n), int)
    halves = np.zeros((splits, n), dtype=bool)
    np.put_along_axis(halves, order[:, : n // 2], True, axis=1)
    return halves


class Draws:
    """The item resamples and splits of one analysis, drawn once per testset and shared by its runs.

    A testset's items are the same in every run: one draw of items is one other
    testset, and every run is analyzed on it (so runs differ by their
    checkpoints, not by their draws). Keyed by task and number of items, seeded
    by ``seed`` and the task's name, so that they repeat exactly.
    """

    def __init__(self, seed: int):
        self.seed = seed
        self._cache: dict[tuple, np.ndarray] = {}

    def _rng(self, task: str, n: int, what: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, zlib.crc32(task.encode()), n, what])

    def weights(self, task: str, n: int, reps: int, what: int = 1) -> np.ndarray:
        """reps × n item counts of ``task`` (``what`` tells independent sets apart)."""
        key = ("w", task, n, reps, what)
        if key not in self._cache:
            self._cache[key] = item_weights(n, reps, self._rng(task, n, what))
        return self._cache[key]

    def halves(self, task: str, n: int, splits: int) -> np.ndarray:
        key = ("h", task, n, splits)
        if key not in self._cache:
            self._cache[key] = random_halves(n, splits, self._rng(task, n, 0))
        return self._cache[key]


def reliability(cov: np.ndarray, error: np.ndarray) -> np.ndarray:
    """Each series' reliability over checkpoints, ``1 - error / variance`` (the noise-free share of its variance)."""
    variance = np.diagonal(cov, axis1=-2, axis2=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(variance > 0, 1.0 - error / variance, np.nan)


def item_bootstrap(
    matrices: Sequence[np.ndarray],
    reps: int,
    rng: np.random.Generator,
    checkpoints: np.ndarray | None = None,
    chunk: int = 200,
    weights: Sequence[np.ndarray] | None = None,
    sums: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
    *,
    boundary: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Naive and corrected partial correlations (reps × p × p each) on ``reps`` resamples of the items.

    Each task's items are drawn with replacement, the same items at every
    checkpoint (multinomial weights, drawn with ``rng`` or given: ``weights``,
    one reps × items array per task); ``checkpoints`` (reps × T indices, a block
    bootstrap's) resample the checkpoints too, in the same resamples; ``sums``,
    the weights' :func:`resampled_sums` made beforehand (without ``checkpoints``).

    The naive draws are the plain bootstrap's: the resampled items' scores.
    The corrected draws are taken in a world whose noise-free scores have the
    corrected covariance matrix, not the observed one: the resampled scores'
    deviations from the observed ones (the item noise, as resampling makes it)
    are added to the observed scores recolored (``centered @ S^-1/2 C^1/2``,
    ``S`` observed and ``C`` corrected covariance) before the covariance and
    its correction are taken. Resampled as they are, the observed scores, whose
    own item noise is then part of the truth, would centre the draws near the
    naive r (the planted simulation of ``tests/test_analysis_items.py`` shows it).
    ``boundary``: a corrected draw whose corrected variance is not positive is ±1 (the sign of its
    corrected covariance, :func:`partial_from_covariance`), not NaN.
    """
    p = len(matrices) - 1
    T = matrices[0].shape[1]
    observed, cov, error = statistics(matrices)
    observed, cov, error = observed[0], cov[0], error[0]
    transform = _sqrtm(cov, inverse=True) @ _sqrtm(corrected(cov, error))
    pseudo = (observed - observed.mean(axis=0)) @ transform
    naive = np.empty((reps, p, p))
    fixed = np.empty((reps, p, p))
    for start in range(0, reps, chunk):
        size = min(chunk, reps - start)
        drawn = (
            [item_weights(Y.shape[0], size, rng) for Y in matrices]
            if weights is None
            else [w[start : start + size] for w in weights]
        )
        counts = None if checkpoints is None else checkpoint_counts(checkpoints[start : start + size], T)
        part = None if sums is None else [(a[start : start + size], b[start : start + size]) for a, b in sums]
        scores, cov_b, error_b = statistics(matrices, drawn, counts, part)
        naive[start : start + size] = partial_from_covariance(cov_b)
        world = pseudo[None] + (scores - observed[None])
        fixed[start : start + size] = partial_from_covariance(
            corrected(_covariance(world, counts), error_b), boundary=boundary
        )
    return naive, fixed


def _covariance(scores: np.ndarray, counts: np.ndarray | None) -> np.ndarray:
    """Population covariance over checkpoints (reps × T × m → reps × m × m), checkpoints weighted by ``counts``."""
    T = scores.shape[1]
    c = np.ones(scores.shape[:2]) if counts is None else counts
    centered = scores - (np.einsum("rt,rtj->rj", c, scores) / T)[:, None, :]
    return np.einsum("rt,rti,rtj->rij", c, centered, centered) / T


def _sqrtm(matrix: np.ndarray, *, inverse: bool = False) -> np.ndarray:
    """Symmetric square root (or inverse root) of a covariance matrix, eigenvalues floored at 1e-12 of the largest."""
    values, vectors = np.linalg.eigh(matrix)
    values = np.clip(values, 1e-12 * max(values.max(), 1e-300), None)
    return (vectors * values ** (-0.5 if inverse else 0.5)) @ vectors.T


#: SIMEX's added-noise multiples (Cook & Stefanski 1994; Carroll et al. 2006, ch. 5), and its extrapolation.
SIMEX_LAMBDAS = (0.5, 1.0, 1.5, 2.0)


def simex(
    scores: np.ndarray,
    error: np.ndarray,
    correlations: Callable[[np.ndarray], np.ndarray],
    rng: np.random.Generator,
    reps: int = 100,
    lambdas: Sequence[float] = SIMEX_LAMBDAS,
    naive: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """SIMEX estimate of the partial correlations of the noise-free scores, for any residualizer (p × p).

    ``scores``: T × m (in-domain first), ``error``: each series' item error
    variance (:func:`statistics`), ``correlations``: the analysis itself, from
    a stack of score matrices (k × T × m) to its partial correlations (k × p × p).
    Every series gets ``reps`` draws of extra Gaussian noise of variance
    ``lambda · error`` at each ``lambda`` (all draws in one call of
    ``correlations``); the mean estimate at each ``lambda``, with the naive one
    at 0 (``naive``, or computed), is fitted by a quadratic in ``lambda`` and
    read at ``lambda = -1``, where the measurement error would be none. Returns
    the estimate (clipped to [-1, 1]) and the curve (``1 + len(lambdas)`` × p × p).
    """
    T, m = scores.shape
    grid = np.repeat(np.asarray(lambdas, dtype=float), reps)
    scale = np.sqrt(grid[:, None] * np.clip(error, 0.0, None)[None, :])  # (L·reps) × m
    noisy = scores[None] + scale[:, None, :] * rng.standard_normal((grid.size, T, m))
    if naive is None:
        naive = correlations(scores[None])[0]
    drawn = correlations(noisy).reshape(len(lambdas), reps, *naive.shape)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a pair NaN in every draw (a constant series)
        curve = np.concatenate([naive[None], np.nanmean(drawn, axis=1)])
    x = np.concatenate([[0.0], np.asarray(lambdas, dtype=float)])
    flat = curve.reshape(x.size, -1)
    estimate = np.full(flat.shape[1], np.nan)
    finite = np.isfinite(flat).all(axis=0)
    if finite.any():
        coefficients = np.polynomial.polynomial.polyfit(x, flat[:, finite], 2)  # 3 × pairs, constant first
        estimate[finite] = coefficients[0] - coefficients[1] + coefficients[2]
    return np.clip(estimate.reshape(curve.shape[1:]), -1.0, 1.0), curve


#: Fisher's z of a correlation of ±1 (a draw at the boundary, or beyond it): tanh of it is ±1 in floating point.
EDGE = 20.0

#: Groups of items per testset in the delete-a-group jackknife behind BCa's acceleration.
JACKKNIFE_GROUPS = 20


def fisher_z(r: np.ndarray) -> np.ndarray:
    """``arctanh(r)``, with ±1 (and beyond) at ±:data:`EDGE` rather than infinite; NaN stays NaN."""
    r = np.asarray(r, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.abs(r) >= 1.0, np.sign(r) * EDGE, np.arctanh(np.clip(r, -1.0, 1.0)))


def containing(low: np.ndarray, high: np.ndarray, estimate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``[low, high]`` widened, where they exclude it, to reach ``estimate`` (NaN where ``estimate`` is NaN)."""
    estimate = np.asarray(estimate, dtype=float)
    defined = np.isfinite(estimate) & np.isfinite(low) & np.isfinite(high)
    low = np.where(defined, np.fmin(low, estimate), np.nan)
    high = np.where(defined, np.fmax(high, estimate), np.nan)
    return low, high


def corrected_ci(
    draws: np.ndarray, estimate: np.ndarray, n: int, confidence: float = 0.95, grid: int = 200
) -> tuple[np.ndarray, np.ndarray]:
    """Interval of the corrected partial correlation for the process behind the ``n`` checkpoints.

    On Fisher's z, the corrected r errs from this run's noise-free partial
    correlation by what the item draws (``draws``, resamples × pairs, from
    :func:`item_bootstrap`) show, and that one from the process' by Fisher's
    normal with variance ``1 / (n - 4)`` (one control). The draws are taken
    around ``estimate`` and carry its bias: their median lies off ``estimate``
    by about that bias, ``b = median(z*) - z``. The interval is the percentile
    interval of the draws, each convolved with ``grid`` quantiles of Fisher's
    normal, moved by ``-2 b`` so that it is centered on the bias-corrected
    estimate ``z - b`` (Efron & Tibshirani 1993, §10.6) rather than on ``z + b``.

    At the boundary: a draw of ±1 (or one whose corrected variance is not positive, drawn with
    ``boundary=True``) has z = ±:data:`EDGE`, not a finite stand-in; the bias is estimated only where both
    ``estimate`` and the draws' median are inside (-1, 1), else not moved (a shift on z measured from an
    infinite value means nothing). So a corrected r at or near ±1 whose draws stay near it gets an
    interval near ±1, and one whose draws reach both boundaries (the corrected variances cannot be told
    from 0) all of [-1, 1], as Fieller's for a ratio whose denominator may be 0 (Fieller 1954). The
    interval always contains ``estimate`` (:func:`containing`: a bias correction larger than the draws'
    spread would move it past); NaN where ``estimate`` is NaN. ``docs/explanation/statistics.md`` shows
    its coverage.

    >>> draws = np.array([[0.2], [0.3], [0.4], [0.5]])
    >>> low, high = corrected_ci(draws, np.array([0.35]), 30)
    >>> bool(low[0] < 0.35 < high[0])
    True
    >>> low, high = corrected_ci(np.full((50, 1), 1.0), np.array([0.995]), 30)  # every draw at the boundary
    >>> bool(0.98 < low[0] <= 0.995 and high[0] == 1.0)
    True
    """
    quantiles = special.ndtri((np.arange(grid) + 0.5) / grid) / np.sqrt(max(n - 4, 1))
    z = fisher_z(draws)
    centre = fisher_z(estimate)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.full(draws.shape[1], np.nan), np.full(draws.shape[1], np.nan)
    for k in range(draws.shape[1]):
        finite = z[np.isfinite(z[:, k]), k]
        if not (finite.size and n > 4 and np.isfinite(estimate[k])):
            continue
        median = np.median(finite)
        inside = abs(centre[k]) < EDGE and abs(median) < EDGE
        shift = 2.0 * (centre[k] - median) if inside else 0.0
        lo, hi = np.percentile((finite[:, None] + quantiles[None, :]).ravel(), [tail, 100.0 - tail])
        low[k], high[k] = np.tanh(np.clip([lo + shift, hi + shift], -EDGE, EDGE))
    return containing(low, high, estimate)


def bca_ci(
    draws: np.ndarray, estimate: np.ndarray, acceleration: np.ndarray | None = None, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """BCa interval of each column of ``draws`` (resamples × pairs) around ``estimate``, NaN draws left out.

    Efron's bias-corrected and accelerated percentile interval (Efron 1987; Efron & Tibshirani 1993,
    §14.3): the bias constant ``z0 = Φ⁻¹(share of draws below the estimate)`` (ties count half; the
    share kept within half a draw of 0 and 1), ``acceleration`` (``a``, per pair, from
    :func:`acceleration`; None: 0, Efron's BC interval), and the percentiles
    ``Φ(z0 + (z0 + z_α) / (1 - a (z0 + z_α)))`` of the draws for ``z_α`` at each tail (0 or 1 where the
    denominator is not positive). It respects any monotone transformation, so draws at ±1 need none. An
    estimate at ±1 (a correlation clipped there: the ratio at or beyond the boundary) is censored, not a
    point the draws scatter around: there ``z0`` and ``a`` are 0 (the percentile interval), as
    :func:`corrected_ci` does not move its interval there. A
    percentile interval cannot reach past its draws: where the bias is larger than the draws' spread
    (every draw below the estimate, as when each resample carries the item noise once more than the
    data), the interval is widened to the estimate (:func:`containing`). NaN where ``estimate`` is NaN or
    a column has no finite draw.

    >>> draws = np.linspace(0.85, 0.938, 101)[:, None]       # every draw below the estimate
    >>> low, high = bca_ci(draws, np.array([0.941]))
    >>> bool(low[0] <= 0.941 <= high[0]), float(high[0])
    (True, 0.941)
    """
    reps, pairs = draws.shape
    a = np.zeros(pairs) if acceleration is None else np.nan_to_num(np.asarray(acceleration, dtype=float))
    z_alpha = special.ndtri(np.array([(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0]))
    low, high = np.full(pairs, np.nan), np.full(pairs, np.nan)
    for k in range(pairs):
        d = draws[np.isfinite(draws[:, k]), k]
        if not (d.size and np.isfinite(estimate[k])):
            continue
        share = (np.sum(d < estimate[k]) + 0.5 * np.sum(d == estimate[k])) / d.size
        censored = abs(estimate[k]) >= 1.0  # at the boundary: no bias or skewness to measure from it
        z0 = 0.0 if censored else special.ndtri(np.clip(share, 0.5 / d.size, 1.0 - 0.5 / d.size))
        shifted = z0 + z_alpha
        denominator = 1.0 - (0.0 if censored else a[k]) * shifted
        with np.errstate(divide="ignore", invalid="ignore"):
            levels = np.where(denominator > 0, special.ndtr(z0 + shifted / denominator), [0.0, 1.0])
        low[k], high[k] = np.quantile(d, levels)
    return containing(low, high, estimate)


def acceleration(values: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """BCa's acceleration per pair from jackknife estimates (deletions × pairs) of several independent samples.

    ``sample`` labels each deletion with its sample (a testset's items; the checkpoints). Within a sample
    the deletions' influences are ``u = mean - value``; ``a = Σ u³ / (6 (Σ u²)^{3/2})`` over all samples'
    deletions (Efron & Tibshirani 1993, eq. 14.15; several samples: Davison & Hinkley 1997, ch. 3 and 5). With
    groups of equal size in every sample (:func:`jackknife_scores`) a group's influence is, up to a factor
    common to all samples, the sum of its items' (which cancels in ``a``), so that 20 groups of a
    5,000-item testset estimate the acceleration of its 5,000 items. 0 where a value is not finite.

    >>> a = acceleration(np.array([[0.0], [0.0], [0.0], [3.0]]), np.zeros(4))  # one deletion pulls the mean
    >>> round(float(a[0]), 4)   # u = (0.75, 0.75, 0.75, -2.25): (3 · 0.42 - 11.39) / (6 · 6.75^1.5)
    -0.0962
    """
    values = np.asarray(values, dtype=float)
    u = np.empty_like(values)
    for label in np.unique(sample):
        chosen = sample == label
        u[chosen] = values[chosen].mean(axis=0) - values[chosen]
    with np.errstate(divide="ignore", invalid="ignore"):
        a = (u**3).sum(axis=0) / (6.0 * (u**2).sum(axis=0) ** 1.5)
    return np.where(np.isfinite(a), a, 0.0)


def jackknife_scores(
    matrices: Sequence[np.ndarray], groups: int = JACKKNIFE_GROUPS
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A delete-a-group jackknife over each testset's items: scores, error variances and sample per deletion.

    Each task's items are dealt into ``min(groups, n)`` groups by position (item ``i`` to group
    ``i mod groups``); a deletion leaves one group out of one task, every other task whole. Returns
    ``scores`` (deletions × T × m: the observed scores with that task's column the kept items' mean),
    ``error`` (deletions × m: each task's item error variance, :func:`statistics`'s, that task's over
    its kept items) and ``sample`` (deletions: the task left short). From group sums, one product per
    task, so that it costs about one more item resample at 5,000 items.
    """
    observed, _, error = statistics(matrices)
    out_scores, out_error, sample = [], [], []
    for j, Y in enumerate(matrices):
        n, T = Y.shape
        g = min(groups, n) if n > 1 else 0
        if g < 2:
            continue
        membership = (np.arange(n) % g)[None, :] == np.arange(g)[:, None]  # g × n
        one_hot = membership.astype(float)
        within = (Y * Y).sum(axis=1) - Y.sum(axis=1) ** 2 / T
        sizes = n - one_hot.sum(axis=1)  # items kept in each deletion
        kept_scores = (Y.sum(axis=0)[None, :] - one_hot @ Y) / sizes[:, None]  # g × T
        total = within.sum() - one_hot @ within
        spread = ((kept_scores - kept_scores.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
        scores = np.repeat(observed, g, axis=0)
        scores[:, :, j] = kept_scores
        errors = np.repeat(error, g, axis=0)
        errors[:, j] = (total - sizes * spread) / ((sizes - 1) * T * sizes)
        out_scores.append(scores)
        out_error.append(errors)
        sample.append(np.full(g, j))
    if not out_scores:
        m = len(matrices)
        return np.zeros((0, matrices[0].shape[1], m)), np.zeros((0, m)), np.zeros(0, dtype=int)
    return np.concatenate(out_scores), np.concatenate(out_error), np.concatenate(sample)
