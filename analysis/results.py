"""Results objects, in the statsmodels manner: a table together with what made it.

:func:`~ood_store._analysis.partial_correlations` returns a
:class:`PartialCorrelations`; :func:`~ood_store._analysis.compare` a
:class:`Comparison`. Each holds its rows as a Polars DataFrame (``.table``)
and the options, tasks and runs behind them, so that saving, exporting and
plotting need nothing else. :func:`partial_frame` is the one check of "is this
a partial-correlation table", for results and plain frames alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

import polars as pl

from ood_store._errors import AnalysisError

if TYPE_CHECKING:
    from ood_store._analysis.partial import Options
    from ood_store._summary import Summary

#: Columns of a partial-correlation table, in order.
PARTIAL_COLUMNS = (
    "run", "task_x", "task_y", "n", "r", "ci_low", "ci_high", "p", "p_adj",
    "n_eff", "p_eff", "p_eff_adj", "acf1_x", "acf1_y", "dof", "edf_x", "edf_y",
    "boot_ci_low", "boot_ci_high", "block_length", "reason", "note",
    "in_domain", "metric", "residualizer", "method",
)  # fmt: skip

#: Columns of a comparison across runs, in order; ``r:<run>`` columns follow, one per run.
COMPARISON_COLUMNS = (
    "task_x", "task_y", "runs", "n_positive", "n_negative", "sign_agreement",
    "n_sig_positive", "n_sig_negative", "r_pooled", "ci_low", "ci_high", "p_pooled",
    "ci_low_adj", "ci_high_adj", "p_pooled_adj", "q", "q_p", "q_p_adj", "i2", "tau2", "verdict",
    "basis", "r_naive", "r_noise", "noise_could_produce",
)  # fmt: skip

#: Columns of a residualizer sensitivity report, in order.
SENSITIVITY_COLUMNS = (
    "run", "task_x", "task_y", "n",
    "r_linear", "r_gam_gcv", "r_gam_reml", "p_linear", "p_gam_gcv", "p_gam_reml",
    "r_range", "sign_differs", "significance_differs", "fragile",
)  # fmt: skip

#: Columns of a comparison between groups of runs, in order; ``r:<group>`` columns follow, one per group.
BETWEEN_COLUMNS = (
    "task_x", "task_y", "groups", "runs", "within_per_group", "q_between", "df_between", "p_between",
    "p_between_adj", "tau2_within", "q_within", "df_within", "p_within", "i2_within", "verdict", "basis",
)  # fmt: skip

#: The columns a saved analysis keeps as rows; the last four (in-domain task, metric, residualizer,
#: method) are the same on every row and live in the analysis' parameters.
SAVED_COLUMNS = PARTIAL_COLUMNS[:-4]

# What every consumer of a partial-correlation table reads.
_REQUIRED = ("run", "task_x", "task_y", "n", "r", "p_adj", "n_eff", "p_eff_adj")


@dataclass(frozen=True, repr=False)
class Result:
    """What every results object holds: its rows, as a Polars DataFrame (its columns: see each class).

    ``summary()`` is what the command line prints (the main columns, floats to 3 significant digits);
    in Jupyter a result shows as that summary's HTML table.
    """

    table: pl.DataFrame

    #: The columns ``summary()`` shows, in order (``r:<run>`` or ``r:<group>`` columns follow).
    summary_columns: ClassVar[tuple[str, ...]] = ()

    def __repr__(self) -> str:
        return f"<{type(self).__name__}{self._summary()}>"

    def _summary(self) -> str:
        return f": {self.table.height} rows"

    def _leading_columns(self) -> tuple[str, ...]:
        return ()

    def summary(self, *, all_columns: bool = False) -> Summary:
        """The rows as the command line shows them: the main columns (every column with ``all_columns``),
        floats rounded to 3 significant digits, under a title line saying what made them."""
        from ood_store._summary import Summary, rounded

        shown = (*self._leading_columns(), *self.summary_columns)
        frame = self.table
        if not all_columns:
            frame = frame.select([c for c in frame.columns if c in shown or c.startswith("r:")])
        return Summary(f"{type(self).__name__}{self._summary()}", rounded(frame))

    def _repr_html_(self) -> str:
        return self.summary()._repr_html_()

    def _repr_markdown_(self) -> str:
        return self.summary()._repr_markdown_()


@dataclass(frozen=True, repr=False)
class PartialCorrelations(Result):
    """Partial correlations between OOD tasks, per run, and what made them.

    One row per (run, task_x, task_y), with the columns of :data:`PARTIAL_COLUMNS`.
    """

    summary_columns = (
        "run",
        "task_x",
        "task_y",
        "n",
        "r",
        "ci_low",
        "ci_high",
        "p_adj",
        "n_eff",
        "p_eff_adj",
        "reason",
    )

    #: Everything that defines the analysis besides its data.
    options: Options
    #: The OOD tasks analyzed, in the analysis' order.
    tasks: tuple[str, ...]
    #: The runs analyzed.
    runs: tuple[str, ...]
    #: The store the scores were read from (None: a frame): where :func:`~ood_store._analysis.compare` reads the
    #: per-sample rows behind its verdicts over items, while it is open.
    store: Any = field(default=None, repr=False, compare=False)
    #: What the store held when the scores were read (:meth:`ood_store.Store.snapshot_marker`): a lake's
    #: snapshot, which ``analyze --at`` opens again, or a store file's content hash. None for a frame.
    snapshot: int | str | None = field(default=None, compare=False)

    @property
    def params(self) -> dict[str, Any]:
        """What a saved analysis records: every option, the tasks and the runs the table holds."""
        params = self.options.to_dict()
        params["tasks"] = sorted(set(self.table["task_x"]) | set(self.table["task_y"]))
        params["runs_analyzed"] = sorted(set(self.table["run"]))
        if self.snapshot is not None:
            params["store_snapshot"] = self.snapshot
        return params

    @classmethod
    def from_saved(cls, table: pl.DataFrame, params: Mapping[str, Any], store: Any = None) -> PartialCorrelations:
        """A result rebuilt from a saved analysis' rows and parameters (see :attr:`params`), read from ``store``."""
        from ood_store._analysis.partial import Options

        known = {f.name for f in fields(Options)}
        options = Options(**{key: value for key, value in params.items() if key in known})
        tasks = tuple(params.get("tasks") or sorted(set(table["task_x"]) | set(table["task_y"])))
        runs = tuple(params.get("runs_analyzed") or sorted(set(table["run"])))
        snapshot = params.get("store_snapshot")
        return cls(partial_frame(table.select(PARTIAL_COLUMNS)), options, tasks, runs, store, snapshot)

    def _summary(self) -> str:
        o, shape = self.options, f"{len(self.runs)} runs × {len(self.tasks)} OOD tasks"
        return (
            f": {shape}, in-domain {o.in_domain!r}, {o.residualizer} residualizer, {o.method}; {self.table.height} rows"
        )


@dataclass(frozen=True, repr=False)
class Comparison(Result):
    """Partial correlations compared across runs: per group and pair, the runs side by side, pooled, a verdict.

    The columns: the ``by`` attributes, :data:`COMPARISON_COLUMNS`, then ``r:<run>``, one per run.
    """

    summary_columns = (
        "task_x", "task_y", "runs", "sign_agreement", "r_pooled", "ci_low_adj", "ci_high_adj", "q_p_adj", "i2",
        "verdict", "basis", "noise_could_produce",
    )  # fmt: skip

    #: The run attributes runs were grouped by (empty: all runs together).
    by: tuple[str, ...]
    #: Level of the per-run tests, pooled intervals and heterogeneity tests.
    alpha: float
    #: ``effective`` (``n_eff``, ``p_eff_adj``) or ``naive`` (``n``, ``p_adj``).
    inference: str
    #: The analysis compared, when it was a result rather than a bare frame.
    source: PartialCorrelations | None = None
    #: The share of runs that must share the pooled sign for a "consistently ..." verdict.
    agreement: float = 0.8
    #: How the tests behind the verdicts were adjusted over the rows: ``holm``, ``fdr_bh``, ``bonferroni``, ``none``.
    adjust_pairs: str = "holm"
    #: The test of the pooled estimate: ``knha`` (Knapp–Hartung) or ``z``.
    test: str = "knha"
    #: What the verdicts rest on: ``items and runs``, or ``runs only (item noise not included): why``.
    basis: str = "runs only (item noise not included)"
    #: The study-wide item resamples behind an items-and-runs comparison (None: runs only).
    item_resamples: int | None = None

    def _leading_columns(self) -> tuple[str, ...]:
        return self.by

    def _summary(self) -> str:
        grouped = f" by {', '.join(self.by)}" if self.by else ""
        adjusted = "not adjusted" if self.adjust_pairs == "none" else f"{self.adjust_pairs} over pairs"
        if self.item_resamples is not None:
            inference = f"verdicts over items and runs ({self.item_resamples} item resamples)"
        else:
            inference = f"{self.test} test, {self.inference} inference; {self.basis}"
        return f"{grouped}: {self.table.height} pairs, alpha {self.alpha:g} ({adjusted}), {inference}"


@dataclass(frozen=True, repr=False)
class BetweenGroups(Result):
    """Partial correlations compared between groups of runs, beyond the variation within groups.

    One row per pair: :data:`BETWEEN_COLUMNS`, then ``r:<group>``, one per group.
    """

    summary_columns = (
        "task_x", "task_y", "groups", "runs", "q_between", "p_between", "p_between_adj", "tau2_within", "verdict",
        "basis",
    )  # fmt: skip

    #: The run attribute that makes the groups (e.g. ``family``).
    between: str
    #: The run attribute that tells runs within a group apart (e.g. ``seed``).
    within: str
    #: Level of the test between groups.
    alpha: float
    #: ``effective`` or ``naive``, as for :class:`Comparison`.
    inference: str
    #: Estimator of the within-group τ²: ``PM`` or ``REML``.
    tau2_method: str
    #: The analysis compared, when it was a result rather than a bare frame.
    source: PartialCorrelations | None = None
    #: How ``p_between`` was adjusted over the pairs.
    adjust_pairs: str = "holm"
    #: The test between groups: ``knha`` (F) or ``z`` (χ²).
    test: str = "knha"
    #: What the tests rest on: ``items and runs``, or ``runs only (item noise not included)`` and why.
    basis: str = "runs only (item noise not included)"
    #: Study-wide item resamples behind the tests over items (None for runs only).
    item_resamples: int | None = None

    def _summary(self) -> str:
        groups = f"{self.between} beyond {self.within}"
        adjusted = "not adjusted" if self.adjust_pairs == "none" else f"{self.adjust_pairs} over pairs"
        if self.item_resamples is not None:
            over = f"{self.test} test over items and runs ({self.item_resamples} item resamples)"
        else:
            over = f"tau2 by {self.tau2_method}, {self.test} test; {self.basis}"
        return f": {groups}, {self.table.height} pairs, alpha {self.alpha:g} ({adjusted}), {over}"


@dataclass(frozen=True, repr=False)
class Sensitivity(Result):
    """How far each pair's r depends on the residualizer (:mod:`~ood_store._analysis.sensitivity`).

    One row per (run, task_x, task_y), with the columns of :data:`SENSITIVITY_COLUMNS`.
    """

    summary_columns = ("run", "task_x", "task_y", "n", "r_linear", "r_gam_gcv", "r_gam_reml", "r_range", "fragile")

    #: The analysis, but for its residualizer and smoothing, which vary.
    options: Options
    #: The level at which the adjusted p-values count as significant.
    alpha: float
    #: ``effective`` (``p_eff_adj``) or ``naive`` (``p_adj``).
    inference: str

    def _summary(self) -> str:
        fragile = int(self.table["fragile"].sum() or 0)
        return f": {self.table.height} pairs, {fragile} fragile at alpha {self.alpha:g}"


def partial_frame(data: PartialCorrelations | pl.DataFrame, also: tuple[str, ...] = ()) -> pl.DataFrame:
    """The rows of a partial-correlation result or frame; anything else is an :class:`AnalysisError`.

    The frame must have the columns every consumer reads (run, the pair, n, r,
    the effective n and the adjusted p-values) and those in ``also``.

    Examples
    --------
    >>> partial_frame(pl.DataFrame({"run": ["a"]}))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ood_store._errors.AnalysisError: not a partial-correlation table: no column(s) n, n_eff, p_adj, p_eff_adj, r, ...
    """
    frame = data.table if isinstance(data, PartialCorrelations) else data
    if not isinstance(frame, pl.DataFrame):
        raise AnalysisError(f"expected partial correlations (a result or a DataFrame), got {type(data).__name__}")
    missing = sorted({*_REQUIRED, *also} - set(frame.columns))
    if missing:
        raise AnalysisError(f"not a partial-correlation table: no column(s) {', '.join(missing)}")
    return frame


def saved_rows(result: PartialCorrelations) -> pl.DataFrame:
    """The rows a saved analysis keeps of ``result`` (:data:`SAVED_COLUMNS`)."""
    return partial_frame(result, also=SAVED_COLUMNS).select(SAVED_COLUMNS)


def comparison_table(data: Comparison | pl.DataFrame) -> pl.DataFrame:
    """The rows of a comparison result or frame."""
    frame = data.table if isinstance(data, Comparison) else data
    if not isinstance(frame, pl.DataFrame) or not {"task_x", "task_y", "verdict"} <= set(frame.columns):
        raise AnalysisError("not a comparison across runs (a result of compare)")
    return frame
