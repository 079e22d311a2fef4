"""How far each partial correlation depends on the residualizer: the line, the GAM by GCV, the GAM by REML.

With ≤ 30 checkpoints, reasonable smoothers of the in-domain score can move
r by 0.1 to 0.5. A pair is *fragile* when a finding under one residualizer
(a significant r of some sign) does not hold under another: it is
significant under some and not others, or significant with opposite signs.
A paper should not rest on a fragile pair. Sign changes of r that is
significant under none are reported (``sign_differs``) but are no finding to lose.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from ood_store._analysis.results import SENSITIVITY_COLUMNS as COLUMNS
from ood_store._analysis.results import Sensitivity
from ood_store._errors import AnalysisError

if TYPE_CHECKING:
    from ood_store._analysis.partial import Options
    from ood_store._store import Database

#: The residualizers compared, as (name, partial_correlations options).
VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("linear", {"residualizer": "linear"}),
    ("gam_gcv", {"residualizer": "gam", "smoothing": "gcv"}),
    ("gam_reml", {"residualizer": "gam", "smoothing": "reml"}),
)

_KEYS = ["run", "task_x", "task_y"]


def report(tables: Mapping[str, pl.DataFrame], *, alpha: float = 0.05, inference: str = "effective") -> pl.DataFrame:
    """The sensitivity report from one partial-correlation table per variant of :data:`VARIANTS`.

    Each row is one (run, pair): its r and adjusted p (``p_eff_adj``, or
    ``p_adj`` with ``inference="naive"``) under each residualizer;
    ``r_range``, the largest minus the smallest r; ``sign_differs``, whether
    the residualizers disagree on the sign; ``significance_differs``, whether
    some find it significant at ``alpha`` and others not; ``fragile``:
    significance differs, or the sign differs while some residualizer finds
    it significant. Rows where some residualizer gives no r (too few
    checkpoints, a constant series) have null flags.

    Examples
    --------
    >>> one = pl.DataFrame({"run": ["a"], "task_x": ["x"], "task_y": ["y"], "n": [27]})
    >>> tables = {name: one.with_columns(r=pl.lit(r), p_eff_adj=pl.lit(p))
    ...           for (name, _), r, p in zip(VARIANTS, [0.31, 0.12, -0.05], [0.04, 0.5, 0.8])}
    >>> report(tables).select("r_range", "sign_differs", "significance_differs", "fragile").row(0)
    (0.36, True, True, True)

    Signs that differ where no residualizer finds the pair significant are no finding lost:

    >>> weak = {name: table.with_columns(p_eff_adj=pl.lit(0.6)) for name, table in tables.items()}
    >>> report(weak).select("sign_differs", "significance_differs", "fragile").row(0)
    (True, False, False)
    """
    if inference not in ("effective", "naive"):
        raise AnalysisError(f"inference must be one of effective, naive, not {inference!r}")
    p_column = "p_eff_adj" if inference == "effective" else "p_adj"
    names = [name for name, _ in VARIANTS]
    absent = [name for name in names if name not in tables]
    if absent:
        raise AnalysisError(f"no table for {', '.join(absent)}")
    frame = None
    for name in names:
        part = tables[name].select(*_KEYS, "n", pl.col("r").alias(f"r_{name}"), pl.col(p_column).alias(f"p_{name}"))
        frame = part if frame is None else frame.join(part.drop("n"), on=_KEYS, how="full", coalesce=True)
    assert frame is not None
    r = frame.select(f"r_{name}" for name in names).to_numpy()
    p = frame.select(f"p_{name}" for name in names).to_numpy()
    complete = np.isfinite(r).all(axis=1) & np.isfinite(p).all(axis=1)
    with np.errstate(invalid="ignore"):
        spread = r.max(axis=1) - r.min(axis=1)
        signs = np.sign(r)
        sign_differs = (signs != signs[:, :1]).any(axis=1)
        significant = p < alpha
        significance_differs = (significant != significant[:, :1]).any(axis=1)

    def flag(values: np.ndarray) -> pl.Series:
        return pl.Series([bool(v) if ok else None for v, ok in zip(values, complete, strict=True)], dtype=pl.Boolean)

    return (
        frame.with_columns(
            r_range=pl.Series(np.where(complete, spread, np.nan)),
            sign_differs=flag(sign_differs),
            significance_differs=flag(significance_differs),
            fragile=flag(significance_differs | (sign_differs & significant.any(axis=1))),
        )
        .select(COLUMNS)
        .sort(_KEYS)
    )


def residualizer_sensitivity(
    data: Database | pl.DataFrame,
    in_domain: str | None = None,
    ood: Sequence[str] | None = None,
    runs: Sequence[str] | None = None,
    *,
    alpha: float = 0.05,
    inference: str = "effective",
    **options: Any,
) -> Sensitivity:
    """:func:`report` for an analysis run three times, once per residualizer of :data:`VARIANTS`.

    ``data``, ``in_domain``, ``ood``, ``runs`` and ``options`` are those of
    :func:`~ood_store._analysis.partial_correlations` but ``residualizer`` and
    ``smoothing``, which are what varies, and ``bootstrap``: the report
    compares point estimates.

    Returns
    -------
    Sensitivity
        ``.table`` with the columns of :data:`COLUMNS` (see :func:`report`).
    """
    from ood_store._analysis.partial import Options

    fixed = {"residualizer", "smoothing", "bootstrap"} & set(options)
    if fixed:
        raise AnalysisError(f"residualizer_sensitivity sets {', '.join(sorted(fixed))} itself: leave it out")
    base = Options(in_domain=in_domain, ood=ood, runs=runs, **options)
    return sensitivity_of(data, base, alpha=alpha, inference=inference)


def sensitivity_of(
    data: Database | pl.DataFrame,
    options: Options,
    *,
    alpha: float = 0.05,
    inference: str = "effective",
    progress: bool = False,
) -> Sensitivity:
    """:func:`residualizer_sensitivity` with the analysis given as one :class:`~ood_store._analysis.Options`.

    Its ``residualizer`` and ``smoothing`` are replaced by each variant's; it must not ask for a bootstrap.
    """
    from ood_store._analysis.partial import compute

    if options.bootstrap:
        raise AnalysisError("the sensitivity report compares point estimates: no bootstrap", parameter="bootstrap")
    tables = {}
    for name, variant in VARIANTS:
        result = compute(data, dataclasses.replace(options, **variant), progress=progress)
        tables[name] = result.table
    settled = dataclasses.replace(options, in_domain=result.options.in_domain)
    return Sensitivity(report(tables, alpha=alpha, inference=inference), settled, alpha, inference)
