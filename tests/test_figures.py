"""Figures (ood_store._export.figures) on the saved Pythia analysis, checked against its rows read with plain SQL."""

from __future__ import annotations

import json
import math
import shutil
import xml.etree.ElementTree as ET

import duckdb
import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import pytest
from matplotlib.collections import PolyCollection, QuadMesh
from PIL import Image

import ood_store
from conftest import PYTHIA_ANALYSIS, PYTHIA_IN_DOMAIN, PYTHIA_OOD, sql_rows
from ood_store._analysis import compare
from ood_store._errors import AnalysisError, OodStoreError
from ood_store._export import figures
from ood_store._export.display import run_order
from ood_store._export.provenance import Provenance

RUN_410M = "EleutherAI/pythia-v1.1-410m"
BY_SIZE = ("EleutherAI/pythia-v1.1-160m", RUN_410M, "EleutherAI/pythia-v1.1-1.4b")
MINUS = "\u2212"


@pytest.fixture(scope="module")
def saved(analysis_db) -> dict[tuple[str, frozenset], dict]:
    """(run, {task_x, task_y}) -> {r, p_adj, p_eff_adj}, straight from the partial_correlations table."""
    con = duckdb.connect(str(analysis_db), read_only=True)
    try:
        rows = con.execute(
            "SELECT run, task_x, task_y, r, p_adj, p_eff_adj FROM partial_correlations WHERE analysis = ?",
            [PYTHIA_ANALYSIS],
        ).fetchall()
    finally:
        con.close()
    return {(run, frozenset((x, y))): {"r": r, "p_adj": p, "p_eff_adj": pe} for run, x, y, r, p, pe in rows}


@pytest.fixture(scope="module")
def table(analysis_db) -> pl.DataFrame:
    with ood_store.open(analysis_db, read_only=True) as store:
        return store.analysis(PYTHIA_ANALYSIS).table


def panels(figure):
    return [ax for ax in figure.axes if ax.get_label() != "<colorbar>"]


def colorbars(figure):
    return [ax for ax in figure.axes if ax.get_label() == "<colorbar>"]


def labels(ticks) -> list[str]:
    return [t.get_text() for t in ticks]


def cells(ax, rows: list[str], columns: list[str]) -> dict[frozenset, object]:
    """{row task, column task} -> the annotation Text of that cell, located by its position."""
    return {pair: text for pair, (text, _, _) in located(ax, rows, columns).items()}


def located(ax, rows: list[str], columns: list[str]) -> dict[frozenset, tuple]:
    """{row task, column task} -> (annotation Text, row index, column index) of that cell."""
    out = {}
    for text in ax.texts:
        x, y = text.get_position()
        i, j = int(y), int(x)
        out[frozenset((rows[i], columns[j]))] = (text, i, j)
    return out


def r_text(r: float) -> str:
    """r to two decimals with a typographic minus, computed here from the saved value."""
    rounded = round(r, 2)
    return ("\u2212" if rounded < 0 else "") + f"{abs(rounded):.2f}"


def mesh_of(ax) -> QuadMesh:
    (mesh,) = [c for c in ax.collections if isinstance(c, QuadMesh)]
    return mesh


# -- heatmap --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("run", BY_SIZE)
def test_heatmap_annotates_each_pair_with_its_saved_r(table, saved, run):
    figure = figures.heatmap(table, run)
    (ax,) = panels(figure)
    rows, columns = labels(ax.get_yticklabels()), labels(ax.get_xticklabels())
    assert rows == list(PYTHIA_OOD[1:]) and columns == list(PYTHIA_OOD[:-1])
    annotated = cells(ax, rows, columns)
    assert len(annotated) == len(ax.texts) == 6
    for pair, text in annotated.items():
        assert len(pair) == 2  # never the diagonal of a task with itself
        assert text.get_text() == r_text(saved[(run, pair)]["r"])
    # Only the lower triangle is colored: cell (i, j) with j <= i.
    mask = np.ma.getmaskarray(mesh_of(ax).get_array())
    assert mask.tolist() == [[False, True, True], [False, False, True], [False, False, False]]


def test_heatmap_mutes_exactly_the_pairs_that_are_not_significant(table, saved):
    for run in BY_SIZE:
        for inference, column in (("effective", "p_eff_adj"), ("naive", "p_adj")):
            (ax,) = panels(figures.heatmap(table, run, inference=inference))
            rows, columns = labels(ax.get_yticklabels()), labels(ax.get_xticklabels())
            alphas = mesh_of(ax).get_alpha()
            for pair, (text, i, j) in located(ax, rows, columns).items():
                muted = saved[(run, pair)][column] >= 0.05
                assert (alphas[i, j] < 1) == muted, (run, inference, pair)
                assert (text.get_color() == "0.45") == muted
                assert (text.get_fontweight() == "bold") == (not muted)


def test_naive_and_effective_inference_disagree_where_autocorrelation_matters(table, saved):
    # arc_easy–sciq in the 410m run: p_adj 0.045 < 0.05 but p_eff_adj 0.32 (README); only naive shows it strong.
    pair = frozenset(("arc_easy", "sciq"))
    assert saved[(RUN_410M, pair)]["p_adj"] < 0.05 <= saved[(RUN_410M, pair)]["p_eff_adj"]
    weights = {}
    for inference in ("effective", "naive"):
        (ax,) = panels(figures.heatmap(table, RUN_410M, inference=inference))
        text = cells(ax, labels(ax.get_yticklabels()), labels(ax.get_xticklabels()))[pair]
        weights[inference] = text.get_fontweight()
    assert weights == {"effective": "normal", "naive": "bold"}


def test_heatmap_colors_on_a_diverging_map_centred_on_zero(table):
    figure = figures.heatmap(table, RUN_410M)
    mesh = mesh_of(panels(figure)[0])
    assert (mesh.norm.vmin, mesh.norm.vmax) == (-1.0, 1.0)
    assert mesh.get_cmap().name == "RdBu_r"
    assert mesh.get_cmap()(mesh.norm(0.0))[:3] == pytest.approx((0.97, 0.97, 0.97), abs=0.03)  # white at 0
    assert len(colorbars(figure)) == 1
    assert figure.get_figwidth() == pytest.approx(3.25)
    assert all(4 <= t.get_fontsize() <= 8 for ax in figure.axes for t in ax.texts + [ax.title])


def test_heatmap_of_a_pair_without_r_is_a_blank_cell_marked_na(table, saved):
    planted = table.with_columns(
        r=pl.when((pl.col("task_x") == "piqa") & (pl.col("task_y") == "sciq")).then(float("nan")).otherwise("r")
    )
    (ax,) = panels(figures.heatmap(planted, RUN_410M))
    rows, columns = labels(ax.get_yticklabels()), labels(ax.get_xticklabels())
    annotated = cells(ax, rows, columns)
    assert annotated[frozenset(("piqa", "sciq"))].get_text() == "n/a"
    assert annotated[frozenset(("piqa", "sciq"))].get_color() == "0.45"
    assert np.ma.getmaskarray(mesh_of(ax).get_array())[rows.index("sciq"), columns.index("piqa")]
    for pair, text in annotated.items():
        if pair != frozenset(("piqa", "sciq")):
            assert text.get_text() == r_text(saved[(RUN_410M, pair)]["r"])
    assert len(annotated) == 6


def test_heatmap_renames_tasks_and_run_and_follows_the_task_order_given(table, saved):
    names = {"arc_easy": "ARC-e", RUN_410M: "Pythia 410M"}
    (ax,) = panels(figures.heatmap(table, RUN_410M, names=names, tasks=["sciq", "piqa", "arc_easy"]))
    assert ax.get_title() == "Pythia 410M"
    assert labels(ax.get_yticklabels()) == ["piqa", "ARC-e"]
    assert labels(ax.get_xticklabels()) == ["sciq", "piqa"]
    assert len(ax.texts) == 3
    text = cells(ax, ["piqa", "arc_easy"], ["sciq", "piqa"])[frozenset(("arc_easy", "sciq"))]
    assert text.get_text() == r_text(saved[(RUN_410M, frozenset(("arc_easy", "sciq")))]["r"])


def test_heatmap_titles_a_run_by_the_part_after_the_last_slash(table):
    assert panels(figures.heatmap(table, RUN_410M))[0].get_title() == "pythia-v1.1-410m"


def test_heatmap_errors_name_the_runs_and_tasks(table):
    with pytest.raises(AnalysisError, match="choose one with `run`") as info:
        figures.heatmap(table)
    assert all(run in str(info.value) for run in BY_SIZE)
    with pytest.raises(AnalysisError, match="'nope'"):
        figures.heatmap(table, "nope")
    with pytest.raises(AnalysisError, match="'mnli'"):
        figures.heatmap(table, RUN_410M, tasks=["arc_easy", "mnli"])
    with pytest.raises(AnalysisError, match="inference"):
        figures.heatmap(table, RUN_410M, inference="bayes")
    with pytest.raises(AnalysisError, match="not a partial-correlation table"):
        figures.heatmap(table.drop("p_eff_adj"), RUN_410M)


# -- grid -----------------------------------------------------------------------------------------------


def test_grid_has_a_panel_per_run_in_the_order_given_and_one_color_bar(table, saved, analysis_db):
    with ood_store.open(analysis_db, read_only=True) as store:
        order = run_order(store, table["run"].unique())
    assert order == list(BY_SIZE)  # family, then size as a number: 160m < 410m < 1.4b
    figure = figures.heatmap_grid(table, order)
    grid = panels(figure)
    # Titles leave out what every run's name shares ("EleutherAI/pythia-v1.1-"); the note says it.
    assert [ax.get_title() for ax in grid] == ["160m", "410m", "1.4b"]
    assert "Runs: EleutherAI/pythia-v1.1-\u2026" in figure.get_supxlabel().replace("\n", " ")
    assert len(colorbars(figure)) == 1
    assert figure.get_figwidth() == pytest.approx(6.75)
    rows, columns = labels(grid[0].get_yticklabels()), labels(grid[0].get_xticklabels())
    assert rows == list(PYTHIA_OOD[1:])
    for run, ax in zip(order, grid, strict=True):
        assert mesh_of(ax).norm.vmin == -1.0 and mesh_of(ax).norm.vmax == 1.0
        annotated = cells(ax, rows, columns)
        assert len(annotated) == 6
        assert {p: t.get_text() for p, t in annotated.items()} == {p: r_text(saved[(run, p)]["r"]) for p in annotated}
    # Rows are labeled once, on the left.
    assert all(set(labels(ax.get_yticklabels())) == {""} for ax in grid[1:])


def test_grid_wraps_into_rows_and_takes_a_subset_of_runs(table):
    figure = figures.heatmap_grid(table, list(BY_SIZE), ncols=2)
    grid = panels(figure)
    assert len(grid) == 3 and len(colorbars(figure)) == 1
    assert [ax.get_subplotspec().rowspan.start for ax in grid] == [0, 0, 1]
    two = figures.heatmap_grid(table, [RUN_410M, BY_SIZE[0]], short_titles=False)
    assert [ax.get_title() for ax in panels(two)] == ["pythia-v1.1-410m", "pythia-v1.1-160m"]
    with pytest.raises(AnalysisError, match="'nope'"):
        figures.heatmap_grid(table, ["nope"])


# -- sign agreement -------------------------------------------------------------------------------------


def test_sign_matrix_counts_the_signs_of_the_saved_r(table, saved):
    figure = figures.sign_agreement(compare(table).table, tasks=list(PYTHIA_OOD))
    (ax,) = panels(figure)
    assert len(colorbars(figure)) == 1
    rows, columns = labels(ax.get_yticklabels()), labels(ax.get_xticklabels())
    annotated = cells(ax, rows, columns)
    assert len(annotated) == 6
    values = mesh_of(ax).get_array()
    for pair, (text, i, j) in located(ax, rows, columns).items():
        signs = [math.copysign(1, saved[(run, pair)]["r"]) for run in BY_SIZE]
        positive, negative = signs.count(1), signs.count(-1)
        assert text.get_text() == f"{positive}+ {negative}{MINUS}"
        assert values[i, j] == pytest.approx((positive - negative) / 3)


def test_sign_matrix_hatches_model_dependent_pairs(table):
    # The verdicts of this analysis, each pair tested alone with the z test (linear, Pearson, effective inference).
    model_dependent = {frozenset(p) for p in (("arc_easy", "sciq"), ("arc_easy", "winogrande"), ("sciq", "winogrande"))}
    consistent = {frozenset(p) for p in (("arc_easy", "piqa"), ("piqa", "winogrande"))}
    (ax,) = panels(figures.sign_agreement(compare(table, adjust_pairs="none", test="z").table))
    rows, columns = labels(ax.get_yticklabels()), labels(ax.get_xticklabels())
    hatched = {frozenset((rows[int(p.get_y())], columns[int(p.get_x())])) for p in ax.patches if p.get_hatch()}
    assert hatched == model_dependent
    bold = {pair for pair, text in cells(ax, rows, columns).items() if text.get_fontweight() == "bold"}
    assert bold == consistent
    # three runs, 6 pairs: with the default adjustment over the 12 tests and Knapp-Hartung's t on 2 degrees of
    # freedom, none of those verdicts stands, and the figure shows none
    defaults = compare(table).table
    assert set(defaults["verdict"]) == {"no evidence"}
    (ax,) = panels(figures.sign_agreement(defaults))
    assert not any(p.get_hatch() for p in ax.patches)
    assert not any(t.get_fontweight() == "bold" for t in cells(ax, rows, columns).values())


def test_sign_matrix_has_a_panel_per_group(table, saved, analysis_db):
    with ood_store.open(analysis_db, read_only=True) as store:
        result = compare(table, by=["size"], attributes=store).table
    figure = figures.sign_agreement(result, tasks=list(PYTHIA_OOD))
    grid = panels(figure)
    assert [ax.get_title() for ax in grid] == ["160m", "410m", "1.4b"]  # sizes, as a facet of sizes is headed
    assert len(colorbars(figure)) == 1
    rows, columns = labels(grid[0].get_yticklabels()), labels(grid[0].get_xticklabels())
    for run, ax in zip(BY_SIZE, grid, strict=True):
        for pair, text in cells(ax, rows, columns).items():
            expected = "1+ 0\u2212" if saved[(run, pair)]["r"] > 0 else "0+ 1\u2212"
            assert text.get_text() == expected


def test_sign_matrix_refuses_a_table_that_is_not_a_compare_result(table):
    with pytest.raises(AnalysisError, match="not a comparison across runs"):
        figures.sign_agreement(table)


# -- training curves ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def acc_rows(analysis_db) -> dict[str, list[tuple]]:
    """task -> [(step, value, stderr)] of the 410m run's acc, straight from the scores view."""
    sql = (
        "SELECT task, step, value, stderr FROM scores WHERE run = ? AND metric = 'acc' AND filter = 'none' "
        "AND step IS NOT NULL ORDER BY task, step"
    )
    rows = sql_rows(analysis_db, sql, RUN_410M)
    out: dict[str, list[tuple]] = {}
    for task, step, value, stderr in rows:
        out.setdefault(task, []).append((step, value, stderr))
    return out


def test_training_curves_draw_each_task_over_the_stored_steps(analysis_db, acc_rows):
    with ood_store.open(analysis_db, read_only=True) as store:
        figure = figures.training_curves(store, RUN_410M, list(PYTHIA_OOD), in_domain=PYTHIA_IN_DOMAIN)
    (ax,) = panels(figure)
    lines = ax.get_lines()
    assert len(lines) == 5
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert legend == [f"{PYTHIA_IN_DOMAIN} (in-domain)", *PYTHIA_OOD]
    for task, line in zip([PYTHIA_IN_DOMAIN, *PYTHIA_OOD], lines, strict=True):
        assert list(line.get_xdata()) == [s for s, _, _ in acc_rows[task]]
        assert list(line.get_ydata()) == pytest.approx([v for _, v, _ in acc_rows[task]])
    assert lines[0].get_color() == "black" and lines[0].get_linewidth() > lines[1].get_linewidth()
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 5
    top = max(v + e for _, v, e in acc_rows["sciq"])
    assert bands[3].get_paths()[0].vertices[:, 1].max() == pytest.approx(top)  # in-domain, arc_easy, piqa, sciq
    assert ax.get_xscale() == "symlog"  # Pythia's checkpoints are log-spaced (0, 1, 2, 4, ..., 512, 1000, ...)
    assert figure.get_figwidth() == pytest.approx(3.25)


def test_training_curves_leave_out_the_band_of_a_task_without_stderr(analysis_db, tmp_path):
    db = tmp_path / "store.duckdb"
    shutil.copyfile(analysis_db, db)
    con = duckdb.connect(str(db))
    con.execute("UPDATE evaluation_scores SET stderr = NULL WHERE task = 'piqa'")
    con.close()
    with ood_store.open(db, read_only=True) as store:
        figure = figures.training_curves(store, RUN_410M, ["arc_easy", "piqa", "sciq"], x_scale="log")
    (ax,) = panels(figure)
    assert len(ax.get_lines()) == 3
    assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 2
    assert ax.get_xscale() == "symlog"


@pytest.mark.parametrize("suffix", ["", " (a long display name)", " (a much, much longer display name)"])
def test_training_curves_legend_stays_inside_the_figure(analysis_db, suffix):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    names = {task: task + suffix for task in (PYTHIA_IN_DOMAIN, *PYTHIA_OOD)}
    with ood_store.open(analysis_db, read_only=True) as store:
        figure = figures.training_curves(store, RUN_410M, list(PYTHIA_OOD), in_domain=PYTHIA_IN_DOMAIN, names=names)
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    legend = figure.legends[0].get_window_extent(renderer)
    assert len(figure.legends[0].get_texts()) == 5
    assert legend.x0 >= 0 and legend.x1 <= figure.bbox.x1  # not clipped on either side


def test_training_curves_name_an_unknown_run_or_task(analysis_db):
    with ood_store.open(analysis_db, read_only=True) as store:
        with pytest.raises(AnalysisError, match="no run 'nope'"):
            figures.training_curves(store, "nope", ["piqa"])
        with pytest.raises(AnalysisError, match="no task 'mnli' in run"):
            figures.training_curves(store, RUN_410M, ["piqa", "mnli"])
        with pytest.raises(AnalysisError, match="'f1'"):
            figures.training_curves(store, RUN_410M, ["piqa"], metric="f1")


# -- files ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def provenance(analysis_db) -> Provenance:
    with ood_store.open(analysis_db, read_only=True) as store:
        return Provenance.of_analysis(store, PYTHIA_ANALYSIS)


def test_png_is_300_dpi_and_carries_the_provenance(table, provenance, analysis_db, tmp_path):
    path = figures.save(figures.heatmap(table, RUN_410M), tmp_path / "h.png", provenance)
    with Image.open(path) as image:
        image.load()
        assert image.format == "PNG"
        assert image.size[0] == round(3.25 * 300)
        assert 0.5 < image.size[1] / image.size[0] < 1.5
        colors = image.convert("RGB").getcolors(maxcolors=1_000_000)
        assert len(colors) > 50  # drawn, not blank
        text = image.text
    assert text["Title"] == f"ood-store: analysis {PYTHIA_ANALYSIS}"
    assert text["Software"] == f"ood-store {ood_store.__version__}"
    recorded = json.loads(text["Description"])
    assert recorded["analysis"] == PYTHIA_ANALYSIS
    assert recorded["ood_store_version"] == ood_store.__version__
    assert recorded["store"] == str(analysis_db)
    assert recorded["params"]["in_domain"] == PYTHIA_IN_DOMAIN


def test_pdf_embeds_truetype_fonts_and_the_provenance(table, provenance, tmp_path):
    path = figures.save(figures.heatmap_grid(table, list(BY_SIZE)), tmp_path / "grid.pdf", provenance)
    data = path.read_bytes()
    assert data.startswith(b"%PDF")
    assert PYTHIA_ANALYSIS.encode() in data and ood_store.__version__.encode() in data
    assert b"/FontFile2" in data and b"/Type3" not in data  # Type 42 (TrueType), as venues require
    assert b"/CreationDate" not in data


def test_svg_carries_the_provenance_as_dublin_core(table, provenance, tmp_path):
    path = figures.save(figures.sign_agreement(compare(table).table), tmp_path / "signs.svg", provenance)
    root = ET.parse(path).getroot()
    ns = {"dc": "http://purl.org/dc/elements/1.1/"}
    assert root.find(".//dc:title", ns).text == f"ood-store: analysis {PYTHIA_ANALYSIS}"
    assert json.loads(root.find(".//dc:description", ns).text)["analysis"] == PYTHIA_ANALYSIS
    assert ood_store.__version__ in root.find(".//dc:creator//dc:title", ns).text


def test_save_refuses_other_extensions_and_unwritable_paths(table, provenance, tmp_path):
    figure = figures.heatmap(table, RUN_410M)
    with pytest.raises(OodStoreError, match=r"h\.jpg.*\.pdf, \.png, \.svg"):
        figures.save(figure, tmp_path / "h.jpg", provenance)
    with pytest.raises(OodStoreError, match="missing/h.png: cannot write"):
        figures.save(figure, tmp_path / "missing" / "h.png", provenance)
    assert not (tmp_path / "h.jpg").exists()


def test_figures_are_made_without_pyplot(table):
    before = plt.get_fignums()
    figures.heatmap_grid(table, list(BY_SIZE))
    figures.sign_agreement(compare(table).table)
    assert plt.get_fignums() == before
