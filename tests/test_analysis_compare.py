"""Comparing partial correlations across runs: pooling against hand computations, verdicts on planted data."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from ood_store.analysis import compare, partial_correlations
from ood_store.errors import AnalysisError


def _table(rows: list[tuple[str, float, int]], pair=("hans", "rte"), p_adj=None) -> pl.DataFrame:
    """A hand-made partial-correlation table: (run, r, n) per row, linear fits (edf 2)."""
    n = [row[2] for row in rows]
    return pl.DataFrame(
        {
            "run": [row[0] for row in rows],
            "task_x": [pair[0]] * len(rows),
            "task_y": [pair[1]] * len(rows),
            "n": n,
            "r": [row[1] for row in rows],
            "n_eff": [float(v) for v in n],
            "p_adj": p_adj if p_adj is not None else [1.0] * len(rows),
            "p_eff_adj": p_adj if p_adj is not None else [1.0] * len(rows),
            "edf_x": [2.0] * len(rows),
            "edf_y": [2.0] * len(rows),
        }
    )


def test_pooled_r_equals_a_hand_computed_dersimonian_laird_when_homogeneous():
    rows = [("a", 0.30, 54), ("b", 0.32, 104), ("c", 0.28, 204)]
    out = compare(_table(rows), inference="naive").table.row(0, named=True)
    z = np.arctanh([0.30, 0.32, 0.28])
    v = 1 / (np.array([54, 104, 204]) - 4)  # n - k - 3 with k = 1
    w = 1 / v
    fixed = (w * z).sum() / w.sum()
    q = (w * (z - fixed) ** 2).sum()
    assert out["q"] == pytest.approx(q, rel=1e-9)
    assert out["q_p"] == pytest.approx(stats.chi2.sf(q, 2), rel=1e-9)
    assert q < 2  # homogeneous: tau^2 = 0 and the random-effects mean is the fixed-effect mean
    assert out["tau2"] == pytest.approx(0.0, abs=1e-12)
    assert out["i2"] == 0.0
    assert out["r_pooled"] == pytest.approx(np.tanh(fixed), rel=1e-9)
    se = np.sqrt(1 / w.sum())
    assert out["ci_low"] == pytest.approx(np.tanh(fixed - stats.norm.ppf(0.975) * se), rel=1e-9)
    assert out["ci_high"] == pytest.approx(np.tanh(fixed + stats.norm.ppf(0.975) * se), rel=1e-9)
    assert out["p_pooled"] == pytest.approx(2 * stats.norm.sf(fixed / se), rel=1e-6)
    assert out["verdict"] == "consistently positive"
    assert out["runs"] == 3 and out["n_positive"] == 3 and out["sign_agreement"] == 1.0
    assert [out["r:a"], out["r:b"], out["r:c"]] == [0.30, 0.32, 0.28]


def test_heterogeneity_matches_cochran_q_and_i2():
    rows = [("a", 0.6, 80), ("b", -0.5, 80), ("c", 0.1, 80)]
    out = compare(_table(rows), inference="naive").table.row(0, named=True)
    z = np.arctanh([0.6, -0.5, 0.1])
    w = np.full(3, 80 - 4.0)
    q = (w * (z - (w * z).sum() / w.sum()) ** 2).sum()
    assert out["q"] == pytest.approx(q, rel=1e-9)
    assert out["i2"] == pytest.approx((q - 2) / q, rel=1e-9)
    assert out["tau2"] > 0
    assert out["verdict"] == "model-dependent"  # signs differ and Q is significant
    assert out["n_positive"] == 2 and out["n_negative"] == 1


def test_significant_runs_in_both_directions_are_model_dependent():
    rows = [("a", 0.4, 30), ("b", -0.4, 30)]
    out = compare(_table(rows, p_adj=[0.01, 0.02]), inference="naive").table.row(0, named=True)
    assert (out["n_sig_positive"], out["n_sig_negative"]) == (1, 1)
    assert out["verdict"] == "model-dependent"


def test_weak_mixed_evidence_is_no_evidence_and_one_run_is_too_few():
    out = compare(_table([("a", 0.05, 30), ("b", -0.03, 30)]), inference="naive").table.row(0, named=True)
    assert out["verdict"] == "no evidence"
    one = compare(_table([("a", 0.9, 30)])).table.row(0, named=True)
    assert one["verdict"] == "too few runs" and one["r_pooled"] is None


def test_effective_inference_uses_n_eff():
    table = _table([("a", 0.30, 54), ("b", 0.32, 104)]).with_columns(n_eff=pl.Series([10.0, 20.0]))
    naive = compare(table, inference="naive").table.row(0, named=True)
    effective = compare(table, inference="effective").table.row(0, named=True)
    assert effective["ci_high"] - effective["ci_low"] > naive["ci_high"] - naive["ci_low"]
    z = np.arctanh([0.30, 0.32])
    w = np.array([10 - 4.0, 20 - 4.0])
    assert effective["q"] == pytest.approx((w * (z - (w * z).sum() / w.sum()) ** 2).sum(), rel=1e-9)


def test_planted_model_dependence_is_found_across_simulated_runs():
    """Two families: in one the OOD residuals correlate at +0.7, in the other at -0.7."""
    rng = np.random.default_rng(0)
    frames, families = [], {}
    for i in range(6):
        rho = 0.7 if i < 3 else -0.7
        n = 60
        z = np.sort(rng.uniform(0.4, 0.9, n))
        e = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=n) * 0.02
        noise = rng.normal(size=n) * 0.02
        run = f"run{i}"
        families[run] = "opt" if i < 3 else "olmo"
        values = {"mnli": z, "hans": z + e[:, 0], "rte": 1 - z + e[:, 1], "anli": 0.5 * z + noise}
        frames.append(
            pl.DataFrame(
                {
                    "run": run,
                    "step": np.tile(np.arange(n), 4),
                    "task": np.repeat(list(values), n),
                    "value": np.concatenate(list(values.values())),
                }
            )
        )
    table = partial_correlations(pl.concat(frames), in_domain="mnli").table
    overall = compare(table).table.filter((pl.col("task_x") == "hans") & (pl.col("task_y") == "rte")).row(0, named=True)
    assert overall["verdict"] == "model-dependent"
    attributes = pl.DataFrame({"run": list(families), "family": list(families.values())})
    grouped = compare(table, by=["family"], attributes=attributes).table.filter(
        (pl.col("task_x") == "hans") & (pl.col("task_y") == "rte")
    )
    verdicts = dict(zip(grouped["family"], grouped["verdict"], strict=True))
    assert verdicts == {"opt": "consistently positive", "olmo": "consistently negative"}
    # anli's residuals are independent noise: no verdict of consistency for its pairs
    noise = compare(table).table.filter(pl.col("task_x") == "anli")
    assert noise.height == 2
    assert set(noise["verdict"]) == {"no evidence"}


def test_bad_inputs():
    table = _table([("a", 0.3, 30), ("b", 0.2, 30)])
    with pytest.raises(AnalysisError, match="inference must be one of effective, naive"):
        compare(table, inference="bayes")
    with pytest.raises(AnalysisError, match="not a partial-correlation table"):
        compare(table.drop("n_eff"))
    with pytest.raises(AnalysisError, match="needs the store"):
        compare(table, by=["family"])
    with pytest.raises(AnalysisError, match="no run attribute 'size'"):
        compare(table, by=["size"], attributes=pl.DataFrame({"run": ["a", "b"], "family": ["x", "y"]}))
