"""The data behind one partial correlation: a run's two OOD series, the in-domain score, and their residuals.

An analysis' row says ``r = 0.62`` for (run, X, Y); a reader who doubts it wants
the two residual series that were correlated. :func:`pair_residuals` makes
them again with the analysis' own options (its residualizer, smoothing,
method, metric, campaign, ...) and the same code (:class:`~ood_store._analysis.partial._Fit`),
on the checkpoints where X, Y and the in-domain score are all present: the
correlation of the residuals it returns is the analysis' r for that row.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from ood_store._analysis.partial import Options, _Fit, _group_problem, correlation
from ood_store._analysis.series import load_series

if TYPE_CHECKING:
    from ood_store._store.database import Database


@dataclass(frozen=True)
class PairResiduals:
    """One run's series of a pair of OOD tasks and their residuals, one row per checkpoint."""

    #: ``step``, ``in_domain``, ``x``, ``y`` (the scores), ``used`` (all three present),
    #: ``residual_x``, ``residual_y`` (null where not used, or where ``reason`` says why there are none).
    table: pl.DataFrame
    run: str
    task_x: str
    task_y: str
    in_domain: str
    #: The correlation of the residuals: the analysis' r (NaN when ``reason`` is set).
    r: float
    #: Why there are no residuals (too few checkpoints, a constant series), as the analysis says it.
    reason: str | None


def pair_residuals(
    data: Database | pl.DataFrame, options: Options, run: str, task_x: str, task_y: str
) -> PairResiduals:
    """The in-domain score, X, Y and the residuals of X and Y over the checkpoints of ``run``.

    ``options`` are those of the analysis (``store.analysis(name).options``);
    its run and OOD tasks are replaced by ``run``, ``task_x`` and ``task_y``.
    With ``method="spearman"`` the residuals are those of the ranks, as the
    analysis correlates them.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from ood_store._analysis.partial import Options
    >>> z = np.linspace(0.3, 0.8, 12)
    >>> frame = pl.DataFrame({"step": np.tile(np.arange(12) * 100, 3), "task": ["id"] * 12 + ["a"] * 12 + ["b"] * 12,
    ...                       "value": np.concatenate([z, z + np.sin(np.arange(12)), -z + np.cos(np.arange(12))])})
    >>> pair = pair_residuals(frame, Options(in_domain="id"), "(frame)", "a", "b")
    >>> pair.table.height, pair.table["used"].all()
    (12, True)

    The correlation of the residuals is the analysis' r:

    >>> from ood_store._analysis import partial_correlations
    >>> abs(pair.r - partial_correlations(frame, "id").table["r"][0]) < 1e-12
    True
    """
    chosen = dataclasses.replace(options, runs=(run,), ood=(task_x, task_y), bootstrap=0)
    series = load_series(data, chosen)
    wide = (
        series.scores.filter(pl.col("run") == run)
        .pivot(on="task", index="step", values="value", aggregate_function=None)
        .sort("step")
    )
    columns = [series.in_domain, task_x, task_y]
    wide = wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(c) for c in columns if c not in wide.columns)
    values = wide.select(pl.col(columns).cast(pl.Float64).fill_null(np.nan)).to_numpy()
    Z, X = values[:, :1], values[:, 1:]
    used = np.isfinite(values).all(axis=1)
    residuals = np.full(X.shape, np.nan)
    reason = _group_problem(int(used.sum()), Z[used], chosen)
    r = float("nan")
    if reason is None:
        fit = _Fit(Z[used], X[used], chosen)
        problems = [p.format(task=t) for p, t in zip(fit.problems, (task_x, task_y), strict=True) if p is not None]
        reason = "; ".join(problems) or None
        if reason is None:
            residuals[used] = fit.residuals
            r = float(correlation(fit.residuals)[0, 1])
    table = pl.DataFrame(
        {
            "step": wide["step"],
            "in_domain": values[:, 0],
            "x": values[:, 1],
            "y": values[:, 2],
            "used": used,
            "residual_x": residuals[:, 0],
            "residual_y": residuals[:, 1],
        }
    ).with_columns(pl.col("in_domain", "x", "y", "residual_x", "residual_y").fill_nan(None))
    return PairResiduals(table, run, task_x, task_y, series.in_domain, r, reason)
