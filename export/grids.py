"""Grids of lower-triangle panels sized for the page: columns, titles, tick labels, color bar and note.

The layout behind :func:`~ood_store._export.figures.heatmap_grid` and
:func:`~ood_store._export.figures.sign_agreement`, for three runs or thirty:

- **Columns.** Unless given, the fewest rows whose panels are at least
  :data:`MIN_SIDE` wide, then more columns until the figure is no taller
  than the page (:data:`~ood_store._export.page.FIGURE_HEIGHT`).
- **Labels.** Every row of panels has its tasks on the left and every column
  below its lowest panel, so no panel is far from its labels.
- **Titles** are wrapped at separators onto two lines to the width of a
  panel, smaller (down to :data:`MIN_TITLE_SIZE`) and then cut with an
  ellipsis if they still do not fit: titles never run into each other.
- **Cell text** is sized to the cells as laid out and never below
  :data:`~ood_store._export.triangle.MIN_LABEL_SIZE`; cells too small for it
  keep their colors and lose their numbers, and the note says so.
- **Color bar** to the right of the panels, or below them, across, where
  the room it takes beside them would leave cells too small for their task
  labels at :data:`~ood_store._export.triangle.MIN_LABEL_SIZE` (24 runs of 8
  tasks in one column: 4 panels a row instead of 3 rows more than the page).
- **Cells are square**: the height is set once the layout is known.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import matplotlib
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Colormap, Normalize
from matplotlib.figure import Figure

from ood_store._errors import AnalysisError
from ood_store._export import page, triangle
from ood_store._export.display import _TOKEN_END
from ood_store._export.figure_files import CAPTION, STYLE

COLORBAR = 0.62  # inches the color bar and its labels take beside the panels
BAR_BELOW = 0.5  # inches a color bar below the panels takes, with its ticks and label
GAP = 0.12  # inches between panels
MAX_SIDE = 2.0  # inches: the widest a panel gets when the width is not given
MIN_SIDE = 1.2  # inches: panels narrower than this go onto more rows, while the page is tall enough
TITLE_SIZE = 8.0
MIN_TITLE_SIZE = 6.0
NOTE_SIZE = 6.5
SPACER = 0.25  # of a panel's width: a spacer column between groups of panels
ROW_HEADER = 0.2  # inches a row header (a facet's value, left of the tasks) takes
_LINE = 1.25 / 72  # inches per point of text: one line with its leading
TITLE_SPACE = 0.08  # inches kept between neighbors' titles (closer, 'seed1pythia-1.4b' read as one word)
#: Inches between cells whose task labels, at their smallest, do not touch (see :func:`triangle.tick_size`).
LEGIBLE_CELL = 0.95 * triangle.MIN_LABEL_SIZE / 72


@dataclass(frozen=True)
class Panel:
    """One triangle of a grid: its cells, where it goes (row, column) and its title (None: untitled)."""

    cells: triangle.Cells
    row: int
    col: int
    title: str | None = None


@dataclass(frozen=True)
class ColorBar:
    """The one color bar of a grid: label and ticks (labels default to the tick values)."""

    label: str | None
    ticks: Sequence[float]
    tick_labels: Sequence[str] | None = None


@dataclass
class GridLayout:
    """A grid as it was drawn: whether the cells kept their numbers, and the size of a cell."""

    numbers: bool = True
    cell_inches: float = 0.0
    bar_below: bool = False
    title_size: float = TITLE_SIZE
    notes: list[str] = field(default_factory=list)


def columns(
    count: int,
    labels: Sequence[str],
    width: float,
    *,
    titles: Sequence[str] = (),
    headers: bool = False,
    bar_below: bool = False,
) -> int:
    """The columns of an automatic grid of ``count`` panels of ``labels`` (titled ``titles``) ``width`` inches wide.

    The fewest rows whose panels are at least :data:`MIN_SIDE` wide, then
    more columns while the figure would be taller than the page; of that and
    the next two counts, the first that fills every row (24 runs: 6, not 5).
    """
    best = count
    for rows in range(1, count + 1):
        ncols = math.ceil(count / rows)
        if side_of(labels, width, ncols, headers=headers, bar_below=bar_below) >= MIN_SIDE or ncols == 1:
            best = ncols
            break

    def tall(ncols: int) -> bool:
        height = height_of(
            labels, width, ncols, math.ceil(count / ncols), titles=titles, headers=headers, bar_below=bar_below
        )
        return height > page.FIGURE_HEIGHT

    while best < count and tall(best):
        rows = math.ceil(count / best)
        best = next(c for c in range(best + 1, count + 1) if math.ceil(count / c) < rows)
    even = [c for c in range(best, min(best + 2, count) + 1) if count % c == 0]
    if even and side_of(labels, width, even[0], headers=headers, bar_below=bar_below) >= 0.5:
        return even[0]
    return best


def legible(labels: Sequence[str], width: float, ncols: int, *, headers: bool = False, bar_below: bool = False) -> bool:
    """Whether ``ncols`` panels of ``labels`` side by side in ``width`` inches have cells far enough apart
    for their task labels (:data:`LEGIBLE_CELL`)."""
    side = side_of(labels, width, ncols, headers=headers, bar_below=bar_below)
    return side / max(len(labels) - 1, 1) >= LEGIBLE_CELL


def fixed_width(labels: Sequence[str], ncols: int, *, headers: bool = False, bar_below: bool = False) -> float:
    """Inches of a grid's width that are not panels: task labels, row headers, gaps and the color bar beside them."""
    left, _ = triangle.label_margins(labels)
    return left + (ROW_HEADER if headers else 0.0) + (0.0 if bar_below else COLORBAR) + 0.15 + (ncols - 1) * GAP


def side_of(
    labels: Sequence[str], width: float, ncols: int, *, headers: bool = False, bar_below: bool = False
) -> float:
    """The side (inches) of each of ``ncols`` panels side by side in ``width`` inches."""
    return (width - fixed_width(labels, ncols, headers=headers, bar_below=bar_below)) / ncols


def height_of(
    labels: Sequence[str],
    width: float,
    ncols: int,
    nrows: int,
    *,
    titles: Sequence[str] = (),
    headers: bool = False,
    bar_below: bool = False,
) -> float:
    """Roughly how tall (inches) a grid of ``nrows`` × ``ncols`` panels is, with its titles and a note."""
    side = side_of(labels, width, ncols, headers=headers, bar_below=bar_below)
    cell = side / max(len(labels) - 1, 1)
    ticks = triangle.tick_size(cell)
    rotation = triangle.x_rotation(labels, cell, panels_side_by_side=ncols > 1, size=ticks)
    below = triangle.label_margins(labels, rotation, ticks)[1]
    fitted, size = fit_titles(titles or ["title"], side + GAP)
    title = max(t.count("\n") + 1 for t in fitted) * size * _LINE + 0.05
    note = 4 * NOTE_SIZE * _LINE
    return nrows * (side + title + GAP) + below + note + 0.1 + (BAR_BELOW if bar_below else 0.0)


def width_for(
    labels: Sequence[str], ncols: int, width: float | None, *, nrows: int = 1, headers: bool = False
) -> float:
    """The figure width: ``width`` if given, else the page, or less where panels would pass :data:`MAX_SIDE`
    or make the figure taller than the page (one column for a single panel)."""
    if width is not None:
        return width
    if ncols == 1 and nrows == 1:
        return page.COLUMN
    below = triangle.label_margins(labels, 90.0)[1]
    room = page.FIGURE_HEIGHT - below - 2 * NOTE_SIZE * _LINE - 0.1 - (nrows - 1) * GAP
    side = min(MAX_SIDE, room / nrows - TITLE_SIZE * _LINE - 0.05)
    return min(page.PAGE, fixed_width(labels, ncols, headers=headers) + ncols * side)


def draw(
    panels: Sequence[Panel],
    labels: Sequence[str],
    *,
    nrows: int,
    ncols: int,
    width: float,
    cmap: Colormap,
    norm: Normalize,
    bar: ColorBar,
    note: Callable[[GridLayout], list[str]] | None = None,
    row_headers: Sequence[str | None] | None = None,
    spacers: Sequence[int] = (),
    bar_below: bool = False,
) -> tuple[Figure, GridLayout]:
    """Draw ``panels`` (display-name ``labels``) as a grid of ``nrows`` × ``ncols`` with one color bar.

    Columns in ``spacers`` hold no panels: narrow gaps that set groups of columns apart.
    ``bar_below``: the color bar goes under the panels, across, instead of to their right.

    ``note`` makes the lines of the note under the figure once the layout is
    known (whether the cells kept their numbers); None: no note.
    """
    panel_columns = ncols - len(spacers)
    side = side_of(labels, width, panel_columns, headers=bool(row_headers and any(row_headers)), bar_below=bar_below)
    side *= panel_columns / (panel_columns + SPACER * len(spacers))
    if side < 0.3:
        raise AnalysisError(
            f"{width:g} in is too narrow for {ncols} panels of {len(labels)} tasks side by side", parameter="width"
        )
    cell = side / (len(labels) - 1)
    ticks = triangle.tick_size(cell)
    rotation = triangle.x_rotation(labels, cell, panels_side_by_side=ncols > 1, size=ticks)
    layout = GridLayout(bar_below=bar_below)
    titles, layout.title_size = fit_titles([p.title or "" for p in panels], side + 0.8 * GAP)
    lines = [t.count("\n") + 1 if t else 0 for t in titles]
    title_rows = [max((n for p, n in zip(panels, lines, strict=True) if p.row == r), default=0) for r in range(nrows)]
    below = triangle.label_margins(labels, rotation, ticks)[1]
    height = (
        nrows * side + sum(n * layout.title_size * _LINE + 0.05 * bool(n) for n in title_rows)
        + (nrows - 1) * GAP + below + 0.1 + (BAR_BELOW if bar_below else 0.0)
    )  # fmt: skip
    occupied = {(p.row, p.col) for p in panels}
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(width, height), layout="constrained")
        engine = figure.get_layout_engine()
        assert engine is not None  # layout="constrained" made one
        engine.set(h_pad=GAP / 2, w_pad=0.02, hspace=0, wspace=0)  # type: ignore[call-arg]  # constrained's keywords
        grid = figure.add_gridspec(nrows, ncols, width_ratios=[SPACER if c in spacers else 1.0 for c in range(ncols)])
        axes = []
        for panel, title in zip(panels, titles, strict=True):
            ax = figure.add_subplot(grid[panel.row, panel.col])
            below_free = not any((r, panel.col) in occupied for r in range(panel.row + 1, nrows))
            left_free = not any((panel.row, c) in occupied for c in range(panel.col))
            triangle.draw(ax, labels, panel.cells, cmap=cmap, norm=norm, show_x=below_free, show_y=left_free,
                          rotation=rotation, labelsize=ticks)  # fmt: skip
            if title:
                ax.set_title(title, pad=3, fontsize=layout.title_size, linespacing=1.1)
            header = row_headers[panel.row] if row_headers else None
            if left_free and header:
                ax.set_ylabel(header, fontsize=TITLE_SIZE, labelpad=4)
            axes.append(ax)
        mappable = ScalarMappable(norm=norm, cmap=cmap)
        if bar_below:  # as long as 3 in a column's panels, 0.08 in thick
            colorbar = figure.colorbar(mappable, ax=axes, location="bottom", shrink=0.6, aspect=30, pad=0.01)
        else:
            colorbar = figure.colorbar(mappable, ax=axes, fraction=0.05, aspect=25, pad=0.03)
        if bar.label:
            colorbar.set_label(bar.label)
        colorbar.set_ticks(list(bar.ticks), labels=list(bar.tick_labels) if bar.tick_labels else None)
        colorbar.ax.tick_params(labelsize=triangle.TICK_SIZE)
        figure.draw_without_rendering()  # the layout, before the cells and titles are sized to it
        box = axes[0].get_position()
        layout.cell_inches = box.width * width / (len(labels) - 1)
        _refit_titles(axes, panels, layout, width)
        texts = [p.cells.labels for p in panels]
        fitted, size = triangle.fit_labels(texts, layout.cell_inches)
        layout.numbers = any(t is not None for grid_labels in fitted for t in grid_labels.flat)
        for ax, panel, panel_labels in zip(axes, panels, fitted, strict=True):
            triangle.annotate(ax, panel.cells, panel_labels, size, cmap=cmap, norm=norm)
        if note is not None:
            layout.notes = note(layout)
            if layout.notes:
                add_note(figure, layout.notes, width)
        square(figure, axes, nrows)
    return figure, layout


def _refit_titles(axes: list, panels: Sequence[Panel], layout: GridLayout, width: float) -> None:
    """Titles fitted again to the panels as laid out: each may take its panel's width and the gap beside it."""
    where = {(p.row, p.col): ax.get_position() for p, ax in zip(panels, axes, strict=True)}
    gaps = [where[(r, c + 1)].x0 - box.x1 for (r, c), box in where.items() if (r, c + 1) in where]
    gap = min(gaps) * width if gaps else GAP
    room = axes[0].get_position().width * width + gap - TITLE_SPACE
    titles, size = fit_titles([p.title or "" for p in panels], room)
    layout.title_size = size
    for ax, title in zip(axes, titles, strict=True):
        if title:
            ax.set_title(title, pad=3, fontsize=size, linespacing=1.1)


def draw_wrapped(
    items: Sequence[tuple[triangle.Cells, str | None]],
    labels: Sequence[str],
    *,
    ncols: int | None,
    width: float | None,
    **options,
) -> tuple[Figure, GridLayout]:
    """Draw ``items`` (cells and title) row by row, ``ncols`` to a row (default :func:`columns`).

    With automatic columns, a figure that comes out taller than the page is
    drawn again with more columns; where the columns that keep it within the
    page leave cells too small for their task labels, the color bar goes
    below the panels, which gives them its width. ``options`` go to :func:`draw`.
    """
    count = len(items)
    if ncols is not None and ncols < 1:
        raise AnalysisError(f"ncols must be at least 1, not {ncols}")
    choice = width if width is not None else (page.COLUMN if count == 1 else page.PAGE)
    titles = [title or "" for _, title in items]
    current = min(ncols, count) if ncols else columns(count, labels, choice, titles=titles)
    below = False

    def narrow(per_row: int, bar_below: bool) -> bool:
        """Whether ``per_row`` panels a row are too narrow for their task labels or leave titles cut short."""
        room = side_of(labels, choice, per_row, bar_below=bar_below) + GAP - TITLE_SPACE
        return not legible(labels, choice, per_row, bar_below=bar_below) or titles_cut(titles, room)

    def across(beside: int) -> int | None:
        """The columns with the color bar below, where ``beside`` columns beside it are too narrow."""
        if ncols or below or not narrow(beside, False):
            return None
        chosen = columns(count, labels, choice, titles=titles, bar_below=True)
        return chosen if not narrow(chosen, True) else None

    if (chosen := across(current)) is not None:
        current, below = chosen, True
    while True:
        nrows = math.ceil(count / current)
        panels = [Panel(cells, *divmod(i, current), title) for i, (cells, title) in enumerate(items)]
        figure, layout = draw(panels, labels, nrows=nrows, ncols=current, bar_below=below,
                              width=width_for(labels, current, width, nrows=nrows), **options)  # fmt: skip
        fewer = [c for c in range(current + 1, count + 1) if math.ceil(count / c) < nrows]
        if ncols or not fewer or figure.get_figheight() <= page.FIGURE_HEIGHT:
            return figure, layout
        if (chosen := across(fewer[0])) is not None:
            current, below = chosen, True
        else:
            current = fewer[0]


def fit_titles(titles: Sequence[str], room: float) -> tuple[list[str], float]:
    """``titles`` wrapped onto at most two lines of ``room`` inches, and the one font size they all fit at.

    One line at up to a point less than :data:`TITLE_SIZE` comes first. Lines break
    after separators (``- _ / :`` and spaces); a title that does
    not fit at :data:`MIN_TITLE_SIZE` is cut in the middle with an ellipsis.
    """
    for size in (TITLE_SIZE, TITLE_SIZE - 0.5, TITLE_SIZE - 1.0):  # one line, a little smaller, before two
        if all(_fits(t, room, size) for t in titles):
            return list(titles), size
    size = TITLE_SIZE
    while True:
        wrapped = [_wrap(t, room, size) for t in titles]
        if all(_fits(t, room, size) for t in wrapped) or size <= MIN_TITLE_SIZE:
            break
        size = max(MIN_TITLE_SIZE, size - 0.5)
    return [t if _fits(t, room, size) else _cut(t, room, size) for t in wrapped], size


def titles_cut(titles: Sequence[str], room: float) -> bool:
    """Whether :func:`fit_titles` has to cut any of ``titles`` short with an ellipsis in ``room`` inches."""
    fitted, _ = fit_titles(titles, room)
    return any(f.count("\u2026") > t.count("\u2026") for f, t in zip(fitted, titles, strict=True))


def _wrap(title: str, room: float, size: float) -> str:
    if not title or triangle.text_width(title, size) <= room:
        return title
    tokens = [t for t in _TOKEN_END.split(title) if t]
    lines = [""]
    for token in tokens:
        if lines[-1] and triangle.text_width((lines[-1] + token).rstrip(), size) > room:
            lines.append("")
        lines[-1] += token
    if len(lines) > 2:  # two lines as even as the tokens allow
        best = min(range(1, len(tokens)), key=lambda i: max(
            triangle.text_width("".join(tokens[:i]).rstrip(), size), triangle.text_width("".join(tokens[i:]), size)
        ))  # fmt: skip
        lines = ["".join(tokens[:best]), "".join(tokens[best:])]
    return "\n".join(line.rstrip() for line in lines)


def _fits(title: str, room: float, size: float) -> bool:
    return all(triangle.text_width(line, size) <= room for line in title.split("\n"))


def _cut(title: str, room: float, size: float) -> str:
    """Each line of ``title`` too wide for ``room`` shortened in the middle with an ellipsis."""
    out = []
    for original in title.split("\n"):
        line, keep = original, len(original)
        while keep > 2 and triangle.text_width(line, size) > room:
            keep -= 1
            line = original[: (keep + 1) // 2] + "\u2026" + original[len(original) - keep // 2 :]
        out.append(line)
    return "\n".join(out)


def wrap_note(lines: Sequence[str], width: float) -> str:
    """The note's ``lines`` wrapped at spaces to the figure's ``width`` (inches, less a margin) at :data:`NOTE_SIZE`."""
    room = 0.95 * width - 0.2  # a margin, and 5 % for the renderer's hinting, which widens text at low dpi
    out = []
    for line in lines:
        current = ""
        for word in line.split(" "):
            candidate = f"{current} {word}" if current else word
            if current and triangle.text_width(candidate, NOTE_SIZE) > room:
                out.append(current)
                candidate = word
            current = candidate
        out.append(current)
    return "\n".join(out)


#: The last line of a note cut short: the rest is in :attr:`~ood_store._export.figure_files.PaperFigure.caption`.
MORE = "The whole note: in the caption file."


def add_note(figure: Figure, lines: Sequence[str], width: float) -> None:
    """Write the note of ``lines`` under ``figure``, which grows by its height.

    The note takes at most a third of the figure. A longer one keeps its first
    lines that fit, then :data:`MORE`; the whole note is kept on the figure
    (attribute :data:`CAPTION`), where ``PaperFigure.caption`` reads it and
    ``PaperFigure.save`` writes it to a caption file beside the figure.
    """
    body = figure.get_figheight()
    kept = list(lines)

    def too_tall(shown: Sequence[str]) -> bool:  # note <= (body + note) / 3
        return note_height(shown, width) > body / 2

    if too_tall(kept):
        setattr(figure, CAPTION, " ".join(lines))
        while kept and too_tall([*kept, MORE]):
            kept.pop()
        kept.append(MORE)
    figure.supxlabel(wrap_note(kept, width), fontsize=NOTE_SIZE, color="0.3")
    figure.set_size_inches(width, body + note_height(kept, width))


def note_height(lines: Sequence[str], width: float) -> float:
    """Inches the note of ``lines`` takes at the bottom of a figure ``width`` inches wide."""
    return (wrap_note(lines, width).count("\n") + 1) * NOTE_SIZE * _LINE + 0.04


def square(figure: Figure, axes: list, nrows: int) -> None:
    """Make the cells square: lay the figure out and give it the height that makes each panel as tall as wide."""
    figure.draw_without_rendering()
    width, height = figure.get_size_inches()
    box = axes[0].get_position()
    excess = box.height * height - box.width * width
    figure.set_size_inches(width, max(height - nrows * excess, 0.5))
