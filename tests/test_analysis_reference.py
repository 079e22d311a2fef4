"""The linear path, the pooling and the model-versus-seed comparison against R (tests/reference/, made by
make_reference.R with stats and metafor); no R is needed to run these."""

from __future__ import annotations

import doctest
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from conftest import expected_pythia_rows, pythia_files
from ood_store._analysis import between_groups, compare, meta, partial_correlations
from ood_store._errors import AnalysisError

REFERENCE = Path(__file__).parent / "reference"
LINEAR_TOLERANCE = 1e-10
META_TOLERANCE = 1e-6


def _csv(name: str) -> pl.DataFrame:
    return pl.read_csv(REFERENCE / name, null_values=["NA", ""])


def _series(dataset: str) -> pl.DataFrame:
    return _csv("series.csv").filter(pl.col("dataset") == dataset).drop("dataset")


def _analysis(dataset: str) -> pl.DataFrame:
    frame = _series(dataset)
    in_domain = "lambada_openai" if dataset == "pythia" else "id"
    ood = frame.filter(pl.col("task") != in_domain)["task"].unique(maintain_order=True).to_list()
    return partial_correlations(frame, in_domain, ood).table


def _close(ours, theirs, tolerance, what):
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    assert ours.shape == theirs.shape, what
    np.testing.assert_allclose(ours, theirs, atol=tolerance, rtol=0, err_msg=what)


def test_the_r_inputs_are_the_json_fixtures():
    """make_reference.R read the Pythia files with jsonlite: its numbers are those of the files, to the bit."""
    expected = expected_pythia_rows(pythia_files())
    series = _series("pythia")
    assert series.height == 3 * 27 * 17
    for run, step, task, value in series.iter_rows():
        assert value == expected[(run, step, task, "acc")][0]


@pytest.mark.parametrize("dataset", ["pythia", "planted-between", "planted-seeds"])
def test_linear_equals_lm_residuals_and_the_t_test(dataset):
    reference = _csv("linear.csv").filter(pl.col("dataset") == dataset)
    joined = reference.join(_analysis(dataset), on=["run", "task_x", "task_y"], suffix="_ours")
    assert joined.height == reference.height > 0
    assert joined["n"].to_list() == joined["n_ours"].to_list()
    for column in ("r", "p", "ci_low", "ci_high", "dof", "acf1_x", "acf1_y", "n_eff", "p_eff"):
        _close(joined[f"{column}_ours"], joined[column], LINEAR_TOLERANCE, column)
    t = joined["r_ours"] * np.sqrt(joined["dof_ours"] / (1 - joined["r_ours"] ** 2))
    _close(t, joined["t"], LINEAR_TOLERANCE, "t")


def _check_pooled(pooled: meta.Pooled, row: dict) -> None:
    for ours, theirs in (("estimate", "estimate"), ("se", "se"), ("ci_low", "ci_low"), ("ci_high", "ci_high"),
                         ("pvalue", "pval"), ("q", "QE"), ("q_p", "QEp"), ("tau2", "tau2")):  # fmt: skip
        assert getattr(pooled, ours) == pytest.approx(row[theirs], abs=META_TOLERANCE), ours
    assert pooled.i2 * 100 == pytest.approx(row["I2"], abs=100 * META_TOLERANCE)  # metafor's I² is in percent


def test_pooling_equals_metafor_rma_pm():
    """123 sets: every Pythia pair (3 runs), and the two 20-run sets of the verdict tests."""
    inputs = _csv("meta_input.csv")
    reference = _csv("meta.csv")
    assert reference.height == 120 + 2
    heterogeneous = 0
    for row in reference.iter_rows(named=True):
        part = inputs.filter(
            (pl.col("set") == row["set"]) & (pl.col("task_x") == row["task_x"]) & (pl.col("task_y") == row["task_y"])
        )
        assert part.height == row["k"]
        _check_pooled(meta.pool(part["yi"].to_numpy(), part["vi"].to_numpy()), row)
        heterogeneous += row["tau2"] > 0
    assert 10 < heterogeneous < reference.height  # both regimes, tau2 = 0 and tau2 > 0, are covered


def test_compare_on_pythia_equals_metafor_on_rs_own_pipeline():
    """End to end: R's lm residuals, acf and n_eff, then rma(PM); ours from the scores up."""
    reference = _csv("meta.csv").filter(pl.col("set") == "pythia")
    ours = compare(_analysis("pythia"), test="z").table
    joined = reference.join(ours, on=["task_x", "task_y"])
    assert joined.height == 120
    _close(joined["r_pooled"], np.tanh(joined["estimate"]), META_TOLERANCE, "r_pooled")
    _close(joined["ci_low_right"], np.tanh(joined["ci_low"]), META_TOLERANCE, "ci_low")
    _close(joined["ci_high_right"], np.tanh(joined["ci_high"]), META_TOLERANCE, "ci_high")
    _close(joined["p_pooled"], joined["pval"], META_TOLERANCE, "p")
    _close(joined["q"], joined["QE"], META_TOLERANCE, "q")
    _close(joined["q_p"], joined["QEp"], META_TOLERANCE, "q_p")
    _close(joined["tau2_right"], joined["tau2"], META_TOLERANCE, "tau2")
    _close(joined["i2"] * 100, joined["I2"], 100 * META_TOLERANCE, "i2")


def _planted(dataset: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    runs = _csv("runs.csv").filter(pl.col("dataset") == dataset).drop("dataset").with_columns(pl.col("seed").cast(str))
    return _analysis(dataset), runs


@pytest.mark.parametrize("dataset", ["planted-between", "planted-seeds"])
@pytest.mark.parametrize("method", ["PM", "REML"])
def test_between_groups_equals_metafor_mixed_effects_model(dataset, method):
    table, runs = _planted(dataset)
    ours = between_groups(
        table, between="family", within="seed", attributes=runs, tau2_method=method, test="z", adjust_pairs="none"
    ).table
    reference = _csv("subgroups.csv").filter((pl.col("dataset") == dataset) & (pl.col("method") == method))
    means = _csv("subgroup_means.csv").filter((pl.col("dataset") == dataset) & (pl.col("method") == method))
    joined = reference.join(ours, on=["task_x", "task_y"])
    assert joined.height == reference.height == 3  # the pairs of x, y and w
    assert joined["runs"].to_list() == joined["k"].to_list() == [12, 12, 12]
    assert joined["df_between"].to_list() == joined["QMdf"].to_list() == [1, 1, 1]
    for ours_column, theirs in (("q_between", "QM"), ("p_between", "QMp"), ("q_within", "QE"),
                                ("p_within", "QEp"), ("tau2_within", "tau2")):  # fmt: skip
        _close(joined[ours_column], joined[theirs], META_TOLERANCE, ours_column)
    _close(joined["i2_within"] * 100, joined["I2"], 100 * META_TOLERANCE, "i2_within")
    for row in means.iter_rows(named=True):
        mine = ours.filter((pl.col("task_x") == row["task_x"]) & (pl.col("task_y") == row["task_y"]))
        assert mine[f"r:{row['family']}"][0] == pytest.approx(np.tanh(row["estimate"]), abs=META_TOLERANCE)
    # the same model from the arrays: per-group standard errors as metafor's
    part = table.filter((pl.col("task_x") == "x") & (pl.col("task_y") == "y")).join(runs, on="run").sort("run")
    fit = meta.subgroups(np.arctanh(part["r"].to_numpy()), 1 / (part["n_eff"].to_numpy() - 4), part["family"], method)
    expected = means.filter((pl.col("task_x") == "x") & (pl.col("task_y") == "y")).sort("family")
    _close(fit.se, expected["se"], META_TOLERANCE, "se")


def test_knapp_hartung_pooling_equals_metafor_rma_knha():
    """rma(yi, vi, method = "PM", test = "knha") on the 122 sets: t with k - 1 degrees of freedom on the adjusted
    variance; and the Q-profile interval of tau^2 (confint) on the same sets."""
    inputs = _csv("meta_input.csv")
    reference = _csv("meta_knha.csv")
    assert reference.height == 120 + 2
    below_one = 0
    for row in reference.iter_rows(named=True):
        part = inputs.filter(
            (pl.col("set") == row["set"]) & (pl.col("task_x") == row["task_x"]) & (pl.col("task_y") == row["task_y"])
        )
        pooled = meta.pool(part["yi"].to_numpy(), part["vi"].to_numpy(), test="knha")
        assert pooled.df == row["df"] == row["k"] - 1
        for ours, theirs in (("estimate", "estimate"), ("se", "se"), ("ci_low", "ci_low"), ("ci_high", "ci_high"),
                             ("pvalue", "pval"), ("tau2", "tau2")):  # fmt: skip
            assert getattr(pooled, ours) == pytest.approx(row[theirs], abs=META_TOLERANCE), (ours, row["task_x"])
        low, high = meta.tau2_interval_many([part["yi"].to_numpy()], [part["vi"].to_numpy()])
        assert low[0] == pytest.approx(row["tau2_ci_low"], abs=META_TOLERANCE)
        assert high[0] == pytest.approx(row["tau2_ci_high"], abs=META_TOLERANCE)
        below_one += row["s2w"] < 1 - 1e-9
    assert 10 < below_one < reference.height  # tau2 = 0 (s2w < 1) and tau2 > 0 (s2w = 1 under PM) both covered


def test_compare_with_knapp_hartung_equals_metafor_end_to_end():
    reference = _csv("meta_knha.csv").filter(pl.col("set") == "pythia")
    ours = compare(_analysis("pythia"), test="knha").table
    joined = reference.join(ours, on=["task_x", "task_y"])
    assert joined.height == 120
    _close(joined["ci_low_right"], np.tanh(joined["ci_low"]), META_TOLERANCE, "ci_low")
    _close(joined["ci_high_right"], np.tanh(joined["ci_high"]), META_TOLERANCE, "ci_high")
    _close(joined["p_pooled"], joined["pval"], META_TOLERANCE, "p")


@pytest.mark.parametrize("dataset", ["planted-between", "planted-seeds"])
@pytest.mark.parametrize("method", ["PM", "REML"])
def test_between_groups_knapp_hartung_equals_metafor(dataset, method):
    """rma(yi, vi, mods = ~ factor(family), test = "knha"): QM is F with (g - 1, k - g) degrees of freedom."""
    table, runs = _planted(dataset)
    ours = between_groups(
        table, between="family", within="seed", attributes=runs, tau2_method=method, test="knha", adjust_pairs="none"
    ).table
    reference = _csv("subgroups_knha.csv").filter((pl.col("dataset") == dataset) & (pl.col("method") == method))
    joined = reference.join(ours, on=["task_x", "task_y"])
    assert joined.height == reference.height == 3
    assert joined["df_between"].to_list() == joined["QMdf1"].to_list() == [1, 1, 1]
    assert joined["df_within"].to_list() == joined["QMdf2"].to_list() == [10, 10, 10]
    for ours_column, theirs in (("q_between", "QM"), ("p_between", "QMp"), ("tau2_within", "tau2")):
        _close(joined[ours_column], joined[theirs], META_TOLERANCE, ours_column)
    assert (joined["p_between_adj"] == joined["p_between"]).all()  # adjust_pairs none
    for row in reference.iter_rows(named=True):  # per-family standard errors, from the arrays
        part = table.filter((pl.col("task_x") == row["task_x"]) & (pl.col("task_y") == row["task_y"]))
        part = part.join(runs, on="run").sort("run")
        fit = meta.subgroups(
            np.arctanh(part["r"].to_numpy()), 1 / (part["n_eff"].to_numpy() - 4), part["family"], method, "knha"
        )
        assert fit.groups == (row["first"], row["second"])
        _close(fit.se, [row["se_first"], row["se_second"]], META_TOLERANCE, "se")
        if method == "PM":
            low, high = meta.tau2_interval_many(
                [np.arctanh(part["r"].to_numpy())], [1 / (part["n_eff"].to_numpy() - 4)], part["family"]
            )
            _close([low[0], high[0]], [row["tau2_ci_low"], row["tau2_ci_high"]], META_TOLERANCE, "tau2 interval")


def test_planted_model_differences_are_found_and_seed_noise_is_not():
    """+0.6 in one family, -0.6 in the other, seed noise within: the families differ beyond seed variation;
    the same correlation in both families with more seed noise: they do not."""
    verdicts = {}
    for dataset in ("planted-between", "planted-seeds"):
        table, runs = _planted(dataset)
        result = between_groups(table, between="family", within="seed", attributes=runs)
        assert repr(result) == (
            "<BetweenGroups: family beyond seed, 3 pairs, alpha 0.05 (holm over pairs), tau2 by PM, knha test; "
            "runs only (item noise not included): no per-sample rows given>"
        )
        out = result.table
        verdicts[dataset] = dict(zip(zip(out["task_x"], out["task_y"], strict=True), out["verdict"], strict=True))
        xy = out.filter((pl.col("task_x") == "x") & (pl.col("task_y") == "y")).row(0, named=True)
        if dataset == "planted-between":
            assert xy["r:opt"] > 0.4 and xy["r:olmo"] < -0.4
            assert xy["tau2_within"] > 0  # seed noise is there, and still the families differ beyond it
    assert verdicts["planted-between"][("x", "y")] == "differs by family beyond seed variation"
    assert verdicts["planted-seeds"][("x", "y")] == "not shown to differ by family beyond seed variation"
    # w is unrelated noise; its pairs differ between families only by chance, at the rate alpha (R finds
    # p = 0.035 for x-w in planted-between, 0.16 to 0.85 for the other three: tests/reference/subgroups.csv)


def test_between_groups_bad_designs_are_one_line_errors():
    table, runs = _planted("planted-between")
    with pytest.raises(AnalysisError, match="within: 'family' is also `between`"):
        between_groups(table, between="family", within="family", attributes=runs)
    clash = runs.with_columns(pl.lit("1").alias("seed"))
    with pytest.raises(AnalysisError, match=r"within: runs '.*' and '.*' of family 'olmo' have the same seed '1'"):
        between_groups(table, between="family", within="seed", attributes=clash)
    lacking = runs.with_columns(
        pl.when(pl.col("run").str.ends_with("seed3")).then(None).otherwise(pl.col("family")).alias("family")
    )
    with pytest.raises(AnalysisError, match=r"between: run\(s\) .* have no 'family'"):
        between_groups(table, between="family", within="seed", attributes=lacking)
    with pytest.raises(AnalysisError, match="between: no run attribute 'size'"):
        between_groups(table, between="size", within="seed", attributes=runs)
    with pytest.raises(AnalysisError, match="tau2_method: must be one of PM, REML"):
        between_groups(table, between="family", within="seed", attributes=runs, tau2_method="DL")
    one = runs.with_columns(pl.lit("opt").alias("family"))
    out = between_groups(
        table, between="family", within="run_seed", attributes=one.with_columns(run_seed=pl.col("run"))
    )
    assert set(out.table["verdict"]) == {"too few runs"}


def test_reference_files_are_what_the_script_writes():
    """Every CSV the script names is committed, with the columns the tests read."""
    script = (REFERENCE / "make_reference.R").read_text()
    written = {line.split('"')[1] for line in script.splitlines() if line.strip().startswith("write_ref(")}
    assert written == {p.name for p in REFERENCE.glob("*.csv")}
    for name in written:
        assert _csv(name).height > 0, name


def test_meta_docstring_examples_run():
    assert doctest.testmod(meta).failed == 0
