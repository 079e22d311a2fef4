"""Verdicts over items and runs (issue 37): the tetrad statistic against brute force, its level and power on
planted studies whose runs share their items, the crossed variance against a hand computation, and compare's
basis on stores with and without per-sample rows."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm

import ood_store
from conftest import benchmark
from ood_store._analysis import crossed, studysim
from ood_store._analysis.compare import NOISE_VERDICT, compare
from ood_store._analysis.items import RunItems
from ood_store._errors import AnalysisError

FINDINGS = ("consistently positive", "consistently negative", "mixed", "model-dependent")


def _brute_tetrad(control: np.ndarray, x: np.ndarray, y: np.ndarray, copies: np.ndarray) -> tuple[float, float]:
    """tau and V by explicit loops over the pairs of distinct drawn items (copies of one item are not distinct)."""
    drawn = np.repeat(np.arange(control.shape[0]), copies)  # the drawn items, with repeats
    T = control.shape[1]

    def cov(a, b):
        return float(((a - a.mean()) * (b - b.mean())).sum() / T)

    pairs = [(i, j) for i, j in itertools.product(range(drawn.size), repeat=2) if drawn[i] != drawn[j]]
    V = np.mean([cov(control[drawn[i]], control[drawn[j]]) for i, j in pairs])
    C = np.mean([cov(x, control[drawn[i]]) * cov(y, control[drawn[j]]) for i, j in pairs])
    return cov(x, y) * V - C, V


def test_tetrad_equals_its_definition_over_pairs_of_distinct_items():
    rng = np.random.default_rng(4)
    control = (rng.random((6, 9)) < 0.5).astype(float)
    ood = rng.random((9, 2))
    tau, scale, _ = crossed.tetrads(control, ood)
    expected_tau, V = _brute_tetrad(control, ood[:, 0], ood[:, 1], np.ones(6, dtype=int))
    assert tau[0, 1] == pytest.approx(expected_tau, rel=1e-9, abs=1e-14)
    # the scale: V times the residual standard deviations of the linear fits on the in-domain mean
    z = control.mean(axis=0)
    residual = [np.var(ood[:, j] - np.polyval(np.polyfit(z, ood[:, j], 1), z)) for j in (0, 1)]
    assert scale[0, 1] == pytest.approx(V * np.sqrt(residual[0] * residual[1]), rel=1e-5)
    # resampled: an item drawn twice counts twice, but never as a pair with its own copy
    weights = np.array([[2, 0, 1, 3, 0, 0], [1, 1, 1, 1, 1, 1]])
    drawn, _, _ = crossed.tetrads(control, np.stack([ood, ood]), weights)
    for b in range(2):
        expected, _ = _brute_tetrad(control, ood[:, 0], ood[:, 1], weights[b])
        assert drawn[b, 0, 1] == pytest.approx(expected, rel=1e-9, abs=1e-14)


def test_crossed_variance_is_the_runs_spread_plus_the_shared_items_covariance():
    """By hand: tau/scale per run, u = tau - r scale, spread = var(u) / R, C = mean off-diagonal covariance."""
    rng = np.random.default_rng(2)
    R, B = 6, 3000
    tau, scale = rng.normal(0.2, 0.1, R), rng.uniform(0.5, 1.5, R)
    common = rng.normal(0, 0.03, (B, 1))
    draws_tau = tau + common + rng.normal(0, 0.05, (B, R))  # a part shared by the runs, a part of their own
    draws_scale = np.broadcast_to(scale, (B, R))
    fit = crossed.crossed(tau, scale, draws_tau, draws_scale, np.full(R, 0.01))
    ratio = tau.sum() / scale.sum()
    u = tau - ratio * scale
    u_draws = draws_tau - ratio * draws_scale
    C = np.cov(u_draws, rowvar=False)
    shared = (C.sum() - np.trace(C)) / (R * (R - 1))
    assert fit.estimate == pytest.approx(ratio)
    assert fit.item_covariance * scale.mean() ** 2 == pytest.approx(shared)
    assert shared == pytest.approx(0.03**2, rel=0.15)  # what was planted
    assert fit.variance == pytest.approx((u.var(ddof=1) / R + shared) / scale.mean() ** 2)
    low, high = fit.interval(0.05)
    assert low < fit.estimate < high


def test_interval_at_the_boundary_is_bounded_and_holds_its_estimate():
    tau = np.array([0.98, 0.99, 0.995, 0.97])
    scale = np.ones(4)
    draws = tau + np.random.default_rng(0).normal(0, 0.002, (500, 4))
    fit = crossed.crossed(tau, scale, draws, np.ones((500, 4)), np.full(4, 1e-4))
    low, high = fit.interval(0.05)
    assert 0.9 < low <= fit.estimate <= high <= 1.0


def _study(seed: int, n: int, *, signal: float = 0.3, shared: float = 0.0, runs: int = 8, **options):
    rng = np.random.default_rng([seed, n, int(100 * shared), int(100 * signal)])
    study = studysim.planted_study(rng, runs=runs, items=(n, 300, 300), signal=signal, shared=shared, **options)
    evidence = crossed.item_evidence(
        {run: RunItems(study.steps, m) for run, m in study.runs.items()}, ["z", "x", "y"], [("x", "y")],
        resamples=100, seed=seed,
    )  # fmt: skip
    return crossed.crossed(evidence.tau[:, 0], evidence.scale[:, 0], evidence.draws_tau[:, :, 0],
                           evidence.draws_scale[:, :, 0], evidence.within[:, 0])  # fmt: skip


@pytest.mark.parametrize(("n", "signal", "drift"), [(60, 0.3, 0.0), (60, 0.0, 0.0), (1000, 0.3, 0.0), (500, 0.3, 0.8)])
def test_the_pooled_test_keeps_its_level_on_planted_nulls_with_shared_items(n, signal, drift):
    """X and Y independent given ability (own signals, or none: pure functions of ability), the same items in
    every run; 160 studies. The level is 0.05: the share of rejections must be within the binomial 99 % bound
    (0.05 + 2.58 sqrt(0.05 · 0.95 / 160) = 0.094). benchmarks/crossed_verdicts.py measures it on 400 studies
    per setting (benchmarks/results/crossed_verdicts.csv). ``drift``: X's and Y's own signals an AR(1) over the
    checkpoints (lag-1 correlation 0.8), where a variance from each run's checkpoints (a jackknife over blocks
    of 3) rejected 10 % of 300 planted nulls at 5 % (docs/explanation/statistics.md) and the runs' spread, which
    counts each run once, keeps its level (benchmarks/results/crossed_variance.csv)."""
    fits = [_study(seed, n, signal=signal, signal_persistence=drift) for seed in range(160)]
    p = np.array([fit.pvalue for fit in fits])
    assert np.isfinite(p).all()
    assert (p < 0.05).mean() <= 0.094
    for fit in fits:  # every interval holds its estimate, at every level printed
        for alpha in (0.05, 0.025, 0.001):
            low, high = fit.interval(alpha)
            assert -1 <= low <= fit.estimate <= high <= 1


def test_planted_signals_drift_over_training_when_asked():
    """``signal_persistence``: X's and Y's own signals an AR(1) over the checkpoints. With flat ability and
    20,000 items a testset (item noise about 0.004 against a signal of 0.25 on the score), X - Y is nearly the
    difference of the two signals, so its lag-1 autocorrelation over the 30 checkpoints is near the planted 0.8
    (less the downward bias of a short series' estimate, about (1 + 4 · 0.8) / 30 = 0.14), and near 0 without it
    (-1/30)."""

    def lag1(persistence: float) -> float:
        rng = np.random.default_rng(3)
        study = studysim.planted_study(rng, runs=6, items=(50, 20000, 20000), signal=1.0, span=0.0,
                                       signal_persistence=persistence)  # fmt: skip
        values = []
        for _, x, y in study.runs.values():
            d = x.mean(axis=0) - y.mean(axis=0)
            d = d - d.mean()
            values.append(float((d[1:] * d[:-1]).sum() / (d * d).sum()))
        return float(np.mean(values))

    assert lag1(0.8) > 0.5
    assert abs(lag1(0.0)) < 0.2
    with pytest.raises(ValueError, match="signal_persistence must be"):
        studysim.planted_study(np.random.default_rng(0), runs=2, items=(5, 5, 5), signal_persistence=1.0)


def test_residual_lag1_is_statsmodels_acf_of_the_residuals():
    from statsmodels.tsa.stattools import acf

    rng = np.random.default_rng(8)
    matrices = [(rng.random((n, 25)) < np.linspace(0.2, 0.8, 25)).astype(float) for n in (30, 40, 50)]
    z = matrices[0].mean(axis=0)
    expected = []
    for Y in matrices[1:]:
        fit = sm.OLS(Y.mean(axis=0), sm.add_constant(z)).fit()
        expected.append(acf(fit.resid, nlags=1, fft=False)[1])
    assert crossed.residual_lag1(matrices) == pytest.approx(expected, rel=1e-10)


def test_block_length_by_hand_and_for_a_constant_residual():
    """The median product 0.6 · 0.6 = 0.36 asks for blocks of 2 · 0.36 / (0.05 · (1 - 0.1296)) = 16.5, so 17 of 100
    checkpoints (5 blocks allow up to 20), and 12 of 60 (5 blocks of 12); a constant residual (NaN) does not drift."""
    lag1 = np.array([[0.6, 0.6, np.nan], [0.6, 0.6, np.nan], [0.7, 0.5, np.nan]])
    pairs = (np.array([0, 0]), np.array([1, 2]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert crossed.block_length(lag1, pairs, 100).tolist() == [17, 3]
        assert crossed.block_length(lag1, pairs, 60).tolist() == [12, 3]


def test_heterogeneity_keeps_its_level_when_the_signals_drift_over_training():
    """X's and Y's own signals an AR(1) of 0.8 over the checkpoints, 500 in-domain items, 120 planted nulls:
    Cochran's Q over items calls at most the binomial 99 % bound (0.05 + 2.58 sqrt(0.05 · 0.95 / 120) = 0.101)
    heterogeneous at 5 %. With blocks of 3 checkpoints throughout it called 15 % of these same studies
    heterogeneous (18 of 120; a false 'model-dependent'); blocks of 6 everywhere, 5.8 %."""
    q_p, blocks = [], []
    for seed in range(120):
        rng = np.random.default_rng([seed, 500, 0, 30])
        study = studysim.planted_study(rng, runs=8, items=(500, 300, 300), signal=0.3, signal_persistence=0.8)
        evidence = crossed.item_evidence({run: RunItems(study.steps, m) for run, m in study.runs.items()},
                                         ["z", "x", "y"], [("x", "y")], resamples=10, seed=seed)  # fmt: skip
        fit = crossed.crossed(evidence.tau[:, 0], evidence.scale[:, 0], evidence.draws_tau[:, :, 0],
                              evidence.draws_scale[:, :, 0], evidence.within[:, 0])  # fmt: skip
        q_p.append(fit.q_p)
        blocks.append(int(evidence.blocks[0]))
    assert np.mean(np.array(q_p) < 0.05) <= 0.101
    assert np.median(blocks) > crossed.JACKKNIFE_BLOCK  # the drift asked for longer blocks


def test_a_planted_shared_signal_is_found():
    """A shared signal of partial correlation 0.8 with 500 in-domain items: the pooled test finds it in
    nearly every study (benchmarks/results/crossed_verdicts.csv: the verdicts' power at each size)."""
    p = np.array([_study(seed, 500, shared=0.8).pvalue for seed in range(40)])
    assert (p < 0.05).mean() >= 0.9


def test_a_pair_related_only_through_ability_is_not_called_consistent():
    """The issue's case: X and Y related only through ability, 60 in-domain items, the same items in every run.
    Over runs only the naive r is 'consistently positive' (the control's noise); over items and runs the verdict
    says the control's noise could produce it."""
    rng = np.random.default_rng(11)
    study = studysim.planted_study(rng, runs=8, items=(60, 400, 400), signal=0.3)
    scores, items = studysim.study_frames(study, ("mnli", "hans", "rte"))
    analysis = ood_store.partial_correlations(scores, in_domain="mnli")
    runs_only = compare(analysis).table.row(0, named=True)
    both = compare(analysis, items=items, item_resamples=200).table.row(0, named=True)
    assert runs_only["verdict"] == "consistently positive" and runs_only["r_pooled"] > 0.3
    assert runs_only["basis"] == "runs only (item noise not included)"
    assert both["verdict"] == NOISE_VERDICT and both["basis"] == "items and runs"
    assert both["ci_low_adj"] <= 0 <= both["ci_high_adj"]
    assert both["r_naive"] == pytest.approx(runs_only["r_pooled"])
    # the r the item noise alone gives, computed from the items' error variances, is near the naive r
    assert both["r_noise"] == pytest.approx(runs_only["r_pooled"], abs=0.25) and both["noise_could_produce"]


@pytest.fixture(scope="module")
def samples_db(tmp_path_factory):
    """Four planted runs sharing their items (12 checkpoints; 40, 60 and 60 items) ingested with their samples."""
    db, _ = _samples_store(tmp_path_factory.mktemp("crossed"), 5, runs=4, checkpoints=12, items=(40, 60, 60))
    return db


def _samples_store(folder, seed: int, **design):
    """A planted study (``design``: runs, checkpoints, items) written as lm-eval files with their samples and
    ingested into folder/samples.duckdb; the store's path and the study."""
    from test_analysis_items import _write_run

    study = studysim.planted_study(np.random.default_rng(seed), signal=0.3, **design)
    for run, matrices in study.runs.items():
        _write_run(folder / "files", run, matrices)
    db = folder / "samples.duckdb"
    with ood_store.open(db) as store:
        assert store.ingest([folder / "files"]).ok
    return db, study


def test_default_compare_on_a_store_with_samples_is_over_items_and_says_so(samples_db, runner):
    from ood_store._cli import main

    with ood_store.open(samples_db, read_only=True) as store:
        result = ood_store.partial_correlations(store, "mnli")
        comparison = ood_store.compare(result)  # the store the analysis was read from, still open
        assert comparison.basis == "items and runs" and comparison.item_resamples == crossed.RESAMPLES
        assert comparison.table["basis"].to_list() == ["items and runs"]
        assert "verdicts over items and runs" in repr(comparison)
        asked = ood_store.compare(result, item_inference="runs")
        assert asked.table["basis"].to_list() == ["runs only (item noise not included)"]
        assert asked.basis.endswith("as asked")
    closed = ood_store.compare(result)
    assert closed.basis.startswith("runs only (item noise not included): the analysis' store is closed")
    printed = runner.invoke(main, ["--db", str(samples_db), "compare", "--in-domain", "mnli", "--format", "csv"])
    assert printed.exit_code == 0, printed.output
    rows = pl.read_csv(printed.stdout.encode() if hasattr(printed, "stdout") else printed.output.encode())
    assert rows["basis"].to_list() == ["items and runs"]


def _noise_r_by_hand(rows: pl.DataFrame, tasks: list[str]) -> float:
    """The naive partial r the testsets' noise alone gives one run: the noise-free covariance (the error variances,
    mean stderr², off the diagonal) with the OOD pair's partial covariance set to 0, the errors added back."""
    wide = rows.pivot(on="task", index="step", values="value").sort("step")
    matrix = wide.select(tasks).to_numpy()
    error = rows.group_by("task").agg((pl.col("stderr") ** 2).mean())
    e = np.array([error.filter(pl.col("task") == t)["stderr"][0] for t in tasks])
    c = np.cov(matrix, rowvar=False, bias=True) - np.diag(e)
    c[1, 2] = c[2, 1] = c[0, 1] * c[0, 2] / c[0, 0]
    c += np.diag(e)
    r = c / np.sqrt(np.outer(np.diag(c), np.diag(c)))
    return float((r[1, 2] - r[0, 1] * r[0, 2]) / np.sqrt((1 - r[0, 1] ** 2) * (1 - r[0, 2] ** 2)))


def test_without_samples_compare_says_item_noise_is_not_included_and_what_the_noise_could_do(analysis_db, runner):
    """The Pythia store has no per-sample rows: runs-only verdicts, and r_noise from the stored standard errors,
    checked by hand (:func:`_noise_r_by_hand` per run, pooled as r is: tanh of the mean Fisher z)."""
    from ood_store._cli import main

    tasks = ["lambada_openai", "arc_easy", "piqa"]
    with ood_store.open(analysis_db, read_only=True) as store:
        result = ood_store.partial_correlations(store, "lambada_openai", tasks[1:])
        comparison = ood_store.compare(result)
        by_hand = []
        for run in result.runs:
            rows = store.query(
                "SELECT step, task, value, stderr FROM scores WHERE metric = 'acc' AND filter = 'none' "
                f"AND run = '{run}' AND task IN ('lambada_openai', 'arc_easy', 'piqa')"
            )
            by_hand.append(_noise_r_by_hand(rows, tasks))
        with pytest.raises(AnalysisError, match="no verdicts over items: no per-sample rows"):
            ood_store.compare(result, item_inference="items")
    row = comparison.table.row(0, named=True)
    assert row["basis"] == "runs only (item noise not included)"
    assert "no per-sample rows of every task in every run" in comparison.basis
    expected = float(np.tanh(np.mean(np.arctanh(by_hand))))
    assert row["r_noise"] == pytest.approx(expected, rel=1e-6)
    low, high = row["ci_low_adj"], row["ci_high_adj"]
    assert row["noise_could_produce"] == (low <= max(0.0, expected) and high >= min(0.0, expected))
    refused = runner.invoke(main, ["--db", str(analysis_db), "compare", "--in-domain", "lambada_openai", "--ood",
                                   "arc_easy,piqa", "--item-inference", "items"])  # fmt: skip
    assert refused.exit_code != 0 and "Traceback" not in refused.output
    assert "--item-inference: no verdicts over items: no per-sample rows" in refused.output


@pytest.fixture(scope="module")
def saved_samples_db(samples_db, tmp_path_factory):
    """The samples store, copied, with its analysis saved as 'planted'."""
    import shutil

    db = tmp_path_factory.mktemp("saved") / "saved.duckdb"
    shutil.copy(samples_db, db)
    with ood_store.open(db) as store:
        store.save_analysis("planted", ood_store.partial_correlations(store, "mnli"))
    return db


def test_export_plot_and_viewer_give_the_verdicts_over_items(saved_samples_db, runner, tmp_path):
    """export --compare, plot forest and the viewer's pair page read the per-sample rows as compare does."""
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from ood_store._cli import main
    from ood_store._serve.app import Settings, create_app

    with ood_store.open(saved_samples_db, read_only=True) as store:
        expected = ood_store.compare(store.analysis("planted")).table.row(0, named=True)
    assert expected["basis"] == "items and runs"
    db = ["--db", str(saved_samples_db)]
    table = tmp_path / "pooled.csv"
    exported = runner.invoke(main, [*db, "export", "--analysis", "planted", "--compare", "-o", str(table)])
    assert exported.exit_code == 0, exported.output
    row = pl.read_csv(table, comment_prefix="#").row(0, named=True)
    assert row["basis"] == "items and runs" and row["verdict"] == expected["verdict"]
    assert row["r_pooled"] == pytest.approx(expected["r_pooled"], abs=1e-6)
    runs_only = runner.invoke(main, [*db, "export", "--analysis", "planted", "--compare", "--item-inference", "runs",
                                     "-f", "csv"])  # fmt: skip
    assert "runs only (item noise not included)" in runs_only.output
    figure = tmp_path / "forest.png"
    plotted = runner.invoke(main, [*db, "plot", "forest", "--analysis", "planted", "-o", str(figure)])
    assert plotted.exit_code == 0 and figure.stat().st_size > 0, plotted.output
    client = TestClient(create_app(Settings(saved_samples_db)), base_url="http://127.0.0.1:8000")
    page = client.get("/analyses/planted/pair/hans/rte.json")
    assert page.status_code == 200, page.text
    assert "items and runs" in page.text


# -- between groups of runs, over items ----------------------------------------------------------------------


def test_crossed_groups_covariance_by_hand_and_what_the_shared_items_cancel():
    """By hand (loops over pairs of different runs): each group's ratio, its runs' spread over its size, the mean
    covariance the item draws give two different runs of the two groups; Wald's statistic of the difference. A
    part the draws move in every run alike cancels from the difference; a part only group a's runs share adds to
    its variance (both planted)."""
    rng = np.random.default_rng(8)
    labels = ["a"] * 4 + ["b"] * 5
    R, B = len(labels), 4000
    tau, scale = rng.normal(0.2, 0.1, R), rng.uniform(0.5, 1.5, R)
    every, only_a = rng.normal(0, 0.05, (B, 1)), rng.normal(0, 0.03, (B, 1)) * (np.arange(R) < 4)
    draws_tau = tau + every + only_a + rng.normal(0, 0.02, (B, R))
    draws_scale = np.broadcast_to(scale, (B, R))
    fit = crossed.crossed_groups(tau, scale, draws_tau, draws_scale, np.full(R, 0.01), labels)
    group = np.array(labels)
    means, spread, mean_scale = {}, {}, {}
    for g in "ab":
        means[g] = tau[group == g].sum() / scale[group == g].sum()
        u = tau[group == g] - means[g] * scale[group == g]
        spread[g], mean_scale[g] = u.var(ddof=1) / u.size, scale[group == g].mean()
    u_draws = draws_tau - np.array([means[g] for g in labels]) * draws_scale
    cov = np.cov(u_draws, rowvar=False)

    def shared(g, h):
        values = [cov[r, s] for r in range(R) for s in range(R) if r != s and labels[r] == g and labels[s] == h]
        return np.mean(values)

    var_a = (spread["a"] + shared("a", "a")) / mean_scale["a"] ** 2
    var_b = (spread["b"] + shared("b", "b")) / mean_scale["b"] ** 2
    cov_ab = shared("a", "b") / (mean_scale["a"] * mean_scale["b"])
    wald = (means["b"] - means["a"]) ** 2 / (var_a + var_b - 2 * cov_ab)
    assert fit.groups == ("a", "b") and fit.means == pytest.approx([means["a"], means["b"]])
    assert fit.statistic == pytest.approx(wald, rel=1e-9)
    assert fit.df_between == 1
    # what was planted: 0.05² shared by every pair of runs, 0.03² more by two runs of a
    assert shared("a", "b") == pytest.approx(0.05**2, rel=0.15)
    assert shared("a", "a") - shared("a", "b") == pytest.approx(0.03**2, rel=0.3)
    # with the part every run shares taken away, the statistic is the same: it cancels from the difference
    alone = crossed.crossed_groups(tau, scale, draws_tau - every, draws_scale, np.full(R, 0.01), labels)
    assert alone.statistic == pytest.approx(fit.statistic, rel=0.1)
    z = crossed.crossed_groups(tau, scale, draws_tau, draws_scale, np.full(R, 0.01), labels, test="z")
    assert z.statistic == pytest.approx(wald, rel=1e-9)
    # a group of one run: no test
    one = crossed.crossed_groups(tau[:5], scale[:5], draws_tau[:, :5], draws_scale[:, :5], np.full(5, 0.01),
                                 labels[:5])  # fmt: skip
    assert one.sizes.tolist() == [4, 1] and np.isnan(one.pvalue)


def _groups_study(seed: int, n: int, *, shared, span=1.5, signal: float = 0.3, runs: int = 12, ood: int = 300):
    rng = np.random.default_rng([seed, n, 17])
    study = studysim.planted_study(rng, runs=runs, items=(n, ood, ood), signal=signal, shared=shared, span=span)
    return study


def _groups_fit(study, seed):
    evidence = crossed.item_evidence(
        {run: RunItems(study.steps, m) for run, m in study.runs.items()}, ["z", "x", "y"], [("x", "y")],
        resamples=100, seed=seed,
    )  # fmt: skip
    labels = ["a"] * (len(evidence.runs) // 2) + ["b"] * (len(evidence.runs) - len(evidence.runs) // 2)
    return crossed.crossed_groups(evidence.tau[:, 0], evidence.scale[:, 0], evidence.draws_tau[:, :, 0],
                                  evidence.draws_scale[:, :, 0], evidence.within[:, 0], labels)  # fmt: skip


def test_between_groups_over_items_keeps_its_level_where_the_groups_differ_in_ability():
    """Two families of 6 runs, X and Y pure functions of ability in both, but one family's ability rises 2.2
    logits over training and the other's 0.8: the control's noise biases their naive r by different amounts.
    120 planted nulls with 60 in-domain items: the test over items rejects at most the binomial 99 % bound of
    0.05 (0.05 + 2.58 sqrt(0.05 · 0.95 / 120) = 0.101)."""
    spans = [2.2] * 6 + [0.8] * 6
    p = np.array([_groups_fit(_groups_study(seed, 60, shared=0.0, span=spans, signal=0.0), seed).pvalue
                  for seed in range(120)])  # fmt: skip
    assert np.isfinite(p).all()
    assert (p < 0.05).mean() <= 0.101


def test_between_groups_over_items_finds_a_planted_difference():
    """A shared signal of partial r 0.8 in one family's runs and none in the other's, 500 in-domain items."""
    shares = [0.8] * 6 + [0.0] * 6
    p = np.array([_groups_fit(_groups_study(seed, 500, shared=shares), seed).pvalue for seed in range(30)])
    assert (p < 0.05).mean() >= 0.9


def test_between_groups_runs_only_is_fooled_by_the_control_where_items_are_not():
    """The null above through the API, as a user would run it: over runs only the naive r differs between the
    families in many studies (the control's noise, not the pair); over items and runs it seldom does."""
    spans = [2.2] * 6 + [0.8] * 6
    runs_only, over_items = [], []
    for seed in range(30):
        study = _groups_study(100 + seed, 60, shared=0.0, span=spans, signal=0.0, ood=1500)
        scores, items = studysim.study_frames(study)
        analysis = ood_store.partial_correlations(scores, in_domain="in-domain")
        attributes = pl.DataFrame({"run": list(study.runs), "family": ["a"] * 6 + ["b"] * 6,
                                   "seed": [str(k) for k in range(6)] * 2})  # fmt: skip
        options = {"between": "family", "within": "seed", "attributes": attributes, "adjust_pairs": "none"}
        asked = ood_store.between_groups(analysis, **options, items=items, item_resamples=100, seed=seed)
        assert asked.basis == "items and runs" and asked.table["basis"].to_list() == ["items and runs"]
        over_items.append(asked.table["p_between"][0])
        plain = ood_store.between_groups(analysis, **options, item_inference="runs")
        assert plain.table["basis"][0] == "runs only (item noise not included): as asked"
        runs_only.append(plain.table["p_between"][0])
    assert (np.array(runs_only) < 0.05).mean() >= 0.3
    assert (np.array(over_items) < 0.05).mean() <= 0.15


def test_compare_between_on_a_store_with_samples_is_over_items(runner, tmp_path):
    """Six planted runs sharing their items, ingested with their samples, three seeds of each of two families:
    `compare --between` tests the families over items and runs, as the API does, and says so."""
    from ood_store._cli import main

    db, study = _samples_store(tmp_path, 6, runs=6, checkpoints=15, items=(80, 60, 60))
    with ood_store.open(db) as store:
        for k, run in enumerate(sorted(study.runs)):
            store.set_run_attributes(run, {"family": "ab"[k // 3], "seed": str(k % 3)})
    options = ["--db", str(db), "compare", "--in-domain", "mnli", "--between", "family", "--within", "seed"]
    printed = runner.invoke(main, [*options, "--format", "csv"])
    assert printed.exit_code == 0, printed.output
    row = pl.read_csv(printed.stdout.encode()).row(0, named=True)
    assert row["basis"] == "items and runs" and row["groups"] == 2 and row["runs"] == 6
    assert row["verdict"].startswith(("differs", "not shown"))
    with ood_store.open(db, read_only=True) as store:
        result = ood_store.partial_correlations(store, "mnli")
        expected = ood_store.between_groups(result, between="family", within="seed", attributes=store)
        assert "over items and runs" in repr(expected)
    assert row["p_between"] == pytest.approx(expected.table["p_between"][0], rel=1e-9)
    plain = runner.invoke(main, [*options, "--item-inference", "runs", "--format", "csv"])
    assert pl.read_csv(plain.stdout.encode())["basis"][0] == "runs only (item noise not included): as asked"
    refused = runner.invoke(main, [*options, "--item-resamples", "1"])
    assert refused.exit_code != 0 and "Traceback" not in refused.output


# -- sign agreement over items: the runs' calibrated estimates ------------------------------------------------


def test_calibrated_estimates_match_statsmodels_dersimonian_laird():
    """Wang & Lee's calibrated estimates, ``mean + sqrt(tau² / (tau² + v)) (r - mean)``, with statsmodels'
    DerSimonian–Laird tau² (``combine_effects(..., method_re="dl")``) as the independent source."""
    from statsmodels.stats.meta_analysis import combine_effects

    rng = np.random.default_rng(3)
    r = rng.normal(0.2, 0.3, 9)
    v = rng.uniform(0.01, 0.05, 9)
    tau2 = combine_effects(r, v, method_re="dl").tau2
    assert tau2 > 0
    expected = 0.17 + np.sqrt(tau2 / (tau2 + v)) * (r - 0.17)
    assert crossed.calibrated(r, v, 0.17) == pytest.approx(expected, rel=1e-9)
    with_nan = crossed.calibrated(np.r_[r, np.nan], np.r_[v, 0.02], 0.17)
    assert np.isnan(with_nan[-1]) and with_nan[:-1] == pytest.approx(expected, rel=1e-9)


def test_a_shared_signal_is_consistently_positive_with_enough_runs_though_each_run_is_noisy():
    """24 runs, 60 in-domain items, a planted shared signal of partial r 0.5: a run's r* is so noisy that about
    one run in six has the wrong sign, so the runs' own signs reach the 0.8 agreement in only about half the
    studies, while their calibrated estimates reach it whenever the pooled interval excludes 0; the verdict is
    'consistently positive' in at least 18 of 20 studies (benchmarks/results/crossed_verdicts.csv: 400)."""
    verdicts, raw = [], []
    for seed in range(20):
        rng = np.random.default_rng([seed, 24, 60])
        study = studysim.planted_study(rng, runs=24, items=(60, 300, 300), shared=0.5)
        scores, items = studysim.study_frames(study)
        analysis = ood_store.partial_correlations(scores, in_domain="in-domain")
        row = compare(analysis, items=items, item_resamples=100, seed=seed).table.row(0, named=True)
        verdicts.append(row["verdict"])
        raw.append(row["n_positive"] / row["runs"])
        assert row["sign_agreement"] >= row["n_positive"] / row["runs"] - 1e-12
    assert verdicts.count("consistently positive") >= 18
    assert np.mean(np.array(raw) >= 0.8) <= 0.8  # the runs' own signs would not have done


def test_the_variance_benchmark_tests_as_the_shipped_code_and_counts_its_rejections():
    """benchmarks/crossed_variance.py: its `spread` p is crossed.crossed's own (the study asserts it), every p is
    a probability, and its shares are counted at both levels (a frame of planted p-values, counted by hand)."""
    module = benchmark("crossed_variance")
    row = module.one_study(("null-own-60-drift", 0, 20, 0))
    assert set(row) == {"setting", *module.METHODS}
    assert all(0 < row[method] <= 1 for method in module.METHODS)
    planted = pl.DataFrame({"setting": ["a"] * 4, "spread": [0.01, 0.03, 0.2, 0.6], "jackknife": [0.01] * 4,
                            "larger": [0.9] * 4, "weighted": [0.04, 0.9, 0.9, 0.9]})  # fmt: skip
    summary = module.summarize(planted).row(0, named=True)
    assert (summary["spread_05"], summary["spread_025"]) == (0.5, 0.25)
    assert (summary["jackknife_05"], summary["larger_05"]) == (1.0, 0.0)
    assert (summary["weighted_05"], summary["weighted_025"]) == (0.25, 0.0)
    assert summary["spread_05_mc"] == pytest.approx(1.96 * np.sqrt(0.25 / 4))


def test_the_variance_benchmarks_precision_weighted_test_is_hartung_and_knapps():
    """benchmarks/crossed_variance.py's `weighted` p, by hand: r (0.1, 0.3, 0.5) weighted (1, 2, 1) have the mean
    0.3 and Hartung & Knapp's variance (0.04 + 0 + 0.04) / (2 · 4) = 0.01; on 2 df Student's two-sided p of t is
    1 - t / sqrt(t² + 2). Draws that covary only within a run add nothing; draws in which runs 1 and 2 move
    together (covariance 2) add 2 · 1 · 2 · 2 / 4² = 0.5."""
    module = benchmark("crossed_variance")
    r, weights = np.array([0.1, 0.3, 0.5]), np.array([1.0, 2.0, 1.0])

    def two_df(t: float) -> float:
        return 1.0 - t / np.sqrt(t * t + 2.0)

    apart = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], dtype=float)
    assert module.hartung_knapp(r, weights, apart) == pytest.approx(two_df(3.0), rel=1e-12)
    together = np.array([[1, 1, 0], [-1, -1, 0]], dtype=float)
    assert module.hartung_knapp(r, weights, together) == pytest.approx(two_df(0.3 / np.sqrt(0.51)), rel=1e-12)


def test_the_item_variance_benchmark_measures_by_hand_checkable_pieces():
    """benchmarks/item_variance.py: the conditional covariance and scales it compares, by hand. With unit
    variances, in-domain covariances 0.5 and X-Y covariance 0.6, X and Y given the in-domain score have
    covariance 0.6 - 0.25 = 0.35 and variances 0.75 each (g = 0.75); a variance not positive gives g = 0. The
    scale of 0..4 is their interquartile range 3 - 1 over 1.349. With 5,000 control items a run's Fieller set is
    bounded, shorter than [-1, 1]."""
    module = benchmark("item_variance")
    cov = np.array([[1.0, 0.5, 0.5], [0.5, 1.0, 0.6], [0.5, 0.6, 1.0]])
    c, g = module.conditional(cov)
    assert (float(c), float(g)) == pytest.approx((0.35, 0.75), rel=1e-12)
    cov[1, 1] = 0.2  # X's variance given the in-domain score: 0.2 - 0.25 < 0
    assert float(module.conditional(cov)[1]) == 0.0
    assert module.scale(np.arange(5.0)) == pytest.approx(2.0 / 1.349)
    assert np.isnan(module.scale(np.array([1.0, np.nan, 2.0])))
    held = [module.fieller(np.random.default_rng(seed), 0.5, 5000, resamples=200) for seed in range(3)]
    assert all(h is not None and 0.0 < h[1] < 1.0 for h in held)  # bounded sets with 5,000 control items
    tried = [module.calibrated(np.random.default_rng(seed), 0.5, 60, outer=20, inner=20) for seed in range(3)]
    calibrations = [t for t in tried if t is not None]
    assert calibrations and all(np.isfinite(t[2]) and t[2] > 0 for t in calibrations)
    assert all(t[1] for t in calibrations if t[0] and t[2] >= 1.959964**2)  # a larger critical value keeps it
