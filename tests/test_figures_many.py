"""Figures of many runs on the planted study: 24 runs (4 families x 2 sizes x 3 seeds) x 8 OOD testsets.

Layout is checked with matplotlib's own renderer (the extents of the drawn
text), sizes at the size the figure is saved at, and the numbers against the
saved rows read with plain SQL and the planted truth of
``ood_store/_examples/planted.py``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection, PathCollection, QuadMesh
from matplotlib.text import Text
from PIL import Image
from statsmodels.stats.multitest import multipletests

import ood_store
from conftest import PLANTED_ANALYSIS, PLANTED_NAMES, sql_rows
from ood_store._analysis import compare
from ood_store._errors import AnalysisError
from ood_store._examples.planted import FAMILIES, OOD, SEEDS, SIZES
from ood_store._export import display, figures

NAMES = display.names(file=PLANTED_NAMES)
LABELS = [NAMES[t] for t in OOD]  # the analysis' order of testsets, as display names
# The cells of the lower triangle: cell (i, j) is the pair (OOD[i + 1], OOD[j]).
CELLS = [(i, j) for i in range(len(OOD) - 1) for j in range(i + 1)]
# Runs as run_order sorts them: family by name, size as a number (350m < 1.3b), seed.
RUNS = [f"ood-lab/nli-ft-{f}-{s}-seed{seed}" for f, s, seed in itertools.product(sorted(FAMILIES), SIZES, SEEDS)]
PAGE_HEIGHT = 9.0  # inches: the text height of a two-column page


@pytest.fixture(scope="module")
def store(planted_db):
    with ood_store.open(planted_db, read_only=True) as opened:
        yield opened


@pytest.fixture(scope="module")
def saved(planted_db) -> dict[tuple[str, frozenset], dict]:
    """(run, {task_x, task_y}) -> r and p_eff_adj, straight from the partial_correlations table."""
    sql = "SELECT run, task_x, task_y, r, p_eff_adj FROM partial_correlations WHERE analysis = ?"
    rows = sql_rows(planted_db, sql, PLANTED_ANALYSIS)
    return {(run, frozenset((x, y))): {"r": r, "p": p} for run, x, y, r, p in rows}


@pytest.fixture(scope="module")
def grid(store):
    """The grid figure of the planted analysis with these options, drawn once per module."""
    made: dict[tuple, object] = {}

    def get(**options):
        key = tuple(sorted(options.items()))
        if key not in made:
            made[key] = figures.from_analysis(store, PLANTED_ANALYSIS, "grid", names=NAMES, **options)
        return made[key]

    return get


def panels(figure):
    return [ax for ax in figure.axes if ax.get_label() != "<colorbar>"]


def drawn(figure) -> FigureCanvasAgg:
    """The figure drawn as it is saved: at 300 dpi, where text has the extents of the PNG."""
    figure.set_dpi(300)
    canvas = FigureCanvasAgg(figure)
    figure.draw(canvas.get_renderer())
    return canvas


def texts(figure) -> list[Text]:
    """Every piece of text the figure shows."""
    return [t for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip()]


def overlapping(boxes: list[tuple[str, object]]) -> list[tuple[str, str]]:
    return [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2) if box_a.overlaps(box_b)]


def saved_size_is_the_figure_size(figure, tmp_path) -> None:
    """Text sizes are points at the saved size: the PNG is the figure's size at 300 dpi, not rescaled."""
    path = tmp_path / "figure.png"
    figures.save(figure, path, ood_store._export.provenance.Provenance(source="test"))
    with Image.open(path) as image:
        width, height = image.size
    assert width == pytest.approx(figure.get_figwidth() * 300, abs=1)
    assert height == pytest.approx(figure.get_figheight() * 300, abs=1)


def check_layout(figure, tmp_path) -> None:
    """Titles apart, text at least 5 pt, the figure no taller than the page, saved at its size."""
    canvas = drawn(figure)
    renderer = canvas.get_renderer()
    titles = [(ax.get_title(), ax.title.get_window_extent(renderer)) for ax in panels(figure) if ax.get_title()]
    assert not overlapping(titles)
    smallest = min(t.get_fontsize() for t in texts(figure))
    assert smallest >= 5.0
    assert figure.get_figheight() <= PAGE_HEIGHT
    inside = figure.bbox
    for text in texts(figure):
        box = text.get_window_extent(renderer)
        assert box.x0 >= inside.x0 - 1 and box.x1 <= inside.x1 + 1, text.get_text()  # nothing cut at the sides
    saved_size_is_the_figure_size(figure, tmp_path)


def grid_of(ax) -> tuple[int, int]:
    spec = ax.get_subplotspec()
    return spec.rowspan.start, spec.colspan.start


def check_tick_labels(figure) -> None:
    """The leftmost panel of each row has the tasks on y, the lowest panel of each column on x; others none."""
    where = {grid_of(ax): ax for ax in panels(figure)}
    for (row, col), ax in where.items():
        leftmost = not any((row, c) in where for c in range(col))
        lowest = not any((r, col) in where for r in range(row + 1, max(r for r, _ in where) + 1))
        ys = [t.get_text() for t in ax.get_yticklabels()]
        xs = [t.get_text() for t in ax.get_xticklabels()]
        assert ys == (LABELS[1:] if leftmost else [""] * (len(LABELS) - 1)), (row, col)
        assert xs == (LABELS[:-1] if lowest else [""] * (len(LABELS) - 1)), (row, col)


# -- the grid of 24 runs ------------------------------------------------------------------------------


@pytest.mark.parametrize("width", [None, 3.25])
def test_grid_of_24_runs_wraps_to_the_page_with_labels_on_every_row_and_column(grid, saved, tmp_path, width):
    paper = grid(width=width)
    figure = paper.figure
    drawn_panels = panels(figure)
    assert len(drawn_panels) == 24 and paper.description == "heatmaps of 24 runs"
    assert figure.get_figwidth() == pytest.approx(width or 6.75)
    # Titles: the run names less the part all share, "ood-lab/nli-ft-", which the note names.
    titles = [ax.get_title().replace("\n", "") for ax in drawn_panels]
    assert titles == [run.removeprefix("ood-lab/nli-ft-") for run in RUNS]
    assert "Runs: ood-lab/nli-ft-\u2026" in figure.get_supxlabel().replace("\n", " ")
    columns = {grid_of(ax)[1] for ax in drawn_panels}
    assert 24 % len(columns) == 0  # every row full
    check_tick_labels(figure)
    check_layout(figure, tmp_path)
    # Each panel's colors are its run's saved r: cell (i, j) is the pair (OOD[i + 1], OOD[j]).
    for run, ax in zip(RUNS, drawn_panels, strict=True):
        (mesh,) = [c for c in ax.collections if isinstance(c, QuadMesh)]
        values = mesh.get_array()
        for i, j in CELLS:
            assert values[i, j] == pytest.approx(saved[(run, frozenset((OOD[i + 1], OOD[j])))]["r"])


def test_full_titles_are_whole_display_names_wrapped_and_still_apart(grid, tmp_path):
    figure = grid(short_titles=False).figure
    titles = [ax.get_title() for ax in panels(figure)]
    # A run's display name, without --rename, is its name after the last "/" (as in one run's heatmap).
    assert [t.replace("\n", "") for t in titles] == [run.rsplit("/", 1)[-1] for run in RUNS]
    assert "Runs:" not in figure.get_supxlabel()  # nothing common left out of the titles for the note to name
    check_layout(figure, tmp_path)


def test_cells_too_small_for_their_numbers_keep_their_colors_and_the_note_says_so(grid):
    figure = grid(width=3.25).figure
    assert all(not ax.texts for ax in panels(figure))  # no r printed: 5 pt would not fit a 0.06 in cell
    note = figure.get_supxlabel().replace("\n", " ")
    assert "too small at this width to print r: the color bar gives it" in note
    assert "In-domain MNLI regressed out (linear residualizer, Pearson)" in note
    assert "p_eff_adj \u2265 0.05 (p_eff_adj: effective n of autocorrelated checkpoints, Holm-adjusted" in note


def test_facets_by_family_and_size_pool_the_seeds(grid, store, saved, tmp_path):
    figure = grid(rows="family", cols="size").figure
    drawn_panels = panels(figure)
    assert len(drawn_panels) == len(FAMILIES) * len(SIZES)
    assert {grid_of(ax) for ax in drawn_panels} == set(itertools.product(range(4), range(2)))
    by_place = {grid_of(ax): ax for ax in drawn_panels}
    assert [by_place[(r, 0)].get_ylabel() for r in range(4)] == sorted(FAMILIES)  # row headers
    assert [by_place[(0, c)].get_title() for c in range(2)] == list(SIZES)  # column headers, on the top row
    assert all(not by_place[(r, c)].get_title() for r in range(1, 4) for c in range(2))
    check_tick_labels(figure)
    check_layout(figure, tmp_path)
    pooled = compare(store.analysis(PLANTED_ANALYSIS), by=["family", "size"], attributes=store).table
    # Faded where the pooled p, as compare adjusts its verdicts (Holm over every panel's 28 pairs' pooled and
    # heterogeneity p together, statsmodels here), is at least 0.05.
    family_p = np.concatenate([pooled["q_p"].to_numpy(), pooled["p_pooled"].to_numpy()])
    adjusted = multipletests(family_p, method="holm")[1][pooled.height :]
    loosened = 0  # cells the adjustment fades that the raw pooled p would have kept
    for (r, c), ax in by_place.items():
        family, size = sorted(FAMILIES)[r], SIZES[c]
        (mesh,) = [m for m in ax.collections if isinstance(m, QuadMesh)]
        inside = ((pooled["family"] == family) & (pooled["size"] == size)).to_numpy()
        panel = pooled.filter(inside)
        holm = dict(zip(zip(panel["task_x"], panel["task_y"], strict=True), adjusted[inside], strict=True))
        alphas = np.asarray(mesh.get_alpha())
        for i, j in CELLS:
            x, y = OOD[i + 1], OOD[j]
            p = holm.get((x, y), holm.get((y, x)))
            assert (alphas[i, j] < 1) == (p >= 0.05), (family, size, x, y, p)
            raw = panel.filter(pl.col("task_x").is_in([x, y]) & pl.col("task_y").is_in([x, y]))["p_pooled"][0]
            loosened += raw < 0.05 <= p
        for i, j in CELLS:
            x, y = OOD[i + 1], OOD[j]
            row = pooled.filter(
                (pl.col("family") == family) & (pl.col("size") == size)
                & (pl.col("task_x").is_in([x, y])) & (pl.col("task_y").is_in([x, y]))
            ).row(0, named=True)  # fmt: skip
            assert mesh.get_array()[i, j] == pytest.approx(row["r_pooled"])
            seeds = [saved[(f"ood-lab/nli-ft-{family}-{size}-seed{s}", frozenset((x, y)))]["r"] for s in SEEDS]
            assert min(seeds) <= row["r_pooled"] <= max(seeds)  # a weighted mean of the three seeds
    assert loosened > 0  # the adjustment is not a no-op on this study
    note = figure.get_supxlabel().replace("\n", " ")
    assert "Panels pool the runs of each family and size: random effects on Fisher z with each run's effective" in note
    assert (
        "Bold: pooled p < 0.05 (Knapp–Hartung t; Holm-adjusted over every pair, with the heterogeneity tests); "
        "faded: not significant." in note
    )
    # The planted sign flip: RTE-HANS positive in opt and pythia, negative in llama and qwen, at both sizes.
    i, j = OOD.index("hans") - 1, OOD.index("rte")
    signs = {sorted(FAMILIES)[r]: np.sign(by_place[(r, c)].collections[0].get_array()[i, j]) for r, c in by_place}
    assert signs == {"llama": -1, "opt": 1, "pythia": 1, "qwen": -1}


def test_facets_with_each_seed_drawn_as_small_multiples(grid, tmp_path):
    figure = grid(rows="family", cols="size", seeds="each").figure
    drawn_panels = panels(figure)
    assert len(drawn_panels) == 24
    # Three seeds side by side per size, a narrow empty column between the sizes.
    assert {grid_of(ax) for ax in drawn_panels} == set(itertools.product(range(4), (0, 1, 2, 4, 5, 6)))
    top = sorted((ax for ax in drawn_panels if grid_of(ax)[0] == 0), key=lambda ax: grid_of(ax)[1])
    assert [ax.get_title() for ax in top] == [f"{size}\nseed{seed}" for size in SIZES for seed in SEEDS]
    check_tick_labels(figure)
    check_layout(figure, tmp_path)


def test_runs_without_data_are_left_out_and_named_in_the_note(store):
    table = store.analysis(PLANTED_ANALYSIS).table
    empty = RUNS[4]
    planted = table.with_columns(
        r=pl.when(pl.col("run") == empty).then(float("nan")).otherwise("r"),
        reason=pl.when(pl.col("run") == empty).then(pl.lit("too few checkpoints")).otherwise("reason"),
    )
    figure = figures.heatmap_grid(planted, RUNS, names=NAMES)
    titles = [ax.get_title().replace("\n", "") for ax in panels(figure)]
    assert len(titles) == 23 and empty.removeprefix("ood-lab/nli-ft-") not in titles
    note = figure.get_supxlabel().replace("\n", " ")
    assert f"Left out, no finite r: {empty} (too few checkpoints)." in note
    with pytest.raises(AnalysisError, match="no run has a finite r"):
        figures.heatmap_grid(planted, [empty])


def test_facet_errors_name_the_parameter(store):
    with pytest.raises(AnalysisError, match="^rows: no run has attribute 'color'"):
        figures.from_analysis(store, PLANTED_ANALYSIS, "grid", rows="color")
    with pytest.raises(AnalysisError, match="^cols: rows and cols are both 'family'"):
        figures.from_analysis(store, PLANTED_ANALYSIS, "grid", rows="family", cols="family")
    with pytest.raises(AnalysisError, match="^seeds: must be one of pool, each"):
        figures.from_analysis(store, PLANTED_ANALYSIS, "grid", rows="family", seeds="mean")


# -- the forest plot ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def forest(store):
    return figures.from_analysis(store, PLANTED_ANALYSIS, "forest", names=NAMES)


def pair_of_row(ax) -> dict[int, frozenset]:
    """y position -> the pair of tasks its tick label names."""
    by_name = {NAMES[t]: t for t in OOD}
    out = {}
    for tick, y in zip(ax.get_yticklabels(), ax.get_yticks(), strict=True):
        x_name, y_name = tick.get_text().split("\u2013")
        out[int(round(y))] = frozenset((by_name[x_name], by_name[y_name]))
    return out


def test_forest_has_one_point_per_run_and_pair_at_its_saved_r(forest, saved):
    (ax,) = forest.figure.axes
    rows = pair_of_row(ax)
    assert len(rows) == 28 and set(rows.values()) == {frozenset(p) for p in itertools.combinations(OOD, 2)}
    points = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert sorted(c.get_label() for c in points) == sorted(FAMILIES)  # colored by family
    assert sum(len(c.get_offsets()) for c in points) == 24 * 28
    for collection in points:
        family = collection.get_label()
        runs = [run for run in RUNS if f"-{family}-" in run]
        by_row: dict[int, list[float]] = {}
        for x, y in collection.get_offsets():
            by_row.setdefault(int(round(y)), []).append(x)
        for row, xs in by_row.items():
            assert sorted(xs) == pytest.approx(sorted(saved[(run, rows[row])]["r"] for run in runs))
        # Filled where the run's own p_eff_adj is below 0.05, hollow (white) elsewhere.
        faces = collection.get_facecolors()
        for (x, y), face in zip(collection.get_offsets(), faces, strict=True):
            run = next(run for run in runs if saved[(run, rows[int(round(y))])]["r"] == pytest.approx(x))
            hollow = tuple(face[:3]) == (1.0, 1.0, 1.0)
            assert hollow == (saved[(run, rows[int(round(y))])]["p"] >= 0.05)


def test_forest_pooled_interval_is_the_saved_comparison(forest, planted_db, runner, tmp_path):
    from ood_store._cli import main

    result = runner.invoke(main, ["--db", str(planted_db), "compare", "--analysis", PLANTED_ANALYSIS, "-f", "csv"])
    assert result.exit_code == 0, result.output
    compared = pl.read_csv(result.output.encode())
    (ax,) = forest.figure.axes
    rows = pair_of_row(ax)
    (intervals,) = [c for c in ax.collections if isinstance(c, LineCollection) and c.get_gid() == "pooled-ci"]
    (estimates,) = [line for line in ax.lines if line.get_gid() == "pooled-r"]
    assert len(intervals.get_segments()) == 28
    verdicts = {int(round(t.get_position()[1])): t.get_text() for t in ax.texts}
    for segment, r in zip(intervals.get_segments(), estimates.get_xdata(), strict=True):
        (low, y), (high, _) = segment
        pair = rows[int(math.floor(y))]
        both = pl.col("task_x").is_in(list(pair)) & pl.col("task_y").is_in(list(pair))
        row = compared.filter(both).row(0, named=True)
        assert (low, high, r) == pytest.approx((row["ci_low_adj"], row["ci_high_adj"], row["r_pooled"]), abs=1e-9)
        assert (row["ci_low_adj"] > 0 or row["ci_high_adj"] < 0) is (row["p_pooled_adj"] < 0.05)
        assert verdicts[int(math.floor(y))] == row["verdict"]


def test_forest_layout_at_print_size(forest, tmp_path):
    figure = forest.figure
    canvas = drawn(figure)
    renderer = canvas.get_renderer()
    assert min(t.get_fontsize() for t in texts(figure)) >= 5.0
    assert figure.get_figwidth() == pytest.approx(3.25) and figure.get_figheight() <= PAGE_HEIGHT
    (ax,) = figure.axes
    labels = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.get_yticklabels()]
    verdicts = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts]
    assert not overlapping(labels) and not overlapping(verdicts)
    legend = figure.legends[0].get_window_extent(renderer)
    assert legend.x0 >= 0 and legend.x1 <= figure.bbox.x1 and not legend.overlaps(ax.get_window_extent(renderer))
    assert all(box.x1 <= figure.bbox.x1 + 1 for _, box in verdicts)  # the verdicts are not cut off
    note = figure.get_supxlabel().replace("\n", " ")
    assert "In-domain MNLI regressed out (linear residualizer, Pearson)" in note and "p_eff_adj" in note
    saved_size_is_the_figure_size(figure, tmp_path)


def test_forest_colors_by_any_attribute_and_names_a_missing_one(store):
    by_size = figures.from_analysis(store, PLANTED_ANALYSIS, "forest", color_by="size").figure
    (ax,) = by_size.axes
    assert sorted(c.get_label() for c in ax.collections if isinstance(c, PathCollection)) == sorted(SIZES)
    with pytest.raises(AnalysisError, match="^color_by: no run has attribute 'color'"):
        figures.from_analysis(store, PLANTED_ANALYSIS, "forest", color_by="color")
    result = compare(store.analysis(PLANTED_ANALYSIS), by=["family"], attributes=store)
    with pytest.raises(AnalysisError, match="^by: a forest plot draws one comparison of all runs"):
        figures.forest(result)
