"""A pilot's nuisance parameters (`ood-store plan --pilot`): item noise from per-sample rows, stderr or sizes;
autocorrelation, curve variance and seed spread recovered from planted pilots (ood_store/_examples/pilot.py)
within their stated intervals."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import ood_store
from ood_store._analysis import between_groups, partial_correlations
from ood_store._analysis.nuisance import estimate_nuisance
from ood_store._cli import main
from ood_store._errors import AnalysisError
from ood_store._examples import pilot

pytestmark = pytest.mark.xdist_group("nuisance")

TRUTH = pilot.Truth(seeds=3)


@pytest.fixture(scope="module")
def pilot_db(tmp_path_factory):
    """The planted pilot (2 families x 3 seeds x 30 checkpoints, rte with its per-sample rows), ingested."""
    folder = tmp_path_factory.mktemp("pilot")
    db = folder / "pilot.duckdb"
    with ood_store.open(db) as store:
        pilot.build(store, folder / "files", TRUTH)
    return db


def test_item_noise_from_samples_is_the_variance_of_the_mean_over_resampled_items(pilot_db):
    """For rte the store has every item: the bootstrap variance of the accuracy over resampled items is their
    population variance over their number, exactly; a literal bootstrap of 4,000 resamples agrees within its error.
    hans has no samples: lm-eval's stderr, squared; a frame with document counts only: p (1 - p) / N."""
    with ood_store.open(pilot_db, read_only=True) as store:
        estimates = estimate_nuisance(store, "mnli", ["hans", "rte"])
        row = store.query(
            "SELECT list(CAST(s.metrics['acc'] AS DOUBLE) ORDER BY s.doc_id) AS items, any_value(c.stderr) AS stderr "
            "FROM samples_all AS s JOIN scores AS c ON c.evaluation_id = s.evaluation_id AND c.task = s.task "
            "WHERE s.task = 'rte' AND s.run = 'pilot/opt-nli-seed1' AND s.step = 1250 AND c.metric = 'acc'"
        ).row(0, named=True)
        stderrs = store.query("SELECT stderr FROM scores WHERE task = 'hans' AND metric = 'acc'")["stderr"].to_numpy()
        noise = store.query("SELECT value FROM scores WHERE task = 'rte' AND metric = 'acc'")["value"].to_numpy()
    items = np.asarray(row["items"])
    exact = items.var() / items.size
    rng = np.random.default_rng(0)
    resampled = items[rng.integers(0, items.size, size=(4000, items.size))].mean(axis=1)
    assert resampled.var() == pytest.approx(exact, rel=4 * np.sqrt(2 / 4000))
    assert exact == pytest.approx(row["stderr"] ** 2 * (items.size - 1) / items.size, rel=1e-12)
    fit = estimates.row("hans", "rte")
    assert fit["item_noise_from"] == "samples, stderr"
    assert fit["item_sd_x"] == pytest.approx(np.sqrt(np.mean(stderrs**2)), rel=1e-12)
    assert fit["item_sd_y"] == pytest.approx(np.sqrt(np.mean(noise * (1 - noise) / TRUTH.items["rte"])), rel=1e-12)
    scores, runs = pilot.frames(TRUTH)
    sized = estimate_nuisance(scores.drop("stderr"), "mnli", ["hans", "rte"], attributes=runs).row("hans", "rte")
    hans = scores.filter(pl.col("task") == "hans")["value"].to_numpy()
    assert sized["item_noise_from"] == "size"
    assert sized["item_sd_x"] == pytest.approx(np.sqrt(np.mean(hans * (1 - hans) / TRUTH.items["hans"])), rel=1e-12)
    bare = estimate_nuisance(scores.drop("stderr", "n_samples"), "mnli", ["hans", "rte"], attributes=runs)
    assert "no item noise known" in bare.row("hans", "rte")["note"]


def test_the_planted_pilot_store_gives_back_its_parameters_within_their_intervals(pilot_db):
    """Every planted value within its 99% interval: the curves' lag-1 autocorrelation (0.65 at 24 even checkpoints,
    from a log-then-linear schedule), each testset's item noise (0.19, 2.1 and 8.4 of the curves' variance) and
    the seed spread tau = 0.3; the seed spread is between_groups' own."""
    with ood_store.open(pilot_db, read_only=True) as store:
        estimates = estimate_nuisance(store, "mnli", confidence=0.99)
        table = partial_correlations(store, "mnli")
        spread = between_groups(table, between="family", within="seed", attributes=store, test="z").table
    noise, ar1 = pilot.planted_noise(TRUTH), pilot.planted_ar1(TRUTH)
    assert estimates.table.height == 3
    for row in estimates.table.iter_rows(named=True):
        pair = (row["task_x"], row["task_y"])
        assert row["runs"] == 6 and row["checkpoints"] == len(pilot.STEPS)
        assert row["ar1_low"] <= ar1 <= row["ar1_high"], (pair, row["ar1_low"], row["ar1_high"])
        for name in ("x", "y"):
            planted = noise[row[f"task_{name}"]]
            assert row[f"noise_{name}_low"] <= planted <= row[f"noise_{name}_high"], (pair, name, planted)
        assert row["tau_low"] <= TRUTH.tau <= row["tau_high"], pair
        theirs = spread.filter((pl.col("task_x") == pair[0]) & (pl.col("task_y") == pair[1]))["tau2_within"][0]
        assert row["tau_observed"] ** 2 == pytest.approx(theirs, abs=1e-12)
    curves = estimates.curves("rte", "hans")  # either order: the noise follows its testset
    assert curves.noise == (estimates.row("hans", "rte")["noise_y"], estimates.row("hans", "rte")["noise_x"])
    assert curves.positions(len(pilot.STEPS), "pilot").tolist() == list(map(float, pilot.STEPS))
    with pytest.raises(AnalysisError, match="pair: the pilot has no pair hans,mnli"):
        estimates.row("hans", "mnli")


def test_the_intervals_cover_the_planted_values_across_pilots():
    """Eight planted pilots (frames, lm-eval's stderr as item noise), 95% intervals: coverage of each kind of
    parameter over the pilots' three pairs at least 20 of 24 (if 95% held, 19 or fewer would happen 3% of the
    time), and the estimates scatter around the truth (median ratio within 0.6 and 1.6)."""
    covered: dict[str, list[bool]] = {"ar1": [], "noise": [], "tau": []}
    ratios: dict[str, list[float]] = {"ar1": [], "noise": []}
    for seed in range(8):
        truth = pilot.Truth(seeds=3, seed=200 + seed)
        scores, runs = pilot.frames(truth)
        table = estimate_nuisance(scores, "mnli", attributes=runs).table
        noise, ar1 = pilot.planted_noise(truth), pilot.planted_ar1(truth)
        for row in table.iter_rows(named=True):
            covered["ar1"].append(row["ar1_low"] <= ar1 <= row["ar1_high"])
            covered["tau"].append(row["tau_low"] <= truth.tau <= row["tau_high"])
            ratios["ar1"].append(row["ar1"] / ar1)
            task = row["task_x"]  # each task's noise once per pilot: hans, hans, rte
            covered["noise"].append(row["noise_x_low"] <= noise[task] <= row["noise_x_high"])
            ratios["noise"].append(row["noise_x"] / noise[task])
    for name, hits in covered.items():
        assert sum(hits) >= 20, (name, sum(hits))
    for name, values in ratios.items():
        assert 0.6 < np.median(values) < 1.6, (name, np.median(values))


def test_plan_takes_its_nuisance_from_the_pilot(runner, pilot_db):
    result = runner.invoke(
        main,
        ["plan", "--pilot", str(pilot_db), "--pair", "hans,rte", "--effect", "0.5", "--effect", "-0.5", "--seeds",
         "2,4", "--checkpoints", "30", "--replications", "100", "--format", "csv"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(f"Pilot {pilot_db} (6 runs): hans-rte residual curves ar1 ")
    assert "(from samples, stderr), seed spread tau " in result.stderr
    assert pl.read_csv(result.stdout.encode())["seeds"].to_list() == [2, 4]
    shown = runner.invoke(main, ["plan", "--pilot", str(pilot_db), "--estimates", "--format", "csv"])
    assert shown.exit_code == 0, shown.output
    assert pl.read_csv(shown.stdout.encode()).height == 3
    unnamed = runner.invoke(main, ["plan", "--pilot", str(pilot_db), "--effect", "0.5", "--effect", "-0.5"])
    assert unnamed.exit_code == 2 and "name the pair to plan for: --pair X,Y" in unnamed.output
