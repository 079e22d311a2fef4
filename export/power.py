"""The power curve of a planned study: power against seeds per family, one line per number of checkpoints.

Drawn from a :class:`~ood_store._analysis.power.PowerAnalysis` (``ood-store plot
power``): each design's simulated power with ±2 Monte Carlo standard errors,
the target power as a dashed line and the cheapest design that reaches it
circled; the note says what was simulated.
"""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import polars as pl
from matplotlib.figure import Figure

from ood_store._analysis.power import PowerAnalysis
from ood_store._errors import AnalysisError
from ood_store._export import grids, page, triangle
from ood_store._export.figure_files import STYLE

_MOST_TICKS = 8  # seed or checkpoint counts labeled on the x axis; every k-th beyond that
_TESTS = {"between": "the test between families", "pooled": "the pooled estimate's test", "run": "the run's t test"}
_NAMES = {"knha": "Knapp–Hartung", "z": "z"}


def power_curves(result: PowerAnalysis, *, note: bool = True, width: float = page.COLUMN) -> Figure:
    """Power against seeds per family (or checkpoints, with one seed count), one line per other value.

    Returns
    -------
    matplotlib.figure.Figure
        One ``Line2D`` per line (labeled ``"<n> checkpoints"`` or ``"<n> seeds"``), error bars of ±2
        Monte Carlo standard errors, the target (gid ``target``) and the chosen design (gid ``chosen``).
    """
    table = result.table.filter(pl.col("power").is_not_null())
    if table.is_empty():
        raise AnalysisError("no design of the plan has a test to draw the power of")
    by_seeds = table["seeds"].n_unique() > 1 or table["checkpoints"].n_unique() == 1
    x_column, line_column = ("seeds", "checkpoints") if by_seeds else ("checkpoints", "seeds")
    colors = matplotlib.colormaps["viridis"](np.linspace(0.1, 0.85, max(table[line_column].n_unique(), 1)))
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(width, width * 0.72), layout="constrained")
        ax = figure.add_subplot()
        for color, ((value,), part) in zip(colors, table.sort(x_column).group_by(line_column, maintain_order=True),
                                            strict=False):  # fmt: skip
            part = part.sort(x_column)
            label = f"{value} {line_column}"
            ax.errorbar(
                part[x_column], part["power"], yerr=2 * part["power_se"], color=color, marker="o", markersize=3,
                linewidth=1.1, capsize=1.5, elinewidth=0.6, label=label,
            )  # fmt: skip
        if result.target_power is not None:
            ax.axhline(result.target_power, color="0.4", linestyle=(0, (4, 2)), linewidth=0.8, gid="target")
        if result.chosen is not None:
            chosen = table.filter(
                (pl.col("seeds") == result.chosen.seeds) & (pl.col("checkpoints") == result.chosen.checkpoints)
            )
            ax.plot(chosen[x_column], chosen["power"], linestyle="none", marker="o", markersize=9,
                    markerfacecolor="none", markeredgecolor="black", markeredgewidth=1.0, gid="chosen")  # fmt: skip
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("seeds per family" if by_seeds else "checkpoints per run")
        ax.set_ylabel("power")
        values = sorted(set(table[x_column]))
        ax.set_xticks(values if len(values) <= _MOST_TICKS else values[:: math.ceil(len(values) / _MOST_TICKS)])
        ax.tick_params(labelsize=triangle.TICK_SIZE)
        ax.spines[["top", "right"]].set_visible(False)
        lines = table[line_column].n_unique()
        figure.legend(fontsize=triangle.TICK_SIZE, loc="outside upper center", ncols=min(lines, 3),
                      handletextpad=0.4, columnspacing=1.0)  # fmt: skip
        figure.set_size_inches(width, width * 0.72 + 0.16 * math.ceil(lines / 3))
        if note:
            grids.add_note(figure, _note(result), width)
    return figure


def _note(result: PowerAnalysis) -> list[str]:
    s = result.settings
    test = result.table["test"][0]
    effects = ", ".join(f"{e:+g}" for e in s.effects)
    level = s.level(2 if test == "pooled" else 1)
    lines = [
        f"Power of {_TESTS[test]} ({_NAMES[s.test]}) at alpha {level:.3g}"
        + (f" ({s.alpha:g} over {s.pairs} pairs)" if s.pairs > 1 and s.adjust_pairs != "none" else "")
        + f", {s.replications} simulated studies a design; bars: ±2 Monte Carlo SE.",
        f"Partial correlations {effects} by family, seed spread tau {s.tau:.2g} on Fisher z, residual curves with "
        f"lag-1 autocorrelation {s.curves.ar1:.2g} at {s.curves.ar1_checkpoints} even checkpoints, item noise "
        f"{s.curves.noise[0]:.2g} and {s.curves.noise[1]:.2g} of their variance; {s.schedule} schedule, "
        f"{s.analysis.residualizer} residualizer, {s.analysis.inference} n.",
    ]
    if result.target_power is not None:
        found = (
            f"circled: the cheapest design that reaches it, {result.chosen.seeds} seeds x "
            f"{result.chosen.checkpoints} checkpoints"
            if result.chosen
            else "no design reaches it"
        )
        lines.append(f"Dashed: power {result.target_power:g}; {found}.")
    return lines
