"""Partial correlations between OOD testsets with the in-domain score regressed out, run by run."""

from __future__ import annotations

import dataclasses
import functools
import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from scipy.stats import rankdata

from ood_store._analysis import bootstrap as _bootstrap
from ood_store._analysis import inference, residuals
from ood_store._analysis.results import PARTIAL_COLUMNS, PartialCorrelations
from ood_store._analysis.series import Series, in_domain_of_runs, load_series
from ood_store._errors import AnalysisError
from ood_store._names import split_names
from ood_store._progress import progress_bar

if TYPE_CHECKING:
    from ood_store._store import Database

METHODS = ("pearson", "spearman")
BOOTSTRAP_CHUNK = 50  # resamples solved in one batch (and one step of the progress bar)
GAM_MIN_N = 8  # a cubic regression spline of at least 5 functions (min(gam_df, distinct z, n - 3))


@dataclass(frozen=True)
class Options:
    """Everything that defines a partial-correlation analysis besides its data; saved with it."""

    in_domain: str | None  # None: the runs' in_domain attribute, when they agree on one
    ood: Sequence[str] | None = None  # repeated or comma-separated names (a tuple once made); None: all
    runs: Sequence[str] | None = None
    metric: str = "acc"
    filter: str = "none"
    num_fewshot: int | None = None
    residualizer: str = "linear"
    method: str = "pearson"
    adjust: str = "holm"
    confidence: float = 0.95
    bootstrap: int = 0
    block_length: int | None = None
    bootstrap_kind: str = "circular"
    seed: int = 0
    gam_df: int = residuals.GAM_DF
    smoothing: str = "reml"
    campaign: str | None = None  # only the evaluations of this campaign; None: `scores`, whatever the campaign
    where: Sequence[str] | None = None  # KEY=VALUE run attributes every run must have (VALUE may be a glob)
    slices: Sequence[str] | None = None  # TASK:FIELD: TASK's items split by FIELD, each part a task of its own

    def __post_init__(self) -> None:
        object.__setattr__(self, "ood", split_names(self.ood, "ood"))
        object.__setattr__(self, "slices", split_names(self.slices, "slices"))
        object.__setattr__(self, "runs", split_names(self.runs, "runs"))
        object.__setattr__(self, "where", None if not self.where else tuple(self.where))
        for name, value, allowed in (
            ("residualizer", self.residualizer, residuals.RESIDUALIZERS),
            ("method", self.method, METHODS),
            ("adjust", self.adjust, inference.ADJUST_METHODS),
            ("bootstrap_kind", self.bootstrap_kind, _bootstrap.BOOTSTRAP_KINDS),
            ("smoothing", self.smoothing, residuals.SMOOTHING),
        ):
            if value not in allowed:
                raise AnalysisError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
        if not 0 < self.confidence < 1:
            raise AnalysisError(f"confidence must be between 0 and 1, not {self.confidence}")
        if self.bootstrap < 0:
            raise AnalysisError(f"bootstrap must be 0 (off) or a number of resamples, not {self.bootstrap}")
        if self.block_length is not None and self.block_length < 1:
            raise AnalysisError(f"block_length must be at least 1, not {self.block_length}")
        if self.gam_df < residuals.GAM_MIN_DF:
            raise AnalysisError(
                f"gam_df must be at least {residuals.GAM_MIN_DF} (a cubic regression spline), not {self.gam_df}"
            )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("ood", "runs", "where", "slices"):
            out[key] = None if out[key] is None else list(out[key])
        return out


def partial_correlations(
    data: Database | pl.DataFrame,
    in_domain: str | None = None,
    ood: Sequence[str] | None = None,
    runs: Sequence[str] | None = None,
    *,
    metric: str = "acc",
    filter: str = "none",  # noqa: A002 - lm-eval's name for it
    num_fewshot: int | None = None,
    residualizer: str = "linear",
    method: str = "pearson",
    adjust: str = "holm",
    confidence: float = 0.95,
    bootstrap: int = 0,
    block_length: int | None = None,
    bootstrap_kind: str = "circular",
    seed: int = 0,
    gam_df: int = residuals.GAM_DF,
    smoothing: str = "reml",
    campaign: str | None = None,
    where: Sequence[str] | None = None,
    slices: Sequence[str] | None = None,
    progress: bool = False,
) -> PartialCorrelations:
    """Partial correlations between every pair of OOD tasks, controlling for the in-domain score, per run.

    Within a run, checkpoints are aligned by step. For each pair (X, Y), the
    steps where X, Y or the in-domain score is missing are dropped (``n`` is
    what remains); X and Y are regressed on the in-domain score and their
    residuals correlated.

    Parameters
    ----------
    data : Database or polars.DataFrame
        A store, or a long frame with columns ``step, task, value`` (and
        optionally ``run``; ``metric``, ``filter``, ``num_fewshot`` select rows
        when present).
    in_domain : str, optional
        The in-domain task, the control. Default: the ``in_domain`` attribute
        of the runs analyzed, when every one has it and they agree (a store only).
    ood : list of str, optional
        OOD tasks; default every other task with ``metric`` scores.
    runs : list of str, optional
        Runs to analyze; default all.
    metric, filter, num_fewshot
        Which scores form the series (``num_fewshot`` is required when a task
        was evaluated at several shot counts).
    campaign : str, optional
        Only the evaluations of this campaign (``ood-store runs`` lists them): a
        run whose checkpoints come from several campaigns (a zero-shot sweep and
        a later re-evaluation of some steps) otherwise mixes them in one series.
    where : list of str, optional
        ``KEY=VALUE`` run attributes (``size=160m``, ``family=pythia``; VALUE may be
        a glob) that every analyzed run must have; several keys must all hold.
    slices : list of str, optional
        ``TASK:FIELD``: the items of TASK split by the value of FIELD, each part
        an OOD task of its own, ``TASK[FIELD=VALUE]``, its score at each
        checkpoint the mean of its items' metric, computed from the stored
        per-sample rows in SQL (a store only). The store keeps one field of a
        sample's document, ``target`` (the label).
    residualizer : {"linear", "gam"}
        ``linear``: OLS on ``[1, z]``, identical to :func:`pingouin.partial_corr`
        with ``covar=in_domain``. ``gam``: a penalised cubic regression spline
        of the in-domain score, mgcv's ``s(z, bs = "cr", k = gam_df)``
        (:func:`~ood_store._analysis.residuals.gam`), smoothing parameter by
        ``smoothing``; its effective degrees of freedom replace the straight line's 2.
    method : {"pearson", "spearman"}
        Spearman ranks every series (average ranks for ties) on the pair's
        steps first.
    adjust : {"holm", "fdr_bh", "bonferroni", "none"}
        Multiple-testing adjustment of ``p`` and ``p_eff`` over the pairs of each run.
    confidence : float
        Level of the Fisher-z and bootstrap intervals.
    bootstrap : int
        Number of block-bootstrap resamples (0: none) for ``boot_ci_low/high``.
    block_length : int, optional
        Block length in checkpoints; default Politis–White's automatic choice.
    bootstrap_kind : {"circular", "stationary"}
    seed : int
        Seed of the bootstrap; with the same seed and data the intervals repeat exactly.
    gam_df : int
        Basis dimension of the GAM, intercept included (mgcv's ``k``); at most
        the number of distinct in-domain values and ``n - 3`` are used.
    smoothing : {"reml", "gcv"}
        How the GAM's smoothing parameter is chosen, per series: REML (mgcv
        ``method = "REML"``) or generalized cross-validation ``n RSS / (n - edf)^2``
        (mgcv ``method = "GCV.Cp"``).
    progress : bool
        Show a progress bar over runs on a terminal.

    Returns
    -------
    PartialCorrelations
        ``.table`` (a Polars DataFrame), ``.options``, ``.tasks`` and ``.runs``.
        The table has one row per (run, task_x, task_y) with the columns of
        :data:`~ood_store._analysis.results.PARTIAL_COLUMNS`:

        - ``n``: checkpoints used; ``r``: partial correlation;
        - ``ci_low``, ``ci_high``: Fisher-z interval with ``n - edf - 2`` (``n - k - 3``);
        - ``p``: two-sided t test with ``dof = n - 1 - edf`` (``n - 2 - k`` for linear);
        - ``p_adj``: ``p`` adjusted within the run;
        - ``acf1_x``, ``acf1_y``: lag-1 autocorrelations of the two residual series;
        - ``n_eff``: Bretherton et al. (1999) effective sample size; ``p_eff``: the
          same t test on ``n_eff``; ``p_eff_adj``: adjusted;
        - ``edf_x``, ``edf_y``: effective degrees of freedom of each fit (2 for linear);
        - ``boot_ci_low``, ``boot_ci_high``, ``block_length``: block-bootstrap interval;
        - ``reason``: why a row's statistics are NaN (null when they are not);
        - ``note``: on a finite row, what was computed with less than asked for (a GAM
          basis shrunk to the in-domain score's distinct values, or a line in its place);
        - either names the non-finite scores (NaN or ±Infinity in the files) left out as missing.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from ood_store._analysis import partial_correlations
    >>> rng = np.random.default_rng(0)
    >>> z = np.linspace(0.3, 0.8, 30)                  # in-domain accuracy over training
    >>> shared = rng.normal(size=30)                   # what the two OOD sets share beyond z
    >>> frame = pl.DataFrame({
    ...     "step": np.tile(np.arange(30) * 100, 3),
    ...     "task": ["mnli"] * 30 + ["hans"] * 30 + ["rte"] * 30,
    ...     "value": np.concatenate([z, z + shared + rng.normal(size=30) * 0.5,
    ...                              -z + shared + rng.normal(size=30) * 0.5]),
    ... })
    >>> result = partial_correlations(frame, in_domain="mnli")
    >>> result.table.select("task_x", "task_y", "n", pl.col("r").round(3))
    shape: (1, 4)
    ┌────────┬────────┬─────┬───────┐
    │ task_x ┆ task_y ┆ n   ┆ r     │
    │ ---    ┆ ---    ┆ --- ┆ ---   │
    │ str    ┆ str    ┆ i64 ┆ f64   │
    ╞════════╪════════╪═════╪═══════╡
    │ hans   ┆ rte    ┆ 30  ┆ 0.757 │
    └────────┴────────┴─────┴───────┘
    """
    options = Options(
        in_domain=in_domain,
        ood=ood,
        runs=runs,
        metric=metric,
        filter=filter,
        num_fewshot=num_fewshot,
        residualizer=residualizer,
        method=method,
        adjust=adjust,
        confidence=confidence,
        bootstrap=bootstrap,
        block_length=block_length,
        bootstrap_kind=bootstrap_kind,
        seed=seed,
        gam_df=gam_df,
        smoothing=smoothing,
        campaign=campaign,
        where=where,
        slices=slices,
    )
    return compute(data, options, progress=progress)


def compute(data: Database | pl.DataFrame, options: Options, *, progress: bool = False) -> PartialCorrelations:
    """:func:`partial_correlations` with its options given as one :class:`Options`.

    ``options.in_domain`` None is replaced by the runs' ``in_domain`` attribute
    (:func:`~ood_store._analysis.series.in_domain_of_runs`); the result's options say which.
    """
    if options.bootstrap:
        _bootstrap.require_arch()  # before the series are read: one line, not a failure halfway
    if options.in_domain is None:
        options = dataclasses.replace(options, in_domain=in_domain_of_runs(data, options.runs))
    from ood_store._store.database import Database as StoreDatabase

    # what the store held, read before the rows; a frame (polars, pandas) has no snapshot
    snapshot = data.snapshot_marker() if isinstance(data, StoreDatabase) else None
    series = load_series(data, options)
    options = dataclasses.replace(options, in_domain=series.in_domain)  # as the store spells it (mnli: ood_nli_mnli)
    store = None if isinstance(data, pl.DataFrame) or not series.from_store else data
    table = analyze(series, options, progress=progress)
    return PartialCorrelations(table, options, series.ood, series.runs, store, snapshot if store is not None else None)


def analyze(series: Series, options: Options, *, progress: bool = False) -> pl.DataFrame:
    """The partial-correlation table of already selected ``series``."""
    wide = series.scores.pivot(on="task", index=["run", "step"], values="value", aggregate_function=None)
    tasks = list(series.ood)
    absent = [task for task in (series.in_domain, *tasks) if task not in wide.columns]
    wide = wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(task) for task in absent)
    parts = []
    chunks = -(-options.bootstrap // BOOTSTRAP_CHUNK)
    label = "bootstrapping" if options.bootstrap else "fitting GAMs" if options.residualizer == "gam" else "analyzing"
    with progress_bar(progress, len(series.runs) * (1 + chunks), label) as advance:
        for (run,), block in wide.sort("run", "step").partition_by("run", as_dict=True, maintain_order=True).items():
            values = block.select(pl.col([series.in_domain, *tasks]).cast(pl.Float64).fill_null(np.nan)).to_numpy()
            told = functools.partial(advance, description=run)
            parts.append(_pairs(values[:, :1], values[:, 1:], tasks, options, run, told))
    table = pl.concat(parts) if parts else pl.DataFrame(schema=_schema())
    table = _note_non_finite(table, series)
    return table.with_columns(
        pl.lit(series.in_domain).alias("in_domain"),
        pl.lit(options.metric).alias("metric"),
        pl.lit(options.residualizer).alias("residualizer"),
        pl.lit(options.method).alias("method"),
    ).select(PARTIAL_COLUMNS)


def _note_non_finite(table: pl.DataFrame, series: Series) -> pl.DataFrame:
    """Name the non-finite scores (NaN, ±Infinity) a row's tasks had, which were left out as missing:
    in ``reason`` where r is NaN, else in ``note``.

    A frame's NaN or null is its way of saying "no score" and needs no word;
    the store's NULL is a NaN the file held.
    """
    value = pl.col("value")
    bad = (
        series.scores.filter(value.is_infinite() | (value.is_null() if series.from_store else pl.lit(False)))
        .group_by("run", "task")
        .agg(pl.len().alias("count"))
    )
    if bad.is_empty():
        return table
    counts = {(run, task): count for run, task, count in bad.iter_rows()}
    reasons, notes = [], []
    for run, x, y, r, reason, note in table.select("run", "task_x", "task_y", "r", "reason", "note").iter_rows():
        found = ", ".join(f"{counts[(run, t)]} of {t}" for t in (series.in_domain, x, y) if (run, t) in counts)
        if found and r is not None and np.isfinite(r):
            note = _joined(note, f"non-finite scores treated as missing: {found}")
        elif found:
            reason = _joined(reason, f"non-finite scores treated as missing: {found}")
        reasons.append(reason)
        notes.append(note)
    return table.with_columns(pl.Series("reason", reasons, dtype=pl.String), pl.Series("note", notes, dtype=pl.String))


def _joined(first: str | None, second: str) -> str:
    return second if not first else f"{first}; {second}"


def _schema() -> dict[str, pl.DataType]:
    """Types of the per-run columns (all but the four parameter columns at the end)."""
    schema: dict[str, pl.DataType] = dict.fromkeys(PARTIAL_COLUMNS[:-4], pl.Float64())
    schema.update(
        run=pl.String(),
        task_x=pl.String(),
        task_y=pl.String(),
        n=pl.Int64(),
        block_length=pl.Int64(),
        reason=pl.String(),
        note=pl.String(),
    )
    return schema


def pairwise_partial(
    X: np.ndarray, controls: np.ndarray, names: Sequence[str] | None = None, **options: Any
) -> pl.DataFrame:
    """Partial correlation of every pair of columns of ``X`` given ``controls``, on arrays.

    The engine behind :func:`partial_correlations` for one run, for data that
    is not in a store. Rows of ``X`` (n × p) are checkpoints in step order;
    NaN marks a missing score. ``controls`` is the in-domain series (length n)
    or, for the linear residualizer, an n × k matrix of controls (each pair is
    then conditioned on all k, as R's ``ppcor`` does with the other columns).
    ``options`` are those of :func:`partial_correlations` that define the
    statistics (``residualizer``, ``method``, ``adjust``, ``confidence``,
    ``bootstrap``, ``block_length``, ``bootstrap_kind``, ``seed``, ``gam_df``, ``smoothing``).
    Returns the columns of :data:`~ood_store._analysis.results.PARTIAL_COLUMNS` up to ``note``, ``run`` empty.

    Examples
    --------
    >>> import numpy as np
    >>> from ood_store._analysis.partial import pairwise_partial
    >>> hl = np.array([7, 15, 19, 15, 21, 22, 57, 15, 20, 18])
    >>> disp = np.array([0.000, 0.964, 0, 0, 0.921, 0, 0, 1.006, 0, 1.011])
    >>> deg = np.array([9, 2, 3, 4, 1, 3, 1, 3, 6, 1])
    >>> BC = np.array([1.78e-02, 1.05e-06, 1.37e-05, 7.18e-03, 0, 0, 0, 4.48e-03, 2.10e-06, 0])
    >>> table = pairwise_partial(np.column_stack([hl, disp]), np.column_stack([deg, BC]), ["hl", "disp"])
    >>> print(round(table["r"][0], 7), round(table["p"][0], 8))  # R: ppcor::pcor(y.data)
    -0.6720863 0.06789202
    """
    X = np.asarray(X, dtype=float)
    controls = np.asarray(controls, dtype=float)
    Z = controls.reshape(controls.shape[0], -1)
    if Z.shape[0] != X.shape[0]:
        raise AnalysisError(f"controls have {Z.shape[0]} rows but X has {X.shape[0]}")
    selection = {"in_domain", "ood", "runs", "metric", "filter", "num_fewshot", "campaign", "where", "slices"} & set(
        options
    )
    if selection:
        raise AnalysisError(f"pairwise_partial takes no {', '.join(sorted(selection))}: it works on arrays")
    settings = Options(in_domain="", **options)
    if settings.residualizer == "gam" and Z.shape[1] != 1:
        raise AnalysisError("the gam residualizer takes one control")
    names = [f"x{i}" for i in range(X.shape[1])] if names is None else list(names)
    return _pairs(Z, X, names, settings, "")


def _pairs(
    Z: np.ndarray,
    X: np.ndarray,
    tasks: list[str],
    options: Options,
    run: str,
    advance: Callable[[float], None] | None = None,
) -> pl.DataFrame:
    """All pairs of one run: one residual matrix per pattern of missing steps, not a loop over pairs.

    ``advance`` is told of progress: 1 for the run's fits, 1 for each chunk of
    :data:`BOOTSTRAP_CHUNK` resamples, shared out over the groups of steps.
    """
    advance = advance or (lambda amount: None)
    p = X.shape[1]
    ix, iy = np.triu_indices(p, 1)
    pairs = ix.size
    out = {name: np.full(pairs, np.nan) for name in ("r", "acf1_x", "acf1_y", "edf_x", "edf_y", "boot_lo", "boot_hi")}
    n = np.zeros(pairs, dtype=np.int64)
    blocks = np.zeros(pairs, dtype=np.int64)
    reason = np.full(pairs, None, dtype=object)
    note = np.full(pairs, None, dtype=object)

    available = np.isfinite(X) & np.isfinite(Z).all(axis=1)[:, None]
    pair_rows = available[:, ix] & available[:, iy]  # n_steps × pairs
    patterns, group_of = np.unique(np.packbits(pair_rows, axis=0), axis=1, return_inverse=True)
    group_of = group_of.reshape(-1)
    groups = patterns.shape[1]
    chunks = -(-options.bootstrap // BOOTSTRAP_CHUNK)
    for g in range(groups):
        members = np.flatnonzero(group_of == g)
        rows = pair_rows[:, members[0]]
        count = int(rows.sum())
        n[members] = count
        problem = _group_problem(count, Z[rows], options)
        if problem:
            reason[members] = problem
            advance((1 + chunks) / groups)
            continue
        cols = np.unique(np.concatenate([ix[members], iy[members]]))
        px, py = np.searchsorted(cols, ix[members]), np.searchsorted(cols, iy[members])
        fit = _Fit(Z[rows], X[rows][:, cols], options)
        out["r"][members] = fit.corr[px, py]
        out["acf1_x"][members], out["acf1_y"][members] = fit.acf1[px], fit.acf1[py]
        out["edf_x"][members], out["edf_y"][members] = fit.edf[px], fit.edf[py]
        note[members] = fit.note
        for problems, which in ((fit.problems[px], ix[members]), (fit.problems[py], iy[members])):
            for k in np.flatnonzero([problem is not None for problem in problems]):
                reason[members[k]] = reason[members[k]] or problems[k].format(task=tasks[which[k]])
        advance(1 / groups)
        ok = np.isfinite(out["r"][members])
        if options.bootstrap and ok.any():
            length = options.block_length or _bootstrap.block_length(fit.residuals, options.bootstrap_kind)
            seed = np.random.default_rng([options.seed, zlib.crc32(run.encode()), g])
            idx = _bootstrap.resample_indices(count, options.bootstrap, length, options.bootstrap_kind, seed)
            draws = []
            for start in range(0, options.bootstrap, BOOTSTRAP_CHUNK):
                chunk = idx[start : start + BOOTSTRAP_CHUNK]
                draws.append(fit.resampled_correlations(Z[rows], X[rows][:, cols], chunk)[:, px[ok], py[ok]])
                advance(1 / groups)
            lo, hi = _bootstrap.percentile_ci(np.concatenate(draws), options.confidence)
            out["boot_lo"][members[ok]], out["boot_hi"][members[ok]] = lo, hi
            blocks[members[ok]] = length
        elif options.bootstrap:
            advance(chunks / groups)

    r = out["r"]
    stats = pair_statistics(r, n, out["acf1_x"], out["acf1_y"], out["edf_x"], out["edf_y"], options.confidence)
    dof, p_value, n_eff, p_eff = stats["dof"], stats["p"], stats["n_eff"], stats["p_eff"]
    ci_low, ci_high = stats["ci_low"], stats["ci_high"]
    names = np.array(tasks, dtype=object)
    return pl.DataFrame(
        {
            "run": [run] * pairs,
            "task_x": names[ix].tolist(),
            "task_y": names[iy].tolist(),
            "n": n,
            "r": r,
            "ci_low": ci_low,
            "ci_high": ci_high,
            "p": p_value,
            "p_adj": inference.adjust(p_value, options.adjust),
            "n_eff": n_eff,
            "p_eff": p_eff,
            "p_eff_adj": inference.adjust(p_eff, options.adjust),
            "acf1_x": out["acf1_x"],
            "acf1_y": out["acf1_y"],
            "dof": np.where(np.isfinite(r), dof, np.nan),
            "edf_x": out["edf_x"],
            "edf_y": out["edf_y"],
            "boot_ci_low": out["boot_lo"],
            "boot_ci_high": out["boot_hi"],
            "block_length": blocks,
            "reason": reason.tolist(),
            "note": [text if finite else None for text, finite in zip(note, np.isfinite(r), strict=True)],
        },
        schema=_schema(),
        strict=False,
    ).with_columns(pl.when(pl.col("block_length") > 0).then(pl.col("block_length")).alias("block_length"))


def pair_statistics(
    r: np.ndarray,
    n: np.ndarray,
    acf1_x: np.ndarray,
    acf1_y: np.ndarray,
    edf_x: np.ndarray,
    edf_y: np.ndarray,
    confidence: float = 0.95,
) -> dict[str, np.ndarray]:
    """The tests and intervals of pairs from their r, checkpoints, residual autocorrelations and fits' edf (arrays).

    ``dof = n - 1 - edf`` with ``edf`` the larger fit's, ``p`` its t test,
    the Fisher interval on ``n - edf - 2``, Bretherton's ``n_eff`` and ``p_eff``
    (the t test on ``n_eff - 1 - edf``). The per-run table and the simulations of
    :mod:`~ood_store._analysis.power` both compute them here.
    """
    edf = np.fmax(edf_x, edf_y)
    dof = n - 1 - edf
    ci_low, ci_high = inference.fisher_ci(r, n - edf - 2, confidence)
    n_eff = np.where(np.isfinite(r), inference.effective_n(n, acf1_x, acf1_y), np.nan)
    return {
        "edf": edf,
        "dof": dof,
        "p": inference.t_test(r, dof),
        "ci_low": ci_low,
        "ci_high": ci_high,
        "n_eff": n_eff,
        "p_eff": inference.t_test(r, n_eff - 1 - edf),
    }


def _group_problem(count: int, Z: np.ndarray, options: Options) -> str | None:
    if count == 0:
        return "no step has both tasks and the in-domain score"
    need = GAM_MIN_N if options.residualizer == "gam" else Z.shape[1] + 4  # linear: n > k + 3
    if count < need:
        return f"too few checkpoints: n={count}, the {options.residualizer} residualizer needs at least {need}"
    if (np.ptp(Z, axis=0) == 0).any():
        return "the in-domain score is constant"
    return None


class _Fit:
    """Residualized series of one group of steps: correlations, autocorrelations, degrees of freedom."""

    def __init__(self, Z: np.ndarray, X: np.ndarray, options: Options):
        self.options = options
        constant = np.ptp(X, axis=0) == 0
        self.problems = np.array([("{task} is constant" if c else None) for c in constant], dtype=object)
        self.residuals = np.full_like(X, np.nan, dtype=float)
        self.edf = np.full(X.shape[1], np.nan)
        self.smoothing_parameter = np.full(X.shape[1], np.nan)
        self.note: str | None = None
        varying = ~constant
        Zr, Xr = self._ranked(Z, X[:, varying])
        self.smoother = residuals.GamSmoother(Zr[:, 0], options.gam_df) if options.residualizer == "gam" else None
        if varying.any():
            fit = self._residualize(Zr, Xr)
            self.note = fit.note
            self.residuals[:, varying] = fit.values
            self.edf[varying], self.smoothing_parameter[varying] = fit.edf, fit.smoothing_parameter
            spread = np.linalg.norm(Xr - Xr.mean(axis=0), axis=0)
            explained = np.linalg.norm(fit.values, axis=0) <= 1e-10 * spread
            idx = np.flatnonzero(varying)[explained]
            self.problems[idx] = "{task} is fully explained by the in-domain score"
            self.residuals[:, idx] = np.nan
            failed = np.flatnonzero(varying)[~np.isfinite(fit.values).all(axis=0)]
            self.problems[failed] = "the GAM could not be fitted to {task}"
        self.corr = correlation(self.residuals)
        self.acf1 = inference.lag1_autocorrelation(self.residuals)
        self._usable = np.isfinite(self.residuals).all(axis=0)

    def _ranked(self, Z: np.ndarray, X: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
        if self.options.method == "spearman":
            return rankdata(Z, axis=axis), rankdata(X, axis=axis)
        return Z, X

    def _residualize(self, Z: np.ndarray, X: np.ndarray) -> residuals.Residuals:
        if self.smoother is not None:
            return self.smoother.fit(X, self.options.smoothing)
        return residuals.linear(Z, X)

    def resampled_correlations(self, Z: np.ndarray, X: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Residual correlation matrices on the resamples ``idx`` (resamples × n): resamples × p × p.

        Each resample is residualized afresh, all of them in one batched solve;
        the GAM keeps the basis and the smoothing parameters chosen on all
        checkpoints. A resample whose in-domain score is constant gives NaN, a
        series constant in a resample NaN in its rows and columns.
        """
        return self.correlations_of(Z[idx], X[idx])

    def correlations_of(self, Zb: np.ndarray, Xb: np.ndarray) -> np.ndarray:
        """Residual correlation matrices of resampled series (reps × n × k and reps × n × p): reps × p × p.

        The series may be resampled checkpoints (:meth:`resampled_correlations`)
        or scores of resampled items (:mod:`~ood_store._analysis.items`).
        """
        reps, p = Xb.shape[0], Xb.shape[2]
        out = np.full((reps, p, p), np.nan)
        use = np.flatnonzero(self._usable)
        Xb = Xb[:, :, use]  # reps × n × q
        ok = (np.ptp(Zb, axis=1) > 0).all(axis=1)
        if not ok.any() or use.size == 0:
            return out
        Zb, Xb = self._ranked(Zb[ok], Xb[ok], axis=1)
        if self.smoother is None or self.smoother.spline is None:
            values = residuals.linear_resampled(Zb, Xb)
        else:
            design = self.smoother.design(Zb[:, :, 0].reshape(-1)).reshape(Zb.shape[0], Zb.shape[1], -1)
            values = residuals.penalized_resampled(
                design, Xb, self.smoother.penalty_root, self.smoothing_parameter[use]
            )
        values[np.broadcast_to(np.ptp(Xb, axis=1, keepdims=True) == 0, values.shape)] = np.nan
        corr = np.full((Zb.shape[0], p, p), np.nan)
        corr[:, use[:, None], use[None, :]] = correlation(values)
        out[ok] = corr
        return out


def correlation(E: np.ndarray) -> np.ndarray:
    """Pearson correlations between the columns of ``E`` (NaN for a NaN or zero-variance column).

    ``E`` is n × p, or a stack of them (… × n × p); the result is p × p (… × p × p).
    """
    unit = _unit(E)
    return np.clip(np.swapaxes(unit, -1, -2) @ unit, -1.0, 1.0)


def paired_correlation(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Pearson correlation of each column of ``X`` with the same column of ``Y`` (n × m each): m values."""
    return np.clip(np.sum(_unit(X) * _unit(Y), axis=0), -1.0, 1.0)


def _unit(E: np.ndarray) -> np.ndarray:
    """The columns of ``E`` centered and scaled to length 1 (NaN for a zero-variance column)."""
    centered = E - E.mean(axis=-2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return centered / np.linalg.norm(centered, axis=-2, keepdims=True)
