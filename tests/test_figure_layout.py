"""Every figure kind readable at every size: 1, 2, 3, 6 and 28 pairs; 1, 3 and 24 runs; a column and the page.

Each figure is drawn on planted data made here, and checked with the renderer's own extents: no text over
other text or over data marks (points, line vertices and error bars inside the axes), none cut at the
figure's edge, no axes collapsed, no warning from matplotlib, and the note under the figure (the caption's
details) no more than a third of its height; where the whole note would take more, the figure keeps its
first lines and the rest goes to the caption file (:attr:`PaperFigure.caption`).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import warnings

import numpy as np
import polars as pl
import pytest
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.lines import Line2D
from matplotlib.text import Text

from ood_store._analysis import compare, partial_correlations
from ood_store._analysis.dynamics import ItemDynamics
from ood_store._analysis.power import power_analysis
from ood_store._errors import AnalysisError
from ood_store._export import dynamics, figure_files, figures, forest, heatmaps, page, power

PAIRS = (1, 2, 3, 6, 28)
RUNS = (1, 3, 24)
WIDTHS = {"column": page.COLUMN, "page": page.PAGE}
TASKS = ("arc_easy", "winogrande", "hellaswag", "piqa", "sciq", "logiqa", "arc_challenge", "openbookqa")
IN_DOMAIN = "lambada_openai"
STEPS = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 3000, 13000, 23000, 33000, 43000, 53000)
FAMILIES = ("pythia", "opt", "llama")
TOLERANCE = 0.5  # pixels at 100 dpi that boxes may share: antialiasing, not overlap


def tasks_for(pairs: int) -> int:
    """OOD tasks with at least ``pairs`` pairs: 1 -> 2, 2 and 3 -> 3, 6 -> 4, 28 -> 8."""
    return next(k for k in itertools.count(2) if k * (k - 1) // 2 >= pairs)


def run_name(index: int) -> str:
    return f"ood-lab/nli-ft-{FAMILIES[index % 3]}-{('160m', '1.4b')[index // 3 % 2]}-seed{index // 6}"


@functools.cache
def analysis(pairs: int, runs: int):
    """A partial-correlation result of ``runs`` runs over the pairs of the first tasks, ``pairs`` of them kept."""
    rng = np.random.default_rng(pairs * 100 + runs)
    ood = TASKS[: tasks_for(pairs)]
    rows = []
    for r in range(runs):
        progress = 1 - np.exp(-np.arange(len(STEPS)) / 5)
        shared = rng.normal(0, 1, len(STEPS))
        for task, values in [(IN_DOMAIN, progress), *[(t, 0.5 * progress) for t in ood]]:
            noise = rng.normal(0, 0.02, len(STEPS)) + (0.015 * shared if task != IN_DOMAIN else 0)
            rows += [(run_name(r), step, task, float(v)) for step, v in zip(STEPS, values + noise, strict=True)]
    frame = pl.DataFrame(rows, schema=["run", "step", "task", "value"], orient="row")
    result = partial_correlations(frame, IN_DOMAIN, list(ood))
    kept = result.table.select("task_x", "task_y").unique(maintain_order=True).head(pairs)
    return dataclasses.replace(result, table=result.table.join(kept, on=["task_x", "task_y"], how="semi"))


def runs_of(result) -> list[str]:
    return sorted(result.table["run"].unique())


def families(result) -> dict[str, str]:
    return {run: run.split("-")[3] for run in runs_of(result)}


# -- the figures --------------------------------------------------------------------------------------


def draw_heatmap(pairs, runs, width):
    return heatmaps.heatmap(analysis(pairs, runs), runs_of(analysis(pairs, runs))[0], width=width)


def draw_grid(pairs, runs, width):
    return heatmaps.heatmap_grid(analysis(pairs, runs), width=width)


def draw_signs(pairs, runs, width):
    return figures.sign_agreement(compare(analysis(pairs, runs)), width=width)


def draw_forest(pairs, runs, width):
    result = analysis(pairs, runs)
    return forest.forest(compare(result), groups=families(result), group_name="family", width=width)


def draw_curves(pairs, runs, width):
    """One run's curves of the in-domain task and the OOD tasks of ``pairs``, over ``runs`` x 6 checkpoints
    (log-spaced), read from a frame instead of a store (the figure's one read, ``figures.curves``)."""
    rng = np.random.default_rng(pairs)
    at = [0, *np.unique(np.geomspace(1, 143000, 6 * runs).round().astype(int))]
    tasks = [IN_DOMAIN, *TASKS[: tasks_for(pairs)]]
    frame = pl.DataFrame([
        (task, step, 0.3 + 0.4 * k / len(at) + rng.normal(0, 0.02), 0.01)
        for task in tasks for k, step in enumerate(at)
    ], schema=["task", "step", "value", "stderr"], orient="row")  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(figures, "curves", lambda store, run, order, **_: frame.filter(pl.col("task").is_in(order)))
        return figures.training_curves(None, "EleutherAI/pythia-v1.1-410m", tasks, in_domain=IN_DOMAIN, width=width)


def draw_items(pairs, runs, width):
    """Item dynamics of ``runs`` runs on the tasks of ``pairs`` (one task for 1 pair)."""
    rng = np.random.default_rng(runs)
    tasks = TASKS[: max(1, tasks_for(pairs) - 1)]
    items = []
    for r, task in itertools.product(range(runs), tasks):
        learned = rng.choice(STEPS, 40)
        items.append(pl.DataFrame({
            "run": run_name(r), "task": task, "item": np.arange(40), "first_correct_step": learned,
            "learned_step": learned, "forgetting_events": rng.integers(0, 3, 40),
        }))  # fmt: skip
    table = pl.DataFrame([(run_name(r), t) for r in range(runs) for t in tasks], schema=["run", "task"], orient="row")
    return dynamics.dynamics_figure(ItemDynamics(table, pl.concat(items), "acc"), width)


@functools.cache
def planned(pairs: int, runs: int):
    seeds = list(range(2, 2 + runs))
    return power_analysis([0.4, -0.4], seeds=seeds, checkpoints=[12, 24, 48][: 1 + (pairs > 1) + (pairs > 3)],
                          pairs=pairs, replications=40, target_power=0.8)  # fmt: skip


def draw_power(pairs, runs, width):
    return power.power_curves(planned(pairs, runs), width=width)


KINDS = {
    "heatmap": draw_heatmap, "grid": draw_grid, "curves": draw_curves, "signs": draw_signs, "forest": draw_forest,
    "items": draw_items, "power": draw_power,
}  # fmt: skip


# -- what is checked ----------------------------------------------------------------------------------


def drawn_texts(figure) -> list[Text]:
    """Every piece of text the renderer draws: visible, not empty, tick labels only of the ticks drawn."""
    ticks, shown = set(), set()
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks |= {id(tick.label1), id(tick.label2)}
            for tick in axis._update_ticks():  # the ticks inside the view, those the axis draws
                shown |= {id(tick.label1), id(tick.label2)}
    return [
        t for t in figure.findobj(Text)
        if t.get_visible() and t.get_text().strip() and (id(t) not in ticks or id(t) in shown)
        and (t.axes is None or t.axes.get_visible())
    ]  # fmt: skip


def boxes(texts, renderer) -> np.ndarray:
    return np.array([t.get_window_extent(renderer).extents for t in texts]).reshape(-1, 4)


def overlaps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Which boxes of ``a`` (rows) overlap which of ``b`` (columns) by more than :data:`TOLERANCE`."""
    x = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    y = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    return (x > TOLERANCE) & (y > TOLERANCE)


def marks(figure) -> np.ndarray:
    """Display coordinates of the data marks inside each axes: line vertices and points between them, scatter
    points, error bars; not reference lines (axhline, axvline) nor the heatmaps' cells, which carry their text."""
    found = []
    for ax in figure.axes:
        inside = ax.bbox
        for artist in ax.get_children():
            if isinstance(artist, Line2D) and artist.get_transform() == ax.transData and artist.get_visible():
                xy = artist.get_xydata()
                if len(xy) > 1:  # the line between its vertices, ten points a segment
                    t = np.linspace(0, 1, 10)[:, None, None]
                    xy = (xy[:-1] + t * (xy[1:] - xy[:-1])).reshape(-1, 2)
                found.append(ax.transData.transform(xy))
            elif isinstance(artist, PathCollection) and artist.get_visible():
                found.append(artist.get_offset_transform().transform(artist.get_offsets()))
            elif isinstance(artist, LineCollection) and artist.get_visible():
                for segment in artist.get_segments():
                    t = np.linspace(0, 1, 10)[:, None]
                    found.append(artist.get_transform().transform(segment[0] + t * (segment[-1] - segment[0])))
        points = np.concatenate(found) if found else np.empty((0, 2))
        keep = (points[:, 0] >= inside.x0) & (points[:, 0] <= inside.x1)
        keep &= (points[:, 1] >= inside.y0) & (points[:, 1] <= inside.y1)
        found = [points[keep & np.isfinite(points).all(axis=1)]]
        yield found[0]


def corners(text: Text, renderer) -> np.ndarray:
    """The four corners (display coordinates) of ``text`` as drawn: its box turned by its rotation.

    A rotated label's window extent is the upright box around it, wider than the label: neighbors' upright
    boxes overlap where the labels do not. A rectangle turned about any point keeps its center at the center of
    its upright box, so the label's corners are its unrotated size turned about that center.
    """
    box = text.get_window_extent(renderer)
    angle = np.deg2rad(text.get_rotation())
    if not angle % (np.pi / 2):
        return np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1], [box.x0, box.y1]])
    rotation = text.get_rotation()
    text.set_rotation(0)
    upright = text.get_window_extent(renderer)
    text.set_rotation(rotation)
    w, h = upright.width / 2, upright.height / 2
    turn = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    return np.array([[-w, -h], [w, -h], [w, h], [-w, h]]) @ turn.T + [(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2]


def apart(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether convex polygons ``a`` and ``b`` are apart by more than :data:`TOLERANCE` on some edge's normal."""
    for polygon in (a, b):
        for k in range(len(polygon)):
            edge = polygon[(k + 1) % len(polygon)] - polygon[k]
            normal = np.array([-edge[1], edge[0]]) / np.hypot(*edge)
            pa, pb = a @ normal, b @ normal
            if min(pa.max(), pb.max()) - max(pa.min(), pb.min()) <= TOLERANCE:
                return True
    return False


def inside(points: np.ndarray, polygon: np.ndarray) -> np.ndarray:
    """Which ``points`` lie inside convex ``polygon`` (corners counter-clockwise), 1 pixel in from its edges."""
    result = np.ones(len(points), dtype=bool)
    for k in range(len(polygon)):
        edge = polygon[(k + 1) % len(polygon)] - polygon[k]
        normal = np.array([-edge[1], edge[0]]) / np.hypot(*edge)  # inward for counter-clockwise corners
        result &= (points - polygon[k]) @ normal > 1
    return result


def check(figure) -> None:
    """The figure's layout as the renderer draws it (see the module's docstring)."""
    figure.set_dpi(100)
    figure.draw_without_rendering()
    renderer = figure._get_renderer()
    edge = figure.bbox
    texts = drawn_texts(figure)
    shapes = [corners(t, renderer) for t in texts]
    box = np.array([[*s.min(axis=0), *s.max(axis=0)] for s in shapes]).reshape(-1, 4)
    names = [t.get_text() for t in texts]
    candidates = np.triu(overlaps(box, box), k=1)
    clash = [(names[i], names[j]) for i, j in zip(*np.nonzero(candidates), strict=True)
             if not apart(shapes[i], shapes[j])]  # fmt: skip
    assert not clash, clash[:5]
    cut = (box[:, 0] < edge.x0 - 1) | (box[:, 1] < edge.y0 - 1) | (box[:, 2] > edge.x1 + 1) | (box[:, 3] > edge.y1 + 1)
    assert not cut.any(), [names[i] for i in np.nonzero(cut)[0]]
    points = np.concatenate(list(marks(figure)))
    covered = [names[i] for i, shape in enumerate(shapes) if inside(points, shape).any()]
    assert not covered, covered[:5]
    for ax in figure.axes:
        if ax.get_label() == "<colorbar>":  # thin by design
            continue
        assert min(ax.bbox.width, ax.bbox.height) >= 15, f"axes collapsed to {ax.bbox.width}x{ax.bbox.height} px"
    caption = figure._supxlabel
    if caption is not None and caption.get_text():
        assert caption.get_window_extent(renderer).height <= edge.height / 3


def cases():
    """Every kind at both widths over the pairs (3 runs) and over the runs (6 pairs), and at the extremes."""
    seen = set()
    for kind, width in itertools.product(KINDS, WIDTHS):
        sizes = [(p, 3) for p in PAIRS] + [(6, r) for r in RUNS] + [(28, 24), (1, 1), (28, 1), (1, 24)]
        for pairs, runs in sizes:
            if kind == "heatmap" and runs != 3:  # one run, whatever the analysis has
                continue
            if (kind, width, pairs, runs) not in seen:
                seen.add((kind, width, pairs, runs))
                yield pytest.param(kind, width, pairs, runs, id=f"{kind}-{width}-{pairs}pairs-{runs}runs")


@pytest.mark.parametrize(("kind", "width", "pairs", "runs"), list(cases()))
def test_every_figure_is_readable(kind, width, pairs, runs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            figure = KINDS[kind](pairs, runs, WIDTHS[width])
        except AnalysisError as error:  # a figure that cannot be drawn at this size says why, in one line
            assert "\n" not in str(error)
            pytest.skip(f"not drawn: {error}")
        check(figure)


@pytest.mark.parametrize(
    ("pairs", "width", "ncols", "below"), [(28, "column", 4, True), (6, "column", 4, True), (28, "page", 6, False)]
)
def test_24_runs_keep_legible_task_labels_and_whole_titles(pairs, width, ncols, below):
    """24 triangles of 8 tasks in one column: the color bar goes below the panels, across, which gives 4
    panels a row cells 5 pt labels fit in (beside them, 4 a row left cells 0.05 in apart, and 3 a row made
    the figure taller than the page); of 4 tasks, room for the run names as titles (beside the bar they
    were cut to 'llama-1.4…ed0'). On the page the bar stays on the right."""
    figure = draw_grid(pairs, 24, WIDTHS[width])
    figure.draw_without_rendering()
    panels = [ax for ax in figure.axes if ax.get_label() != "<colorbar>"]
    (bar,) = [ax for ax in figure.axes if ax.get_label() == "<colorbar>"]
    assert len(panels) == 24
    assert len({round(ax.get_position().x0, 3) for ax in panels}) == ncols
    lowest = min(ax.get_position().y0 for ax in panels)
    rightmost = max(ax.get_position().x1 for ax in panels)
    where = bar.get_position()
    if below:
        assert where.y1 < lowest and where.width > where.height
    else:
        assert where.x0 > rightmost and where.height > where.width
    sizes = {t.get_fontsize() for ax in panels for t in ax.get_yticklabels() + ax.get_xticklabels() if t.get_text()}
    assert min(sizes) >= 5.0
    titles = [ax.get_title() for ax in panels]
    assert not [t for t in titles if "\u2026" in t]
    assert sorted(t.replace("\n", "") for t in titles) == sorted(r.removeprefix("ood-lab/nli-ft-") for r in
                                                                 runs_of(analysis(pairs, 24)))  # fmt: skip
    assert figure.get_figheight() <= page.TEXT_HEIGHT


def test_a_note_too_long_for_the_figure_goes_whole_to_the_caption_file(tmp_path):
    """The forest of 3 pairs at column width: its note would take more than a third of the figure."""
    from ood_store._export.provenance import Provenance

    short = figure_files.PaperFigure(draw_forest(3, 3, page.COLUMN), Provenance(source="test"), "a forest")
    assert short.caption is not None and short.caption.endswith("right: the verdict of compare.")
    shown = short.figure._supxlabel.get_text()
    assert shown.endswith("The whole note: in the caption file.") and "Knapp" not in shown
    short.save(tmp_path / "forest.png")
    assert (tmp_path / "forest.caption.txt").read_text(encoding="utf-8") == short.caption + "\n"
    whole = figure_files.PaperFigure(draw_forest(3, 3, page.PAGE), Provenance(source="test"), "a forest")
    assert whole.caption is None and "right: the verdict of compare." in whole.figure._supxlabel.get_text()
    whole.save(tmp_path / "page.png")
    assert not (tmp_path / "page.caption.txt").exists()


@pytest.mark.parametrize("pairs", [3, 6])
def test_the_docs_show_the_forest_at_few_pairs_and_column_width(pairs):
    """The screenshots on docs/how-to/paper.md: this module's forest of 3 runs at one column, 150 dpi."""
    from pathlib import Path

    from PIL import Image

    shot = Path(__file__).parents[1] / "docs" / f"forest-{pairs}-pairs.png"
    assert f"../forest-{pairs}-pairs.png" in (shot.parent / "how-to" / "paper.md").read_text(encoding="utf-8")
    figure = draw_forest(pairs, 3, page.COLUMN)
    with Image.open(shot) as image:
        assert image.size == (int(page.COLUMN * 150), int(figure.get_figheight() * 150))
