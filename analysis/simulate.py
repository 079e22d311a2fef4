"""Simulated training curves of a pair of OOD testsets, analyzed by the same code as a real study.

A run's two OOD series are modeled as what the residualizer leaves of them
plus what it removes: ``x(s) = b_x z(s) + u_x(s) + e_x(s)`` (and ``y`` alike),
at the checkpoints' step positions ``s``, where

- ``z`` is the in-domain score (a pilot's mean in-domain curve, or a saturating
  learning curve); the residualizer (a line or a GAM in ``z``, both of which
  reproduce ``b z`` exactly) removes ``b z`` whatever ``b`` is, so ``b`` is 0 here;
- ``u_x``, ``u_y`` are the testsets' residual curves: a pair of stationary
  Ornstein–Uhlenbeck processes of unit variance, observed at the real step
  positions, ``corr(u(s), u(s')) = exp(-|s - s'| / length)`` (the
  continuous-time AR(1): log-spaced checkpoints are not an evenly spaced
  AR(1)), correlated ``rho`` with each other at equal steps and ``rho
  exp(-|s - s'| / length)`` across steps (a separable cross-covariance);
- ``e_x``, ``e_y`` are item noise: independent between checkpoints and
  testsets, with variance ``noise`` times the curve's (what the testset's size
  adds, ``p (1 - p) / N`` over the curve's variance). It attenuates the
  correlation the analysis can see: ``rho / sqrt((1 + noise_x)(1 + noise_y))``.

``rho`` is a run's correlation of the noise-free curves: ``tanh(atanh(rho_f) +
tau N(0, 1))`` for a run of family ``f`` whose seeds spread by ``tau`` on
Fisher's z. :func:`run_statistics` then analyses the series with the
analysis' own residualizer (:func:`~ood_store._analysis.residuals.linear`, or
the GAM of :class:`~ood_store._analysis.residuals.GamSmoother`), correlation
(:func:`~ood_store._analysis.partial.correlation`), lag-1 autocorrelation,
effective n and tests (:func:`~ood_store._analysis.partial.pair_statistics`)
and Fisher-z variance (:func:`~ood_store._analysis.compare.fisher_variance`).
One in-domain curve serves every simulated run, so that one residualizer
fit serves all of them at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ood_store._analysis import inference, residuals
from ood_store._analysis.compare import fisher_variance, usable
from ood_store._analysis.partial import pair_statistics, paired_correlation
from ood_store._errors import AnalysisError

SCHEDULES = ("linear", "log", "pilot")
#: ``ar1`` is the lag-1 autocorrelation of this many checkpoints evenly spaced over training, unless told otherwise.
AR1_CHECKPOINTS = 24
#: A log schedule's first checkpoint, as a fraction of the last step (when the span starts at 0).
LOG_START = 1e-3


@dataclass(frozen=True)
class Curves:
    """What the residual curves of a pair of testsets are like, apart from their correlation.

    Parameters
    ----------
    ar1 : float
        Lag-1 autocorrelation of the residual curves between neighbours of
        ``ar1_checkpoints`` checkpoints evenly spaced over ``span`` (0: none).
        It fixes the correlation length ``-spacing / log(ar1)``, in steps: more
        checkpoints over the same training are closer together and more alike.
    noise : (float, float)
        Item-noise variance over residual-curve variance, of each testset of the pair.
    span : (float, float)
        The first and last step of training (default 0 and 1: fractions of training).
    ar1_checkpoints : int
        See ``ar1``.
    in_domain : (steps, values), optional
        The in-domain curve (a pilot's mean), interpolated at the design's
        steps; default a saturating learning curve ``1 - exp(-4 (s - first) / (last - first))``.
    pilot_steps : tuple of float, optional
        A pilot run's step positions, for the ``pilot`` schedule.
    """

    ar1: float = 0.0
    noise: tuple[float, float] = (0.0, 0.0)
    span: tuple[float, float] = (0.0, 1.0)
    ar1_checkpoints: int = AR1_CHECKPOINTS
    in_domain: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    pilot_steps: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.ar1 < 1:
            raise AnalysisError(f"must be at least 0 and below 1, not {self.ar1}", parameter="ar1")
        if self.ar1_checkpoints < 2:
            raise AnalysisError(f"must be at least 2, not {self.ar1_checkpoints}", parameter="ar1_checkpoints")
        if len(self.noise) != 2 or min(self.noise) < 0 or not all(map(math.isfinite, self.noise)):
            raise AnalysisError(f"two ratios of at least 0, not {self.noise}", parameter="noise")
        if not self.span[0] < self.span[1]:
            raise AnalysisError(f"the first step must come before the last: {self.span}", parameter="span")

    @property
    def correlation_length(self) -> float:
        """The residual curves' correlation length in steps: correlation ``exp(-1)`` at that distance (0: white)."""
        if self.ar1 == 0:
            return 0.0
        spacing = (self.span[1] - self.span[0]) / (self.ar1_checkpoints - 1)
        return -spacing / math.log(self.ar1)

    def ar1_at(self, spacing: float) -> float:
        """The lag-1 autocorrelation of checkpoints ``spacing`` steps apart."""
        length = self.correlation_length
        return math.exp(-spacing / length) if length > 0 else 0.0

    def positions(self, checkpoints: int, schedule: str = "linear") -> np.ndarray:
        """The steps of ``checkpoints`` checkpoints over the span: evenly spaced (``linear``), geometrically
        (``log``, from ``LOG_START`` of the last step when the span starts at 0), or at the quantiles of the
        pilot's steps (``pilot``: the pilot's own steps when as many)."""
        if schedule not in SCHEDULES:
            raise AnalysisError(f"must be one of {', '.join(SCHEDULES)}, not {schedule!r}", parameter="schedule")
        first, last = self.span
        if schedule == "linear":
            return np.linspace(first, last, checkpoints)
        if schedule == "log":
            start = first if first > 0 else last * LOG_START
            return np.geomspace(start, last, checkpoints)
        if self.pilot_steps is None:
            raise AnalysisError("the pilot schedule needs a pilot (its steps)", parameter="schedule")
        steps = np.sort(np.asarray(self.pilot_steps, dtype=float))
        if checkpoints == steps.size:
            return steps
        return np.quantile(steps, np.linspace(0.0, 1.0, checkpoints))

    def in_domain_curve(self, positions: np.ndarray) -> np.ndarray:
        """The in-domain score at ``positions``."""
        if self.in_domain is not None:
            steps, values = (np.asarray(v, dtype=float) for v in self.in_domain)
            return np.interp(positions, steps, values)
        first, last = self.span
        return 1.0 - np.exp(-4.0 * (positions - first) / (last - first))

    def neighbours(self, positions: np.ndarray) -> np.ndarray:
        """The residual curves' correlation between each checkpoint and the one before it (n - 1 values)."""
        length = self.correlation_length
        if length == 0:
            return np.zeros(positions.size - 1)
        return np.exp(-np.diff(positions) / length)


def ou_correlation(positions: np.ndarray, length: float) -> np.ndarray:
    """The correlation matrix of a unit Ornstein–Uhlenbeck process at ``positions``: ``exp(-|s - s'| / length)``."""
    if length == 0:
        return np.eye(positions.size)
    return np.exp(-np.abs(positions[:, None] - positions[None, :]) / length)


def ornstein_uhlenbeck(shocks: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """Unit-variance Ornstein–Uhlenbeck paths from standard normal ``shocks`` (checkpoints × paths), exactly:
    ``u_0 = e_0``, ``u_t = phi_t u_(t-1) + sqrt(1 - phi_t²) e_t`` with ``phi_t`` the correlation of neighbours
    (the process is Markov, so this is its exact distribution at any spacing)."""
    out = np.empty_like(shocks)
    out[0] = shocks[0]
    scale = np.sqrt(1.0 - neighbours**2)
    for t in range(1, shocks.shape[0]):
        out[t] = neighbours[t - 1] * out[t - 1] + scale[t - 1] * shocks[t]
    return out


def simulate(
    rng: np.random.Generator, rho: np.ndarray, neighbours: np.ndarray, noise: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """The two OOD series of runs with correlations ``rho`` (any shape, one value a run), checkpoints × runs each.

    ``neighbours`` is the correlation of successive checkpoints (:meth:`Curves.neighbours`);
    runs are the columns in ``rho``'s flattened order. The draws come in a fixed
    order: the two processes' shocks, then the two item noises.
    """
    flat = np.asarray(rho, dtype=float).reshape(-1)
    n, m = neighbours.size + 1, flat.size
    first = ornstein_uhlenbeck(rng.standard_normal((n, m)), neighbours)
    second = ornstein_uhlenbeck(rng.standard_normal((n, m)), neighbours)
    x = first
    y = flat * first + np.sqrt(1.0 - flat**2) * second
    x += math.sqrt(noise[0]) * rng.standard_normal((n, m))
    y += math.sqrt(noise[1]) * rng.standard_normal((n, m))
    return x, y


@dataclass(frozen=True)
class Analysis:
    """How the simulated runs are analyzed: as ``analyze`` and ``compare`` would, with these options."""

    residualizer: str = "linear"
    gam_df: int = residuals.GAM_DF
    smoothing: str = "reml"
    inference: str = "effective"

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("residualizer", self.residualizer, residuals.RESIDUALIZERS),
            ("smoothing", self.smoothing, residuals.SMOOTHING),
            ("inference", self.inference, ("effective", "naive")),
        ):
            if value not in allowed:
                raise AnalysisError(f"must be one of {', '.join(allowed)}, not {value!r}", parameter=name)
        if self.gam_df < residuals.GAM_MIN_DF:
            raise AnalysisError(f"must be at least {residuals.GAM_MIN_DF}, not {self.gam_df}", parameter="gam_df")


def run_statistics(z: np.ndarray, x: np.ndarray, y: np.ndarray, analysis: Analysis) -> dict[str, np.ndarray]:
    """Each run's partial correlation of ``x`` and ``y`` (checkpoints × runs) given ``z``, its tests, and its
    Fisher z with sampling variance, as ``partial_correlations`` and ``compare`` compute them.

    Returns arrays of one value a run: ``r``, ``n_eff``, ``edf``, ``p``, ``p_eff``,
    ``effect`` (``atanh r``, NaN where the run is not usable) and ``variance``
    (``1 / (n - edf - 2)`` with ``n_eff`` for effective inference).
    """
    m = x.shape[1]
    values = np.concatenate([x, y], axis=1)
    if analysis.residualizer == "gam":
        fit = residuals.GamSmoother(z, analysis.gam_df).fit(values, analysis.smoothing)
    else:
        fit = residuals.linear(z, values)
    resid = fit.values
    r = paired_correlation(resid[:, :m], resid[:, m:])
    acf = inference.lag1_autocorrelation(resid)
    n = np.full(m, float(z.size))
    stats = pair_statistics(r, n, acf[:m], acf[m:], fit.edf[:m], fit.edf[m:])
    size = stats["n_eff"] if analysis.inference == "effective" else n
    variance = fisher_variance(size, stats["edf"])
    use = usable(r, variance)
    with np.errstate(invalid="ignore"):
        effect = np.where(use, np.arctanh(np.where(use, r, 0.0)), np.nan)
    return {**stats, "r": r, "effect": effect, "variance": np.where(use, variance, np.nan)}
