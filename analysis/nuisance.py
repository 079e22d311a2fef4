"""What a pilot says about a planned study's nuisance: how autocorrelated and noisy its curves are, how seeds spread.

:func:`estimate_nuisance` reads a pilot (a store, or a frame of scores) and
estimates, for every pair of OOD testsets, the parameters that
:mod:`~ood_store._analysis.simulate` needs besides the effects to detect:

- **Item noise** of each testset, per checkpoint: from the stored per-sample
  rows where there are any (the variance of the mean of the items' metric
  under resampling of items, which is their population variance over their
  number: no resampling loop is needed for it), else lm-eval's standard error,
  else ``p (1 - p) / N`` from the number of documents, else none (a note says so).
- **Autocorrelation and curve variance**: each run's OOD series is modeled as
  ``a + b z + u + e`` on its own in-domain score ``z``, with ``u`` an
  Ornstein–Uhlenbeck process of variance ``sigma²`` and correlation length
  ``length`` at the run's real step positions (log-spaced checkpoints are not an
  evenly spaced AR(1)) and ``e`` the item noise, of known variance. ``sigma²``
  (per testset) and ``length`` (per pair, shared by its two testsets) are
  found by restricted maximum likelihood, summed over the pilot's runs, on a
  grid refined by parabolas; the intervals are profile-likelihood ones (where
  the log-likelihood, maximized over the other parameters, is within
  ``chi2(1, confidence) / 2`` of its maximum). On a fixed training span only
  ``sigma² / length`` is estimated well (the Ornstein–Uhlenbeck process's
  microergodic parameter), so the two are estimated together and their
  intervals are wide where the pilot is short.
  ``length`` is reported as ``ar1``, the lag-1 autocorrelation of 24 evenly
  spaced checkpoints over the pilot's training span, and the curve variance
  as ``noise``, the item-noise variance over it.
- **Seed spread** ``tau``: the residual τ² of
  :func:`~ood_store._analysis.between_groups` (``between`` × ``within``, the
  Paule–Mandel estimate on the runs' Fisher z with their effective n) and its
  Q-profile interval (:func:`~ood_store._analysis.meta.tau2_interval_many`).
  Item noise attenuates correlations by ``att = 1 / sqrt((1 + noise_x)(1 +
  noise_y))``, which shrinks their spread on Fisher's z by ``att (1 - rho²) /
  (1 - att² rho²)`` at a family's correlation ``rho`` (the delta method): ``tau``
  is the spread of the noise-free curves' correlations, as the simulations take
  it, ``tau_observed`` the spread the analysis saw.

The pilot's own correlations (``r_pooled``) are shown for orientation only:
an effect to plan for is the smallest one worth detecting, not the pilot's
estimate (simr's authors on "observed power").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from scipy import stats

from ood_store._analysis import meta
from ood_store._analysis.compare import usable, with_attributes, with_variance
from ood_store._analysis.partial import Options, analyze
from ood_store._analysis.results import Result
from ood_store._analysis.series import in_domain_of_runs, load_series, read_series_sql
from ood_store._analysis.simulate import AR1_CHECKPOINTS, Curves, ou_correlation
from ood_store._errors import AnalysisError
from ood_store._progress import progress_bar

if TYPE_CHECKING:
    from ood_store._store import Database

#: Columns of a table of nuisance estimates, in order.
NUISANCE_COLUMNS = (
    "task_x", "task_y", "runs", "checkpoints", "length", "ar1", "ar1_low", "ar1_high",
    "noise_x", "noise_x_low", "noise_x_high", "noise_y", "noise_y_low", "noise_y_high",
    "item_sd_x", "item_sd_y", "item_noise_from", "tau_observed", "tau", "tau_low", "tau_high", "r_pooled", "note",
)  # fmt: skip

_GRID = 60  # points of each parameter's grid
_JITTER = 1e-10


@dataclass(frozen=True, repr=False)
class Nuisance(Result):
    """Nuisance parameters of every pair of OOD testsets of a pilot (one row each, :data:`NUISANCE_COLUMNS`)."""

    summary_columns = (
        "task_x", "task_y", "runs", "checkpoints", "ar1", "ar1_low", "ar1_high", "noise_x", "noise_y",
        "item_noise_from", "tau", "tau_low", "tau_high", "note",
    )  # fmt: skip

    #: The analysis' selection (in-domain task, OOD tasks, runs, metric ...).
    options: Options
    #: The pilot's first and last step.
    span: tuple[float, float]
    #: The pilot's step positions (of its run with the most checkpoints), for the ``pilot`` schedule.
    steps: tuple[float, ...]
    #: The pilot's mean in-domain score over its steps: (steps, values).
    in_domain: tuple[tuple[float, ...], tuple[float, ...]]
    #: The run attributes that told models and seeds apart (None: no seed spread was estimated).
    between: str | None = None
    within: str | None = None
    confidence: float = 0.95

    def _summary(self) -> str:
        o = self.options
        return f": {self.table.height} pairs of {len(o.ood or ())} OOD tasks, in-domain {o.in_domain!r}"

    def row(self, task_x: str, task_y: str) -> dict[str, Any]:
        """The estimates of one pair (in either order)."""
        found = self.table.filter(
            ((pl.col("task_x") == task_x) & (pl.col("task_y") == task_y))
            | ((pl.col("task_x") == task_y) & (pl.col("task_y") == task_x))
        )
        if found.is_empty():
            pairs = ", ".join(f"{x},{y}" for x, y in self.table.select("task_x", "task_y").iter_rows())
            raise AnalysisError(f"the pilot has no pair {task_x},{task_y}; it has: {pairs}", parameter="pair")
        row = found.row(0, named=True)
        if row["task_x"] != task_x:  # asked the other way round: x's numbers are y's
            for a, b in (("noise_x", "noise_y"), ("noise_x_low", "noise_y_low"), ("noise_x_high", "noise_y_high"),
                         ("item_sd_x", "item_sd_y")):  # fmt: skip
                row[a], row[b] = row[b], row[a]
            row["task_x"], row["task_y"] = task_x, task_y
        return row

    def curves(self, task_x: str, task_y: str) -> Curves:
        """The :class:`~ood_store._analysis.simulate.Curves` of one pair, on the pilot's steps."""
        row = self.row(task_x, task_y)
        return Curves(
            ar1=float(row["ar1"]),
            noise=(float(row["noise_x"]), float(row["noise_y"])),
            span=self.span,
            ar1_checkpoints=AR1_CHECKPOINTS,
            in_domain=self.in_domain,
            pilot_steps=self.steps,
        )


def estimate_nuisance(
    data: Database | pl.DataFrame,
    in_domain: str | None = None,
    ood: Sequence[str] | None = None,
    runs: Sequence[str] | None = None,
    *,
    between: str | None = "family",
    within: str | None = "seed",
    attributes: Database | pl.DataFrame | None = None,
    metric: str = "acc",
    filter: str = "none",  # noqa: A002 - lm-eval's name for it
    num_fewshot: int | None = None,
    campaign: str | None = None,
    where: Sequence[str] | None = None,
    inference: str = "effective",
    confidence: float = 0.95,
    progress: bool = False,
) -> Nuisance:
    """Item noise, autocorrelation, curve variance and seed spread of every pair of OOD tasks of a pilot.

    Parameters
    ----------
    data : Store or polars.DataFrame
        The pilot: a store, or a long frame ``run, step, task, value`` (with
        ``stderr`` or ``n_samples`` columns for item noise).
    in_domain, ood, runs, metric, filter, num_fewshot, campaign, where
        Which series, as for :func:`~ood_store._analysis.partial_correlations`.
    between, within : str, optional
        The run attributes that tell models and seeds apart, for the seed spread
        ``tau`` (None, or a pilot without them: not estimated).
    attributes : Store or polars.DataFrame, optional
        Where run attributes come from (default: the store itself).
    inference : {"effective", "naive"}
        How the runs' Fisher z variances are taken, for ``tau`` (as ``compare``).
    confidence : float
        Level of the intervals.
    progress : bool
        A progress bar on a terminal.

    Returns
    -------
    Nuisance
        ``.table`` with one row per pair (:data:`NUISANCE_COLUMNS`), and
        ``.curves(task_x, task_y)`` for :func:`~ood_store._analysis.power_analysis`.
    """
    if not 0 < confidence < 1:
        raise AnalysisError(f"must be between 0 and 1, not {confidence}", parameter="confidence")
    options = Options(
        in_domain=in_domain, ood=ood, runs=runs, metric=metric, filter=filter, num_fewshot=num_fewshot,
        campaign=campaign, where=where,
    )  # fmt: skip
    if options.in_domain is None:
        options = dataclasses.replace(options, in_domain=in_domain_of_runs(data, options.runs))
    series = load_series(data, options)
    options = dataclasses.replace(options, in_domain=series.in_domain, ood=series.ood)
    table = analyze(series, options)
    noise = _item_noise(data, series, options)
    wide = series.scores.pivot(on="task", index=["run", "step"], values="value", aggregate_function=None)
    wide = wide.join(noise, on=["run", "step"], how="left").sort("run", "step")
    tasks = list(series.ood)
    span, steps, curve = _schedule(wide, series.in_domain)
    lengths = _length_grid(wide, span)
    with progress_bar(progress, len(tasks) + 1, "estimating") as advance:
        fits = {}
        for task in tasks:
            fits[task] = _TaskFit.of(wide, series.in_domain, task, lengths)
            advance(1, task)
        spread = _seed_spread(table, data if attributes is None else attributes, between, within, inference,
                              confidence)  # fmt: skip
        advance(1, "seed spread")
    threshold = stats.chi2.isf(1 - confidence, 1) / 2.0
    spacing = (span[1] - span[0]) / (AR1_CHECKPOINTS - 1)
    rows = []
    for i, task_x in enumerate(tasks):
        for task_y in tasks[i + 1 :]:
            rows.append(_pair_row(fits[task_x], fits[task_y], spread.get((task_x, task_y)), table, lengths,
                                  threshold, spacing))  # fmt: skip
    frame = pl.DataFrame(rows, schema=_SCHEMA, orient="row")
    return Nuisance(frame, options, span, steps, curve, between, within, confidence)


_SCHEMA = {name: pl.Float64 for name in NUISANCE_COLUMNS} | {
    "task_x": pl.String, "task_y": pl.String, "runs": pl.Int64, "checkpoints": pl.Int64,
    "item_noise_from": pl.String, "note": pl.String,
}  # fmt: skip


# -- item noise ----------------------------------------------------------------------------------------------


def _item_noise(data, series, options: Options) -> pl.DataFrame:
    """Per run and step, ``noise:<task>`` (the item-noise variance of the score) and ``from:<task>`` (its source)."""
    tasks = list(series.ood)
    if isinstance(data, pl.DataFrame):
        frame = data.filter(pl.col("task").is_in(tasks))
        if "run" not in frame.columns:
            frame = frame.with_columns(pl.lit(series.runs[0]).alias("run"))
        for column in ("stderr", "n_samples", "items", "item_variance"):
            if column not in frame.columns:
                frame = frame.with_columns(pl.lit(None, dtype=pl.Float64).alias(column))
    else:
        frame = read_series_sql(
            data,
            "item_noise",
            metric=options.metric,
            filter=options.filter,
            tasks=tasks,
            runs=list(series.runs),
            num_fewshot=options.num_fewshot,
            campaign=options.campaign,
        )
    value = pl.col("value").cast(pl.Float64)
    variance = (
        pl.when(pl.col("items").cast(pl.Float64) > 0)
        .then(pl.col("item_variance").cast(pl.Float64) / pl.col("items").cast(pl.Float64))
        .when(pl.col("stderr").is_not_null())
        .then(pl.col("stderr").cast(pl.Float64) ** 2)
        .when((pl.col("n_samples").cast(pl.Float64) > 0) & value.is_between(0, 1))
        .then(value * (1 - value) / pl.col("n_samples").cast(pl.Float64))
    )
    source = (
        pl.when(pl.col("items").cast(pl.Float64) > 0)
        .then(pl.lit("samples"))
        .when(pl.col("stderr").is_not_null())
        .then(pl.lit("stderr"))
        .when((pl.col("n_samples").cast(pl.Float64) > 0) & value.is_between(0, 1))
        .then(pl.lit("size"))
        .otherwise(pl.lit("none"))
    )
    long = frame.select("run", "step", "task", variance.fill_null(0.0).alias("noise"), source.alias("from"))
    noise = long.pivot(on="task", index=["run", "step"], values="noise", aggregate_function="first")
    origin = long.pivot(on="task", index=["run", "step"], values="from", aggregate_function="first")
    noise = noise.rename({t: f"noise:{t}" for t in tasks if t in noise.columns})
    origin = origin.rename({t: f"from:{t}" for t in tasks if t in origin.columns})
    return noise.join(origin, on=["run", "step"], how="full", coalesce=True)


# -- the curves: REML on a grid ------------------------------------------------------------------------------


def _schedule(wide: pl.DataFrame, in_domain: str):
    """The pilot's span, its fullest run's steps, and its mean in-domain curve."""
    steps = wide["step"].cast(pl.Float64)
    span = (float(steps.to_numpy().min()), float(steps.to_numpy().max()))
    if not span[0] < span[1]:
        raise AnalysisError("the pilot's runs need checkpoints at two steps at least")
    fullest = wide.group_by("run").len().sort("len", "run", descending=[True, False])["run"][0]
    positions = tuple(wide.filter(pl.col("run") == fullest)["step"].cast(pl.Float64).to_list())
    curve = wide.group_by("step").agg(pl.col(in_domain).cast(pl.Float64).mean()).drop_nulls().sort("step")
    return span, positions, (tuple(curve["step"].cast(pl.Float64)), tuple(curve[in_domain]))


def _length_grid(wide: pl.DataFrame, span: tuple[float, float]) -> np.ndarray:
    """Correlation lengths to try: from a twentieth of the closest checkpoints (white) to 20 spans (a drift)."""
    gaps = wide.sort("run", "step").group_by("run").agg(pl.col("step").cast(pl.Float64).diff().min())["step"]
    smallest = float(np.nanmin(gaps.to_numpy())) if gaps.len() else (span[1] - span[0])
    return np.geomspace(smallest / 20.0, 20.0 * (span[1] - span[0]), _GRID)


@dataclass(frozen=True)
class _TaskFit:
    """One testset's REML surface over (length, sigma²), summed over the pilot's runs."""

    task: str
    runs: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]  # per run: positions, y, design, noise
    variances: np.ndarray  # the sigma² grid
    surface: np.ndarray  # lengths × variances
    item_variance: float  # mean item-noise variance over the checkpoints
    source: str  # where the item noise came from (the commonest source)

    @classmethod
    def of(cls, wide: pl.DataFrame, in_domain: str, task: str, lengths: np.ndarray) -> _TaskFit:
        runs, residual, noises, sources = [], [], [], []
        noise_column, from_column = f"noise:{task}", f"from:{task}"
        for (_,), part in wide.partition_by("run", as_dict=True, maintain_order=True).items():
            part = part.filter(
                pl.col(in_domain).is_not_null() & pl.col(in_domain).is_not_nan()
                & pl.col(task).is_not_null() & pl.col(task).is_not_nan()
            )  # fmt: skip
            if part.height < 6:
                continue
            z = part[in_domain].cast(pl.Float64).to_numpy()
            y = part[task].cast(pl.Float64).to_numpy()
            v = part[noise_column].fill_null(0.0).to_numpy() if noise_column in part.columns else np.zeros(y.size)
            design = np.column_stack([np.ones_like(z), z - z.mean()])
            coef, *_ = np.linalg.lstsq(design, y, rcond=None)
            residual.append(np.var(y - design @ coef))
            runs.append((part["step"].cast(pl.Float64).to_numpy(), y, design, v))
            noises.append(v)
            if from_column in part.columns:
                sources.extend(part[from_column].drop_nulls().to_list())
        if not runs:
            raise AnalysisError(f"no run of the pilot has 6 checkpoints with {task!r} and the in-domain score")
        scale = float(np.median(residual)) or 1e-12
        variances = np.geomspace(scale * 1e-3, scale * 10.0, _GRID)
        surface = np.sum([_reml(run, lengths, variances) for run in runs], axis=0)
        source = max(set(sources), key=sources.count) if sources else "none"
        return cls(task, runs, variances, surface, float(np.mean(np.concatenate(noises))), source)

    def profile(self) -> np.ndarray:
        """The REML log-likelihood at each length, maximized over sigma² (refined by a parabola)."""
        return np.array([_peak(np.log(self.variances), row)[1] for row in self.surface])

    def variance(self, length: float, other: np.ndarray, threshold: float) -> tuple[float, float, float]:
        """sigma²: its estimate at the pair's ``length`` (a fine grid of sigma² there), and its profile interval,
        the log-likelihood maximized over the length too (``other``: the pair's other testset's profile over the
        lengths), so that the interval allows for not knowing the length."""
        fine = np.geomspace(self.variances[0], self.variances[-1], 4 * _GRID)
        curve = np.sum([_reml(run, np.array([length]), fine)[0] for run in self.runs], axis=0)
        at, _ = _peak(np.log(fine), curve)
        profile = np.max(self.surface + other[:, None], axis=0)
        low, high = _interval(np.log(self.variances), profile, profile.max() - threshold)
        return math.exp(at), math.exp(low), math.exp(high)


def _reml(run, lengths: np.ndarray, variances: np.ndarray) -> np.ndarray:
    """The restricted log-likelihood of one run's series under ``sigma² C(length) + diag(noise)``, lengths ×
    variances: ``-(log|V| + log|X'V^-1 X| + y'Py) / 2`` (constants dropped)."""
    positions, y, design, noise = run
    n = y.size
    C = np.stack([ou_correlation(positions, length) for length in lengths])  # L × n × n
    V = variances[None, :, None, None] * C[:, None] + np.diag(noise + _JITTER * variances.min())[None, None]
    root = np.linalg.cholesky(V)
    logdet = 2.0 * np.log(np.diagonal(root, axis1=-2, axis2=-1)).sum(axis=-1)
    both = np.linalg.solve(root, np.broadcast_to(np.column_stack([design, y]), V.shape[:2] + (n, 3)))
    Xw, yw = both[..., :2], both[..., 2]
    XtX = np.swapaxes(Xw, -1, -2) @ Xw
    beta = np.linalg.solve(XtX, (np.swapaxes(Xw, -1, -2) @ yw[..., None]))
    resid = yw - (Xw @ beta)[..., 0]
    return -0.5 * (logdet + np.linalg.slogdet(XtX)[1] + np.sum(resid**2, axis=-1))


def _peak(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The maximum of ``y`` over ``x``: the best grid point refined by the parabola through it and its neighbours."""
    i = int(np.argmax(y))
    if i == 0 or i == x.size - 1:
        return float(x[i]), float(y[i])
    coef = np.polyfit(x[i - 1 : i + 2], y[i - 1 : i + 2], 2)
    if coef[0] >= 0:
        return float(x[i]), float(y[i])
    top = float(np.clip(-coef[1] / (2 * coef[0]), x[i - 1], x[i + 1]))
    return top, float(np.polyval(coef, top))


def _interval(x: np.ndarray, y: np.ndarray, level: float) -> tuple[float, float]:
    """Where ``y`` crosses ``level`` on either side of its maximum (linear interpolation; the grid's ends if not)."""
    i = int(np.argmax(y))
    low, high = float(x[0]), float(x[-1])
    below = np.flatnonzero(y[:i] < level)
    if below.size:
        j = below[-1]
        low = float(np.interp(level, [y[j], y[j + 1]], [x[j], x[j + 1]]))
    above = np.flatnonzero(y[i:] < level)
    if above.size:
        j = i + above[0]
        high = float(np.interp(level, [y[j], y[j - 1]], [x[j], x[j - 1]]))
    return low, high


# -- seed spread ---------------------------------------------------------------------------------------------


def _seed_spread(table, attributes, between, within, inference, confidence) -> dict:
    """Per pair: the observed tau², its Q-profile interval and the groups' mean Fisher z; {} without attributes."""
    if between is None or within is None or attributes is None:
        return {}
    try:
        rows = with_attributes(table, [between, within], attributes)
    except AnalysisError:
        return {}
    rows = with_variance(rows.filter(pl.col(between).is_not_null()), inference, 0.05)
    if rows.is_empty():
        return {}
    runs = rows.select("run", between).unique().sort("run")
    names = runs["run"].to_list()
    index = ["task_x", "task_y"]
    r = rows.pivot(on="run", index=index, values="r", aggregate_function=None).sort(index)
    v = rows.pivot(on="run", index=index, values="variance", aggregate_function=None).sort(index)
    R = r.select(pl.col(names).cast(pl.Float64)).to_numpy()
    V = v.select(pl.col(names).cast(pl.Float64)).to_numpy()
    use = usable(R, V)
    with np.errstate(invalid="ignore"):
        effects = np.where(use, np.arctanh(np.where(use, R, 0.0)), np.nan)
    variances = np.where(use, V, np.nan)
    groups = runs[between].to_list()
    fit = meta.subgroups_many(effects, variances, groups, "PM", "z")
    low, high = meta.tau2_interval_many(effects, variances, groups, 1 - confidence)
    out = {}
    for i, (task_x, task_y) in enumerate(r.select(index).iter_rows()):
        out[(task_x, task_y)] = (fit.tau2[i], low[i], high[i], fit.means[i], fit.sizes[i])
    return out


def _pair_row(fx: _TaskFit, fy: _TaskFit, spread, table, lengths, threshold, spacing) -> dict[str, Any]:
    """The estimates of one pair from its testsets' REML surfaces, its seed spread and the pilot's correlations."""
    profiles = {"x": fx.profile(), "y": fy.profile()}
    profile = profiles["x"] + profiles["y"]
    log_length, top = _peak(np.log(lengths), profile)
    low, high = _interval(np.log(lengths), profile, top - threshold)
    length = math.exp(log_length)
    notes = []
    if log_length <= math.log(lengths[0]) + 1e-9:
        notes.append("no autocorrelation found")
    row: dict[str, Any] = {"task_x": fx.task, "task_y": fy.task, "length": length}
    row["ar1"], row["ar1_low"], row["ar1_high"] = (math.exp(-spacing / math.exp(v)) for v in (log_length, low, high))
    ratios = {}
    for name, fit, other in (("x", fx, "y"), ("y", fy, "x")):
        sigma2, sigma2_low, sigma2_high = fit.variance(length, profiles[other], threshold)
        ratios[name] = fit.item_variance / sigma2
        row[f"noise_{name}"] = ratios[name]
        row[f"noise_{name}_low"] = fit.item_variance / sigma2_high
        row[f"noise_{name}_high"] = fit.item_variance / sigma2_low
        row[f"item_sd_{name}"] = math.sqrt(fit.item_variance)
    sources = {fx.source, fy.source}
    row["item_noise_from"] = ", ".join(sorted(sources))
    if "none" in sources:
        notes.append("no item noise known (no per-sample rows, stderr or document counts)")
    pair = table.filter((pl.col("task_x") == fx.task) & (pl.col("task_y") == fy.task))
    finite = pair.filter(pl.col("r").is_finite())
    row["runs"] = finite.height
    row["checkpoints"] = int(finite["n"].median()) if finite.height else 0
    if finite.height >= 2:
        pooled = meta.pool_many([np.arctanh(finite["r"].to_numpy())], [1.0 / (finite["n_eff"].to_numpy() - 4.0)])
        row["r_pooled"] = float(np.tanh(pooled.estimate[0]))
    else:
        row["r_pooled"] = None
    if spread is None or not np.isfinite(spread[0]):
        row.update(tau_observed=None, tau=None, tau_low=None, tau_high=None)
        notes.append("no seed spread: needs runs of one model differing in seed")
    else:
        tau2, tau2_low, tau2_high, means, sizes = spread
        attenuation = 1.0 / math.sqrt((1.0 + ratios["x"]) * (1.0 + ratios["y"]))
        slopes = []
        for mean in means[sizes > 0]:
            rho = float(np.clip(math.tanh(mean) / attenuation, -0.95, 0.95))
            slopes.append(attenuation * (1 - rho**2) / (1 - attenuation**2 * rho**2))
        slope = float(np.mean(slopes))
        row["tau_observed"] = math.sqrt(tau2)
        row["tau"], row["tau_low"], row["tau_high"] = (math.sqrt(v) / slope for v in (tau2, tau2_low, tau2_high))
    row["note"] = "; ".join(notes) or None
    return row
