"""Comparing partial correlations across runs: side by side, pooled, and a verdict per pair of OOD tasks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from scipy import stats

from ood_store.analysis.results import Comparison, PartialCorrelations, partial_table
from ood_store.errors import AnalysisError
from ood_store.store.runs import run_attributes

if TYPE_CHECKING:
    from ood_store.store import Store

INFERENCE = ("effective", "naive")


def compare(
    data: PartialCorrelations | pl.DataFrame,
    *,
    by: Sequence[str] | None = None,
    attributes: Store | pl.DataFrame | None = None,
    alpha: float = 0.05,
    inference: str = "effective",
) -> Comparison:
    """For each pair of OOD tasks: the runs' partial correlations side by side, pooled, and a verdict.

    Parameters
    ----------
    data : PartialCorrelations or polars.DataFrame
        The result of :func:`~ood_store.analysis.partial_correlations`, a saved
        analysis (``Store.analysis``), or a partial-correlation table.
    by : list of str, optional
        Run attributes to group runs by (``family``, ``size``, ``in_domain``,
        ``seed``, ``base_model`` or any other run attribute, such as
        ``shots``); runs are compared within each group.
    attributes : Store or polars.DataFrame, optional
        Where run attributes come from when ``by`` is given: a store, or a
        frame with a ``run`` column and one column per attribute.
    alpha : float
        Significance level of the per-run tests, the pooled interval and the
        heterogeneity test.
    inference : {"effective", "naive"}
        ``effective`` (default) uses each run's effective sample size
        ``n_eff`` and ``p_eff_adj``, which account for autocorrelated training
        curves; ``naive`` uses ``n`` and ``p_adj``.

    Returns
    -------
    Comparison
        ``.table`` with one row per group and pair: the ``by`` columns,
        :data:`~ood_store.analysis.results.COMPARISON_COLUMNS`, then ``r:<run>`` for each run:

        - ``runs``: runs with a finite r; ``n_positive``/``n_negative``: their signs;
          ``sign_agreement``: the share of runs with the majority sign;
        - ``n_sig_positive``/``n_sig_negative``: runs significant at ``alpha`` (adjusted p);
        - ``r_pooled``, ``ci_low``, ``ci_high``, ``p_pooled``: random-effects pooled r
          (statsmodels ``combine_effects``, iterated Paule–Mandel, on Fisher z with
          variance ``1 / (n - edf - 2)``, back-transformed);
        - ``q``, ``q_p``, ``i2``, ``tau2``: Cochran's Q, its chi-square p, I² (truncated at 0) and τ²;
        - ``verdict``: ``model-dependent`` when runs are significant in both
          directions, or signs differ and Q is significant; ``consistently
          positive``/``negative`` when the pooled interval excludes 0 and no
          run contradicts it (all runs share its sign, or Q is not significant);
          ``no evidence`` otherwise; ``too few runs`` with fewer than two.
    """
    if inference not in INFERENCE:
        raise AnalysisError(f"inference must be one of {', '.join(INFERENCE)}, not {inference!r}")
    if not 0 < alpha < 1:
        raise AnalysisError(f"alpha must be between 0 and 1, not {alpha}")
    by = list(dict.fromkeys(by)) if by else None  # repeated names count once
    table = partial_table(data)
    groups = _group_columns(table, by, attributes)
    size_column, p_column = ("n_eff", "p_eff_adj") if inference == "effective" else ("n", "p_adj")
    edf = pl.max_horizontal(pl.col("edf_x"), pl.col("edf_y")).fill_null(2.0)
    rows = groups.with_columns(
        variance=1.0 / (pl.col(size_column).cast(pl.Float64) - edf - 2.0),
        significant=pl.col(p_column) < alpha,
    )
    keys = [*(by or []), "task_x", "task_y"]
    summary = (
        rows.group_by(keys, maintain_order=True)
        .agg("r", "variance", "significant")
        .with_columns(pl.struct("r", "variance", "significant").map_elements(
            lambda s: _pool(s, alpha), return_dtype=_POOLED
        ).alias("pooled"))
        .unnest("pooled")
        .drop("r", "variance", "significant")
    )  # fmt: skip
    wide = rows.pivot(on="run", index=keys, values="r", aggregate_function=None)
    wide = wide.rename({run: f"r:{run}" for run in wide.columns if run not in keys})
    result = summary.join(wide, on=keys, how="left", nulls_equal=True).sort(keys)
    source = data if isinstance(data, PartialCorrelations) else None
    return Comparison(result, tuple(by or ()), alpha, inference, source)


_POOLED = pl.Struct(
    {
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
        "q": pl.Float64,
        "q_p": pl.Float64,
        "i2": pl.Float64,
        "tau2": pl.Float64,
        "verdict": pl.String,
    }
)


def _pool(values: dict, alpha: float) -> dict:
    r = np.array(values["r"], dtype=float)
    variance = np.array(values["variance"], dtype=float)
    significant = np.array([bool(s) for s in values["significant"]])
    finite = np.isfinite(r)
    usable = finite & np.isfinite(variance) & (variance > 0) & (np.abs(r) < 1)
    positive, negative = int((r[finite] > 0).sum()), int((r[finite] < 0).sum())
    sig_pos = int((significant & finite & (r > 0)).sum())
    sig_neg = int((significant & finite & (r < 0)).sum())
    runs = int(finite.sum())
    out = {
        "runs": runs,
        "n_positive": positive,
        "n_negative": negative,
        "sign_agreement": max(positive, negative) / runs if runs else None,
        "n_sig_positive": sig_pos,
        "n_sig_negative": sig_neg,
        **dict.fromkeys(("r_pooled", "ci_low", "ci_high", "p_pooled", "q", "q_p", "i2", "tau2")),
    }
    if usable.sum() < 2:
        out["verdict"] = "too few runs"
        return out
    from statsmodels.stats.meta_analysis import combine_effects

    pooled = combine_effects(np.arctanh(r[usable]), variance[usable], method_re="iterated", alpha=alpha)
    mean, sd = pooled.mean_effect_re, pooled.sd_eff_w_re
    low, high = pooled.conf_int(alpha=alpha, use_t=False)[1]
    homogeneity = pooled.test_homogeneity()
    out.update(
        r_pooled=float(np.tanh(mean)),
        ci_low=float(np.tanh(low)),
        ci_high=float(np.tanh(high)),
        p_pooled=float(2 * stats.norm.sf(abs(mean / sd))),
        q=float(pooled.q),
        q_p=float(homogeneity.pvalue),
        i2=max(0.0, float(pooled.i2)),  # (Q - df) / Q, truncated at 0 as usual
        tau2=float(pooled.tau2),
    )
    heterogeneous = homogeneity.pvalue < alpha
    mixed = positive > 0 and negative > 0
    if sig_pos and sig_neg:
        verdict = "model-dependent"
    elif low > 0 or high < 0:
        sign = 1 if low > 0 else -1
        agrees = (negative == 0) if sign > 0 else (positive == 0)
        if agrees or not heterogeneous:
            verdict = "consistently positive" if sign > 0 else "consistently negative"
        else:
            verdict = "model-dependent"
    elif mixed and heterogeneous:
        verdict = "model-dependent"
    else:
        verdict = "no evidence"
    out["verdict"] = verdict
    return out


def _group_columns(table: pl.DataFrame, by: Sequence[str] | None, attributes) -> pl.DataFrame:
    if not by:
        return table
    clash = [name for name in by if name in table.columns]
    if clash:
        raise AnalysisError(f"{', '.join(clash)} is a column of the table, not a run attribute", parameter="by")
    if attributes is None:
        raise AnalysisError("grouping by run attributes needs the store (or a frame of run attributes)")
    frame = attributes if isinstance(attributes, pl.DataFrame) else run_attributes(attributes, by)
    absent = [name for name in by if name not in frame.columns]
    if absent:
        raise AnalysisError(f"no run attribute {', '.join(map(repr, absent))}", parameter="by")
    return table.join(frame.select("run", *by), on="run", how="left")
