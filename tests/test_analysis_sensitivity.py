"""The residualizer sensitivity report: planted fragile and robust pairs, and its agreement with the three analyses."""

from __future__ import annotations

import doctest

import numpy as np
import polars as pl
import pytest

from ood_store._analysis import partial_correlations
from ood_store._analysis import sensitivity as sensitivity_module
from ood_store._analysis.sensitivity import residualizer_sensitivity as sensitivity
from ood_store._errors import AnalysisError


def _frame() -> pl.DataFrame:
    """60 checkpoints. bump_a and bump_b share a non-linear function of z and nothing else: the line leaves it
    in (strongly significant r), the GAM takes it out. lin_a and lin_b share noise beyond a linear trend:
    significant, positive, under every residualizer."""
    n = 60
    rng = np.random.default_rng(5)
    z = np.linspace(0.35, 0.85, n)
    bump = np.sin((z - 0.35) * 2 * np.pi / 0.5 * 1.5)
    shared = rng.normal(size=n)
    columns = {
        "mnli": z,
        "bump_a": bump + 0.1 * rng.normal(size=n),
        "bump_b": bump + 0.1 * rng.normal(size=n),
        "lin_a": 0.5 * z + 0.05 * shared + 0.02 * rng.normal(size=n),
        "lin_b": 1 - 0.3 * z + 0.05 * shared + 0.02 * rng.normal(size=n),
    }
    return pl.DataFrame(
        {
            "step": np.tile(np.arange(n) * 100, len(columns)),
            "task": np.repeat(list(columns), n),
            "value": np.concatenate(list(columns.values())),
        }
    )


def test_planted_fragile_and_robust_pairs():
    # naive inference: the linear residuals of the bumps are one smooth wave, n_eff < 4
    report = sensitivity(_frame(), "mnli", inference="naive").table
    rows = {(r["task_x"], r["task_y"]): r for r in report.iter_rows(named=True)}
    bumps = rows[("bump_a", "bump_b")]
    assert bumps["r_linear"] > 0.8 and bumps["p_linear"] < 0.001
    assert abs(bumps["r_gam_reml"]) < 0.3 and bumps["p_gam_reml"] > 0.05
    assert bumps["significance_differs"] and bumps["fragile"]
    linear = rows[("lin_a", "lin_b")]
    assert min(linear["r_linear"], linear["r_gam_gcv"], linear["r_gam_reml"]) > 0.5
    assert max(linear["p_linear"], linear["p_gam_gcv"], linear["p_gam_reml"]) < 0.05
    assert not linear["sign_differs"] and not linear["significance_differs"] and not linear["fragile"]


def test_the_report_carries_the_three_analyses_numbers():
    frame = _frame()
    report = sensitivity(frame, "mnli", inference="naive", alpha=0.01).table
    assert report.columns == list(sensitivity_module.COLUMNS)
    for name, variant in sensitivity_module.VARIANTS:
        table = partial_correlations(frame, "mnli", **variant).table.sort("run", "task_x", "task_y")
        assert report[f"r_{name}"].to_list() == table["r"].to_list()
        assert report[f"p_{name}"].to_list() == table["p_adj"].to_list()
    r = report.select("r_linear", "r_gam_gcv", "r_gam_reml").to_numpy()
    np.testing.assert_allclose(report["r_range"], r.max(axis=1) - r.min(axis=1))
    p = report.select("p_linear", "p_gam_gcv", "p_gam_reml").to_numpy()
    assert report["significance_differs"].to_list() == [bool(len(set(row < 0.01)) > 1) for row in p]


def test_rows_without_r_have_no_flags_and_options_it_sets_are_refused():
    frame = _frame().filter(pl.col("step") < 700)  # 7 checkpoints: the line works, the GAM needs 8
    report = sensitivity(frame, "mnli", ood=["lin_a", "lin_b"]).table
    row = report.row(0, named=True)
    assert np.isfinite(row["r_linear"]) and np.isnan(row["r_gam_reml"])
    assert row["fragile"] is None and row["sign_differs"] is None and np.isnan(row["r_range"])
    with pytest.raises(AnalysisError, match="residualizer_sensitivity sets residualizer itself"):
        sensitivity(frame, "mnli", residualizer="gam")


def test_docstring_examples_run():
    assert doctest.testmod(sensitivity_module).failed == 0
