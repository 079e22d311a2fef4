"""Comparing partial correlations across runs: side by side, pooled, and a verdict per pair of OOD tasks."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from ood_store._analysis import crossed as crossed_module
from ood_store._analysis import inference as inference_module
from ood_store._analysis import meta, verdicts
from ood_store._analysis.results import (
    BETWEEN_COLUMNS,
    BetweenGroups,
    Comparison,
    PartialCorrelations,
    partial_frame,
)
from ood_store._errors import AnalysisError
from ood_store._store.runs import run_attributes

if TYPE_CHECKING:
    from ood_store._store import Database

INFERENCE = ("effective", "naive")
ADJUST_PAIRS = inference_module.ADJUST_METHODS
#: The default adjustment of a comparison's tests over its pairs (docs/explanation/statistics.md, "Verdicts
#: across pairs").
DEFAULT_ADJUST_PAIRS = "holm"
#: The default test of the pooled estimate and between groups (docs/how-to/planning.md, the calibration table).
DEFAULT_TEST = "knha"
#: The fewest runs (distinct ``within`` values) a group needs for the test between groups: with one, the group's
#: model and its seed are one thing, and the variation within groups is estimated from the other groups alone.
MIN_WITHIN = 2


def _check(alpha: float, inference: str, adjust_pairs: str, test: str) -> None:
    if inference not in INFERENCE:
        raise AnalysisError(f"inference must be one of {', '.join(INFERENCE)}, not {inference!r}")
    if not 0 < alpha < 1:
        raise AnalysisError(f"alpha must be between 0 and 1, not {alpha}")
    if adjust_pairs not in ADJUST_PAIRS:
        raise AnalysisError(f"must be one of {', '.join(ADJUST_PAIRS)}, not {adjust_pairs!r}", parameter="adjust_pairs")
    if test not in meta.TESTS:
        raise AnalysisError(f"must be one of {', '.join(meta.TESTS)}, not {test!r}", parameter="test")


def compare(
    data: PartialCorrelations | pl.DataFrame,
    *,
    by: Sequence[str] | None = None,
    attributes: Database | pl.DataFrame | None = None,
    alpha: float = 0.05,
    inference: str = "effective",
    agreement: float = verdicts.AGREEMENT,
    adjust_pairs: str = DEFAULT_ADJUST_PAIRS,
    test: str = DEFAULT_TEST,
    items: Database | pl.DataFrame | None = None,
    item_inference: str = "auto",
    item_resamples: int = crossed_module.RESAMPLES,
    seed: int = 0,
    progress: bool = False,
) -> Comparison:
    """For each pair of OOD tasks: the runs' partial correlations side by side, pooled, and a verdict.

    Parameters
    ----------
    data : PartialCorrelations or polars.DataFrame
        The result of :func:`~ood_store._analysis.partial_correlations`, a saved
        analysis (``Store.analysis``), or a partial-correlation table.
    by : list of str, optional
        Run attributes to group runs by (``family``, ``size``, ``in_domain``,
        ``seed``, ``base_model`` or any other run attribute, such as
        ``shots``); runs are compared within each group.
    attributes : Database or polars.DataFrame, optional
        Where run attributes come from when ``by`` is given: a store, or a
        frame with a ``run`` column and one column per attribute.
    alpha : float
        Significance level of the per-run tests, and of the pooled intervals and
        heterogeneity tests after their adjustment over pairs.
    inference : {"effective", "naive"}
        ``effective`` (default) uses each run's effective sample size
        ``n_eff`` and ``p_eff_adj``, which account for autocorrelated training
        curves; ``naive`` uses ``n`` and ``p_adj``.
    agreement : float
        The share of runs that must have the pooled r's sign for a
        "consistently ..." verdict (default 0.8; :mod:`~ood_store._analysis.verdicts`).
    adjust_pairs : {"holm", "fdr_bh", "bonferroni", "none"}
        How the tests behind the verdicts (each row's heterogeneity test and
        pooled estimate: two tests per row, every row of the comparison in one
        family) are adjusted for multiplicity. ``holm`` (default) keeps the
        chance of any false verdict in the table at ``alpha``; ``fdr_bh`` the
        expected share of false ones among the verdicts that find something;
        ``none`` tests each row at ``alpha`` on its own.
    test : {"knha", "z"}
        The test of the pooled estimate: Knapp–Hartung (default; Student's t
        with runs - 1 degrees of freedom on the adjusted variance, metafor's
        ``test = "knha"``) or the normal one (``test = "z"``). Runs-only verdicts.
    items : Database or polars.DataFrame, optional
        Where the per-sample rows come from: a store, or a long frame of items
        (``run, step, task, item, value``, as
        :func:`~ood_store._analysis.items.item_correlations` reads). Default:
        ``attributes`` when it is a store, else the store ``data`` was read
        from (while it is open).
    item_inference : {"auto", "items", "runs"}
        ``auto`` (default): where ``items`` holds per-sample rows of every task
        of every run (the same items in every run), the verdicts generalize
        over items as well as runs (:mod:`~ood_store._analysis.crossed`); else
        over runs only, and the ``basis`` column says so. ``items``: fail
        without them. ``runs``: over runs only.
    item_resamples : int
        Study-wide item resamples behind the covariance that the shared items
        give the runs' estimates.
    seed : int
        Seed of the item resamples and of the in-domain items' random halvings.

    Returns
    -------
    Comparison
        ``.table`` with one row per group and pair: the ``by`` columns,
        :data:`~ood_store._analysis.results.COMPARISON_COLUMNS`, then ``r:<run>`` for each run:

        - ``runs``: runs with a finite r; ``n_positive``/``n_negative``: their signs;
          ``sign_agreement``: the share of runs with the sign of the pooled r;
        - ``n_sig_positive``/``n_sig_negative``: runs significant at ``alpha`` (adjusted p);
        - ``r_pooled``, ``ci_low``, ``ci_high``, ``p_pooled``: random-effects pooled r
          (Paule–Mandel, as metafor's ``rma(method = "PM", test = test)``, on Fisher z with
          variance ``1 / (n - edf - 2)``, back-transformed; :func:`~ood_store._analysis.meta.pool`),
          the interval at ``1 - alpha`` before any adjustment;
        - ``ci_low_adj``, ``ci_high_adj``, ``p_pooled_adj``: the pooled interval and p after the
          adjustment over pairs; the interval is at the level the adjustment implies
          (:func:`~ood_store._analysis.inference.adjusted_level`), so that it excludes 0 exactly
          when ``p_pooled_adj < alpha``;
        - ``q``, ``q_p``, ``q_p_adj``, ``i2``, ``tau2``: Cochran's Q, its chi-square p before and
          after the adjustment, I² (metafor's, ``tau2 / (tau2 + s²)``) and τ²;
        - ``verdict``: see :mod:`~ood_store._analysis.verdicts`: model-dependent,
          consistently positive/negative, mixed, no evidence, not distinguishable from the control's
          noise, or too few runs, from the adjusted interval and heterogeneity test;
        - ``basis``: what the verdict rests on: ``items and runs`` or ``runs only`` (and why);
        - ``r_naive``: the runs' r pooled over runs only (as ``r_pooled`` is without items);
        - ``r_noise``: the pooled r that the in-domain and OOD testsets' item noise alone would give
          were the noise-free partial correlation 0 (from the per-sample rows, or else from the stored
          standard errors and testset sizes); ``noise_could_produce``: whether ``r_pooled``'s adjusted
          interval reaches between 0 and ``r_noise`` (runs-only verdicts; None where the noise is unknown).

        With items and runs, ``r_pooled``, its intervals and p, the heterogeneity columns and the
        ``r:<run>`` columns are those of ``r*``, the partial correlation with the in-domain testset's
        noise taken out (:mod:`~ood_store._analysis.crossed`): the interval adds to the runs' spread the
        covariance their shared items give them, the heterogeneity test uses the runs' jackknife variances,
        and ``tau2`` is on the r scale; ``test`` and ``inference`` then apply to ``r_naive`` only.
        ``sign_agreement`` is then the share of the runs' calibrated estimates
        (:func:`~ood_store._analysis.crossed.calibrated`) with the pooled sign, since one run's ``r*`` is too
        noisy for its own sign to tell, and a run counts in ``n_sig_*`` once its p is adjusted over the
        row's runs as well (Holm).
    """
    _check(alpha, inference, adjust_pairs, test)
    if not 0.5 < agreement <= 1:
        raise AnalysisError(f"must be more than 0.5 and at most 1, not {agreement}", parameter="agreement")
    _check_items(item_inference, item_resamples)
    by = list(dict.fromkeys(by)) if by else None  # repeated names count once
    table = partial_frame(data)
    groups = with_attributes(table, by, attributes)
    rows = with_variance(groups, inference, alpha)
    keys = [*(by or []), "task_x", "task_y"]
    lists = rows.group_by(keys, maintain_order=True).agg("r", "variance", "significant", "run")
    r, variance, significant = (_padded(lists[name], fill) for name, fill in
                                (("r", np.nan), ("variance", np.nan), ("significant", False)))  # fmt: skip
    pooled = _pooled(r, variance, significant, alpha, agreement, adjust_pairs, test)
    source = data if isinstance(data, PartialCorrelations) else None
    store = _store_of(items, attributes, source)
    evidence, basis = _item_evidence(source, table, store, item_inference, item_resamples, seed, progress)
    if evidence is not None:
        adjust_runs = source.options.adjust if source is not None else "holm"
        per_run, pooled = _items_pooled(evidence, lists, pooled, alpha, agreement, adjust_pairs, adjust_runs)
        wide = per_run.pivot(on="run", index=keys, values="r", aggregate_function=None)
    else:
        wide = rows.pivot(on="run", index=keys, values="r", aggregate_function=None)
        pooled["r_naive"] = list(pooled["r_pooled"])
        open_store = None if getattr(store, "_closed", False) else store
        pooled.update(_noise_of_runs(source, table, open_store, lists))
        pooled["noise_could_produce"] = [
            crossed_module.could_produce(noise if noise is not None else np.nan, low, high)
            for noise, low, high in zip(pooled["r_noise"], pooled["ci_low_adj"], pooled["ci_high_adj"], strict=True)
        ]
        pooled["basis"] = [crossed_module.BASIS_RUNS] * len(pooled["runs"])
    summary = lists.select(keys).hstack(pl.DataFrame(pooled, schema=_POOLED))
    wide = wide.rename({run: f"r:{run}" for run in wide.columns if run not in keys})
    result = summary.join(wide, on=keys, how="left", nulls_equal=True).sort(keys)
    resamples = item_resamples if evidence is not None else None
    return Comparison(result, tuple(by or ()), alpha, inference, source, agreement, adjust_pairs, test,
                      basis if evidence is None else crossed_module.BASIS_ITEMS, resamples)  # fmt: skip


def _check_items(item_inference: str, item_resamples: int) -> None:
    if item_inference not in crossed_module.ITEM_INFERENCE:
        raise AnalysisError(f"must be one of {', '.join(crossed_module.ITEM_INFERENCE)}, not {item_inference!r}",
                            parameter="item_inference")  # fmt: skip
    if item_resamples < 2:
        raise AnalysisError(f"must be at least 2, not {item_resamples}", parameter="item_resamples")


def _store_of(items, attributes, source):
    """Where the per-sample rows come from: ``items``, else ``attributes`` when it is a store, else the store the
    analysis was read from."""
    store = items if items is not None else (attributes if _is_store(attributes) else None)
    if store is None and source is not None:
        store = source.store
    return store


def _is_store(value) -> bool:
    return value is not None and not isinstance(value, pl.DataFrame) and hasattr(value, "query")


def _item_evidence(source, table: pl.DataFrame, store, mode: str, resamples: int, seed: int, progress: bool):
    """The crossed inference's evidence for the comparison's runs and pairs, or None and what the verdicts rest on
    instead (``runs only (item noise not included): why``)."""
    from ood_store._analysis.items import load_items

    def without(reason: str):
        if mode == "items":
            raise AnalysisError(f"no verdicts over items: {reason}", parameter="item_inference")
        return None, f"{crossed_module.BASIS_RUNS}: {reason}"

    if mode == "runs":
        return None, f"{crossed_module.BASIS_RUNS}: as asked"
    if store is None:
        return without("no per-sample rows given")
    if getattr(store, "_closed", False):
        return without("the analysis' store is closed (give an open one as `items`)")
    if source is None:
        return without("a bare table of partial correlations names no testsets to read items of")
    options = source.options
    if options.slices:
        return without("the analysis slices testsets")
    if table.is_empty():
        return without("no rows")
    runs = sorted(set(table["run"]))
    tasks = list(dict.fromkeys([*table["task_x"], *table["task_y"]]))
    wanted = dataclasses.replace(options, ood=tuple(tasks), runs=tuple(runs), where=None)
    try:
        in_domain, ood, by_run = load_items(store, wanted)
    except AnalysisError as error:
        if error.message.startswith("no per-sample rows") or error.message.startswith("no run has per-sample"):
            return without("no per-sample rows of every task in every run")
        return without(error.message)
    missing = [run for run in runs if run not in by_run]
    if missing:
        return without(f"no per-sample rows of every task in run {missing[0]!r}" + (
            f" and {len(missing) - 1} more" if len(missing) > 1 else ""))  # fmt: skip
    pairs = list(dict.fromkeys(zip(table["task_x"], table["task_y"], strict=True)))
    try:
        evidence = crossed_module.item_evidence(by_run, [in_domain, *ood], pairs, resamples=resamples, seed=seed,
                                                progress=progress)  # fmt: skip
    except AnalysisError as error:
        return without(error.message)
    return evidence, crossed_module.BASIS_ITEMS


def fisher_variance(n: np.ndarray | pl.Expr, edf: np.ndarray | pl.Expr):
    """The sampling variance of a run's Fisher z: ``1 / (n - edf - 2)`` (``n - 4`` for a straight line).

    ``n`` is the run's sample size (``n_eff`` for effective inference) and
    ``edf`` the larger of the two fits' effective degrees of freedom.
    """
    return 1.0 / (n - edf - 2.0)


def with_variance(table: pl.DataFrame, inference: str, alpha: float) -> pl.DataFrame:
    """Each run's Fisher-z sampling variance (:func:`fisher_variance`) and whether it is significant at ``alpha``."""
    size_column, p_column = ("n_eff", "p_eff_adj") if inference == "effective" else ("n", "p_adj")
    edf = pl.max_horizontal(pl.col("edf_x"), pl.col("edf_y")).fill_null(2.0)
    return table.with_columns(
        variance=fisher_variance(pl.col(size_column).cast(pl.Float64), edf),
        significant=pl.col(p_column) < alpha,
    )


def _padded(column: pl.Series, fill) -> np.ndarray:
    """A column of lists as a rows × longest-list array, ``fill`` after each list's end (and for its nulls)."""
    values = column.to_list()
    width = max((len(v) for v in values), default=0)
    out = np.full((len(values), width), fill, dtype=type(fill) if isinstance(fill, bool) else float)
    for i, row in enumerate(values):
        out[i, : len(row)] = [fill if value is None else value for value in row]
    return out


_POOLED = {
    "runs": pl.Int64,
    "n_positive": pl.Int64,
    "n_negative": pl.Int64,
    "sign_agreement": pl.Float64,
    "n_sig_positive": pl.Int64,
    "n_sig_negative": pl.Int64,
    "r_pooled": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "p_pooled": pl.Float64,
    "ci_low_adj": pl.Float64,
    "ci_high_adj": pl.Float64,
    "p_pooled_adj": pl.Float64,
    "q": pl.Float64,
    "q_p": pl.Float64,
    "q_p_adj": pl.Float64,
    "i2": pl.Float64,
    "tau2": pl.Float64,
    "verdict": pl.String,
    "basis": pl.String,
    "r_naive": pl.Float64,
    "r_noise": pl.Float64,
    "noise_could_produce": pl.Boolean,
}
#: What the runs-only pooling fills (the rest says what the verdict rests on).
_RUN_POOLED = tuple(_POOLED)[: tuple(_POOLED).index("basis")]


def usable(r: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """Runs that enter the pooling: a finite r inside (-1, 1) with a finite, positive sampling variance."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(r) & np.isfinite(variance) & (variance > 0) & (np.abs(r) < 1)


def _pooled(
    r: np.ndarray,
    variance: np.ndarray,
    significant: np.ndarray,
    alpha: float,
    agreement: float,
    adjust_pairs: str,
    test: str,
) -> dict[str, list]:
    """Every row pooled at once (rows × runs arrays, NaN after a row's runs), its tests adjusted over the rows."""
    finite = np.isfinite(r)
    use = usable(r, variance)
    with np.errstate(invalid="ignore"):
        effects = np.where(use, np.arctanh(np.where(use, r, 0.0)), np.nan)
    pooled = meta.pool_many(effects, np.where(use, variance, np.nan), test)
    family = np.concatenate([pooled.q_p, pooled.pvalue])  # the two tests behind each verdict, every row
    adjusted = inference_module.adjust(family, adjust_pairs)
    rows = r.shape[0]
    q_p_adj, p_adj = adjusted[:rows], adjusted[rows:]
    low, high = pooled.interval(alpha)
    low_adj, high_adj = pooled.interval(inference_module.adjusted_level(family, adjust_pairs, alpha))
    with np.errstate(invalid="ignore"):
        positive, negative = (finite & (r > 0)).sum(axis=1), (finite & (r < 0)).sum(axis=1)
        sig_positive = (significant & finite & (r > 0)).sum(axis=1)
        sig_negative = (significant & finite & (r < 0)).sum(axis=1)
    out: dict[str, list] = {name: [] for name in _RUN_POOLED}
    for i in range(rows):
        runs = int(finite[i].sum())
        estimate = _number(np.tanh(pooled.estimate[i]))
        counts = {
            "runs": runs,
            "n_positive": int(positive[i]),
            "n_negative": int(negative[i]),
            "n_sig_positive": int(sig_positive[i]),
            "n_sig_negative": int(sig_negative[i]),
        }
        values: dict[str, float | int | str | None] = {
            **counts,
            "r_pooled": estimate,
            "ci_low": _number(np.tanh(low[i])),
            "ci_high": _number(np.tanh(high[i])),
            "p_pooled": _number(pooled.pvalue[i]),
            "ci_low_adj": _number(np.tanh(low_adj[i])),
            "ci_high_adj": _number(np.tanh(high_adj[i])),
            "p_pooled_adj": _number(p_adj[i]),
            "q": _number(pooled.q[i]),
            "q_p": _number(pooled.q_p[i]),
            "q_p_adj": _number(q_p_adj[i]),
            "i2": _number(pooled.i2[i]),
            "tau2": _number(pooled.tau2[i]),
        }
        share = verdicts.sign_agreement(counts["n_positive"], counts["n_negative"], runs, estimate)
        values["sign_agreement"] = share if runs else None
        values["verdict"] = verdicts.verdict(
            **counts,
            estimate=estimate,
            ci_low=_number(np.tanh(low_adj[i])),
            ci_high=_number(np.tanh(high_adj[i])),
            q_p=_number(q_p_adj[i]),
            alpha=alpha,
            agreement=agreement,
        )
        for name in _RUN_POOLED:
            out[name].append(values[name])
    return out


NOISE_VERDICT = "not distinguishable from the control's noise"


def _items_pooled(evidence, lists: pl.DataFrame, naive: dict[str, list], alpha: float, agreement: float,
                  adjust_pairs: str, adjust_runs: str) -> tuple[pl.DataFrame, dict[str, list]]:  # fmt: skip
    """Every row pooled over its runs with items crossed (:func:`~ood_store._analysis.crossed.crossed`), its
    tests adjusted over the rows; the runs' r* in long form (the row's keys, ``run``, ``r``) for the wide columns."""
    keys = [c for c in lists.columns if c not in ("r", "variance", "significant", "run")]
    pair_index = {pair: k for k, pair in enumerate(evidence.pairs)}
    run_index = {run: k for k, run in enumerate(evidence.runs)}
    with np.errstate(divide="ignore", invalid="ignore"):
        r_star = np.clip(evidence.tau / evidence.scale, -1.0, 1.0)  # runs × pairs
    p_runs = crossed_module.per_run_p(r_star, evidence.within)
    p_runs_adj = np.vstack([inference_module.adjust(row, adjust_runs) for row in p_runs]) if p_runs.size else p_runs
    fits, members, long = [], [], []
    for row in lists.iter_rows(named=True):
        k = pair_index[(row["task_x"], row["task_y"])]
        chosen = np.array([run_index[run] for run in row["run"] if run in run_index], dtype=int)
        members.append((k, chosen))
        fits.append(crossed_module.crossed(evidence.tau[chosen, k], evidence.scale[chosen, k],
                                           evidence.draws_tau[:, chosen, k], evidence.draws_scale[:, chosen, k],
                                           evidence.within[chosen, k]))  # fmt: skip
        long += [{**{c: row[c] for c in keys}, "run": evidence.runs[j], "r": _number(r_star[j, k])} for j in chosen]
    q_p = np.array([f.q_p for f in fits], dtype=float)
    p = np.array([f.pvalue for f in fits], dtype=float)
    family = np.concatenate([q_p, p])
    adjusted = inference_module.adjust(family, adjust_pairs)
    q_p_adj, p_adj = adjusted[: len(fits)], adjusted[len(fits) :]
    level = inference_module.adjusted_level(family, adjust_pairs, alpha)
    out: dict[str, list] = {name: [] for name in _POOLED}
    for i, (fit, (k, chosen)) in enumerate(zip(fits, members, strict=True)):
        values_r = r_star[chosen, k]
        finite = np.isfinite(values_r)
        # a run counts as significant once its p is adjusted over the row's runs too (Holm): with 24 runs, one of
        # them would otherwise be "significantly against" the others in about one study in ten where none is
        significant = inference_module.adjust(p_runs_adj[chosen, k], "holm") < alpha
        counts = {
            "runs": int(finite.sum()),
            "n_positive": int((finite & (values_r > 0)).sum()),
            "n_negative": int((finite & (values_r < 0)).sum()),
            "n_sig_positive": int((significant & finite & (values_r > 0)).sum()),
            "n_sig_negative": int((significant & finite & (values_r < 0)).sum()),
        }
        low, high = fit.interval(alpha)
        low_adj, high_adj = fit.interval(level)
        estimate = _number(fit.estimate)
        values: dict[str, object] = {
            **counts,
            "r_pooled": estimate,
            "ci_low": _number(low),
            "ci_high": _number(high),
            "p_pooled": _number(fit.pvalue),
            "ci_low_adj": _number(low_adj),
            "ci_high_adj": _number(high_adj),
            "p_pooled_adj": _number(p_adj[i]),
            "q": _number(fit.q_stat),
            "q_p": _number(fit.q_p),
            "q_p_adj": _number(q_p_adj[i]),
            "i2": _number(fit.i2),
            "tau2": _number(fit.tau2),
        }
        share = None
        if counts["runs"] and estimate is not None:
            # the runs' calibrated estimates' signs: one run's r* is too noisy for its own sign to tell
            shrunk = crossed_module.calibrated(values_r, evidence.within[chosen, k], fit.estimate)
            shrunk = shrunk[np.isfinite(shrunk)]
            if shrunk.size:
                share = float((np.sign(shrunk) == np.sign(estimate)).mean()) if estimate != 0 else None
        values["sign_agreement"] = share
        verdict = verdicts.verdict(**counts, estimate=estimate, ci_low=_number(low_adj), ci_high=_number(high_adj),
                                   q_p=_number(q_p_adj[i]), alpha=alpha, agreement=agreement,
                                   share=share)  # fmt: skip
        naive_low, naive_high = naive["ci_low_adj"][i], naive["ci_high_adj"][i]
        naive_finds = naive_low is not None and naive_high is not None and not naive_low <= 0 <= naive_high
        if verdict == "no evidence" and naive_finds:
            verdict = NOISE_VERDICT
        values["verdict"] = verdict
        noise = crossed_module.pooled_noise(evidence.r_noise[chosen, k])
        values["r_naive"] = naive["r_pooled"][i]
        values["r_noise"] = _number(noise)
        values["noise_could_produce"] = crossed_module.could_produce(noise, naive_low, naive_high)
        values["basis"] = crossed_module.BASIS_ITEMS
        for name in _POOLED:
            out[name].append(values[name])
    schema: dict[str, pl.DataType] = {c: lists.schema[c] for c in keys}
    schema.update(run=pl.String(), r=pl.Float64())
    return pl.DataFrame(long, schema=schema), out


def _noise_of_runs(source, table: pl.DataFrame, store, lists: pl.DataFrame) -> dict[str, list]:
    """``r_noise`` of each row without per-sample rows: from the stored standard errors and testset sizes
    (:func:`~ood_store._analysis.crossed.control_noise`), pooled over the row's runs; None where unknown."""
    rows = lists.height
    if store is None or source is None or table.is_empty() or source.options.slices:
        return {"r_noise": [None] * rows}
    from ood_store._analysis.series import load_series

    options = source.options
    runs = sorted(set(table["run"]))
    tasks = list(dict.fromkeys([*table["task_x"], *table["task_y"]]))
    try:
        series = load_series(store, dataclasses.replace(options, ood=tuple(tasks), runs=tuple(runs), where=None))
        noise = crossed_module.control_noise(store, options, runs, [series.in_domain, *tasks])
    except AnalysisError:
        return {"r_noise": [None] * rows}
    pairs = list(dict.fromkeys(zip(table["task_x"], table["task_y"], strict=True)))
    per_run = crossed_module.noise_r(series.scores, noise, series.in_domain, pairs)
    lookup = {(run, x, y): value for run, x, y, value in per_run.iter_rows()}
    out = []
    for row in lists.iter_rows(named=True):
        values = np.array([lookup.get((run, row["task_x"], row["task_y"]), np.nan) for run in row["run"]], dtype=float)
        out.append(_number(crossed_module.pooled_noise(values)) if np.isfinite(values).all() else None)
    return {"r_noise": out}


def _number(value: float) -> float | None:
    """A float for the table, None for NaN (no value)."""
    value = float(value)
    return None if np.isnan(value) else value


def between_groups(
    data: PartialCorrelations | pl.DataFrame,
    *,
    between: str,
    within: str,
    attributes: Database | pl.DataFrame,
    alpha: float = 0.05,
    inference: str = "effective",
    tau2_method: str = "PM",
    adjust_pairs: str = DEFAULT_ADJUST_PAIRS,
    test: str = DEFAULT_TEST,
    items: Database | pl.DataFrame | None = None,
    item_inference: str = "auto",
    item_resamples: int = crossed_module.RESAMPLES,
    seed: int = 0,
    progress: bool = False,
) -> BetweenGroups:
    """Does a pair's correlation differ between groups of runs (models) beyond the variation within them (seeds)?

    For each pair of OOD tasks, a mixed-effects meta-analysis of the runs'
    Fisher z (variance ``1 / (n - edf - 2)``, as :func:`compare`): one mean per
    ``between`` group, and a residual τ² for the runs within a group, which
    differ by ``within`` (metafor's ``rma(yi, vi, mods = ~ factor(between),
    method = tau2_method, test = test)``; :func:`~ood_store._analysis.meta.subgroups`).

    Parameters
    ----------
    data : PartialCorrelations or polars.DataFrame
        Partial correlations, as for :func:`compare`.
    between, within : str
        Run attributes (as ``by`` in :func:`compare`): e.g. ``family`` and
        ``seed``. Every run needs both, and within a group no two runs may
        share the ``within`` value.
    attributes : Database or polars.DataFrame
        Where run attributes come from.
    alpha : float
        Level of the test between groups, after its adjustment over pairs.
    inference : {"effective", "naive"}
        As in :func:`compare`.
    tau2_method : {"PM", "REML"}
        Estimator of the within-group τ²: Paule–Mandel (as :func:`compare`) or REML.
    adjust_pairs : {"holm", "fdr_bh", "bonferroni", "none"}
        How ``p_between`` is adjusted over the pairs (as in :func:`compare`).
    test : {"knha", "z"}
        Knapp–Hartung's F test of the group means (default) or the Wald χ² test.
    items, item_inference, item_resamples, seed, progress
        As in :func:`compare`. Where the store holds per-sample rows of every
        task of every run, the groups are compared over items as well as runs
        (:func:`~ood_store._analysis.crossed.crossed_groups`): each group's
        ``r*`` (the in-domain testset's noise taken out), their covariance from
        the runs' spread within groups plus what the shared items give every
        run, and a Wald test of equal group means, F with Satterthwaite's
        within-group degrees of freedom (``knha``) or χ² (``z``). The naive r
        of a group whose models are more or less able is biased by the
        control's noise by more or less, so runs-only groups can differ by
        that alone.

    Returns
    -------
    BetweenGroups
        ``.table`` with one row per pair: the columns of
        :data:`~ood_store._analysis.results.BETWEEN_COLUMNS`, then ``r:<group>``,
        each group's pooled r:

        - ``groups``, ``runs``: groups with a usable run, and usable runs; ``within_per_group``: the fewest
          usable runs (distinct ``within`` values) of a group;
        - ``q_between``, ``df_between``, ``p_between``: the test of moderators ``QM`` (between groups,
          beyond τ²): χ² with ``groups - 1`` degrees of freedom (test z), or F with ``groups - 1`` and
          ``runs - groups`` (knha); ``p_between_adj``: adjusted over the pairs;
        - ``tau2_within``: the residual τ², the variance of z between runs of a group
          beyond sampling error; ``q_within``, ``df_within``, ``p_within``: the test of
          residual heterogeneity ``QE``; ``i2_within``: residual I²;
        - ``basis``: what the test rests on: ``items and runs`` or ``runs only`` (and why);
          over items, ``q_between`` is the Wald statistic (over ``df_between`` for F), ``df_within``
          Satterthwaite's, ``tau2_within`` on the r scale, and ``r:<group>`` each group's r*;
        - ``verdict``: ``differs by <between> beyond <within> variation`` when
          ``p_between_adj < alpha``, else ``not shown to differ by <between> beyond
          <within> variation``; ``<between> and <within> confounded: 1 <within> per <between>``
          when a group has fewer runs than :data:`MIN_WITHIN` asks (its model and its seed are
          one thing); ``too few runs`` without two groups.

    Examples
    --------
    Three seeds of each of two families, r near +0.6 in one and -0.6 in the other:

    >>> runs = pl.DataFrame({"run": list("abcdef"), "family": ["opt"] * 3 + ["olmo"] * 3, "seed": list("123123")})
    >>> table = pl.DataFrame({"run": list("abcdef"), "task_x": "hans", "task_y": "rte", "n": 30,
    ...                       "r": [0.6, 0.55, 0.65, -0.6, -0.5, -0.62], "n_eff": 30.0, "p_adj": 0.01,
    ...                       "p_eff_adj": 0.01, "edf_x": 2.0, "edf_y": 2.0})
    >>> out = between_groups(table, between="family", within="seed", attributes=runs).table
    >>> out["verdict"][0], round(out["r:opt"][0], 2), round(out["r:olmo"][0], 2)
    ('differs by family beyond seed variation', 0.6, -0.58)

    With one seed per family, the family and the seed are one thing:

    >>> one = between_groups(table.filter(pl.col("run").is_in(["a", "d"])), between="family", within="seed",
    ...                      attributes=runs).table
    >>> one["verdict"][0]
    'family and seed confounded: 1 seed per family'
    """
    _check(alpha, inference, adjust_pairs, test)
    _check_items(item_inference, item_resamples)
    if tau2_method not in meta.TAU2_METHODS:
        raise AnalysisError(
            f"must be one of {', '.join(meta.TAU2_METHODS)}, not {tau2_method!r}", parameter="tau2_method"
        )
    if between == within:
        raise AnalysisError(f"{within!r} is also `between`; give two different attributes", parameter="within")
    if attributes is None:
        raise AnalysisError("comparing groups of runs needs the store (or a frame of run attributes)")
    table = partial_frame(data)
    rows = with_attributes(table, [between], attributes, "between")
    rows = with_attributes(rows, [within], attributes, "within")
    _check_design(rows, between, within)
    rows = with_variance(rows, inference, alpha)
    runs = rows.select("run", between).unique().sort("run")
    index = ["task_x", "task_y"]
    r = rows.pivot(on="run", index=index, values="r", aggregate_function=None, sort_columns=True).sort(index)
    variance = rows.pivot(on="run", index=index, values="variance", aggregate_function=None, sort_columns=True)
    variance = variance.sort(index).select(r.columns)
    names = runs["run"].to_list()
    R = r.select(pl.col(names).cast(pl.Float64)).to_numpy() if names else np.zeros((r.height, 0))
    V = variance.select(pl.col(names).cast(pl.Float64)).to_numpy() if names else np.zeros((r.height, 0))
    use = usable(R, V)
    with np.errstate(invalid="ignore"):
        effects = np.where(use, np.arctanh(np.where(use, R, 0.0)), np.nan)
    fit = meta.subgroups_many(effects, np.where(use, V, np.nan), runs[between].to_list(), tau2_method, test)
    source = data if isinstance(data, PartialCorrelations) else None
    evidence, basis = _item_evidence(source, table, _store_of(items, attributes, source), item_inference,
                                     item_resamples, seed, progress)  # fmt: skip
    if evidence is not None:
        fit = _items_groups(evidence, r.select(index), runs, between, test, fit)
    p_adjusted = inference_module.adjust(fit.p_between, adjust_pairs)
    groups = (fit.sizes > 0).sum(axis=1)
    fewest = np.where(fit.sizes > 0, fit.sizes, np.iinfo(np.int64).max).min(axis=1, initial=np.iinfo(np.int64).max)
    out: dict[str, list] = {name: [] for name in BETWEEN_COLUMNS}
    out.update({f"r:{name}": [] for name in fit.groups})
    for i, (task_x, task_y) in enumerate(r.select(index).iter_rows()):
        runs_used = int(fit.sizes[i].sum()) if evidence is not None else int(use[i].sum())
        row = {"task_x": task_x, "task_y": task_y, "groups": int(groups[i]), "runs": runs_used}
        row["within_per_group"] = int(fewest[i]) if groups[i] else None
        for column, values in (("q_between", fit.q_between), ("df_between", fit.df_between),
                               ("p_between", fit.p_between), ("p_between_adj", p_adjusted),
                               ("tau2_within", fit.tau2), ("q_within", fit.q_within), ("df_within", fit.df_within),
                               ("p_within", fit.p_within), ("i2_within", fit.i2)):  # fmt: skip
            row[column] = _number(values[i])
        row["verdict"] = verdicts.between_verdict(
            between, within, groups=row["groups"], fewest=row["within_per_group"], p=row["p_between_adj"],
            alpha=alpha, minimum=MIN_WITHIN,
        )  # fmt: skip
        if not row["verdict"].startswith(("differs", "not shown")):  # no test: no statistics beside the verdict
            row.update(dict.fromkeys(BETWEEN_COLUMNS[5:-2]))
        row["basis"] = basis
        back = (lambda m: m) if evidence is not None else np.tanh  # r* is on the r scale; Fisher z is not
        row.update({f"r:{name}": _number(back(fit.means[i, g])) for g, name in enumerate(fit.groups)})
        for name in out:
            out[name].append(row.get(name))
    schema: dict[str, pl.DataType] = {name: pl.Float64() for name in BETWEEN_COLUMNS}
    schema.update(task_x=pl.String(), task_y=pl.String(), verdict=pl.String(), groups=pl.Int64(), runs=pl.Int64())
    schema.update(within_per_group=pl.Int64(), df_between=pl.Int64(), basis=pl.String())
    schema["df_within"] = pl.Float64() if evidence is not None else pl.Int64()
    schema.update({f"r:{name}": pl.Float64() for name in fit.groups})
    result = pl.DataFrame(out, schema=schema, strict=False).sort("task_x", "task_y")
    return BetweenGroups(result, between, within, alpha, inference, tau2_method, source, adjust_pairs, test, basis,
                         item_resamples if evidence is not None else None)  # fmt: skip


def _items_groups(evidence, pairs: pl.DataFrame, runs: pl.DataFrame, between: str, test: str, fit):
    """:func:`~ood_store._analysis.crossed.crossed_groups` for every pair (rows of ``pairs``), laid out as
    :func:`~ood_store._analysis.meta.subgroups_many` lays out its fit (the runs-only ``fit``, for its groups'
    order)."""
    group_of = dict(zip(runs["run"], runs[between], strict=True))
    labels = [group_of[run] for run in evidence.runs]
    order = {name: g for g, name in enumerate(fit.groups)}
    B, G = pairs.height, len(fit.groups)
    names = ("q_between", "df_between", "p_between", "q_within", "df_within", "p_within", "tau2", "i2")
    out = {name: np.full(B, np.nan) for name in names}
    means, sizes = np.full((B, G), np.nan), np.zeros((B, G), dtype=np.int64)
    pair_index = {pair: k for k, pair in enumerate(evidence.pairs)}
    for i, pair in enumerate(pairs.iter_rows()):
        k = pair_index[pair]
        one = crossed_module.crossed_groups(evidence.tau[:, k], evidence.scale[:, k], evidence.draws_tau[:, :, k],
                                            evidence.draws_scale[:, :, k], evidence.within[:, k], labels,
                                            test)  # fmt: skip
        for g, name in enumerate(one.groups):
            means[i, order[name]], sizes[i, order[name]] = one.means[g], one.sizes[g]
        for name, value in (("q_between", one.statistic), ("df_between", one.df_between), ("p_between", one.pvalue),
                            ("q_within", one.q_within), ("p_within", one.q_within_p),
                            ("tau2", one.tau2), ("i2", one.i2)):  # fmt: skip
            out[name][i] = value
        out["df_within"][i] = one.df_within if np.isfinite(one.statistic) else np.nan
    return dataclasses.replace(fit, sizes=sizes, means=means, se=np.full((B, G), np.nan), **out)


def _check_design(rows: pl.DataFrame, between: str, within: str) -> None:
    """Every run has both attributes, and runs of one group differ in ``within``."""
    runs = rows.select("run", between, within).unique().sort("run")
    for name in (between, within):
        lacking = runs.filter(pl.col(name).is_null())["run"].to_list()
        if lacking:
            listed = ", ".join(map(repr, lacking[:3])) + (f" and {len(lacking) - 3} more" if len(lacking) > 3 else "")
            parameter = "between" if name == between else "within"
            raise AnalysisError(f"run(s) {listed} have no {name!r}", parameter=parameter)
    clash = runs.group_by(between, within).agg(pl.col("run").sort()).filter(pl.col("run").list.len() > 1)
    if not clash.is_empty():
        group, value, names = clash.sort(between, within).row(0)
        raise AnalysisError(
            f"runs {names[0]!r} and {names[1]!r} of {between} {group!r} have the same {within} {value!r}; "
            f"runs of one {between} must differ in {within}",
            parameter="within",
        )


def with_attributes(table: pl.DataFrame, by: Sequence[str] | None, attributes, parameter: str = "by") -> pl.DataFrame:
    if not by:
        return table
    clash = [name for name in by if name in table.columns]
    if clash:
        raise AnalysisError(f"{', '.join(clash)} is a column of the table, not a run attribute", parameter=parameter)
    if attributes is None:
        raise AnalysisError("grouping by run attributes needs the store (or a frame of run attributes)")
    frame = attributes if isinstance(attributes, pl.DataFrame) else run_attributes(attributes, by, parameter)
    absent = [name for name in by if name not in frame.columns]
    if absent:
        raise AnalysisError(f"no run attribute {', '.join(map(repr, absent))}", parameter=parameter)
    return table.join(frame.select("run", *by), on="run", how="left")
