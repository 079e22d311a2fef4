"""Items, not only scores: the partial correlations again with each testset's items resampled, corrected for item noise.

A testset is a sample of items, and its score at every checkpoint carries the
sampling noise of that draw. :func:`item_correlations` reads the per-item
outcomes the store keeps (the ``samples`` table) and, per run:

- resamples each testset's items with replacement, the same items at every
  checkpoint, and recomputes the scores and the partial correlations (either
  residualizer): ``item_ci_low/high``, how far ``r`` moves with another draw of items (BCa,
  :func:`~ood_store._analysis.itemstats.bca_ci`, as every item-bootstrap interval here);
- estimates what item noise adds to each series' variance and corrects the
  covariance matrix for it (:mod:`~ood_store._analysis.itemstats`): ``r_corrected``,
  the partial correlation of the noise-free scores (linear residualizer, Pearson;
  with the GAM or ranks, SIMEX's estimate, :func:`~ood_store._analysis.itemstats.simex`, without an interval);
  ``corrected_ci_low/high`` its interval for the process behind the checkpoints
  (the item draws convolved with Fisher's normal, moved to the bias-corrected estimate), ``corrected_item_ci_low/high``
  its item-bootstrap interval for these checkpoints' noise-free scores;
- gives ``r_noise``, the naive r the item noise alone would produce were the
  noise-free partial correlation 0, and a note on pairs whose naive interval
  excludes 0 while the corrected one does not;
- reports each series' split-half reliability over the checkpoints
  (Spearman–Brown, averaged over random splits of the items).

With ``bootstrap``, the checkpoints are block-resampled in the same resamples
as the items: ``boot_ci_low/high`` (naive) and ``corrected_boot_ci_low/high``.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from scipy import stats

from ood_store._analysis import bootstrap as _bootstrap
from ood_store._analysis import itemstats, residuals
from ood_store._analysis.partial import Options, _Fit, pairwise_partial
from ood_store._analysis.results import Result
from ood_store._analysis.series import SINGLE_RUN, in_domain_of_runs, load_series, read_series_sql
from ood_store._errors import AnalysisError
from ood_store._progress import progress_bar

if TYPE_CHECKING:
    from ood_store._store import Database

#: Columns of an item analysis, in order.
ITEM_COLUMNS = (
    "run", "task_x", "task_y", "n", "items_in_domain", "items_x", "items_y",
    "r", "ci_low", "ci_high", "item_ci_low", "item_ci_high",
    "r_corrected", "corrected_ci_low", "corrected_ci_high", "corrected_item_ci_low", "corrected_item_ci_high",
    "boot_ci_low", "boot_ci_high", "corrected_boot_ci_low", "corrected_boot_ci_high", "block_length",
    "r_noise", "reliability_in_domain", "reliability_x", "reliability_y", "note",
    "in_domain", "metric", "residualizer", "method",
)  # fmt: skip

#: Every interval of an item analysis: its low and high columns, and the estimate it is printed beside (and contains).
ITEM_INTERVALS = (
    ("item_ci_low", "item_ci_high", "r"),
    ("corrected_ci_low", "corrected_ci_high", "r_corrected"),
    ("corrected_item_ci_low", "corrected_item_ci_high", "r_corrected"),
    ("boot_ci_low", "boot_ci_high", "r"),
    ("corrected_boot_ci_low", "corrected_boot_ci_high", "r_corrected"),
)


@dataclass(frozen=True)
class ItemOptions(Options):
    """An analysis' options (:class:`~ood_store._analysis.partial.Options`) and the item resampling's."""

    items: int = 1000  # item resamples
    splits: int = 200  # random splits of the items for the split-half reliability

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.items < 1:
            raise AnalysisError(f"items must be a number of resamples, at least 1, not {self.items}")
        if self.splits < 1:
            raise AnalysisError(f"splits must be at least 1, not {self.splits}")
        if self.slices:
            raise AnalysisError("the item analysis resamples whole testsets: leave out slices", parameter="slices")


@dataclass(frozen=True)
class RunItems:
    """One run's items: the common steps and, per task (in-domain first), an items × steps matrix."""

    steps: tuple[int, ...]
    matrices: tuple[np.ndarray, ...]


@dataclass(frozen=True, repr=False)
class ItemCorrelations(Result):
    """Partial correlations with items resampled and corrected for item noise; one row per (run, pair).

    The columns of :data:`ITEM_COLUMNS`.
    """

    summary_columns = (
        "run", "task_x", "task_y", "n", "r", "item_ci_low", "item_ci_high", "r_corrected",
        "corrected_ci_low", "corrected_ci_high", "r_noise", "reliability_in_domain", "note",
    )  # fmt: skip

    options: ItemOptions
    tasks: tuple[str, ...]
    runs: tuple[str, ...]

    def _summary(self) -> str:
        o = self.options
        return (
            f": {len(self.runs)} runs × {len(self.tasks)} OOD tasks, in-domain {o.in_domain!r}, "
            f"{o.items} item resamples, {o.residualizer} residualizer; {self.table.height} rows"
        )


def item_correlations(
    data: Database | pl.DataFrame,
    in_domain: str | None = None,
    ood: Sequence[str] | None = None,
    runs: Sequence[str] | None = None,
    *,
    items: int = 1000,
    splits: int = 200,
    metric: str = "acc",
    filter: str = "none",  # noqa: A002 - lm-eval's name for it
    num_fewshot: int | None = None,
    residualizer: str = "linear",
    method: str = "pearson",
    confidence: float = 0.95,
    bootstrap: int = 0,
    block_length: int | None = None,
    bootstrap_kind: str = "circular",
    seed: int = 0,
    gam_df: int = residuals.GAM_DF,
    smoothing: str = "reml",
    campaign: str | None = None,
    where: Sequence[str] | None = None,
    progress: bool = False,
) -> ItemCorrelations:
    """Partial correlations between OOD testsets with their items resampled, and corrected for item noise.

    Parameters are those of :func:`~ood_store._analysis.partial_correlations`
    (``adjust`` aside) and:

    items : int
        Item resamples: each testset's items drawn with replacement, the same
        items at every checkpoint of a run, the scores and the whole analysis
        computed again on each (all resamples of a run in a few matrix products).
    splits : int
        Random splits of the items behind each split-half reliability.
    bootstrap : int
        With a number of resamples, the checkpoints are block-resampled as well,
        in separate resamples together with the items (``boot_ci_*``, ``corrected_boot_ci_*``).

    ``data`` is a store (its ``samples`` rows; ``ingest`` keeps them unless
    ``--no-samples``) or a long frame with columns ``step, task, item, value``
    (``run`` optional): one row per checkpoint, task and item, ``value`` the
    item's metric (1.0 correct, 0.0 not). Every item of a task must be there at
    every step of its run; steps missing a task are left out of the run.

    Returns
    -------
    ItemCorrelations
        One row per (run, task_x, task_y), :data:`ITEM_COLUMNS`: ``r`` and its
        Fisher interval as :func:`~ood_store._analysis.partial_correlations`
        (on the items' means), ``item_ci_*`` its item-bootstrap interval,
        ``r_corrected`` and its intervals, ``r_noise``, the reliabilities, a ``note``.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from ood_store._analysis.items import item_correlations
    >>> rng = np.random.default_rng(0)
    >>> ability = np.linspace(0.3, 0.7, 20)                         # 20 checkpoints
    >>> rows = []
    >>> for task, n, own in (("mnli", 300, 0.0), ("hans", 400, 0.04), ("rte", 400, 0.04)):
    ...     p = ability + own * rng.standard_normal(20) - rng.uniform(-0.2, 0.2, (n, 1))
    ...     y = (rng.random((n, 20)) < p).astype(float)             # items × checkpoints
    ...     rows += [(s * 100, task, i, y[i, s]) for i in range(n) for s in range(20)]
    >>> frame = pl.DataFrame(rows, schema=["step", "task", "item", "value"], orient="row")
    >>> result = item_correlations(frame, in_domain="mnli", items=200)
    >>> row = result.table.row(0, named=True)
    >>> row["task_x"], row["task_y"], row["n"], row["items_in_domain"]
    ('hans', 'rte', 20, 300)
    >>> bool(row["item_ci_low"] < row["r"] < row["item_ci_high"])
    True
    """
    options = ItemOptions(
        in_domain=in_domain,
        ood=ood,
        runs=runs,
        metric=metric,
        filter=filter,
        num_fewshot=num_fewshot,
        residualizer=residualizer,
        method=method,
        confidence=confidence,
        bootstrap=bootstrap,
        block_length=block_length,
        bootstrap_kind=bootstrap_kind,
        seed=seed,
        gam_df=gam_df,
        smoothing=smoothing,
        campaign=campaign,
        where=where,
        items=items,
        splits=splits,
    )
    return compute_items(data, options, progress=progress)


def compute_items(data: Database | pl.DataFrame, options: ItemOptions, *, progress: bool = False) -> ItemCorrelations:
    """:func:`item_correlations` with its options given as one :class:`ItemOptions`."""
    if options.bootstrap:
        _bootstrap.require_arch()
    if options.in_domain is None:
        options = dataclasses.replace(options, in_domain=in_domain_of_runs(data, options.runs))
    in_domain, ood, by_run = load_items(data, options)
    options = dataclasses.replace(options, in_domain=in_domain)
    parts = []
    draws = itemstats.Draws(options.seed)
    names = (in_domain, *ood)
    sums = _sums(by_run, names, options, draws)
    with progress_bar(progress, len(by_run), "resampling items") as advance:
        for run, run_items in by_run.items():
            parts.append(_run_table(run, run_items, names, options, draws, sums[run]))
            advance(1, description=run)
    table = pl.concat(parts, how="vertical_relaxed") if parts else pl.DataFrame()
    table = table.with_columns(
        pl.lit(in_domain).alias("in_domain"),
        pl.lit(options.metric).alias("metric"),
        pl.lit(options.residualizer).alias("residualizer"),
        pl.lit(options.method).alias("method"),
    ).select(ITEM_COLUMNS)
    return ItemCorrelations(table, options, ood, tuple(by_run))


def load_items(data: Database | pl.DataFrame, options: Options) -> tuple[str, tuple[str, ...], dict[str, RunItems]]:
    """The in-domain task, the OOD tasks and each run's item matrices, as ``options`` select them."""
    if isinstance(data, pl.DataFrame) or type(data).__module__.startswith("pandas"):
        data = items_frame(data)
        series = load_series(data.group_by("run", "step", "task").agg(pl.col("value").mean()), options)
    else:
        series = load_series(data, options)
    wanted, runs = [series.in_domain, *series.ood], list(series.runs)
    rows = item_rows(
        data,
        wanted,
        runs,
        metric=options.metric,
        filter=options.filter,
        num_fewshot=options.num_fewshot,
        campaign=options.campaign,
    )
    columns = {name: rows[name].to_numpy() for name in ("run_index", "task_index", "step", "item", "doc", "value")}
    blocks = _blocks(columns, series.scores, runs, wanted)
    by_run: dict[str, RunItems] = {}
    for r, run in enumerate(runs):
        if any((r, t) not in blocks for t in range(len(wanted))):
            continue
        common = sorted(set.intersection(*(set(blocks[(r, t)][0].tolist()) for t in range(len(wanted)))))
        if not common:
            continue
        matrices = tuple(
            np.ascontiguousarray(blocks[(r, t)][1][:, np.isin(blocks[(r, t)][0], common)]) for t in range(len(wanted))
        )
        by_run[run] = RunItems(tuple(common), matrices)
    if not by_run:
        raise AnalysisError("no run has per-sample rows of every task at a common step")
    return series.in_domain, tuple(series.ood), by_run


def items_frame(data: Any) -> pl.DataFrame:
    """A long frame of items given in place of a store (Polars or pandas; ``run, step, task, item, value`` and
    optionally ``doc_hash``), checked, ``run`` added where it is absent (one run)."""
    frame = data if isinstance(data, pl.DataFrame) else pl.from_pandas(data)
    missing = {"step", "task", "item", "value"} - set(frame.columns)
    if missing:
        raise AnalysisError(f"the items frame has no column(s) {', '.join(sorted(missing))}")
    return frame if "run" in frame.columns else frame.with_columns(pl.lit(SINGLE_RUN).alias("run"))


def item_rows(
    data: Database | pl.DataFrame,
    tasks: list[str],
    runs: list[str],
    *,
    metric: str,
    filter: str,  # noqa: A002 - lm-eval's name for it
    num_fewshot: int | None,
    campaign: str | None,
) -> pl.DataFrame:
    """The per-item outcomes of ``tasks`` and ``runs``: ``run_index``, ``task_index`` (positions in the two
    lists), ``step``, ``item``, ``doc`` (the document's hash as a number, 0 for a frame without ``doc_hash``)
    and ``value``, sorted by run, task, step and item; from the store's samples (``items.sql``: ``metric``,
    ``filter``, ``num_fewshot`` and ``campaign`` select them) or from an :func:`items_frame`."""
    if not isinstance(data, pl.DataFrame):
        return read_series_sql(
            data,
            "items",
            metric=metric,
            filter=filter,
            tasks=tasks,
            runs=runs,
            num_fewshot=num_fewshot,
            campaign=campaign,
        )
    doc = pl.col("doc_hash").hash() if "doc_hash" in data.columns else pl.lit(0, dtype=pl.UInt64)
    return (
        data.filter(pl.col("task").is_in(tasks) & pl.col("run").is_in(runs))
        .select(
            pl.col("run").replace_strict(runs, list(range(len(runs))), return_dtype=pl.Int64).alias("run_index"),
            pl.col("task").replace_strict(tasks, list(range(len(tasks))), return_dtype=pl.Int64).alias("task_index"),
            pl.col("step").cast(pl.Int64),
            pl.col("item").cast(pl.Int64),
            doc.alias("doc"),
            pl.col("value").cast(pl.Float64),
        )
        .sort("run_index", "task_index", "step", "item")
    )


def _blocks(
    columns: dict[str, np.ndarray], scores: pl.DataFrame, runs: list[str], tasks: list[str]
) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]:
    """Each (run, task)'s steps and items × steps matrix from rows sorted by run, task, step and item.

    One line for each way the items cannot be analyzed: absent, changing across checkpoints, without the metric.
    """
    run_index, task_index, step = columns["run_index"], columns["task_index"], columns["step"]
    # the rows where a (run, task) block starts, and one past the last row
    starts = np.r_[0, np.flatnonzero(np.diff(run_index) | np.diff(task_index)) + 1, run_index.size]
    starts = starts if run_index.size else np.zeros(1, dtype=int)
    present = set(zip(run_index[starts[:-1]].tolist(), task_index[starts[:-1]].tolist(), strict=True))
    pairs = scores.select("run", "task").unique().sort("run", "task").iter_rows()
    lacking: dict[str, list[str]] = {}
    for run, task in pairs:
        if (runs.index(run), tasks.index(task)) not in present:
            lacking.setdefault(run, []).append(task)
    if lacking:
        listed = "; ".join(f"{run}: {', '.join(names)}" for run, names in lacking.items())
        raise AnalysisError(
            f"no per-sample rows for {listed} (ingest stores them from lm-eval's samples files; "
            "`samples` turns that off)"
        )
    values = columns["value"]
    if np.isnan(values.astype(float)).any():
        bad = sorted({tasks[t] for t in np.unique(task_index[np.isnan(values.astype(float))])})
        raise AnalysisError(f"items of {', '.join(bad)} have no per-sample value of the metric")
    out = {}
    for lo, hi in zip(starts[:-1], starts[1:], strict=True):
        task = tasks[int(task_index[lo])]
        steps, first, counts = np.unique(step[lo:hi], return_index=True, return_counts=True)
        n = int(counts[0])
        items = columns["item"][lo:hi]
        if (counts != n).any() or not (items.reshape(len(steps), n) == items[:n]).all():
            raise AnalysisError(f"the items of {task} differ across checkpoints of a run (other doc_ids)")
        if (np.diff(items.reshape(len(steps), n), axis=1) == 0).any():
            raise AnalysisError(f"an item of {task} appears twice at one checkpoint")
        docs = columns["doc"][lo:hi].reshape(len(steps), n)
        if not (docs == docs[:1]).all():
            raise AnalysisError(
                f"the documents of {task} differ across checkpoints of a run (their doc_hash changes): "
                "items must be the same at every checkpoint"
            )
        out[(int(run_index[lo]), int(task_index[lo]))] = (steps, values[lo:hi].reshape(len(steps), n).T.astype(float))
    return out


def _sums(
    by_run: dict[str, RunItems], names: tuple[str, ...], options: ItemOptions, draws: itemstats.Draws
) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """Every run's resampled scores and within-item sums, one wide product per task and number of items."""
    out: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {run: [] for run in by_run}
    for j, name in enumerate(names):
        sizes = sorted({data.matrices[j].shape[0] for data in by_run.values()})
        found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for n in sizes:
            runs = [run for run, data in by_run.items() if data.matrices[j].shape[0] == n]
            weights = draws.weights(name, n, options.items)
            made = itemstats.resampled_sums([by_run[run].matrices[j] for run in runs], weights)
            found.update(zip(runs, made, strict=True))
        for run in by_run:
            out[run].append(found[run])
    return out


def _run_table(
    run: str,
    data: RunItems,
    names: tuple[str, ...],
    options: ItemOptions,
    draws: itemstats.Draws,
    sums: list[tuple[np.ndarray, np.ndarray]] | None = None,
) -> pl.DataFrame:
    """The rows of one run (``names``: the in-domain task, then the OOD tasks)."""
    matrices = data.matrices
    tasks = names[1:]
    weights = [draws.weights(name, Y.shape[0], options.items) for name, Y in zip(names, matrices, strict=True)]
    T = len(data.steps)
    p = len(tasks)
    ix, iy = np.triu_indices(p, 1)
    rng = np.random.default_rng([options.seed, zlib.crc32(run.encode()), 1])
    observed, cov, error = itemstats.statistics(matrices)
    scores = observed[0]
    base = pairwise_partial(
        scores[:, 1:],
        scores[:, 0],
        tasks,
        residualizer=options.residualizer,
        method=options.method,
        adjust="none",
        confidence=options.confidence,
        gam_df=options.gam_df,
        smoothing=options.smoothing,
    )
    linear = options.residualizer == "linear" and options.method == "pearson"
    out: dict[str, Any] = {name: np.full(ix.size, np.nan) for name in ITEM_COLUMNS[7:26] if name != "block_length"}
    out["r"], out["ci_low"], out["ci_high"] = (base[c].to_numpy() for c in ("r", "ci_low", "ci_high"))
    naive, fixed = itemstats.item_bootstrap(matrices, options.items, rng, weights=weights, sums=sums, boundary=True)
    if not linear:
        naive = _refit(scores, matrices, options, weights)
    accel_naive, accel_corrected = _accelerations(matrices, scores, options, linear, (ix, iy))
    out["item_ci_low"], out["item_ci_high"] = itemstats.bca_ci(
        naive[:, ix, iy], out["r"], accel_naive, options.confidence
    )
    note: list[str | None] = [None] * ix.size
    blocks = None
    if linear:
        r_corrected = itemstats.partial_from_covariance(itemstats.corrected(cov, error))[0][ix, iy]
        out["r_corrected"] = r_corrected
        out["r_noise"] = itemstats.noise_only(cov, error)[0][ix, iy]
        corrected_draws = fixed[:, ix, iy]
        out["corrected_item_ci_low"], out["corrected_item_ci_high"] = itemstats.bca_ci(
            corrected_draws, r_corrected, accel_corrected, options.confidence
        )
        out["corrected_ci_low"], out["corrected_ci_high"] = itemstats.corrected_ci(
            corrected_draws, r_corrected, T, options.confidence
        )
        # what naive r a noise-free partial correlation of 0 gives: about r_noise, within Fisher's spread
        crit = stats.norm.ppf(0.5 + options.confidence / 2.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            half = crit / np.sqrt(T - 4.0) if T > 4 else np.nan
            noise_low, noise_high = (
                np.tanh(np.arctanh(out["r_noise"]) - half),
                np.tanh(np.arctanh(out["r_noise"]) + half),
            )
        for k in range(ix.size):
            naive_excludes = out["ci_low"][k] > 0 or out["ci_high"][k] < 0
            corrected_covers = out["corrected_ci_low"][k] <= 0 <= out["corrected_ci_high"][k]
            if naive_excludes and corrected_covers and noise_low[k] <= out["r"][k] <= noise_high[k]:
                note[k] = (
                    "the in-domain testset's item noise alone can produce this r: with no partial correlation "
                    f"free of noise the naive r would be {out['r_noise'][k]:.2f} ({noise_low[k]:.2f} to "
                    f"{noise_high[k]:.2f}); the corrected interval covers 0"
                )
            elif naive_excludes and corrected_covers:
                note[k] = "corrected for item noise, the interval covers 0"
        for k in np.flatnonzero(~np.isfinite(r_corrected) & np.isfinite(out["r"])).tolist():
            for name in ("corrected_ci_low", "corrected_ci_high", "corrected_item_ci_low", "corrected_item_ci_high"):
                out[name][k] = np.nan
            note[k] = "no corrected r: a series' variance over the checkpoints is no more than its item noise"
    else:
        # SIMEX through the analysis' own fits (GAM or ranks): no interval, the verdict from r_corrected's size
        fit = _Fit(scores[:, :1], scores[:, 1:], options)
        estimate, _ = itemstats.simex(
            scores,
            error[0],
            lambda noisy: fit.correlations_of(noisy[:, :, :1], noisy[:, :, 1:]),
            np.random.default_rng([options.seed, zlib.crc32(run.encode()), 3]),
            naive=fit.corr,
        )
        out["r_corrected"] = estimate[ix, iy]
        note = ["r_corrected by SIMEX (no interval: the corrected intervals are the linear residualizer's)"] * ix.size
    for k, reason in enumerate(base["reason"].to_list()):
        note[k] = reason or note[k]  # why r is NaN (too few checkpoints, a constant series) comes first
    if options.bootstrap:
        length = options.block_length or _bootstrap.block_length(
            residuals.linear(scores[:, :1], scores[:, 1:]).values, options.bootstrap_kind
        )
        seed = np.random.default_rng([options.seed, zlib.crc32(run.encode()), 2])
        idx = _bootstrap.resample_indices(T, options.bootstrap, length, options.bootstrap_kind, seed)
        weights = [
            draws.weights(name, Y.shape[0], options.bootstrap, 2) for name, Y in zip(names, matrices, strict=True)
        ]
        naive_b, fixed_b = itemstats.item_bootstrap(matrices, options.bootstrap, rng, checkpoints=idx, weights=weights)
        if not linear:
            naive_b = _refit(scores, matrices, options, weights, idx)
        # percentile intervals of the combined draws (NaN draws left out), as measured; widened to their estimate
        lo, hi = _bootstrap.percentile_ci(naive_b[:, ix, iy], options.confidence)
        out["boot_ci_low"], out["boot_ci_high"] = itemstats.containing(lo, hi, out["r"])
        if linear:
            lo, hi = _bootstrap.percentile_ci(fixed_b[:, ix, iy], options.confidence)
            out["corrected_boot_ci_low"], out["corrected_boot_ci_high"] = itemstats.containing(
                lo, hi, out["r_corrected"]
            )
        blocks = length
    reliability = np.array(
        [
            itemstats.split_half(Y, halves=draws.halves(name, Y.shape[0], options.splits))[0]
            for name, Y in zip(names, matrices, strict=True)
        ]
    )
    labels = np.array(tasks, dtype=object)
    return pl.DataFrame(
        {
            "run": [run] * ix.size,
            "task_x": labels[ix].tolist(),
            "task_y": labels[iy].tolist(),
            "n": [T] * ix.size,
            "items_in_domain": [matrices[0].shape[0]] * ix.size,
            "items_x": [matrices[1 + i].shape[0] for i in ix],
            "items_y": [matrices[1 + i].shape[0] for i in iy],
            **{name: out[name] for name in ITEM_COLUMNS[7:22] if name != "block_length"},
            "block_length": [blocks] * ix.size,
            "r_noise": out["r_noise"],
            "reliability_in_domain": [reliability[0]] * ix.size,
            "reliability_x": reliability[1 + ix],
            "reliability_y": reliability[1 + iy],
            "note": note,
        },
        schema_overrides={"block_length": pl.Int64, "note": pl.String},
    )


def _accelerations(
    matrices: Sequence[np.ndarray], scores: np.ndarray, options: ItemOptions, linear: bool, pairs: tuple
) -> tuple[np.ndarray, np.ndarray]:
    """BCa's accelerations of one run's naive and corrected r (per pair of ``pairs``, the upper triangle's indices).

    From a delete-a-group jackknife over each testset's items
    (:func:`~ood_store._analysis.itemstats.jackknife_scores`, 20 groups a testset), through the analysis' own
    fits for the naive r (the GAM's or the ranks' where they are chosen), for the item draws' intervals.
    """
    stack, error, sample = itemstats.jackknife_scores(matrices)
    cov = itemstats._covariance(stack, None)
    if linear:
        naive = itemstats.partial_from_covariance(cov)
    else:
        fit = _Fit(scores[:, :1], scores[:, 1:], options)
        naive = np.asarray(fit.correlations_of(stack[:, :, :1], stack[:, :, 1:]))
    fixed = itemstats.partial_from_covariance(itemstats.corrected(cov, error))
    return itemstats.acceleration(naive[:, pairs[0], pairs[1]], sample), itemstats.acceleration(
        fixed[:, pairs[0], pairs[1]], sample
    )


def _refit(
    scores: np.ndarray,
    matrices: Sequence[np.ndarray],
    options: ItemOptions,
    weights: Sequence[np.ndarray],
    checkpoints: np.ndarray | None = None,
) -> np.ndarray:
    """Residual correlations of resampled items' scores through the analysis' own fits (GAM or ranks): reps × p × p."""
    fit = _Fit(scores[:, :1], scores[:, 1:], options)
    reps = weights[0].shape[0]
    out = []
    for start in range(0, reps, 200):
        chunk = [w[start : start + 200].astype(float) for w in weights]
        resampled = np.stack([(w @ Y) / Y.shape[0] for w, Y in zip(chunk, matrices, strict=True)], axis=-1)
        if checkpoints is not None:
            resampled = np.take_along_axis(resampled, checkpoints[start : start + 200, :, None], axis=1)
        out.append(fit.correlations_of(resampled[:, :, :1], resampled[:, :, 1:]))
    return np.concatenate(out)
