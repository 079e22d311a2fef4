"""Results objects: an analysis' table together with the options, tasks and runs that made it."""

from __future__ import annotations

import json

import polars as pl
import pytest

import ood_store
from conftest import PYTHIA_ANALYSIS, PYTHIA_IN_DOMAIN, PYTHIA_OOD, PYTHIA_SIZES
from ood_store._analysis import (
    Comparison,
    Options,
    PartialCorrelations,
    compare,
    partial_correlations,
    residualizer_sensitivity,
)
from ood_store._analysis.results import partial_frame
from ood_store._errors import AnalysisError
from ood_store._export import figures

RUNS = tuple(f"EleutherAI/pythia-v1.1-{size}" for size in PYTHIA_SIZES)


def test_a_result_holds_its_table_options_tasks_and_runs(analysis_db):
    with ood_store.open(analysis_db, read_only=True) as store:
        result = partial_correlations(store, PYTHIA_IN_DOMAIN, ["sciq", "piqa", "arc_easy"], residualizer="linear")
    assert isinstance(result, PartialCorrelations)
    assert result.tasks == ("sciq", "piqa", "arc_easy")  # as asked, not sorted
    assert result.runs == tuple(sorted(RUNS))
    assert result.options == Options(in_domain=PYTHIA_IN_DOMAIN, ood=("sciq", "piqa", "arc_easy"))
    assert result.table.height == 3 * 3 and set(result.table["run"]) == set(RUNS)
    assert "3 runs × 3 OOD tasks" in repr(result)


def test_each_result_says_in_its_repr_what_it_holds(analysis_db):
    with ood_store.open(analysis_db, read_only=True) as store:
        result = partial_correlations(store, PYTHIA_IN_DOMAIN, ["sciq", "piqa", "arc_easy"])
        by_size = compare(result, by=["size"], attributes=store)
        sensitivity = residualizer_sensitivity(store, PYTHIA_IN_DOMAIN, ["sciq", "piqa"], alpha=0.1)
    assert repr(result) == (
        "<PartialCorrelations: 3 runs × 3 OOD tasks, in-domain 'lambada_openai', linear residualizer, pearson; 9 rows>"
    )
    closed = "runs only (item noise not included): the analysis' store is closed (give an open one as `items`)"
    assert repr(compare(result)) == (
        f"<Comparison: 3 pairs, alpha 0.05 (holm over pairs), knha test, effective inference; {closed}>"
    )
    assert repr(compare(result, adjust_pairs="none", test="z")) == (
        f"<Comparison: 3 pairs, alpha 0.05 (not adjusted), z test, effective inference; {closed}>"
    )
    assert repr(by_size) == (  # 3 sizes × 3 pairs; the Pythia store has no per-sample rows
        "<Comparison by size: 9 pairs, alpha 0.05 (holm over pairs), knha test, effective inference; "
        "runs only (item noise not included): no per-sample rows of every task in every run>"
    )
    fragile = sum(sensitivity.table["fragile"].to_list())
    assert repr(sensitivity) == f"<Sensitivity: 3 pairs, {fragile} fragile at alpha 0.1>"


def test_a_saved_analysis_comes_back_as_the_result_it_was_saved_from(analysis_db, tmp_path):
    db = tmp_path / "copy.duckdb"
    db.write_bytes(analysis_db.read_bytes())
    with ood_store.open(db) as store:
        result = partial_correlations(store, PYTHIA_IN_DOMAIN, ["piqa", "sciq", "winogrande"], method="spearman")
        store.save_analysis("spearman", result)
        back = store.analysis("spearman")
        stored = json.loads(
            store.query("SELECT CAST(params AS VARCHAR) AS p FROM analyses WHERE name = 'spearman'")["p"][0]
        )
    assert back.options == result.options and back.runs == result.runs
    assert back.table.sort("run", "task_x", "task_y").equals(result.table.sort("run", "task_x", "task_y"))
    # The saved parameters are the result's own: every option, the tasks and runs the table holds.
    assert stored["method"] == "spearman" and stored["ood"] == ["piqa", "sciq", "winogrande"]
    assert stored["tasks"] == ["piqa", "sciq", "winogrande"] and stored["runs_analyzed"] == sorted(RUNS)


def test_saving_needs_a_result_not_a_bare_frame(analysis_db, tmp_path):
    db = tmp_path / "copy.duckdb"
    db.write_bytes(analysis_db.read_bytes())
    with ood_store.open(db) as store:
        frame = store.analysis(PYTHIA_ANALYSIS).table
        with pytest.raises(AnalysisError, match="expected the result of partial_correlations, got DataFrame"):
            store.save_analysis("bare", frame)  # type: ignore[arg-type]
        result = store.analysis(PYTHIA_ANALYSIS)
        lacking = PartialCorrelations(result.table.drop("acf1_x"), result.options, result.tasks, result.runs)
        with pytest.raises(AnalysisError, match=r"^not a partial-correlation table: no column\(s\) acf1_x$"):
            store.save_analysis("lacking", lacking)
        assert "lacking" not in store.analyses()["name"].to_list()


def test_compare_keeps_what_it_compared(analysis_db):
    with ood_store.open(analysis_db, read_only=True) as store:
        saved = store.analysis(PYTHIA_ANALYSIS)
        by_size = compare(saved, by=["size", "size"], attributes=store, alpha=0.1, inference="naive")
    assert isinstance(by_size, Comparison)
    assert (by_size.by, by_size.alpha, by_size.inference, by_size.source) == (("size",), 0.1, "naive", saved)
    pairs = len(PYTHIA_OOD) * (len(PYTHIA_OOD) - 1) // 2
    assert by_size.table.height == pairs * len(PYTHIA_SIZES)
    plain = compare(saved.table)  # a bare frame works too, without a source
    assert plain.source is None and plain.table.height == pairs


def test_one_validator_for_partial_correlation_tables():
    with pytest.raises(AnalysisError, match=r"no column\(s\) n, n_eff, p_adj, p_eff_adj, r, task_x, task_y$"):
        partial_frame(pl.DataFrame({"run": ["a"]}))
    with pytest.raises(AnalysisError, match="expected partial correlations .* got list"):
        partial_frame([1, 2])  # type: ignore[arg-type]
    with pytest.raises(AnalysisError, match=r"no column\(s\) ci_high$"):
        frame = pl.DataFrame({c: [0.0] for c in ("n", "r", "p_adj", "n_eff", "p_eff_adj", "ci_low")})
        partial_frame(frame.with_columns(run=pl.lit("a"), task_x=pl.lit("x"), task_y=pl.lit("y")), also=("ci_high",))


def test_figures_from_analysis_mirror_tables_from_analysis(analysis_db):
    with ood_store.open(analysis_db, read_only=True) as store:
        grid = figures.from_analysis(store, PYTHIA_ANALYSIS, "grid")
        params = store.analysis(PYTHIA_ANALYSIS).params
        with pytest.raises(AnalysisError, match="^kind: must be one of heatmap, grid, signs, forest, not 'pie'$"):
            figures.from_analysis(store, PYTHIA_ANALYSIS, "pie")
        with pytest.raises(AnalysisError, match="^runs: a heatmap draws one run, not 2$"):
            figures.from_analysis(store, PYTHIA_ANALYSIS, "heatmap", runs=list(RUNS[:2]))
    assert grid.provenance.analysis == PYTHIA_ANALYSIS and grid.provenance.params == params
    assert grid.description == "heatmaps of 3 runs"
    assert len([ax for ax in grid.figure.axes if ax.get_title()]) == 3
