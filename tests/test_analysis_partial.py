"""Partial correlations: against pingouin, R's ppcor, planted structure and degenerate inputs."""

from __future__ import annotations

import doctest

import numpy as np
import pandas as pd
import pingouin as pg
import polars as pl
import pytest
from scipy import stats
from statsmodels.tsa.stattools import acf

from ood_store._analysis import inference, partial_correlations
from ood_store._analysis import partial as partial_module
from ood_store._analysis.partial import pairwise_partial
from ood_store._errors import AnalysisError

TASKS = ("mnli", "hans", "rte", "anli", "scitail")


def _frame(columns: dict[str, np.ndarray], run: str | None = None) -> pl.DataFrame:
    n = len(next(iter(columns.values())))
    frame = pl.DataFrame(
        {
            "step": np.tile(np.arange(n) * 100, len(columns)),
            "task": np.repeat(list(columns), n),
            "value": np.concatenate(list(columns.values())),
        }
    )
    return frame if run is None else frame.with_columns(pl.lit(run).alias("run"))


def _random_run(seed: int, n: int = 40) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = np.sort(rng.uniform(0.3, 0.9, n))
    shared = rng.normal(size=n)
    return {
        "mnli": z,
        "hans": 0.5 * z + 0.1 * shared + 0.05 * rng.normal(size=n),
        "rte": -0.3 * z + 0.1 * shared + 0.05 * rng.normal(size=n),
        "anli": rng.normal(size=n) * 0.05 + z**2,
        "scitail": rng.uniform(size=n),
    }


@pytest.fixture(autouse=True)
def _unrounded_pingouin(monkeypatch):
    """pingouin rounds CI95 to 2 decimals for display by default."""
    monkeypatch.setitem(pg.options, "round.column.CI95", None)


def _pingouin(data: dict[str, np.ndarray], x: str, y: str, method: str) -> dict:
    frame = pd.DataFrame({k: data[k] for k in ("mnli", x, y)}).dropna()
    return pg.partial_corr(frame, x=x, y=y, covar="mnli", method=method).iloc[0].to_dict()


@pytest.mark.parametrize("method", ["pearson", "spearman"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_linear_equals_pingouin(seed, method):
    data = _random_run(seed)
    table = partial_correlations(_frame(data), in_domain="mnli", method=method).table
    assert table.height == 6  # 4 OOD tasks: 4 choose 2 pairs
    for row in table.iter_rows(named=True):
        expected = _pingouin(data, row["task_x"], row["task_y"], method)
        assert row["n"] == expected["n"]
        assert row["r"] == pytest.approx(expected["r"], abs=1e-9)
        assert row["p"] == pytest.approx(expected["p_val"], abs=1e-9, rel=1e-9)
        # pingouin rounds its interval to 6 decimals
        assert row["ci_low"] == pytest.approx(expected["CI95"][0], abs=6e-7)
        assert row["ci_high"] == pytest.approx(expected["CI95"][1], abs=6e-7)
        # and by hand: Fisher z with n - k - 3, k = 1
        half = stats.norm.ppf(0.975) / np.sqrt(row["n"] - 4)
        assert row["ci_low"] == pytest.approx(np.tanh(np.arctanh(row["r"]) - half), abs=1e-12)
        assert row["ci_high"] == pytest.approx(np.tanh(np.arctanh(row["r"]) + half), abs=1e-12)
        assert row["dof"] == row["n"] - 3


@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_missing_steps_are_dropped_per_pair_like_pingouin(method):
    data = _random_run(7, n=30)
    data["hans"][[2, 5, 9]] = np.nan
    data["rte"][[5, 20]] = np.nan
    data["mnli"][[0]] = np.nan
    table = partial_correlations(_frame(data), in_domain="mnli", method=method).table
    ns = {(r["task_x"], r["task_y"]): r["n"] for r in table.iter_rows(named=True)}
    assert ns[("hans", "rte")] == 30 - 1 - 4  # steps 0, 2, 5, 9, 20
    assert ns[("anli", "hans")] == 30 - 1 - 3
    assert ns[("anli", "scitail")] == 29
    for row in table.iter_rows(named=True):
        expected = _pingouin(data, row["task_x"], row["task_y"], method)
        assert row["n"] == expected["n"]
        assert row["r"] == pytest.approx(expected["r"], abs=1e-9)
        assert row["p"] == pytest.approx(expected["p_val"], abs=1e-9, rel=1e-9)


def test_null_scores_count_as_missing():
    data = _random_run(8, n=20)
    frame = _frame(data).with_columns(
        pl.when((pl.col("task") == "hans") & (pl.col("step") == 300))
        .then(None)
        .otherwise(pl.col("value"))
        .alias("value")
    )
    table = partial_correlations(frame, in_domain="mnli", ood=["hans", "rte"]).table
    assert table["n"].to_list() == [19]


# R: library(ppcor); pcor(y.data), from the ppcor reference manual's example.
Y_DATA = {
    "hl": [7, 15, 19, 15, 21, 22, 57, 15, 20, 18],
    "disp": [0.000, 0.964, 0.000, 0.000, 0.921, 0.000, 0.000, 1.006, 0.000, 1.011],
    "deg": [9, 2, 3, 4, 1, 3, 1, 3, 6, 1],
    "BC": [1.78e-02, 1.05e-06, 1.37e-05, 7.18e-03, 0, 0, 0, 4.48e-03, 2.10e-06, 0],
}
PPCOR = [("hl", "disp", -0.6720863, 0.06789202), ("hl", "deg", -0.6161163, 0.1038362),
         ("disp", "deg", -0.7215522, 0.04332869), ("deg", "BC", 0.6940953, 0.05615021)]  # fmt: skip


@pytest.mark.parametrize(("x", "y", "r", "p"), PPCOR)
def test_ppcor_reference_values(x, y, r, p):
    controls = [c for c in Y_DATA if c not in (x, y)]
    X = np.column_stack([Y_DATA[x], Y_DATA[y]])
    Z = np.column_stack([Y_DATA[c] for c in controls])
    row = pairwise_partial(X, Z, [x, y]).row(0, named=True)
    assert row["r"] == pytest.approx(r, abs=5e-8)
    assert row["p"] == pytest.approx(p, rel=1e-6)
    assert row["dof"] == 10 - 2 - 2


@pytest.mark.parametrize(
    ("covar", "method", "r", "p"),
    [
        (["cv1"], "pearson", 0.5681692, 0.001303059),
        (["cv1", "cv2"], "pearson", 0.5344372, 0.003392904),
        (["cv1", "cv2", "cv3"], "pearson", 0.4926007, 0.009044164),
        (["cv1", "cv2", "cv3"], "spearman", 0.5209208, 0.005336187),
        (["cv1"], "spearman", 0.5784854, 0.001011799),
    ],
)
def test_pingouin_partial_corr_dataset(covar, method, r, p):
    data = pg.read_dataset("partial_corr")
    table = pairwise_partial(data[["x", "y"]].to_numpy(), data[covar].to_numpy(), ["x", "y"], method=method)
    row = table.row(0, named=True)
    assert row["n"] == 30
    assert row["r"] == pytest.approx(r, abs=5e-8)
    assert row["p"] == pytest.approx(p, rel=1e-6)


def test_planted_correlation_is_recovered_within_its_interval():
    """40 simulated runs whose OOD residuals correlate at rho = 0.6: the 95% interval covers it in most."""
    rho, n, runs = 0.6, 120, 40
    rng = np.random.default_rng(42)
    frames, covered = [], 0
    for i in range(runs):
        z = np.sort(rng.uniform(0.4, 0.9, n))
        e = rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], size=n) * 0.02
        frames.append(_frame({"mnli": z, "hans": 0.8 * z + e[:, 0], "rte": 1.5 - z + e[:, 1]}, run=f"run{i:02d}"))
    table = partial_correlations(pl.concat(frames), in_domain="mnli").table
    assert table.height == runs
    covered = int(((table["ci_low"] < rho) & (rho < table["ci_high"])).sum())
    # Binomial(40, 0.95): P(covered <= 33) < 0.01
    assert covered >= 34
    assert (table["r"] > 0.3).all()
    assert table["r"].mean() == pytest.approx(rho, abs=0.05)


def test_effective_n_keeps_false_positives_near_nominal_for_autocorrelated_curves():
    """Independent AR(1) residual series: the naive p rejects far too often, p_eff about as often as it should."""
    n, runs, phi = 60, 300, 0.85
    rng = np.random.default_rng(3)
    X = np.zeros((runs, n, 2))
    shocks = rng.normal(size=(runs, n, 2))
    for t in range(1, n):
        X[:, t] = phi * X[:, t - 1] + shocks[:, t]
    z = np.linspace(0, 1, n)
    frames = [_frame({"mnli": z, "a": z + X[i, :, 0], "b": z + X[i, :, 1]}, run=f"r{i:03d}") for i in range(runs)]
    table = partial_correlations(pl.concat(frames), in_domain="mnli", adjust="none").table
    naive = float((table["p"] < 0.05).mean())
    honest = float((table["p_eff"] < 0.05).mean())
    assert naive > 0.25  # spurious correlation of trending series
    assert honest < 0.12
    assert (table["n_eff"] < n).all()


def test_gam_removes_a_nonlinear_trend_that_linear_leaves_in():
    n = 80
    rng = np.random.default_rng(5)
    z = np.linspace(0.35, 0.85, n)
    bump = np.sin((z - 0.35) * 2 * np.pi / 0.5 * 1.5)  # one and a half periods over the range of z
    data = {"mnli": z, "hans": bump + 0.1 * rng.normal(size=n), "rte": bump + 0.1 * rng.normal(size=n)}
    linear = partial_correlations(_frame(data), in_domain="mnli").table.row(0, named=True)
    gam = partial_correlations(_frame(data), in_domain="mnli", residualizer="gam").table.row(0, named=True)
    assert linear["r"] > 0.8  # the shared non-linear trend is still in the linear residuals
    assert abs(gam["r"]) < 0.3
    assert gam["edf_x"] > 3 and gam["edf_y"] > 3
    edf = max(gam["edf_x"], gam["edf_y"])
    assert gam["dof"] == pytest.approx(n - 1 - edf)
    half = stats.norm.ppf(0.975) / np.sqrt(n - edf - 2)
    assert gam["ci_high"] == pytest.approx(np.tanh(np.arctanh(gam["r"]) + half), abs=1e-12)
    t = gam["r"] * np.sqrt(gam["dof"] / (1 - gam["r"] ** 2))
    assert gam["p"] == pytest.approx(2 * stats.t.sf(abs(t), gam["dof"]), rel=1e-9)


def test_gam_on_a_straight_line_is_close_to_linear():
    data = _random_run(11, n=60)
    data["anli"] = 0.2 + 0.5 * data["mnli"] + np.random.default_rng(0).normal(size=60) * 0.05
    linear = partial_correlations(_frame(data), in_domain="mnli", ood=["anli", "scitail"]).table
    gam = partial_correlations(_frame(data), in_domain="mnli", ood=["anli", "scitail"], residualizer="gam").table
    assert gam["r"][0] == pytest.approx(linear["r"][0], abs=0.1)


def test_constant_in_domain_series_gives_nan_with_reason():
    data = _random_run(1, n=12)
    data["mnli"] = np.full(12, 0.5)
    table = partial_correlations(_frame(data), in_domain="mnli").table
    assert table["r"].is_nan().all()
    assert set(table["reason"]) == {"the in-domain score is constant"}


def test_constant_ood_series_gives_nan_for_its_pairs_only():
    data = _random_run(1, n=12)
    data["rte"] = np.full(12, 0.61)
    table = partial_correlations(_frame(data), in_domain="mnli").table
    with_rte = table.filter((pl.col("task_x") == "rte") | (pl.col("task_y") == "rte"))
    assert with_rte.height == 3
    assert with_rte["r"].is_nan().all() and with_rte["p"].is_nan().all() and with_rte["ci_low"].is_nan().all()
    assert set(with_rte["reason"]) == {"rte is constant"}
    others = table.filter((pl.col("task_x") != "rte") & (pl.col("task_y") != "rte"))
    assert others["r"].is_finite().all() and others["reason"].is_null().all()


def test_series_explained_by_the_in_domain_score_gives_nan():
    data = _random_run(1, n=12)
    data["anli"] = 2 * data["mnli"] + 1
    table = partial_correlations(_frame(data), in_domain="mnli", ood=["anli", "hans"]).table
    assert np.isnan(table["r"][0])
    assert table["reason"][0] == "anli is fully explained by the in-domain score"


@pytest.mark.parametrize(("n", "finite"), [(4, False), (5, True)])
def test_too_few_checkpoints_is_n_at_most_k_plus_3(n, finite):
    data = _random_run(2, n=n)
    row = partial_correlations(_frame(data), in_domain="mnli", ood=["hans", "rte"]).table.row(0, named=True)
    assert row["n"] == n
    assert np.isfinite(row["r"]) == finite
    assert (row["reason"] is None) == finite
    if not finite:
        assert row["reason"] == "too few checkpoints: n=4, the linear residualizer needs at least 5"


def test_gam_needs_eight_checkpoints():
    row = partial_correlations(_frame(_random_run(2, n=7)), in_domain="mnli", residualizer="gam").table.row(
        0, named=True
    )
    assert np.isnan(row["r"])
    assert row["reason"] == "too few checkpoints: n=7, the gam residualizer needs at least 8"


def test_no_overlapping_steps():
    data = _random_run(2, n=10)
    data["hans"][:5] = np.nan
    data["rte"][5:] = np.nan
    row = partial_correlations(_frame(data), in_domain="mnli", ood=["hans", "rte"]).table.row(0, named=True)
    assert row["n"] == 0 and np.isnan(row["r"])
    assert row["reason"] == "no step has both tasks and the in-domain score"


def test_a_run_without_one_task_gets_nan_rows():
    a = _frame(_random_run(1, n=10), run="a")
    b = _frame(_random_run(2, n=10), run="b").filter(pl.col("task") != "rte")
    table = partial_correlations(pl.concat([a, b]), in_domain="mnli").table
    b_rte = table.filter((pl.col("run") == "b") & ((pl.col("task_x") == "rte") | (pl.col("task_y") == "rte")))
    assert b_rte.height == 3 and (b_rte["n"] == 0).all()
    assert table.filter(pl.col("run") == "a")["r"].is_finite().all()


def test_adjustment_is_within_each_run_and_matches_statsmodels():
    from statsmodels.stats.multitest import multipletests

    frame = pl.concat([_frame(_random_run(s), run=f"r{s}") for s in (1, 2)])
    for method in ("holm", "fdr_bh", "bonferroni"):
        table = partial_correlations(frame, in_domain="mnli", adjust=method).table
        for run in ("r1", "r2"):
            part = table.filter(pl.col("run") == run)
            expected = multipletests(part["p"].to_numpy(), method=method)[1]
            np.testing.assert_allclose(part["p_adj"].to_numpy(), expected, rtol=1e-12)
    none = partial_correlations(frame, in_domain="mnli", adjust="none").table
    assert none["p_adj"].to_list() == none["p"].to_list()


def test_lag1_autocorrelation_matches_statsmodels():
    rng = np.random.default_rng(0)
    E = rng.normal(size=(50, 3)).cumsum(axis=0)
    expected = [acf(E[:, j], nlags=1, fft=False)[1] for j in range(3)]
    np.testing.assert_allclose(inference.lag1_autocorrelation(E), expected, rtol=1e-12)


def test_effective_n_bretherton():
    # n = 50, r1 = r2 = 0.8: 50 * 0.36 / 1.64
    assert inference.effective_n(np.array([50.0]), np.array([0.8]), np.array([0.8]))[0] == pytest.approx(10.97561, 1e-5)
    assert inference.effective_n(np.array([50.0]), np.array([0.8]), np.array([-0.2]))[0] == 50.0


def test_effective_n_and_p_eff_columns():
    data = _random_run(4, n=40)
    row = partial_correlations(_frame(data), in_domain="mnli", ood=["hans", "rte"]).table.row(0, named=True)
    e = {}
    for task in ("hans", "rte"):
        slope, intercept = np.polyfit(data["mnli"], data[task], 1)
        e[task] = data[task] - (slope * data["mnli"] + intercept)
    r1, r2 = (acf(e[t], nlags=1, fft=False)[1] for t in ("hans", "rte"))
    assert row["acf1_x"] == pytest.approx(r1, abs=1e-9) and row["acf1_y"] == pytest.approx(r2, abs=1e-9)
    n_eff = 40 * (1 - r1 * r2) / (1 + r1 * r2) if r1 * r2 > 0 else 40
    assert row["n_eff"] == pytest.approx(n_eff, rel=1e-9)
    t = row["r"] * np.sqrt((n_eff - 3) / (1 - row["r"] ** 2))
    assert row["p_eff"] == pytest.approx(2 * stats.t.sf(abs(t), n_eff - 3), rel=1e-9)


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    frame = _frame(_random_run(9, n=50))
    one = partial_correlations(frame, in_domain="mnli", bootstrap=300, seed=1).table
    again = partial_correlations(frame, in_domain="mnli", bootstrap=300, seed=1).table
    other = partial_correlations(frame, in_domain="mnli", bootstrap=300, seed=2).table
    assert one["boot_ci_low"].to_list() == again["boot_ci_low"].to_list()
    assert one["boot_ci_low"].to_list() != other["boot_ci_low"].to_list()
    assert (one["boot_ci_low"] < one["boot_ci_high"]).all()
    strong = one.filter(pl.col("r").abs() > 0.5)
    assert strong.height > 0
    assert ((strong["boot_ci_low"] <= strong["r"]) & (strong["r"] <= strong["boot_ci_high"])).all()
    assert (one["block_length"] >= 1).all()
    fixed = partial_correlations(
        frame, in_domain="mnli", bootstrap=50, block_length=5, bootstrap_kind="stationary"
    ).table
    assert set(fixed["block_length"]) == {5}


def test_bootstrap_interval_widens_for_autocorrelated_residuals():
    """Block resampling keeps autocorrelation: its interval is wider than Fisher's, which assumes independence."""
    n, phi = 80, 0.9
    rng = np.random.default_rng(12)
    e = np.zeros((n, 2))
    for t in range(1, n):
        e[t] = phi * e[t - 1] + rng.normal(size=2)
    z = np.linspace(0, 1, n)
    frame = _frame({"mnli": z, "a": z + e[:, 0], "b": z + e[:, 1]})
    row = partial_correlations(frame, in_domain="mnli", bootstrap=500, seed=0).table.row(0, named=True)
    assert row["block_length"] > 1
    assert row["boot_ci_high"] - row["boot_ci_low"] > row["ci_high"] - row["ci_low"]


def test_bad_options_are_analysis_errors():
    frame = _frame(_random_run(1))
    for kwargs, message in [
        ({"method": "kendall"}, "method must be one of pearson, spearman"),
        ({"residualizer": "loess"}, "residualizer must be one of linear, gam"),
        ({"adjust": "hs"}, "adjust must be one of holm, fdr_bh, bonferroni, none"),
        ({"ood": ["mnli"]}, "'mnli' is the in-domain task"),
        ({"bootstrap": -1}, "bootstrap must be 0"),
        ({"confidence": 1.5}, "confidence must be between 0 and 1"),
    ]:
        with pytest.raises(AnalysisError, match=message):
            partial_correlations(frame, in_domain="mnli", **kwargs)
    # a task the frame does not have at all: the close names it has (difflib, as evaluate's hint)
    with pytest.raises(AnalysisError, match=r"^in_domain: no task 'nli' in the scores; did you mean mnli, anli\?$"):
        partial_correlations(frame, in_domain="nli")
    with pytest.raises(AnalysisError, match=r"^ood: no task 'rt' in the scores; did you mean rte\?$"):
        partial_correlations(frame, in_domain="mnli", ood=["rt", "hans"])
    with pytest.raises(AnalysisError, match="task 'hans' has no 'acc' scores"):
        partial_correlations(frame.with_columns(metric=pl.lit("f1")).vstack(frame.with_columns(metric=pl.lit("acc"))
                             .filter(pl.col("task") != "hans")), in_domain="mnli", ood=["hans", "rte"])  # fmt: skip
    with pytest.raises(AnalysisError, match=r"^in_domain: not given \(a frame of scores has no run attributes"):
        partial_correlations(frame)
    with pytest.raises(AnalysisError, match="no column"):
        partial_correlations(frame.drop("value"), in_domain="mnli")


def test_pandas_frames_are_accepted():
    data = _random_run(1)
    from_pandas = partial_correlations(_frame(data).to_pandas(), in_domain="mnli").table
    assert from_pandas["r"].to_list() == partial_correlations(_frame(data), in_domain="mnli").table["r"].to_list()


def test_docstring_examples_run():
    assert doctest.testmod(partial_module).failed == 0


@pytest.mark.parametrize("method", ["holm", "fdr_bh", "bonferroni"])
def test_adjustments_equal_statsmodels_with_ties_and_extremes(method):
    """SciPy's Benjamini-Hochberg and the numpy Holm and Bonferroni against statsmodels' multipletests."""
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(0)
    cases = [rng.uniform(size=50), rng.uniform(size=200) ** 4, np.array([0.01, 0.01, 0.04, 0.5, 0.5, 1.0, 0.0])]
    cases += [np.round(rng.uniform(size=int(rng.integers(1, 40))) ** 3, 2) for _ in range(200)]  # ties, lengths 1-39
    for p in cases:
        np.testing.assert_allclose(inference.adjust(p, method), multipletests(p, method=method)[1], rtol=1e-15)
    with_nan = np.array([0.01, np.nan, 0.03])
    expected = multipletests(with_nan[[0, 2]], method=method)[1]
    np.testing.assert_allclose(inference.adjust(with_nan, method), [expected[0], np.nan, expected[1]])
    assert np.isnan(inference.adjust(np.array([np.nan, np.nan]), method)).all()


def test_importing_the_analysis_imports_neither_statsmodels_nor_pandas():
    """Issue 21: the analysis layer needs neither; arch (the bootstrap extra), which requires both, is imported
    only by a bootstrap."""
    import subprocess
    import sys

    code = (
        "import sys, ood_store._analysis, ood_store._analysis.partial\n"
        "print(sorted(m for m in ('statsmodels', 'pandas', 'arch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_bootstrap_without_arch_is_one_line_naming_the_extra():
    """arch is the optional bootstrap extra: without it a bootstrap stops before anything is read."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['arch'] = None  # as if not installed: importing it raises ImportError\n"
        "import polars as pl\n"
        "from ood_store._analysis import partial_correlations\n"
        "from ood_store._errors import AnalysisError\n"
        "frame = pl.DataFrame({'step': list(range(10)) * 3, 'task': ['mnli'] * 10 + ['a'] * 10 + ['b'] * 10,\n"
        "                      'value': [0.1 * i for i in range(10)] + [0.1 * i * i for i in range(20)]})\n"
        "partial_correlations(frame, in_domain='mnli')  # no bootstrap: no arch needed\n"
        "try:\n"
        "    partial_correlations(frame, in_domain='mnli', bootstrap=10)\n"
        "except AnalysisError as error:\n"
        "    print(error)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == 'bootstrap: the block bootstrap needs the arch package: pip install -e ".[bootstrap]"'


def test_block_length_of_a_residual_series_without_variance_warns_nothing():
    """arch divides by zero on such a series (RuntimeWarning); the analysis leaves it out instead of printing."""
    import warnings

    from ood_store._analysis import bootstrap

    walk = np.random.default_rng(0).normal(size=30).cumsum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bootstrap.block_length(np.c_[np.zeros(30), walk], "circular") == bootstrap.block_length(
            walk[:, None], "circular"
        )
        assert bootstrap.block_length(np.zeros((30, 2)), "circular") == 1
        partial_correlations(_frame(_random_run(9, n=30)), in_domain="mnli", bootstrap=20, residualizer="gam")


@pytest.mark.parametrize(("bootstrap", "planned"), [(0, 1), (120, 1 + 3)])
def test_progress_is_reported_per_run_and_per_chunk_of_resamples(bootstrap, planned):
    data = _random_run(3, n=30)
    data["rte"][:4] = np.nan  # two patterns of missing steps: two groups of pairs share the run's progress
    steps: list[float] = []
    options = partial_module.Options(in_domain="", bootstrap=bootstrap, residualizer="gam")
    X = np.column_stack([data[t] for t in TASKS[1:]])
    partial_module._pairs(data["mnli"][:, None], X, list(TASKS[1:]), options, "run", steps.append)
    assert sum(steps) == pytest.approx(planned)
    assert len(steps) == 2 * planned  # each group reports its share
