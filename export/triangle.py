"""A lower-triangle matrix of task pairs on one matplotlib axes: the layout behind heatmaps and sign matrices.

For tasks ``t0 .. tk-1`` the rows are ``t1 .. tk-1`` (top to bottom) and the
columns ``t0 .. tk-2``; cell (i, j) holds the pair (row task, column task) and
only cells on or below the diagonal (j <= i) are drawn.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import QuadMesh
from matplotlib.colors import Colormap, Normalize
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Rectangle
from matplotlib.textpath import text_to_path

FONT_SIZE = 8.0  # pt: the base size of every figure (two-column papers use 8–9 pt captions)
TICK_SIZE = 7.0
MUTED_ALPHA = 0.3  # opacity of a muted cell's color
MUTED_TEXT = "0.45"  # grey
MISSING_FACE = "0.93"
OUTLINE = "0.1"  # the frame of an outlined cell
LABEL_ROTATION = 45.0
MIN_LABEL_SIZE = 5.0  # pt: the smallest text a printed figure can carry; smaller annotations are left out


@dataclass(frozen=True)
class Cells:
    """The values and decorations of the cells of a lower triangle, each an array of shape (k-1, k-1).

    Cells above the diagonal are NaN in ``values`` and None in ``labels``.
    """

    values: np.ndarray  # color value; NaN: nothing to color
    labels: np.ndarray  # object array of annotation text (None: no annotation)
    muted: np.ndarray  # bool: faded color and grey text
    bold: np.ndarray  # bool: bold annotation
    hatched: np.ndarray  # bool: hatched cell
    outlined: np.ndarray  # bool: framed cell (what bold text says, still there when the text is left out)
    missing: np.ndarray  # bool: a pair with no value (drawn grey, annotated "n/a")


def pair_cells(
    tasks: Sequence[str],
    lookup: Mapping[frozenset, dict],
    value: Callable[[dict], float | None],
    label: Callable[[dict], str],
    *,
    muted: Callable[[dict], bool] = lambda row: False,
    bold: Callable[[dict], bool] = lambda row: False,
    hatched: Callable[[dict], bool] = lambda row: False,
    outlined: Callable[[dict], bool] = lambda row: False,
) -> Cells:
    """The cells of the lower triangle of ``tasks`` from one row per pair.

    ``lookup`` maps ``frozenset({task_x, task_y})`` to the pair's row (a dict);
    a pair without a row, or whose value is not finite, is a missing cell.
    """
    size = max(len(tasks) - 1, 0)
    values = np.full((size, size), np.nan)
    labels = np.full((size, size), None, dtype=object)
    flags = {name: np.zeros((size, size), dtype=bool) for name in ("muted", "bold", "hatched", "outlined", "missing")}
    for i in range(size):
        for j in range(i + 1):
            row = lookup.get(frozenset((tasks[i + 1], tasks[j])))
            number = None if row is None else value(row)
            if row is None or number is None or not math.isfinite(number):
                labels[i, j] = "n/a"
                flags["missing"][i, j] = True
                continue
            values[i, j] = number
            labels[i, j] = label(row)
            flags["muted"][i, j] = muted(row)
            flags["bold"][i, j] = bold(row)
            flags["hatched"][i, j] = hatched(row)
            flags["outlined"][i, j] = outlined(row)
    return Cells(values, labels, **flags)


def draw(
    ax: Axes,
    tasks: Sequence[str],
    cells: Cells,
    *,
    cmap: Colormap,
    norm: Normalize,
    show_x: bool = True,
    show_y: bool = True,
    rotation: float = LABEL_ROTATION,
    labelsize: float = TICK_SIZE,
) -> QuadMesh:
    """Draw ``cells`` on ``ax`` as a lower triangle with ``tasks`` (display names) as labels, without annotations.

    :func:`annotate` writes them once the layout says how big a cell is.
    Returns the :class:`~matplotlib.collections.QuadMesh` of the colored
    cells: its array is masked outside the drawn cells, its alpha is
    :data:`MUTED_ALPHA` on muted cells and 1 elsewhere.
    """
    size = cells.values.shape[0]
    mesh = ax.pcolormesh(np.ma.masked_invalid(cells.values), cmap=cmap, norm=norm, edgecolors="white", linewidth=0.8)
    mesh.set_alpha(np.where(cells.muted, MUTED_ALPHA, 1.0))  # type: ignore[arg-type]  # an array: one alpha a cell
    for i, j in zip(*np.nonzero(cells.missing), strict=True):
        ax.add_patch(Rectangle((j, i), 1, 1, facecolor=MISSING_FACE, edgecolor="white", linewidth=0.8, zorder=1))
    for i, j in zip(*np.nonzero(cells.hatched), strict=True):
        ax.add_patch(
            Rectangle((j, i), 1, 1, fill=False, hatch="////", edgecolor="0.35", linewidth=0, zorder=2, label="_hatch")
        )
    for i, j in zip(*np.nonzero(cells.outlined), strict=True):
        ax.add_patch(Rectangle((j + 0.06, i + 0.06), 0.88, 0.88, fill=False, edgecolor=OUTLINE, linewidth=0.9,
                               zorder=2, label="_outline"))  # fmt: skip
    ax.set_xlim(0, size)
    ax.set_ylim(size, 0)  # first row at the top
    ax.set_xticks(np.arange(size) + 0.5, tasks[:-1] if show_x else [""] * size)
    ax.set_yticks(np.arange(size) + 0.5, tasks[1:] if show_y else [""] * size)
    for tick in ax.get_xticklabels():
        tick.set(rotation=rotation, ha="right" if rotation else "center", rotation_mode="anchor")
        if rotation == 90.0:  # centered on its tick, not hanging to its right
            tick.set(va="center")
    ax.tick_params(length=0, labelsize=labelsize, pad=2)
    for spine in ax.spines.values():
        spine.set_visible(False)
    return mesh


def annotate(ax: Axes, cells: Cells, labels: np.ndarray, fontsize: float, *, cmap: Colormap, norm: Normalize) -> None:
    """Write ``labels`` (from :func:`fit_labels`) into the cells drawn by :func:`draw` at ``fontsize``.

    Muted and missing cells get grey text, dark cells white text, bold cells bold text.
    """
    cells_below = ((row, col) for row in range(labels.shape[0]) for col in range(row + 1))
    for i, j in (cell for cell in cells_below if labels[cell] is not None):
        grey = cells.muted[i, j] or cells.missing[i, j]
        dark = not grey and abs(norm(cells.values[i, j]) - 0.5) > 0.3
        # On a hatched cell, a patch of the cell's color keeps the hatching off the text.
        backing = None
        if cells.hatched[i, j]:
            backing = {"boxstyle": "square,pad=0.15", "facecolor": cmap(norm(cells.values[i, j])), "linewidth": 0}
        ax.text(
            j + 0.5,
            i + 0.5,
            labels[i, j],
            ha="center",
            va="center",
            fontsize=fontsize,
            color=MUTED_TEXT if grey else ("white" if dark else "black"),
            fontweight="bold" if cells.bold[i, j] else "normal",
            bbox=backing,
            zorder=3,
        )


def fit_labels(labels: Sequence[np.ndarray], cell_inches: float) -> tuple[list[np.ndarray], float]:
    """The annotations of every panel and the one font size that fits cells of ``cell_inches``.

    The font shrinks from :data:`TICK_SIZE` to fit the widest label in 80 % of
    a cell; below :data:`MIN_LABEL_SIZE` the leading zeros go (``0.72`` becomes
    ``.72``), then labels of two words go onto two lines (``3+ 1−``), and if
    that is still too small there are no annotations (None).
    """
    room = 0.8 * cell_inches

    def size_for(candidates: Sequence[np.ndarray]) -> float:
        texts = [t for panel in candidates for t in panel.flat if t]
        if not texts:
            return TICK_SIZE
        widest = max(text_width(line, 10.0) / 10.0 for t in texts for line in t.split("\n"))  # inches per pt
        lines = max(t.count("\n") + 1 for t in texts)
        return min(TICK_SIZE, room / widest, room * 72 / (1.2 * lines))

    variants = [
        lambda t: t,
        _no_leading_zero,
        lambda t: (_no_leading_zero(t) or "").replace(" ", "\n"),
    ]
    for variant in variants:
        changed = [np.array([variant(t) if t else t for t in panel.flat], dtype=object).reshape(panel.shape)
                   for panel in labels]  # fmt: skip
        size = size_for(changed)
        if size >= MIN_LABEL_SIZE:
            return changed, size
    return [np.full(panel.shape, None, dtype=object) for panel in labels], MIN_LABEL_SIZE


def _no_leading_zero(text: str | None) -> str | None:
    if text is None:
        return None
    return re.sub(r"(?<![\d.])0\.(\d)", r".\1", text)


@functools.lru_cache(maxsize=65536)
def text_width(text: str, size: float = TICK_SIZE) -> float:
    """The width of ``text`` at ``size`` pt in the default font, in inches: its glyphs' advances, as laid out."""
    if not text:
        return 0.0
    width, _, _ = text_to_path.get_text_width_height_descent(text, FontProperties(size=size), ismath=False)
    return width / 72


def tick_size(cell_inches: float) -> float:
    """The size of the task labels for cells ``cell_inches`` apart: :data:`TICK_SIZE`, less where neighbouring
    labels would touch (a line of text needs about 0.95 em), never below :data:`MIN_LABEL_SIZE`."""
    return max(MIN_LABEL_SIZE, min(TICK_SIZE, cell_inches * 72 / 0.95))


def label_margins(
    tasks: Sequence[str], rotation: float = LABEL_ROTATION, size: float = TICK_SIZE
) -> tuple[float, float]:
    """The room (inches) the y labels take to the left and the rotated x labels below a triangle of ``tasks``."""
    if len(tasks) < 2:
        return 0.0, 0.0
    left = max(text_width(t, size) for t in tasks[1:]) + 0.08
    slant = math.sin(math.radians(rotation))
    below = max(text_width(t, size) for t in tasks[:-1]) * slant + size / 72 + 0.08
    return left, below


def x_rotation(
    tasks: Sequence[str], cell_inches: float, *, panels_side_by_side: bool, size: float = TICK_SIZE
) -> float:
    """The angle of the x labels: level if each fits under its cell, else 45°, else 90°.

    45° needs cells far enough apart that slanted neighbours do not touch
    (``cell × sin 45°`` at least a line of text); 90° is also for panels side
    by side where a label slanted at 45° would reach into the panel on its
    left (it reaches left of its tick by its width times cos 45°), which
    would push the panels apart.
    """
    if max(text_width(t, size) for t in tasks[:-1]) <= 0.85 * cell_inches:
        return 0.0
    slant = math.cos(math.radians(LABEL_ROTATION))
    if cell_inches * math.sin(math.radians(LABEL_ROTATION)) < 0.95 * size / 72:
        return 90.0
    if not panels_side_by_side:
        return LABEL_ROTATION
    reach = max(text_width(t, size) * slant - (j + 0.5) * cell_inches for j, t in enumerate(tasks[:-1]))
    return LABEL_ROTATION if reach < 0.1 else 90.0
