"""Comparing partial correlations across runs: side by side, pooled, and a verdict per pair of OOD tasks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from ood_store._analysis import meta, verdicts
from ood_store._analysis.results import (
    BETWEEN_COLUMNS,
    BetweenGroups,
    Comparison,
    PartialCorrelations,
    partial_table,
)
from ood_store._errors import AnalysisError
from ood_store._store.runs import run_attributes

if TYPE_CHECKING:
    from ood_store._store import Database

INFERENCE = ("effective", "naive")


def compare(
    data: PartialCorrelations | pl.DataFrame,
    *,
    by: Sequence[str] | None = None,
    attributes: Database | pl.DataFrame | None = None,
    alpha: float = 0.05,
    inference: str = "effective",
    agreement: float = verdicts.AGREEMENT,
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
        Significance level of the per-run tests, the pooled interval and the
        heterogeneity test.
    inference : {"effective", "naive"}
        ``effective`` (default) uses each run's effective sample size
        ``n_eff`` and ``p_eff_adj``, which account for autocorrelated training
        curves; ``naive`` uses ``n`` and ``p_adj``.
    agreement : float
        The share of runs that must have the pooled r's sign for a
        "consistently ..." verdict (default 0.8; :mod:`~ood_store._analysis.verdicts`).

    Returns
    -------
    Comparison
        ``.table`` with one row per group and pair: the ``by`` columns,
        :data:`~ood_store._analysis.results.COMPARISON_COLUMNS`, then ``r:<run>`` for each run:

        - ``runs``: runs with a finite r; ``n_positive``/``n_negative``: their signs;
          ``sign_agreement``: the share of runs with the sign of the pooled r;
        - ``n_sig_positive``/``n_sig_negative``: runs significant at ``alpha`` (adjusted p);
        - ``r_pooled``, ``ci_low``, ``ci_high``, ``p_pooled``: random-effects pooled r
          (Paule–Mandel, as metafor's ``rma(method = "PM")``, on Fisher z with
          variance ``1 / (n - edf - 2)``, back-transformed; :func:`~ood_store._analysis.meta.pool`);
        - ``q``, ``q_p``, ``i2``, ``tau2``: Cochran's Q, its chi-square p, I² (metafor's,
          ``tau2 / (tau2 + s²)``) and τ²;
        - ``verdict``: see :mod:`~ood_store._analysis.verdicts`: model-dependent,
          consistently positive/negative, mixed, no evidence, or too few runs.
    """
    if inference not in INFERENCE:
        raise AnalysisError(f"inference must be one of {', '.join(INFERENCE)}, not {inference!r}")
    if not 0 < alpha < 1:
        raise AnalysisError(f"alpha must be between 0 and 1, not {alpha}")
    if not 0.5 < agreement <= 1:
        raise AnalysisError(f"must be more than 0.5 and at most 1, not {agreement}", parameter="agreement")
    by = list(dict.fromkeys(by)) if by else None  # repeated names count once
    table = partial_table(data)
    groups = _group_columns(table, by, attributes)
    rows = _with_variance(groups, inference, alpha)
    keys = [*(by or []), "task_x", "task_y"]
    summary = (
        rows.group_by(keys, maintain_order=True)
        .agg("r", "variance", "significant")
        .with_columns(pl.struct("r", "variance", "significant").map_elements(
            lambda s: _pool(s, alpha, agreement), return_dtype=_POOLED
        ).alias("pooled"))
        .unnest("pooled")
        .drop("r", "variance", "significant")
    )  # fmt: skip
    wide = rows.pivot(on="run", index=keys, values="r", aggregate_function=None)
    wide = wide.rename({run: f"r:{run}" for run in wide.columns if run not in keys})
    result = summary.join(wide, on=keys, how="left", nulls_equal=True).sort(keys)
    source = data if isinstance(data, PartialCorrelations) else None
    return Comparison(result, tuple(by or ()), alpha, inference, source, agreement)


def _with_variance(table: pl.DataFrame, inference: str, alpha: float) -> pl.DataFrame:
    """Each run's Fisher-z sampling variance ``1 / (n - edf - 2)`` and whether it is significant at ``alpha``."""
    size_column, p_column = ("n_eff", "p_eff_adj") if inference == "effective" else ("n", "p_adj")
    edf = pl.max_horizontal(pl.col("edf_x"), pl.col("edf_y")).fill_null(2.0)
    return table.with_columns(
        variance=1.0 / (pl.col(size_column).cast(pl.Float64) - edf - 2.0),
        significant=pl.col(p_column) < alpha,
    )


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


def _usable(r: np.ndarray, variance: np.ndarray) -> np.ndarray:
    return np.isfinite(r) & np.isfinite(variance) & (variance > 0) & (np.abs(r) < 1)


def _pool(values: dict, alpha: float, agreement: float) -> dict:
    r = np.array(values["r"], dtype=float)
    variance = np.array(values["variance"], dtype=float)
    significant = np.array([bool(s) for s in values["significant"]])
    finite = np.isfinite(r)
    usable = _usable(r, variance)
    positive, negative = int((r[finite] > 0).sum()), int((r[finite] < 0).sum())
    counts = {
        "runs": int(finite.sum()),
        "n_positive": positive,
        "n_negative": negative,
        "n_sig_positive": int((significant & finite & (r > 0)).sum()),
        "n_sig_negative": int((significant & finite & (r < 0)).sum()),
    }
    out = {**counts, **dict.fromkeys(("r_pooled", "ci_low", "ci_high", "p_pooled", "q", "q_p", "i2", "tau2"))}
    if usable.sum() >= 2:
        pooled = meta.pool(np.arctanh(r[usable]), variance[usable], alpha=alpha)
        out.update(
            r_pooled=float(np.tanh(pooled.estimate)),
            ci_low=float(np.tanh(pooled.ci_low)),
            ci_high=float(np.tanh(pooled.ci_high)),
            p_pooled=pooled.pvalue,
            q=pooled.q,
            q_p=pooled.q_p,
            i2=pooled.i2,
            tau2=pooled.tau2,
        )
    out["sign_agreement"] = verdicts.sign_agreement(positive, negative, counts["runs"], out["r_pooled"])
    out["verdict"] = verdicts.verdict(
        **counts,
        estimate=out["r_pooled"],
        ci_low=out["ci_low"],
        ci_high=out["ci_high"],
        q_p=out["q_p"],
        alpha=alpha,
        agreement=agreement,
    )
    if not counts["runs"]:
        out["sign_agreement"] = None
    return out


def between_groups(
    data: PartialCorrelations | pl.DataFrame,
    *,
    between: str,
    within: str,
    attributes: Database | pl.DataFrame,
    alpha: float = 0.05,
    inference: str = "effective",
    tau2_method: str = "PM",
) -> BetweenGroups:
    """Does a pair's correlation differ between groups of runs (models) beyond the variation within them (seeds)?

    For each pair of OOD tasks, a mixed-effects meta-analysis of the runs'
    Fisher z (variance ``1 / (n - edf - 2)``, as :func:`compare`): one mean per
    ``between`` group, and a residual τ² for the runs within a group, which
    differ by ``within`` (metafor's ``rma(yi, vi, mods = ~ factor(between),
    method = tau2_method)``; :func:`~ood_store._analysis.meta.subgroups`).

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
        Level of the test between groups.
    inference : {"effective", "naive"}
        As in :func:`compare`.
    tau2_method : {"PM", "REML"}
        Estimator of the within-group τ²: Paule–Mandel (as :func:`compare`) or REML.

    Returns
    -------
    BetweenGroups
        ``.table`` with one row per pair: the columns of
        :data:`~ood_store._analysis.results.BETWEEN_COLUMNS`, then ``r:<group>``,
        each group's pooled r:

        - ``groups``, ``runs``: groups with a usable run, and usable runs;
        - ``q_between``, ``df_between``, ``p_between``: the test of moderators ``QM``
          (between groups, beyond τ²), χ² with ``groups - 1`` degrees of freedom;
        - ``tau2_within``: the residual τ², the variance of z between runs of a group
          beyond sampling error; ``q_within``, ``df_within``, ``p_within``: the test of
          residual heterogeneity ``QE``; ``i2_within``: residual I²;
        - ``verdict``: ``differs by <between> beyond <within> variation`` when
          ``p_between < alpha``, else ``not shown to differ by <between> beyond
          <within> variation``; ``too few runs`` without two groups and more runs than groups.

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
    """
    if inference not in INFERENCE:
        raise AnalysisError(f"inference must be one of {', '.join(INFERENCE)}, not {inference!r}")
    if tau2_method not in meta.TAU2_METHODS:
        raise AnalysisError(
            f"must be one of {', '.join(meta.TAU2_METHODS)}, not {tau2_method!r}", parameter="tau2_method"
        )
    if not 0 < alpha < 1:
        raise AnalysisError(f"alpha must be between 0 and 1, not {alpha}")
    if between == within:
        raise AnalysisError(f"{within!r} is also `between`; give two different attributes", parameter="within")
    if attributes is None:
        raise AnalysisError("comparing groups of runs needs the store (or a frame of run attributes)")
    table = partial_table(data)
    rows = _group_columns(table, [between], attributes, "between")
    rows = _group_columns(rows, [within], attributes, "within")
    _check_design(rows, between, within)
    rows = _with_variance(rows, inference, alpha)
    differs = f"differs by {between} beyond {within} variation"
    same = f"not shown to differ by {between} beyond {within} variation"
    names = sorted(rows[between].unique().to_list())
    out = []
    for (task_x, task_y), part in rows.group_by(["task_x", "task_y"], maintain_order=True):
        r, variance = part["r"].to_numpy(), part["variance"].to_numpy()
        usable = _usable(r, variance)
        groups = part[between].to_numpy()[usable]
        row: dict = {"task_x": task_x, "task_y": task_y, "groups": len(set(groups)), "runs": int(usable.sum())}
        row.update(dict.fromkeys(BETWEEN_COLUMNS[4:-1]))
        row.update({f"r:{name}": None for name in names})
        if row["groups"] >= 2 and row["runs"] > row["groups"]:
            fit = meta.subgroups(np.arctanh(r[usable]), variance[usable], groups, tau2_method)
            row.update(
                q_between=fit.q_between,
                df_between=fit.df_between,
                p_between=fit.p_between,
                tau2_within=fit.tau2,
                q_within=fit.q_within,
                df_within=fit.df_within,
                p_within=fit.p_within,
                i2_within=fit.i2,
                verdict=differs if fit.p_between < alpha else same,
            )
            row.update({f"r:{name}": float(np.tanh(m)) for name, m in zip(fit.groups, fit.means, strict=True)})
        else:
            row["verdict"] = "too few runs"
        out.append(row)
    schema: dict[str, pl.DataType] = {name: pl.Float64() for name in BETWEEN_COLUMNS}
    schema.update(task_x=pl.String(), task_y=pl.String(), verdict=pl.String(), groups=pl.Int64(), runs=pl.Int64())
    schema.update(df_between=pl.Int64(), df_within=pl.Int64())
    schema.update({f"r:{name}": pl.Float64() for name in names})
    result = pl.DataFrame(out, schema=schema).sort("task_x", "task_y")
    source = data if isinstance(data, PartialCorrelations) else None
    return BetweenGroups(result, between, within, alpha, inference, tau2_method, source)


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


def _group_columns(table: pl.DataFrame, by: Sequence[str] | None, attributes, parameter: str = "by") -> pl.DataFrame:
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
