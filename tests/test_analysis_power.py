"""Planning a study (`ood-store plan`): simulations analyzed by the analysis' own code, checked against closed forms
(R's pwr.r.test, Jackson & Turner's formula, the noncentral t: tests/reference/power.csv), the calibration table of
docs/how-to/planning.md (benchmarks/plan_calibration.py), and determinism over threads."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from conftest import benchmark
from ood_store._analysis import between_groups, meta, partial_correlations
from ood_store._analysis.power import POWER_COLUMNS, power_analysis
from ood_store._analysis.simulate import Analysis, Curves, run_statistics, simulate
from ood_store._cli import main
from ood_store._errors import AnalysisError

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "tests" / "reference"
PLANNING = (ROOT / "docs" / "how-to" / "planning.md").read_text()  # the page that shows the calibration

pytestmark = pytest.mark.xdist_group("power")


def _long(positions: np.ndarray, z: np.ndarray, x: np.ndarray, y: np.ndarray, names: list[str]) -> pl.DataFrame:
    """Simulated runs (checkpoints × runs) as the long frame partial_correlations reads."""
    frames = []
    for j, run in enumerate(names):
        values = {"mnli": z, "hans": x[:, j], "rte": y[:, j]}
        frames.append(
            pl.DataFrame(
                {
                    "run": run,
                    "step": np.tile(positions.astype(np.int64), 3),
                    "task": np.repeat(list(values), positions.size),
                    "value": np.concatenate(list(values.values())),
                }
            )
        )
    return pl.concat(frames)


@pytest.mark.parametrize(("residualizer", "inference"), [("linear", "effective"), ("gam", "naive")])
def test_simulated_runs_are_analysed_as_analyze_and_compare_analyse_them(residualizer, inference):
    """Per run: r, n_eff, edf, p, p_eff and the Fisher z variance of run_statistics are those of
    partial_correlations on the same series; per study, the test between families is between_groups'."""
    curves = Curves(ar1=0.5, noise=(0.3, 0.6), span=(0.0, 20000.0))
    positions = np.round(curves.positions(20, "log"))
    z = curves.in_domain_curve(positions)
    rng = np.random.default_rng(5)
    rho = np.tanh(np.arctanh([0.4] * 4 + [-0.4] * 4) + 0.2 * rng.standard_normal(8))
    x, y = simulate(rng, rho, curves.neighbours(positions), curves.noise)
    analysis = Analysis(residualizer=residualizer, inference=inference)
    ours = run_statistics(z, x, y, analysis)
    names = [f"run{j}" for j in range(8)]
    table = partial_correlations(_long(positions, z, x, y, names), "mnli", residualizer=residualizer).table
    for column in ("r", "n_eff", "p", "p_eff"):
        np.testing.assert_allclose(ours[column], table[column].to_numpy(), rtol=1e-10, atol=1e-12, err_msg=column)
    np.testing.assert_allclose(ours["edf"], np.fmax(table["edf_x"], table["edf_y"]), rtol=1e-10)
    size = table["n_eff"] if inference == "effective" else table["n"]
    np.testing.assert_allclose(ours["variance"], 1 / (size - np.fmax(table["edf_x"], table["edf_y"]) - 2), rtol=1e-10)
    runs = pl.DataFrame({"run": names, "family": ["a"] * 4 + ["b"] * 4, "seed": list("12341234")})
    for test in ("knha", "z"):
        theirs = between_groups(
            table, between="family", within="seed", attributes=runs, inference=inference, test=test,
            adjust_pairs="none",
        ).table  # fmt: skip
        fit = meta.subgroups_many([ours["effect"]], [ours["variance"]], ["a"] * 4 + ["b"] * 4, "PM", test)
        assert fit.p_between[0] == pytest.approx(theirs["p_between"][0], rel=1e-9)


def _reference(kind: str) -> pl.DataFrame:
    return pl.read_csv(REFERENCE / "power.csv", null_values=["NA", ""]).filter(pl.col("kind") == kind)


def _within_monte_carlo_error(estimate: float, expected: float, replications: int, z: float = 3.0) -> bool:
    se = math.sqrt(expected * (1 - expected) / replications)
    return abs(estimate - expected) <= z * se


def test_one_correlation_has_the_power_of_pwr_r_test():
    """One run, white residual curves, no item noise, naive n: the t test of a partial correlation with one
    control on n checkpoints is that of a plain correlation of n - 1 observations, pwr.r.test(n - 1, r)."""
    for row in _reference("pwr.r.test").iter_rows(named=True):
        result = power_analysis(
            [row["r"]], seeds=[1], checkpoints=[row["checkpoints"]], analysis=Analysis(inference="naive"),
            replications=20000, seed=1, adjust_pairs="none",
        )  # fmt: skip
        out = result.table.row(0, named=True)
        assert out["test"] == "run" and out["evaluations"] == row["checkpoints"]
        assert _within_monte_carlo_error(out["power"], row["power"], 20000), (row, out["power"])
        assert _within_monte_carlo_error(out["type1"], 0.05, 20000), out["type1"]


@pytest.mark.parametrize(("kind", "test"), [("jackson-turner", "z"), ("noncentral-t", "knha")])
def test_pooled_estimate_has_the_power_of_the_closed_forms(kind, test):
    """One family of k seeds spread by tau, 200 white checkpoints, naive n (equal sampling variances): the z test's
    power is Jackson & Turner's formula, Knapp-Hartung's the noncentral t (R, tests/reference/power.csv)."""
    apart = 0
    for row in _reference(kind).iter_rows(named=True):
        result = power_analysis(
            [row["r"]], seeds=[row["runs"]], checkpoints=[row["checkpoints"]], tau=row["tau"], test=test,
            analysis=Analysis(inference="naive"), replications=20000, seed=2, adjust_pairs="none",
        )  # fmt: skip
        out = result.table.row(0, named=True)
        assert out["test"] == "pooled"
        assert _within_monte_carlo_error(out["power"], row["power"], 20000), (row, out["power"])
        # metapower's formula (tau² known) is a different number, more than 6 standard errors away, at least once
        apart += abs(out["power"] - row["power_known_tau2"]) > 6 * math.sqrt(0.25 / 20000)
    assert apart >= 1


def test_the_calibration_table_of_the_docs_comes_from_plan():
    """The planning page's tables are benchmarks/plan_calibration.py's output (committed, 20,000 replications a
    cell); plan gives those numbers again (one row of cells rerun here), and the default test is calibrated in
    every cell."""
    calibration = benchmark("plan_calibration")
    frame = pl.read_csv(calibration.RESULTS)
    for kind in ("between", "pooled"):
        assert calibration.markdown(frame, kind) in PLANNING, kind
    rerun = calibration.calibration("between", "knha", 0.2, int(frame["replications"][0]))
    committed = frame.filter((pl.col("kind") == "between") & (pl.col("test") == "knha") & (pl.col("tau") == 0.2))
    assert rerun["type1"].to_list() == committed["type1"].to_list()
    # The page: Knapp-Hartung within 2 standard errors of 0.05 but where marked, and within 3 everywhere (among 24 cells
    # of a calibrated test about one falls outside 2 by chance); z liberal wherever seeds spread (tau > 0)
    knha = frame.filter(pl.col("test") == "knha")
    assert knha.height == 24 and knha["calibrated"].sum() >= 22
    assert ((knha["type1"] - 0.05).abs() <= 3 * knha["type1_se"]).all()
    spread = frame.filter((pl.col("test") == "z") & (pl.col("tau") > 0))
    assert (spread["type1"] > 0.05 + 2 * spread["type1_se"]).all()


def test_the_default_test_is_calibrated_on_fresh_simulations():
    """The twelve cells again, on other random numbers (3,000 studies each): within 3 standard errors of 0.05."""
    for tau in (0.0, 0.2, 0.4):
        result = power_analysis(
            [0.0, 0.0], seeds=[2, 3, 5, 8], checkpoints=[24], tau=tau, curves=Curves(ar1=0.6), replications=3000,
            seed=99, adjust_pairs="none",
        )  # fmt: skip
        for out in result.table.iter_rows(named=True):
            assert out["power"] == out["type1"]  # no difference to find: one simulation serves both
            assert _within_monte_carlo_error(out["type1"], 0.05, 3000), (tau, out)


def test_a_design_draws_the_same_numbers_in_any_grid_and_the_target_is_the_cheapest():
    settings = {"tau": 0.2, "curves": Curves(ar1=0.6), "replications": 300, "seed": 3}
    grid = power_analysis([0.4, -0.4], seeds=[2, 3, 4, 6], checkpoints=[12, 24], target_power=0.7, **settings)
    alone = power_analysis([0.4, -0.4], seeds=[4], checkpoints=[24], **settings)
    assert grid.table.filter((pl.col("seeds") == 4) & (pl.col("checkpoints") == 24)).rows() == alone.table.rows()
    assert grid.table["evaluations"].to_list() == [2 * s * c for s in (2, 3, 4, 6) for c in (12, 24)]
    chosen = grid.chosen
    assert chosen is not None
    reaching = grid.table.filter(pl.col("power") >= 0.7)
    assert chosen.evaluations == reaching["evaluations"].min()
    assert grid.table.filter(pl.col("evaluations") < chosen.evaluations)["power"].max() < 0.7
    assert "power 0.7 first at" in repr(grid)
    nothing = power_analysis([0.05, -0.05], seeds=[2], checkpoints=[12], target_power=0.9, replications=50)
    assert nothing.chosen is None and "no design reaches power 0.9" in repr(nothing)


def test_one_seed_per_family_has_no_test_between_families():
    out = power_analysis([0.3, -0.3], seeds=[1, 2], checkpoints=[12], replications=50).table
    one = out.filter(pl.col("seeds") == 1).row(0, named=True)
    assert one["power"] is None and one["note"] == "family and seed confounded: 1 seed per family (needs 2)"
    assert out.filter(pl.col("seeds") == 2)["power"][0] is not None


def test_more_checkpoints_help_less_when_the_curves_are_autocorrelated():
    """The issue's observation: 12 -> 48 checkpoints over the same training raises power a lot for nearly white
    curves and little for slow ones (denser checkpoints are more alike)."""
    gains = {}
    for ar1 in (0.1, 0.9):
        table = power_analysis(
            [0.3, -0.3], seeds=[3], checkpoints=[12, 48], tau=0.2, curves=Curves(ar1=ar1), replications=1000,
            test="z", adjust_pairs="none", seed=4,
        ).table  # fmt: skip
        gains[ar1] = table["power"][1] - table["power"][0]
    assert gains[0.1] > 0.15 and gains[0.9] < gains[0.1] - 0.1, gains


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"effects": []}, "effects: give the partial correlation to detect in each family"),
        ({"effects": [1.2]}, "effects: correlations between -1 and 1"),
        ({"seeds": [0]}, "seeds: at least one seed per family"),
        ({"checkpoints": [4]}, "checkpoints: at least 6 checkpoints per run"),
        ({"test": "t"}, "test: must be one of z, knha"),
        ({"schedule": "cosine"}, "schedule: must be one of linear, log, pilot"),
        ({"schedule": "pilot"}, "schedule: the pilot schedule needs a pilot"),
        ({"target_power": 1.5}, "target_power: must be between 0 and 1"),
    ],
)
def test_bad_plans_are_one_line_errors(kwargs, message):
    arguments = {"effects": [0.3, -0.3], "seeds": [2], "checkpoints": [12], "replications": 20, **kwargs}
    with pytest.raises(AnalysisError, match=message):
        power_analysis(arguments.pop("effects"), **arguments)
    with pytest.raises(AnalysisError, match="ar1: must be at least 0 and below 1"):
        Curves(ar1=1.0)


def _plan_csv(tmp_path: Path, name: str, threads: int, blas: int) -> str:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(blas), "OMP_NUM_THREADS": str(blas), "MKL_NUM_THREADS": str(blas)}
    out = tmp_path / f"{name}.csv"
    command = [str(Path(sys.executable).parent / "ood-store"), "plan", "--effect", "0.3", "--effect", "-0.3",
               "--tau", "0.2", "--ar1", "0.6", "--noise", "0.5", "--seeds", "2:4", "--checkpoints", "12,30",
               "--replications", "600", "--threads", str(threads), "--target-power", "0.5", "-o", str(out)]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, env=env, cwd=tmp_path)
    return out.read_text()


def test_the_same_seed_gives_the_same_table_on_one_and_two_threads(tmp_path):
    one = _plan_csv(tmp_path, "one", threads=1, blas=1)
    two = _plan_csv(tmp_path, "two", threads=2, blas=2)
    assert one == two
    assert len(one.splitlines()) == 1 + 3 * 2


def test_plan_prints_its_table_and_the_cheapest_design(runner, tmp_path):
    result = runner.invoke(
        main,
        ["plan", "--effect", "0.5", "--effect", "-0.5", "--seeds", "2,3", "--checkpoints", "12", "--replications",
         "200", "--target-power", "0.3", "--format", "csv"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    table = pl.read_csv(result.stdout.encode())
    assert table.columns[:6] == ["families", "seeds", "checkpoints", "runs", "evaluations", "test"]
    assert "Cheapest design with power 0.3: 2 seeds x 12 checkpoints (48 checkpoint evaluations)." in result.stderr
    missing = runner.invoke(main, ["plan", "--seeds", "2"])
    assert missing.exit_code == 2 and "--effect R (once per family)" in missing.output
    bad = runner.invoke(main, ["plan", "--effect", "0.3", "--seeds", "2-5"])
    assert bad.exit_code == 2 and "expected integers such as 2,3,5 or a range 2:10" in bad.output
    figure = tmp_path / "power.png"
    drawn = runner.invoke(
        main,
        ["plot", "power", "--effect", "0.5", "--effect", "-0.5", "--seeds", "2:4", "--checkpoints", "12,24",
         "--replications", "100", "--target-power", "0.5", "-o", str(figure)],
    )  # fmt: skip
    assert drawn.exit_code == 0, drawn.output
    assert figure.stat().st_size > 10_000 and "Wrote power curves of 6 designs" in drawn.stderr


def test_the_power_figure_draws_a_line_per_checkpoint_count():
    from ood_store._export.power import power_curves

    result = power_analysis([0.5, -0.5], seeds=[2, 3], checkpoints=[12, 24], replications=100, target_power=0.2)
    figure = power_curves(result)
    (ax,) = figure.axes
    assert [text.get_text() for text in figure.legends[0].get_texts()] == ["12 checkpoints", "24 checkpoints"]
    assert any(line.get_gid() == "target" for line in ax.get_lines())
    assert any(line.get_gid() == "chosen" for line in ax.get_lines())


def test_docstring_examples_run():
    import doctest

    from ood_store._analysis import inference, power
    from ood_store._export import captions

    for module in (power, inference, captions):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def test_plan_shows_a_progress_bar_and_prints_every_format(runner, tmp_path):
    """One bar over designs x hypotheses x batches of 500 replications (2 x 2 x 2 = 8 here), on a terminal; the
    table in each of the output formats."""
    args = ["plan", "--effect", "0.4", "--effect", "-0.4", "--seeds", "2,3", "--checkpoints", "12", "--replications",
            "600"]  # fmt: skip
    result = runner.invoke(main, args, env={"TTY_COMPATIBLE": "1", "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    bar = [line for line in re.split(r"[\r\n]", result.stderr) if "simulating" in line]
    counts = [tuple(map(int, m)) for line in bar for m in re.findall(r"(\d+)/(\d+)", line)]
    assert counts and {total for _, total in counts} == {8} and counts[-1] == (8, 8)
    assert "3 seeds x 12 checkpoints" in result.stderr  # what is being simulated
    as_json = json.loads(runner.invoke(main, [*args, "--format", "json"]).stdout)
    assert [row["seeds"] for row in as_json] == [2, 3] and as_json[0]["test"] == "between"
    markdown = runner.invoke(main, [*args, "--format", "markdown"]).stdout
    assert markdown.splitlines()[0].startswith("|   seeds |   checkpoints |")
    latex = runner.invoke(main, [*args, "--format", "latex"]).stdout
    assert "\\begin{tabular}" in latex
    out = tmp_path / "plan.parquet"
    assert runner.invoke(main, [*args, "-o", str(out)]).exit_code == 0
    assert pl.read_parquet(out).columns == list(POWER_COLUMNS)


def test_the_gam_residualizer_on_request():
    """The GAM as analyze fits it, one fit for all simulated runs of a design: its power is near the line's (both
    remove a straight line in the in-domain score, which is all the simulated curves hold)."""
    common = {"seeds": [4], "checkpoints": [16], "tau": 0.1, "replications": 300, "seed": 7}
    gam = power_analysis([0.5, -0.5], analysis=Analysis(residualizer="gam"), **common).table.row(0, named=True)
    line = power_analysis([0.5, -0.5], **common).table.row(0, named=True)
    assert 0.3 < gam["power"] <= line["power"] + 3 * line["power_se"], (gam, line)
    with pytest.raises(AnalysisError, match="checkpoints: the GAM residualizer needs at least 8 checkpoints"):
        power_analysis([0.5, -0.5], seeds=[2], checkpoints=[6], analysis=Analysis(residualizer="gam"))
