"""Items, not only scores: item resampling, the noisy-control correction, split-half reliability.

The statistics are checked against independent computations (pingouin, direct
loops over explicitly resampled items) and, where the truth is planted, by
simulation: 1,000 runs of :func:`~ood_store._analysis.itemsim.planted_run`, with
coverage asserted within the 93–97 % band around the nominal 95 % (the Monte
Carlo standard error of a 95 % coverage over 1,000 runs is 0.69 points).
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pingouin
import polars as pl
import pytest

from ood_store._analysis import itemstats
from ood_store._analysis.dynamics import item_dynamics
from ood_store._analysis.items import ITEM_COLUMNS, ITEM_INTERVALS, item_correlations
from ood_store._analysis.itemsim import PLANTED as SHARED
from ood_store._analysis.itemsim import long_frame, planted_run, simulate
from ood_store._analysis.partial import partial_correlations
from ood_store._errors import AnalysisError

# The planted study of the tests: 30 checkpoints, a small in-domain testset (200 items) and OOD testsets of 1,000.
PLANTED = {"items": (200, 1000, 1000), **SHARED}
#: Planted runs per coverage test (testsets of 1,000 items, 100 item resamples). benchmarks/results/item_noise_test.csv
#: measures this configuration over 2,000 runs: the corrected interval covers 95.5 % (null) and 94.8 % (rho 0.5),
#: +-0.9 points. With 1,000 runs, a coverage of exactly 95 % falls outside 93-97 % by chance with probability 0.3 %
#: (binomial), one of 95.5 % or 94.8 % with 0.6 %: a failure is the method's, not the seed's.
TEST_RUNS = 1000


def _frame(runs: dict[str, tuple[np.ndarray, ...]], tasks=("mnli", "hans", "rte")) -> pl.DataFrame:
    return long_frame(runs, tasks)


def test_naive_r_is_pingouins_partial_correlation_of_the_item_means():
    run = planted_run(np.random.default_rng(0), **PLANTED)
    _, cov, _ = itemstats.statistics(run.matrices)
    means = pd.DataFrame({name: Y.mean(axis=0) for name, Y in zip("zxy", run.matrices, strict=True)})
    expected = pingouin.partial_corr(means, "x", "y", covar="z")["r"].iloc[0]
    assert itemstats.partial_from_covariance(cov)[0, 0, 1] == pytest.approx(expected, abs=1e-12)
    table = item_correlations(_frame({"a": run.matrices}), in_domain="mnli", items=50).table
    assert table["r"][0] == pytest.approx(expected, abs=1e-12)
    scores = _frame({"a": run.matrices}).group_by("run", "step", "task").agg(pl.col("value").mean())
    assert partial_correlations(scores, in_domain="mnli").table["r"][0] == pytest.approx(expected, abs=1e-12)


def test_resampled_statistics_equal_a_direct_computation_on_the_drawn_items():
    rng = np.random.default_rng(1)
    matrices = planted_run(rng, **PLANTED).matrices
    weights = [itemstats.item_weights(Y.shape[0], 3, rng) for Y in matrices]
    picks = rng.integers(0, 30, (3, 30))
    counts = itemstats.checkpoint_counts(picks, 30)
    scores, cov, error = itemstats.statistics(matrices, weights, counts)
    for b in range(3):
        drawn = [np.repeat(Y, w[b].astype(int), axis=0)[:, picks[b]] for Y, w in zip(matrices, weights, strict=True)]
        means = np.column_stack([D.mean(axis=0) for D in drawn])
        assert np.allclose(np.cov(means, rowvar=False, bias=True), cov[b])
        for j, D in enumerate(drawn):
            centered = D - D.mean(axis=1, keepdims=True)  # each item on its own mean over the checkpoints
            expected = np.mean([np.var(centered[:, t], ddof=1) for t in range(30)]) / D.shape[0]
            assert error[b, j] == pytest.approx(expected, rel=1e-10)
        full = np.column_stack(
            [np.repeat(Y, w[b].astype(int), axis=0).mean(axis=0) for Y, w in zip(matrices, weights, strict=True)]
        )
        assert np.allclose(scores[b], full)  # the drawn items' means at every original checkpoint


def test_error_variance_is_unbiased_for_what_item_sampling_adds_to_the_variance():
    rng = np.random.default_rng(2)
    population = planted_run(rng, items=(5000, 10, 10)).matrices[0]
    draws = rng.integers(0, 5000, (2000, 100))
    observed = np.array([itemstats.statistics([population[d]])[1][0, 0, 0] for d in draws])
    estimated = np.array([itemstats.statistics([population[d]])[2][0, 0] for d in draws])
    # what the draw adds to the variance over checkpoints, exactly: E var(mean) = var(pop mean) + E[error variance]
    centered = population - population.mean(axis=1, keepdims=True)
    exact = centered.var(axis=0).mean() / 100
    assert estimated.mean() == pytest.approx(exact, abs=4 * estimated.std() / np.sqrt(2000))
    added = observed - population.mean(axis=0).var()
    assert added.mean() == pytest.approx(exact, abs=4 * added.std() / np.sqrt(2000))


def test_split_half_equals_a_direct_loop_over_the_same_splits():
    rng = np.random.default_rng(3)
    Y = planted_run(rng, **PLANTED).matrices[1]
    value, halves = itemstats.split_half(Y, 50, np.random.default_rng(4))
    assert halves.shape == (50, Y.shape[0]) and (halves.sum(axis=1) == Y.shape[0] // 2).all()
    coefficients = []
    for half in halves:
        r = np.corrcoef(Y[half].mean(axis=0), Y[~half].mean(axis=0))[0, 1]
        coefficients.append(2 * r / (1 + r))
    assert value == pytest.approx(np.mean(coefficients), abs=1e-12)
    again, _ = itemstats.split_half(Y, halves=halves)
    assert again == value


def _simulate(rho: float, seed: int) -> dict[str, np.ndarray]:
    """TEST_RUNS planted runs with testsets of 1,000 items each (100 item resamples): truth, naive and corrected r."""
    return simulate(rho, TEST_RUNS, 100, np.random.default_rng(seed), items=(1000, 1000, 1000))


def _coverage(lo: np.ndarray, hi: np.ndarray, truth: np.ndarray | float, defined: np.ndarray) -> float:
    return float(np.mean(((lo <= truth) & (truth <= hi))[defined]))


def test_planted_null_naive_r_is_biased_and_the_corrected_interval_keeps_its_level():
    """X and Y depend on nothing but ability, all three testsets have 1,000 items: the naive partial r is biased
    away from 0 (positive in most runs); the corrected estimate's interval covers 0 in 93-97 % of the TEST_RUNS
    runs. The band is the issue's; its failing by Monte Carlo chance alone is made unlikely by the number of runs,
    not by the seed (see TEST_RUNS)."""
    sim = _simulate(0.0, seed=11)
    assert sim["r"].mean() > 0.03  # +0.051 over 2,000 runs of this configuration; its Monte Carlo SE 0.005
    assert (sim["r"] > 0).mean() > 0.55  # 61 % there
    defined = np.isfinite(sim["corrected"])
    assert defined.mean() > 0.99
    assert abs(np.nanmean(sim["corrected"])) < 0.05  # a quarter of a Fisher SE (0.2) per run
    assert 0.93 <= _coverage(sim["lo"], sim["hi"], 0.0, defined) <= 0.97


def test_planted_shared_signal_is_recovered_and_the_item_interval_keeps_its_level():
    """X and Y share a signal beyond ability (partial correlation 0.5): the corrected estimate recovers it (bias
    -0.016 over 2,000 runs of this configuration), and the corrected interval covers the planted 0.5 in 93-97 % of
    the TEST_RUNS runs. The item-bootstrap interval covers each run's noise-free partial correlation in 93.7 % of
    those 2,000 runs with 100 resamples (93.4 % with 400 resamples and OOD testsets of 1,000, 95.6-97.1 % with
    100-500 in-domain items, benchmarks/results/item_noise.csv): held here to 90-98 % only, since a 93 % bound
    would fail by chance one time in six at 1,000 runs."""
    sim = _simulate(0.5, seed=12)
    defined = np.isfinite(sim["corrected"])
    assert abs(np.nanmean(sim["corrected"]) - 0.5) < 0.05  # a quarter of a Fisher SE (0.2) per run
    assert 0.90 <= _coverage(sim["item_lo"], sim["item_hi"], sim["true"], defined) <= 0.98
    assert 0.93 <= _coverage(sim["lo"], sim["hi"], 0.5, defined) <= 0.97


def test_with_a_small_in_domain_testset_the_corrected_interval_keeps_its_level():
    """The issue's setting: a small in-domain testset (200 items; X and Y 1,000 each), TEST_RUNS planted runs each.
    X and Y related only through ability: the naive partial r is biased away from 0 (+0.217 here, +0.217 on
    benchmarks/results/item_noise.csv's 1,000 runs of seed 0), and the corrected interval covers 0 in 93-97 %
    (96.9 % here; 95.8 +- 1.2 % there). X and Y sharing a partial correlation of 0.5: the corrected estimate recovers
    it (bias -0.033 here), the item-bootstrap interval covers each run's noise-free partial correlation in 93-97 %
    (94.8 % here), and the corrected interval keeps its level on the conservative side (97.5 % here, 98.3 +- 0.8 %
    in the benchmark: at 100-500 in-domain items its draws meet the +-1 boundary and it is wider than it needs to be,
    as docs/explanation/statistics.md says)."""
    null = simulate(0.0, TEST_RUNS, 100, np.random.default_rng(11), items=(200, 1000, 1000))
    defined = np.isfinite(null["corrected"])
    assert null["r"].mean() > 0.15 and (null["r"] > 0).mean() > 0.8
    assert defined.mean() > 0.99
    assert 0.93 <= _coverage(null["lo"], null["hi"], 0.0, defined) <= 0.97
    shared = simulate(0.5, TEST_RUNS, 100, np.random.default_rng(12), items=(200, 1000, 1000))
    defined = np.isfinite(shared["corrected"])
    assert abs(np.nanmean(shared["corrected"]) - 0.5) < 0.05
    assert 0.93 <= _coverage(shared["item_lo"], shared["item_hi"], shared["true"], defined) <= 0.97
    assert 0.93 <= _coverage(shared["lo"], shared["hi"], 0.5, defined) <= 0.99


def test_with_a_small_in_domain_testset_the_corrected_block_bootstrap_interval_keeps_its_level():
    """``corrected_boot_ci_*`` (checkpoints block-resampled together with the items, a plain percentile interval of
    the corrected draws), through item_correlations itself, over TEST_RUNS planted runs with 200 in-domain items and
    X and Y related only through ability: it covers 0 in 93-97 % of the runs (95.9 +- 0.9 % over 2,000 runs with 200
    block resamples, benchmarks/results/item_boot_coverage.csv), where the naive r's block-bootstrap interval
    (``boot_ci_*``) covers 0 in about 62 % (95.6 % and 59.8 % here): the noisy-control artefact, which the block
    bootstrap does not see."""
    rng = np.random.default_rng(21)
    tables = []
    for start in range(0, TEST_RUNS, 100):
        runs = {
            f"r{i}": planted_run(rng, items=(200, 1000, 1000), **SHARED).matrices for i in range(start, start + 100)
        }
        tables.append(item_correlations(_frame(runs), in_domain="mnli", items=100, bootstrap=100, seed=start).table)
    table = pl.concat(tables)
    defined = table.filter(pl.col("r_corrected").is_finite())
    assert defined.height > 0.99 * TEST_RUNS
    corrected = ((defined["corrected_boot_ci_low"] <= 0) & (defined["corrected_boot_ci_high"] >= 0)).mean()
    naive = ((table["boot_ci_low"] <= 0) & (table["boot_ci_high"] >= 0)).mean()
    assert 0.93 <= corrected <= 0.97, corrected
    assert naive < 0.8, naive


def test_planted_signals_with_autocorrelation_have_the_asked_lag_one_correlation_and_keep_rho():
    """``planted_run(autocorrelation=phi)`` (benchmarks/item_boot_coverage.py's autocorrelated residuals): over a
    long run, X's and Y's signals have lag-1 correlation phi (numpy's corrcoef; standard error about 0.006 here) and
    correlate rho with each other at a checkpoint (about 0.01); phi = 0 draws exactly the run of the default."""
    long = {"checkpoints": 20_000, "items": (1, 1, 1), "wobble_sd": 0.0, "span": 0.0}
    run = planted_run(np.random.default_rng(3), rho=0.5, autocorrelation=0.6, **long)
    signals = run.true_scores[:, 1:] - run.true_scores[:, :1]  # ability is constant: what is left is the signal
    for k in range(2):
        assert np.corrcoef(signals[1:, k], signals[:-1, k])[0, 1] == pytest.approx(0.6, abs=0.03)
    assert np.corrcoef(signals[:, 0], signals[:, 1])[0, 1] == pytest.approx(0.5, abs=0.04)
    default = planted_run(np.random.default_rng(4), rho=0.5, **SHARED)
    same = planted_run(np.random.default_rng(4), rho=0.5, autocorrelation=0.0, **SHARED)
    assert np.array_equal(default.true_scores, same.true_scores)
    assert all(np.array_equal(a, b) for a, b in zip(default.matrices, same.matrices, strict=True))


def test_item_correlations_reports_the_noise_artefact_in_a_note():
    rng = np.random.default_rng(5)
    runs = {f"run{k}": planted_run(rng, **{**PLANTED, "items": (60, 2000, 2000)}).matrices for k in range(3)}
    table = item_correlations(_frame(runs), in_domain="mnli", items=200).table
    assert (table["r"] > table["r_corrected"]).all()
    noted = table.filter(pl.col("note").is_not_null())
    assert noted.height >= 1
    assert noted["note"].str.contains("item noise alone").all()
    assert (noted["corrected_ci_low"] <= 0).all() and (noted["ci_low"] > 0).all()
    assert table["reliability_in_domain"].max() < table["reliability_x"].min()


def test_gam_residualizer_resamples_items_through_its_own_fits():
    rng = np.random.default_rng(6)
    run = planted_run(rng, **PLANTED)
    frame = _frame({"a": run.matrices})
    table = item_correlations(frame, in_domain="mnli", items=100, residualizer="gam").table
    scores = frame.group_by("run", "step", "task").agg(pl.col("value").mean())
    gam = partial_correlations(scores, in_domain="mnli", residualizer="gam").table
    assert table["r"][0] == pytest.approx(gam["r"][0], abs=1e-10)
    assert table["item_ci_low"][0] < table["item_ci_high"][0]
    assert np.isfinite(table["r_corrected"][0]) and "SIMEX" in table["note"][0]
    assert np.isnan(table["corrected_ci_low"][0])  # no interval for SIMEX


def test_simex_removes_most_of_the_noisy_control_bias_of_the_gam():
    """X and Y related only through ability, a 200-item in-domain testset, the GAM residualizer: over 100 planted
    runs the naive GAM partial r averages about +0.2 where the truth is 0; SIMEX (noise added at lambda 0.5 to 2,
    quadratic extrapolation to -1) takes away at least half of that bias (measured: +0.21 to +0.05 over 40 runs)."""
    from ood_store._analysis.partial import Options, _Fit

    rng = np.random.default_rng(15)
    naive, corrected, truth = [], [], []
    for _ in range(100):
        run = planted_run(rng, **PLANTED)
        scores, _, error = itemstats.statistics(run.matrices)
        fit = _Fit(scores[0][:, :1], scores[0][:, 1:], Options(in_domain="z", residualizer="gam"))
        estimate, curve = itemstats.simex(
            scores[0], error[0], lambda s, f=fit: f.correlations_of(s[:, :, :1], s[:, :, 1:]), rng, naive=fit.corr
        )
        assert curve[0, 0, 1] == fit.corr[0, 1]
        naive.append(fit.corr[0, 1])
        corrected.append(estimate[0, 1])
        truth.append(run.true_r)
    bias_naive = np.mean(naive) - np.mean(truth)
    bias_simex = np.mean(corrected) - np.mean(truth)
    assert bias_naive > 0.12
    assert abs(bias_simex) < bias_naive / 2


def test_simex_extrapolates_a_quadratic_exactly():
    """An estimator whose mean is exactly quadratic in lambda (planted): ``0.3 + 2 v + 4 v^2`` with ``v`` the mean
    square of the noise added to a zero series of T values, so ``E v = lambda s`` and ``E v^2 = lambda^2 s^2
    (1 + 2 / T)`` (s = 0.25, the error variance): its mean is ``0.3 + 0.5 lambda + 0.2625 lambda^2``, computed by hand,
    and the fit read at lambda = -1 gives 0.0625."""
    T = 40
    error = np.array([0.25])

    def estimator(stack):  # k × T × 1 -> k × 1 × 1
        v = (stack[:, :, 0] ** 2).mean(axis=1)
        return (0.3 + 2.0 * v + 4.0 * v**2)[:, None, None]

    estimate, curve = itemstats.simex(np.zeros((T, 1)), error, estimator, np.random.default_rng(16), reps=4000)
    assert curve[0, 0, 0] == pytest.approx(0.3)  # lambda = 0: the estimator on the data themselves
    assert curve[2, 0, 0] == pytest.approx(0.3 + 0.5 + 0.2625, abs=0.01)  # lambda = 1
    assert estimate[0, 0] == pytest.approx(0.0625, abs=0.03)


def test_items_and_block_bootstrap_combined():
    rng = np.random.default_rng(7)
    frame = _frame({"a": planted_run(rng, **PLANTED).matrices})
    table = item_correlations(frame, in_domain="mnli", items=100, bootstrap=100, block_length=3).table
    row = table.row(0, named=True)
    assert row["block_length"] == 3
    assert row["boot_ci_low"] < row["r"] < row["boot_ci_high"]
    # checkpoints resampled as well: wider than the items alone
    assert row["boot_ci_high"] - row["boot_ci_low"] > row["item_ci_high"] - row["item_ci_low"]
    assert np.isfinite(row["corrected_boot_ci_low"])


def test_items_that_change_across_checkpoints_are_refused_naming_the_task():
    rng = np.random.default_rng(8)
    frame = _frame({"a": planted_run(rng, items=(50, 60, 60)).matrices})
    frame = frame.with_columns(
        pl.when((pl.col("task") == "hans") & (pl.col("step") == 100) & (pl.col("item") == 3))
        .then(pl.lit("other"))
        .otherwise(pl.lit("same"))
        .alias("doc_hash")
    )
    with pytest.raises(AnalysisError, match=r"documents of hans differ across checkpoints"):
        item_correlations(frame, in_domain="mnli", items=10)
    dropped = _frame({"a": planted_run(rng, items=(50, 60, 60)).matrices}).filter(
        ~((pl.col("task") == "rte") & (pl.col("step") == 50) & (pl.col("item") == 7))
    )
    with pytest.raises(AnalysisError, match=r"items of rte differ across checkpoints"):
        item_correlations(dropped, in_domain="mnli", items=10)


def test_bad_options_are_one_line_errors():
    frame = _frame({"a": planted_run(np.random.default_rng(9), items=(50, 60, 60)).matrices})
    with pytest.raises(AnalysisError, match="items must be a number of resamples"):
        item_correlations(frame, in_domain="mnli", items=0)
    with pytest.raises(AnalysisError, match=r"no column\(s\) item"):
        item_correlations(frame.drop("item"), in_domain="mnli")


def _write_run(folder, run: str, matrices, *, samples: bool = True, changed: str | None = None) -> None:
    """lm-eval results and samples files of one run (one folder per checkpoint) from item matrices."""
    import orjson

    from ood_store._examples import pilot

    stamp = "2026-01-01T00-00-00.000000"
    tasks = ("mnli", "hans", "rte")
    sizes = {task: Y.shape[0] for task, Y in zip(tasks, matrices, strict=True)}
    for t in range(matrices[0].shape[1]):
        step = (t + 1) * 100
        checkpoint = folder / run / f"step-{step}"
        checkpoint.mkdir(parents=True)
        scores = {task: float(Y[:, t].mean()) for task, Y in zip(tasks, matrices, strict=True)}
        (checkpoint / f"results_{stamp}.json").write_bytes(orjson.dumps(pilot._results_file(run, step, scores, sizes)))
        if not samples:
            continue
        for task, Y in zip(tasks, matrices, strict=True):
            lines = []
            for i in range(Y.shape[0]):
                line = pilot._sample(i, bool(Y[i, t]))
                if task == changed and i == 3 and t == 2:
                    line["doc_hash"] = "another document"
                if task == "hans":
                    line["target"] = str(i % 2)  # the label: a slice of hans by target
                lines.append(orjson.dumps(line))
            (checkpoint / f"samples_{task}_{stamp}.jsonl").write_bytes(b"\n".join(lines) + b"\n")


@pytest.fixture(scope="module")
def items_db(tmp_path_factory):
    """Two planted runs (12 checkpoints; 40, 80 and 80 items) ingested with their samples, a third without."""
    import ood_store

    folder = tmp_path_factory.mktemp("items")
    rng = np.random.default_rng(10)
    small = {**PLANTED, "items": (40, 80, 80)}
    for run in ("r1", "r2"):
        matrices = planted_run(rng, checkpoints=12, **small).matrices
        _write_run(folder / "files", run, matrices)
        np.save(folder / f"{run}.npy", np.concatenate(matrices))
    _write_run(folder / "bare", "r3", planted_run(rng, checkpoints=12, **small).matrices, samples=False)
    _write_run(folder / "changed", "r4", planted_run(rng, checkpoints=12, **small).matrices, changed="hans")
    db = folder / "items.duckdb"
    with ood_store.open(db) as store:
        for part in ("files", "bare", "changed"):
            assert store.ingest([folder / part]).ok
    return db


def test_store_items_give_the_stored_scores_analysis(items_db):
    import ood_store

    with ood_store.open(items_db, read_only=True) as store:
        items = item_correlations(store, "mnli", runs=["r1", "r2"], items=100).table
        scores = partial_correlations(store, "mnli", runs=["r1", "r2"]).table
    assert items["run"].to_list() == ["r1", "r2"]
    assert items["items_in_domain"].to_list() == [40, 40] and items["items_x"].to_list() == [80, 80]
    assert np.allclose(items["r"].to_numpy(), scores["r"].to_numpy(), atol=1e-12)
    assert np.allclose(items["ci_low"].to_numpy(), scores["ci_low"].to_numpy(), atol=1e-12)


def test_store_runs_without_samples_or_with_changing_documents_are_refused(items_db):
    import ood_store

    with ood_store.open(items_db, read_only=True) as store:
        with pytest.raises(AnalysisError, match=r"no per-sample rows for r3: hans, mnli, rte \(ingest stores"):
            item_correlations(store, "mnli", items=10)
        with pytest.raises(AnalysisError, match=r"documents of hans differ across checkpoints"):
            item_correlations(store, "mnli", runs=["r1", "r4"], items=10)


def test_cli_analyze_items(items_db, runner):
    from ood_store._cli import main

    args = ["--db", str(items_db), "analyze", "--in-domain", "mnli", "--run", "r1", "--run", "r2", "--items", "50"]
    result = runner.invoke(main, [*args, "--format", "csv"])
    assert result.exit_code == 0, result.output
    rows = pl.read_csv(io.StringIO(result.output))
    assert rows.columns[: len(ITEM_COLUMNS)] == list(ITEM_COLUMNS) and rows.height == 2
    refused = runner.invoke(main, ["--db", str(items_db), "analyze", "--in-domain", "mnli", "--items", "10"])
    assert refused.exit_code != 0 and "Traceback" not in refused.output
    assert "no per-sample rows for r3" in refused.output and "--no-samples" in refused.output
    sliced = runner.invoke(main, [*args, "--slice", "hans:target"])
    assert sliced.exit_code != 0 and "--slice: the item analysis resamples whole testsets" in sliced.output
    both = runner.invoke(main, [*args, "--save", "x"])
    assert both.exit_code != 0 and "--items makes its own table" in both.output


def test_slices_are_tasks_scored_by_the_mean_of_their_items(items_db):
    """hans split by its label: each slice's score is the mean of its items' accuracy at each checkpoint (computed
    here from the matrices the files were written from), and the analysis treats it as a task of its own."""
    import ood_store

    with ood_store.open(items_db, read_only=True) as store:
        table = partial_correlations(store, "mnli", ood=["rte"], runs=["r1", "r2"], slices=["hans:target"]).table
    assert set(table["task_x"]) | set(table["task_y"]) == {"hans[target=0]", "hans[target=1]", "rte"}
    for run in ("r1", "r2"):
        stacked = np.load(items_db.parent / f"{run}.npy")
        z, hans, rte = stacked[:40], stacked[40:120], stacked[120:]
        for label in (0, 1):
            means = pd.DataFrame(
                {"z": z.mean(axis=0), "x": hans[np.arange(80) % 2 == label].mean(axis=0), "y": rte.mean(axis=0)}
            )
            expected = pingouin.partial_corr(means, "x", "y", covar="z")["r"].iloc[0]
            pair = {f"hans[target={label}]", "rte"}
            row = table.filter((pl.col("run") == run) & pl.col("task_x").is_in(pair) & pl.col("task_y").is_in(pair))
            assert row["r"][0] == pytest.approx(expected, abs=1e-10)


def test_slices_refused_in_one_line(items_db, runner):
    from ood_store._cli import main

    base = ["--db", str(items_db), "analyze", "--in-domain", "mnli", "--run", "r1"]
    result = runner.invoke(main, [*base, "--slice", "hans:heuristic"])  # the pilot's documents: {"idx": N}
    assert result.exit_code != 0 and "Traceback" not in result.output
    refusal = "--slice: 'hans:heuristic': the documents of 'hans' have no field 'heuristic'; their fields: idx (or"
    assert refusal in result.output
    shown = runner.invoke(main, [*base, "--slice", "hans:target", "--format", "csv"])
    assert shown.exit_code == 0, shown.output
    assert "hans[target=1]" in shown.output
    with pytest.raises(AnalysisError, match="slices are made from a store"):
        partial_correlations(pl.DataFrame({"step": [1], "task": ["a"], "value": [0.5]}), "a", slices=["a:target"])


def _loop_dynamics(row: np.ndarray, steps: list[int]) -> tuple:
    """One item's first correct step, learned step and forgetting events, by a plain loop."""
    first = next((s for s, v in zip(steps, row, strict=True) if v == 1), None)
    learned = None
    for k in range(len(steps)):
        if all(v == 1 for v in row[k:]):
            learned = steps[k]
            break
    events = sum(1 for a, b in zip(row[:-1], row[1:], strict=True) if a == 1 and b == 0)
    return first, learned, events


def test_item_dynamics_equal_a_direct_loop():
    rng = np.random.default_rng(13)
    matrices = planted_run(rng, checkpoints=15, items=(30, 50, 40)).matrices
    frame = _frame({"a": matrices})
    result = item_dynamics(frame, ["hans", "rte"])
    steps = [t * 10 for t in range(15)]
    for task, Y in (("hans", matrices[1]), ("rte", matrices[2])):
        got = result.items.filter(pl.col("task") == task).sort("item")
        expected = [_loop_dynamics(Y[i], steps) for i in range(Y.shape[0])]
        assert got.select("first_correct_step", "learned_step", "forgetting_events").rows() == expected
        row = result.table.filter(pl.col("task") == task).row(0, named=True)
        assert row["learned"] == sum(e[1] is not None for e in expected)
        assert row["forgetting_events"] == sum(e[2] for e in expected)
        assert row["always_correct"] == sum(e[1] == 0 for e in expected)
    assert "ItemDynamics: 2 (run, task) series, 90 items" in str(result.summary())


def test_item_dynamics_from_the_store(items_db):
    import ood_store

    with ood_store.open(items_db, read_only=True) as store:
        result = ood_store.item_dynamics(store, "hans", runs=["r1"])
    hans = np.load(items_db.parent / "r1.npy")[40:120]
    expected = [_loop_dynamics(hans[i], [(t + 1) * 100 for t in range(12)]) for i in range(80)]
    assert result.items.sort("item").select("first_correct_step", "learned_step", "forgetting_events").rows() == (
        expected
    )
    with ood_store.open(items_db, read_only=True) as store, pytest.raises(AnalysisError, match="no per-sample rows"):
        ood_store.item_dynamics(store, "hans", runs=["r3"])


def test_cli_plot_items_writes_the_figure_and_the_table(items_db, runner, tmp_path):
    from ood_store._cli import main

    args = ["--db", str(items_db), "plot", "items", "--task", "hans,rte", "--run", "r1", "--run", "r2"]
    result = runner.invoke(main, [*args, "-o", str(tmp_path / "items.png"), "--table", str(tmp_path / "items.csv")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "items.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    written = pl.read_csv(tmp_path / "items.csv")
    assert written.height == 2 * (80 + 80)
    hans = np.load(items_db.parent / "r2.npy")[40:120]
    expected = [_loop_dynamics(hans[i], [(t + 1) * 100 for t in range(12)])[2] for i in range(80)]
    got = written.filter((pl.col("run") == "r2") & (pl.col("task") == "hans")).sort("item")["forgetting_events"]
    assert got.to_list() == expected
    refused = runner.invoke(
        main, ["--db", str(items_db), "plot", "items", "--task", "hans", "--run", "r3", "-o", "x.png"]
    )
    assert refused.exit_code != 0 and "Traceback" not in refused.output and "no per-sample rows" in refused.output


def test_a_series_that_is_all_item_noise_has_no_corrected_r():
    """X's 40 items answered at random, 20 or 21 of them right at every checkpoint: its score hardly moves while
    its items do, so its corrected variance is negative: no corrected r, no corrected interval, said in the note.
    With four checkpoints, the reason there is no r at all."""
    rng = np.random.default_rng(14)
    run = planted_run(rng, **PLANTED)
    noise = np.zeros((40, 30))
    for t in range(30):
        noise[rng.permutation(40)[: 20 + t % 2], t] = 1.0
    _, cov, error = itemstats.statistics((run.matrices[0], noise, run.matrices[2]))
    assert cov[0, 1, 1] < error[0, 1]  # what makes the correction impossible, computed here
    row = item_correlations(_frame({"a": (run.matrices[0], noise, run.matrices[2])}), in_domain="mnli", items=50)
    row = row.table.row(0, named=True)
    assert np.isfinite(row["r"]) and np.isnan(row["r_corrected"]) and np.isnan(row["corrected_ci_low"])
    assert "no more than its item noise" in row["note"]
    assert row["reliability_x"] < 0.2
    short = _frame({"a": tuple(Y[:, :4] for Y in run.matrices)})
    assert "too few checkpoints" in item_correlations(short, in_domain="mnli", items=20).table["note"][0]


def test_cli_export_item_dynamics(items_db, runner):
    from ood_store._cli import main

    base = ["--db", str(items_db), "export", "--item-dynamics", "hans", "--run", "r1"]
    summary = runner.invoke(main, [*base, "--format", "csv"])
    assert summary.exit_code == 0, summary.output
    rows = pl.read_csv(io.StringIO(summary.output), comment_prefix="#")
    hans = np.load(items_db.parent / "r1.npy")[40:120]
    expected = [_loop_dynamics(hans[i], [(t + 1) * 100 for t in range(12)]) for i in range(80)]
    assert rows["forgetting_events"].to_list() == [sum(e[2] for e in expected)]
    assert rows["learned"].to_list() == [sum(e[1] is not None for e in expected)]
    per_item = runner.invoke(main, [*base, "--items-table", "--format", "csv"])
    assert pl.read_csv(io.StringIO(per_item.output), comment_prefix="#").height == 80
    both = runner.invoke(main, [*base, "--sql", "SELECT 1"])
    assert both.exit_code != 0 and "Give one of --analysis NAME, --sql SQL or --item-dynamics TASK" in both.output


# Intervals at the boundary, and bias-corrected item intervals (issue 37, item 3)


def test_bca_interval_equals_efrons_formula_on_a_constructed_case():
    """1,000 evenly spaced draws on (0, 1) and an estimate with 69.15 % of them below it: z0 = Φ⁻¹(0.6915) = 0.5
    (by hand), so with no acceleration the 95 % BC interval is the draws' Φ(2 z0 ∓ 1.96) = 16.85 % and 99.85 %
    points, 0.1685 and 0.9985 on this grid; with a = 0.1 the upper level is Φ(0.5 + 2.46 / 0.754) = Φ(3.763)."""
    from scipy.stats import norm

    draws = ((np.arange(1000) + 0.5) / 1000)[:, None]
    estimate = np.array([0.6915])
    low, high = itemstats.bca_ci(draws, estimate)
    assert low[0] == pytest.approx(norm.cdf(2 * norm.ppf(0.6915) - 1.959964), abs=1e-3)
    assert low[0] == pytest.approx(0.1685, abs=2e-3) and high[0] == pytest.approx(0.9985, abs=2e-3)
    _, high = itemstats.bca_ci(draws, estimate, np.array([0.1]))
    assert high[0] == pytest.approx(norm.cdf(0.5 + (0.5 + 1.959964) / (1 - 0.1 * (0.5 + 1.959964))), abs=1e-3)


def test_bca_interval_contains_its_estimate_when_every_draw_falls_below_it():
    """The issue's case: r 0.941 and item draws from 0.850 to 0.938, every one below it (a resample carries the
    item noise once more than the data). The plain percentile interval excludes the estimate; the bias-corrected
    one contains it, and its lower end moves up (toward the estimate, the bias corrected), not down."""
    draws = np.linspace(0.850, 0.938, 400)[:, None]
    plain_low, plain_high = np.percentile(draws[:, 0], [2.5, 97.5])
    assert plain_high < 0.941  # what the issue saw
    low, high = itemstats.bca_ci(draws, np.array([0.941]), np.array([0.0]))
    assert low[0] <= 0.941 <= high[0]
    assert low[0] > plain_low
    low, high = itemstats.bca_ci(-draws, np.array([-0.941]))  # the mirror image: every draw above
    assert low[0] <= -0.941 <= high[0]


def test_corrected_interval_contains_its_estimate_at_the_boundary():
    """The issue's r_corrected 0.995 with the interval [-1, -0.745]: most draws at +1 (their corrected variance at
    or below 0), the rest near the estimate. The former rule (draws clipped at z = 7.25, the median among them, the
    interval moved by twice its distance from the estimate) threw the interval past the estimate; now it contains
    it and stays near +1. A draw at the boundary is +1 (z at EDGE), whose convolution with Fisher's normal is +1."""
    rng = np.random.default_rng(31)
    draws = np.where(rng.random(1000) < 0.6, 1.0, np.tanh(np.arctanh(0.995) + 0.2 * rng.standard_normal(1000)))
    low, high = itemstats.corrected_ci(draws[:, None], np.array([0.995]), 30)
    assert 0.9 < low[0] <= 0.995 <= high[0] == 1.0
    # an estimate of exactly 1 whose draws stay near it: bounded below, not all of [-1, 1]
    near = np.tanh(np.arctanh(0.99) + 0.2 * rng.standard_normal(1000))
    low, high = itemstats.corrected_ci(np.r_[near, np.ones(200)][:, None], np.array([1.0]), 30)
    assert low[0] > 0.9 and high[0] == 1.0
    # draws at both boundaries (the corrected variance cannot be told from 0): all of [-1, 1]
    both = np.r_[np.ones(100), -np.ones(100), near][:, None]
    assert [float(v[0]) for v in itemstats.corrected_ci(both, np.array([0.99]), 30)] == [-1.0, 1.0]


def test_draws_beyond_the_boundary_count_at_the_side_they_fall():
    """A resample whose corrected conditional variance of X is negative has no ratio, but lies beyond ±1 on the
    side of its conditional covariance's sign (the ratio's limit as the variance falls to 0): computed by hand
    here for the matrix [[1, .5, .5], [.5, .2, .3], [.5, .3, 1]] (X given Z: 0.2 - 0.25 < 0; covariance
    0.3 - 0.25 > 0) and its mirror (Y's sign flipped)."""
    cov = np.array([[1.0, 0.5, 0.5], [0.5, 0.2, 0.3], [0.5, 0.3, 1.0]])
    flip = np.diag([1.0, 1.0, -1.0])
    stacked = np.stack([cov, flip @ cov @ flip])
    assert np.isnan(itemstats.partial_from_covariance(stacked)[:, 0, 1]).all()
    assert itemstats.partial_from_covariance(stacked, boundary=True)[:, 0, 1].tolist() == [1.0, -1.0]
    assert np.isnan(itemstats.partial_from_covariance(stacked, boundary=True)[:, 0, 0]).all()  # not a pair


def test_grouped_jackknife_leaves_each_group_out_of_one_testset():
    """Each deletion's scores and error variance equal statistics() on the items left (computed directly)."""
    run = planted_run(np.random.default_rng(32), items=(53, 70, 41))
    scores, error, sample = itemstats.jackknife_scores(run.matrices, groups=20)
    assert np.bincount(sample).tolist() == [20, 20, 20]
    for j in range(3):
        for g in (0, 13):
            kept = [Y if i != j else Y[np.arange(Y.shape[0]) % 20 != g] for i, Y in enumerate(run.matrices)]
            direct, _, direct_error = itemstats.statistics(kept)
            assert np.allclose(scores[20 * j + g], direct[0]) and np.allclose(error[20 * j + g], direct_error[0])


def test_no_printed_interval_excludes_its_estimate_over_many_planted_runs():
    """Property over 80 planted runs chosen to press on the boundary: shared signals near ±1 (rho ±0.97, ±0.999),
    X and Y nearly pure functions of ability (signal_sd 0.004: corrected partial variances near 0), a null, and
    in-domain testsets of 60 to 5,000 items. Every printed interval, item and block bootstrap alike, lies in
    [-1, 1] and contains the estimate printed beside it; an interval is NaN exactly where its estimate is."""
    rng = np.random.default_rng(33)
    runs = {}
    for k, (rho, sd) in enumerate([(0.97, 0.03), (-0.999, 0.03), (0.999, 0.004), (0.0, 0.004), (0.0, 0.03)]):
        for n_z in (60, 200, 1000, 5000):
            for rep in range(4):
                planted = planted_run(rng, rho=rho, signal_sd=sd, items=(n_z, 400, 400), checkpoints=20)
                runs[f"{k}-{n_z}-{rep}"] = planted.matrices
    table = item_correlations(_frame(runs), in_domain="mnli", items=200, bootstrap=50, block_length=2).table
    assert table.height == len(runs) == 80
    for low, high, estimate in ITEM_INTERVALS:
        lo, hi, est = table[low].to_numpy(), table[high].to_numpy(), table[estimate].to_numpy()
        assert (np.isnan(lo) == np.isnan(est)).all() and (np.isnan(hi) == np.isnan(est)).all(), low
        defined = np.isfinite(est)
        assert (lo[defined] <= est[defined]).all() and (est[defined] <= hi[defined]).all(), low
        assert (lo[defined] >= -1).all() and (hi[defined] <= 1).all(), low
    assert (table["r_corrected"].abs() > 0.99).sum() >= 4  # the boundary was reached


def test_a_corrected_r_at_the_boundary_with_well_determined_variances_gets_an_interval_near_it():
    """X and Y share a signal of partial correlation 0.995 (planted), the in-domain testset has 5,000 items and X
    and Y 2,000: the corrected variances are far from 0, and the corrected r lies at or near +1. Its intervals
    are then near +1 (formerly all of [-1, 1] wherever r_corrected was at ±1) and cover the planted truth."""
    rng = np.random.default_rng(34)
    planted = [planted_run(rng, rho=0.995, items=(5000, 2000, 2000), signal_sd=0.05) for _ in range(4)]
    table = item_correlations(_frame({f"r{k}": p.matrices for k, p in enumerate(planted)}), "mnli", items=300).table
    assert table["run"].to_list() == ["r0", "r1", "r2", "r3"]
    assert (table["r_corrected"] > 0.97).all()
    assert (table["corrected_ci_low"] > 0.7).all() and (table["corrected_item_ci_low"] > 0.7).all()
    assert table["corrected_ci_low"].median() > 0.9  # Fisher's part alone, n = 30 at 0.995: 0.989
    truth = np.array([p.true_r for p in planted])
    low, high = table["corrected_item_ci_low"].to_numpy(), table["corrected_item_ci_high"].to_numpy()
    assert ((low <= truth) & (truth <= high)).sum() >= 3


#: Planted runs of the BCa coverage test: 500 runs, 200 item resamples (about 40 s on the shared 2-core machine).
#: The main interval's coverage of 95 % gives a binomial SE of 0.97 points over 500 runs: 92-98 % fails by chance
#: with probability 0.2 %; benchmarks/results/item_bca_coverage.csv measures it with 1,000 resamples over 400
#: runs per setting at the issue's 60 and 5,000 in-domain items.
BCA_RUNS = 500


def test_bca_item_interval_covers_each_runs_noise_free_partial_correlation():
    """corrected_item_ci (BCa of the corrected r's item draws) is an interval for this run's noise-free partial
    correlation (the planted true_r of each run: these checkpoints, infinitely many items). Over BCA_RUNS planted
    runs with a shared signal of 0.5 and 1,000 in-domain items, through item_correlations itself, it covers true_r in
    92-98 % of the runs with a corrected r."""
    rng = np.random.default_rng(35)
    covered, defined = 0, 0
    for start in range(0, BCA_RUNS, 100):
        planted = [planted_run(rng, rho=0.5, items=(1000, 600, 600), **SHARED) for _ in range(100)]
        table = item_correlations(
            _frame({f"r{k:03d}": p.matrices for k, p in enumerate(planted)}), "mnli", items=200, splits=10, seed=start
        ).table
        assert table["run"].to_list() == [f"r{k:03d}" for k in range(100)]
        truth = np.array([p.true_r for p in planted])
        ok = table["r_corrected"].is_finite().to_numpy()
        low, high = table["corrected_item_ci_low"].to_numpy(), table["corrected_item_ci_high"].to_numpy()
        covered += int(((low <= truth) & (truth <= high))[ok].sum())
        defined += int(ok.sum())
    assert defined > 0.98 * BCA_RUNS
    assert 0.92 <= covered / defined <= 0.98, covered / defined
