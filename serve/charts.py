"""The viewer's charts as Vega-Lite specs, built from rows that the pages compute from results objects.

Every spec holds its data inline (``data.values``): names from the store (runs,
tasks, attribute values) are data, never part of an expression, a field name
or markup, so a name such as ``<script>`` or ``{{x}}`` is drawn as text. The
colors follow the paper figures of :mod:`ood_store._export`: r on a diverging
red (positive) to blue (negative) scale fixed to [-1, 1], run groups in Okabe
and Ito's palette, the in-domain task in black. Marks that tests count carry a
name (a Vega-Lite layer ``name`` becomes ``<name>_marks``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ood_store._export.forest import PALETTE

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"
#: r, -1 blue to +1 red, white at 0: matplotlib's RdBu_r, as the heatmaps of export.
R_SCALE = {"domain": [-1, 1], "scheme": "redblue", "reverse": True}
_CONFIG = {
    "font": "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif",
    "view": {"stroke": None},
    "axis": {"labelFontSize": 11, "titleFontSize": 11, "labelLimit": 180},
    "header": {"labelFontSize": 11, "labelLimit": 240},
    "legend": {"labelFontSize": 11, "titleFontSize": 11, "labelLimit": 200},
}
#: Above this many series, a chart has no color legend (its tooltips name each line).
MAX_LEGEND = 12


def _spec(**parts: Any) -> dict[str, Any]:
    return {"$schema": SCHEMA, "config": _CONFIG, **parts}


def palette(groups: Sequence[Any]) -> dict[str, Any]:
    """A color scale giving each of ``groups`` (in order) a color of the forest plots' palette, then Tableau's."""
    extra = ["#4E79A7", "#F28E2B", "#E15759", "#76B7B2", "#59A14F", "#EDC948", "#B07AA1", "#FF9DA7", "#9C755F"]
    colors = list(PALETTE) + extra
    return {"domain": list(groups), "range": [colors[i % len(colors)] for i in range(len(groups))]}


def _tooltip(*fields: tuple[str, str] | tuple[str, str, str]) -> list[dict[str, Any]]:
    out = []
    for item in fields:
        name, kind, *fmt = item
        entry: dict[str, Any] = {"field": name, "type": kind}
        if fmt:
            entry["format"] = fmt[0]
        out.append(entry)
    return out


# -- partial correlations -------------------------------------------------------------------------------------


def grid(
    cells: list[dict[str, Any]],
    *,
    x_order: Sequence[str],
    y_order: Sequence[str],
    facet: dict[str, Any],
    numbers: bool,
    cell_size: int,
) -> dict[str, Any]:
    """Lower-triangle heatmaps of r, one panel per facet (``facet``: Vega-Lite's facet and its columns).

    Each cell of ``cells`` has ``x``, ``y`` (the pair), ``r`` (null: not computed), ``label``,
    ``significant``, ``fragile`` (null: not asked), ``href`` (the pair's page) and tooltip fields.
    Cells that are not significant are faded; fragile ones framed in black.
    """
    encoding = {
        "x": {"field": "x", "type": "nominal", "sort": list(x_order), "axis": {"title": None, "labelAngle": -45}},
        "y": {"field": "y", "type": "nominal", "sort": list(y_order), "axis": {"title": None}},
    }
    tooltip = _tooltip(
        ("panel", "nominal"), ("x", "nominal"), ("y", "nominal"), ("r", "quantitative", ".3f"),
        ("ci", "nominal"), ("p", "quantitative", ".3g"), ("n", "quantitative"), ("note", "nominal"),
    )  # fmt: skip
    layers: list[dict[str, Any]] = [
        {
            "name": "cells",
            "transform": [{"filter": "isValid(datum.r)"}],
            "mark": {"type": "rect", "cursor": "pointer"},
            "encoding": {
                **encoding,
                "color": {"field": "r", "type": "quantitative", "scale": R_SCALE, "legend": {"title": "r"}},
                "opacity": {"condition": {"test": "datum.significant", "value": 1}, "value": 0.35},
                "href": {"field": "href", "type": "nominal"},
                "tooltip": tooltip,
            },
        },
        {
            "name": "missing",
            "transform": [{"filter": "!isValid(datum.r)"}],
            "mark": {"type": "rect", "fill": "#d9d9d9", "cursor": "pointer"},
            "encoding": {**encoding, "href": {"field": "href", "type": "nominal"}, "tooltip": tooltip},
        },
        {
            "name": "fragile",
            "transform": [{"filter": "datum.fragile === true"}],
            "mark": {"type": "rect", "fill": None, "stroke": "black", "strokeWidth": 2, "cursor": "pointer"},
            "encoding": {**encoding, "href": {"field": "href", "type": "nominal"}},
        },
    ]
    if numbers:
        layers.append(
            {
                "name": "numbers",
                "mark": {"type": "text", "fontSize": 9, "cursor": "pointer"},
                "encoding": {
                    **encoding,
                    "text": {"field": "label", "type": "nominal"},
                    "href": {"field": "href", "type": "nominal"},
                    "tooltip": tooltip,
                    "color": {"condition": {"test": "abs(datum.r) > 0.6", "value": "white"}, "value": "black"},
                    "opacity": {"condition": {"test": "datum.significant", "value": 1}, "value": 0.55},
                },
            }
        )
    side = cell_size * max(1, len(x_order))
    return _spec(
        data={"values": cells},
        **facet,
        spec={"width": side, "height": cell_size * max(1, len(y_order)), "layer": layers},
        resolve={"axis": {"x": "independent", "y": "independent"}} if side < 400 else {},
    )


def forest(rows: list[dict[str, Any]], *, order: Sequence[str], groups: Sequence[Any], group_name: str | None):
    """One pair across runs: each run's r with its interval (colored by group, hollow where not significant; the
    run marked ``chosen`` ringed), then the pooled r with its interval (a black diamond) in a row of its own; a
    dashed line at 0.

    ``rows`` have ``label`` (the y position), ``kind`` (``run`` or ``pooled``), ``r``, ``ci_low``,
    ``ci_high``, ``significant``, ``group`` and ``href``.
    """
    y = {"field": "label", "type": "nominal", "sort": list(order), "axis": {"title": None}}
    color = {"field": "group", "type": "nominal", "scale": palette(groups), "legend": {"title": group_name}}
    if not group_name:
        color = {"value": PALETTE[0]}
    tooltip = _tooltip(
        ("label", "nominal"), ("r", "quantitative", ".3f"), ("ci_low", "quantitative", ".3f"),
        ("ci_high", "quantitative", ".3f"), ("n_eff", "quantitative", ".1f"), ("p", "quantitative", ".3g"),
        ("group", "nominal"),
    )  # fmt: skip
    x = {"field": "r", "type": "quantitative", "scale": {"domain": [-1, 1]}, "title": "partial correlation r"}
    runs = [{"filter": "datum.kind === 'run'"}]
    pooled = [{"filter": "datum.kind === 'pooled'"}]
    return _spec(
        data={"values": rows},
        width=420,
        height={"step": 16},
        layer=[
            {
                "name": "zero",
                "data": {"values": [{}]},  # one line, not one per row of the chart's data
                "mark": {"type": "rule", "strokeDash": [3, 3], "color": "#888"},
                "encoding": {"x": {"datum": 0}},
            },
            {
                "name": "intervals",
                "transform": runs,
                "mark": {"type": "rule", "strokeWidth": 1.5},
                "encoding": {"y": y, "x": {**x, "field": "ci_low"}, "x2": {"field": "ci_high"}, "color": color},
            },
            {
                "name": "estimates",
                "transform": runs,
                "mark": {"type": "point", "shape": "circle", "size": 60, "strokeWidth": 1.5, "filled": False},
                "encoding": {
                    "y": y,
                    "x": x,
                    "stroke": color,
                    "fill": {"condition": {"test": "datum.significant", **color}, "value": "white"},
                    "fillOpacity": {"value": 1},
                    "href": {"field": "href", "type": "nominal"},
                    "tooltip": tooltip,
                },
            },
            {
                "name": "chosen",  # the run whose residuals the page shows
                "transform": [{"filter": "datum.chosen === true"}],
                "mark": {"type": "point", "shape": "circle", "size": 220, "strokeWidth": 1.5, "color": "black"},
                "encoding": {"y": y, "x": x},
            },
            {
                "name": "pooled_interval",
                "transform": pooled,
                "mark": {"type": "rule", "strokeWidth": 2.5, "color": "black"},
                "encoding": {"y": y, "x": {**x, "field": "ci_low"}, "x2": {"field": "ci_high"}},
            },
            {
                "name": "pooled_estimate",
                "transform": pooled,
                "mark": {"type": "point", "shape": "diamond", "size": 140, "filled": True, "color": "black"},
                "encoding": {"y": y, "x": x, "tooltip": tooltip},
            },
        ],
    )


def residuals(series: list[dict[str, Any]], points: list[dict[str, Any]], *, x_title: str, y_title: str, r_text: str):
    """The two residual series of one run against step, beside their scatter: the data behind one r."""
    lines = {
        "title": "residuals over training",
        "width": 360,
        "height": 220,
        "data": {"values": series},
        "mark": {"type": "line", "point": {"size": 18}},
        "encoding": {
            "x": {"field": "step", "type": "quantitative", "title": "training step"},
            "y": {"field": "value", "type": "quantitative", "title": "residual"},
            "color": {"field": "series", "type": "nominal", "scale": palette(sorted({s["series"] for s in series})),
                      "legend": {"title": None, "orient": "bottom"}},
            "tooltip": _tooltip(("series", "nominal"), ("step", "quantitative"), ("value", "quantitative", ".4f")),
        },
    }  # fmt: skip
    scatter = {
        "title": r_text,
        "width": 240,
        "height": 220,
        "data": {"values": points},
        "mark": {"type": "point", "filled": True, "size": 30, "color": PALETTE[0]},
        "encoding": {
            "x": {"field": "residual_x", "type": "quantitative", "title": x_title},
            "y": {"field": "residual_y", "type": "quantitative", "title": y_title},
            "tooltip": _tooltip(
                ("step", "quantitative"), ("residual_x", "quantitative", ".4f"), ("residual_y", "quantitative", ".4f")
            ),
        },
    }
    return _spec(hconcat=[lines, scatter])


def signs(cells: list[dict[str, Any]], *, x_order: Sequence[str], y_order: Sequence[str], facet: dict[str, Any]):
    """How many runs agree on each pair's sign: cells colored by (runs with r > 0 - runs with r < 0) / runs,
    labeled ``3+ 0−``; consistently positive or negative pairs framed, model-dependent ones framed dashed."""
    encoding = {
        "x": {"field": "x", "type": "nominal", "sort": list(x_order), "axis": {"title": None, "labelAngle": -45}},
        "y": {"field": "y", "type": "nominal", "sort": list(y_order), "axis": {"title": None}},
    }
    tooltip = _tooltip(
        ("panel", "nominal"), ("x", "nominal"), ("y", "nominal"), ("label", "nominal"), ("verdict", "nominal"),
        ("r_pooled", "quantitative", ".3f"),
    )  # fmt: skip
    scale = {"domain": [-1, 1], "range": ["#4393c3", "#f7f7f7", "#d6604d"]}
    cell = 38  # room for "12+ 12−"
    return _spec(
        data={"values": cells},
        **facet,
        spec={
            "width": cell * max(1, len(x_order)),
            "height": cell * max(1, len(y_order)),
            "layer": [
                {
                    "name": "cells",
                    "mark": {"type": "rect", "cursor": "pointer"},
                    "encoding": {
                        **encoding,
                        "color": {
                            "field": "balance",
                            "type": "quantitative",
                            "scale": scale,
                            "legend": {"title": "sign balance", "values": [-1, 0, 1]},
                        },
                        "href": {"field": "href", "type": "nominal"},
                        "tooltip": tooltip,
                    },  # fmt: skip
                },
                {
                    "name": "consistent",
                    "transform": [{"filter": "datum.style === 'bold'"}],
                    "mark": {"type": "rect", "fill": None, "stroke": "black", "strokeWidth": 2},
                    "encoding": encoding,
                },
                {
                    "name": "model_dependent",
                    "transform": [{"filter": "datum.style === 'hatched'"}],
                    "mark": {"type": "rect", "fill": None, "stroke": "black", "strokeWidth": 1.5, "strokeDash": [3, 2]},
                    "encoding": encoding,
                },
                {
                    "name": "labels",
                    "transform": [{"filter": "datum.style !== 'bold'"}],
                    "mark": {"type": "text", "fontSize": 9, "cursor": "pointer"},
                    "encoding": {
                        **encoding,
                        "text": {"field": "label", "type": "nominal"},
                        "href": {"field": "href", "type": "nominal"},
                    },
                },
                {
                    "name": "bold_labels",
                    "transform": [{"filter": "datum.style === 'bold'"}],
                    "mark": {"type": "text", "fontSize": 9, "fontWeight": "bold", "cursor": "pointer"},
                    "encoding": {
                        **encoding,
                        "text": {"field": "label", "type": "nominal"},
                        "href": {"field": "href", "type": "nominal"},
                    },
                },
            ],
        },
    )


# -- scores ---------------------------------------------------------------------------------------------------


def curves(
    points: list[dict[str, Any]],
    *,
    series: Sequence[str],
    in_domain: str | None,
    log: bool,
    campaigns: int,
    linthresh: float = 1.0,
):
    """One run's training curves: a line per task against step, the in-domain task thick and black; with
    ``campaigns`` > 1, each checkpoint's point shaped by the campaign its score comes from. ``log``: a symlog
    step axis, linear up to ``linthresh`` (the first nonzero step), so that step 0 shows."""
    x: dict[str, Any] = {"field": "step", "type": "quantitative", "title": "training step"}
    if log:
        x["scale"] = {"type": "symlog", "constant": linthresh}
    others = [s for s in series if s != in_domain]
    color: dict[str, Any] = {"field": "series", "type": "nominal", "scale": palette(others), "title": "task"}
    if len(others) > MAX_LEGEND:
        color["legend"] = None
    tooltip = _tooltip(
        ("series", "nominal"), ("step", "quantitative"), ("value", "quantitative", ".4f"),
        ("stderr", "quantitative", ".4f"), ("campaign", "nominal"),
    )  # fmt: skip
    y = {"field": "value", "type": "quantitative", "title": "score", "scale": {"zero": False}}
    layers: list[dict[str, Any]] = [
        {
            "name": "tasks",
            "transform": [{"filter": "!datum.in_domain"}],
            "mark": {"type": "line", "strokeWidth": 1.2, "opacity": 0.85},
            "encoding": {"x": x, "y": y, "color": color, "detail": {"field": "series"}, "tooltip": tooltip},
        }
    ]
    if in_domain in series:
        layers.append(
            {
                "name": "in_domain",
                "transform": [{"filter": "datum.in_domain"}],
                "mark": {"type": "line", "strokeWidth": 3, "color": "black"},
                "encoding": {"x": x, "y": y, "tooltip": tooltip},
            }
        )
    if campaigns > 1:
        layers.append(
            {
                "name": "campaigns",
                "mark": {"type": "point", "size": 22, "filled": True, "color": "#555"},
                "encoding": {"x": x, "y": y, "shape": {"field": "campaign", "type": "nominal"}, "tooltip": tooltip},
            }
        )
    return _spec(data={"values": points}, width=760, height=340, layer=layers)


def step_groups(points: list[dict[str, Any]], groups: list[dict[str, Any]], *, order: Sequence[str], by: str | None):
    """One task at one step across runs: each run's score (jittered within its group), each group's mean
    (a tick) and mean ± 1 SD (a bar)."""
    x = {"field": "group", "type": "nominal", "sort": list(order), "title": by or None, "axis": {"labelAngle": 0}}
    y = {"field": "value", "type": "quantitative", "title": "score", "scale": {"zero": False}}
    return _spec(
        width={"step": 90},
        height=300,
        layer=[
            {
                "name": "bands",
                "data": {"values": groups},
                "mark": {"type": "rule", "strokeWidth": 6, "opacity": 0.35, "color": PALETTE[0]},
                "encoding": {"x": x, "y": {**y, "field": "low"}, "y2": {"field": "high"}},
            },
            {
                "name": "means",
                "data": {"values": groups},
                "mark": {"type": "tick", "thickness": 3, "size": 40, "color": "black"},
                "encoding": {
                    "x": x,
                    "y": {**y, "field": "mean"},
                    "tooltip": _tooltip(
                        ("group", "nominal"),
                        ("mean", "quantitative", ".4f"),
                        ("sd", "quantitative", ".4f"),
                        ("runs", "quantitative"),
                    ),
                },  # fmt: skip
            },
            {
                "name": "runs",
                "data": {"values": points},
                "mark": {"type": "point", "filled": True, "size": 40, "opacity": 0.8, "color": PALETTE[1]},
                "encoding": {
                    "x": x,
                    "xOffset": {"field": "jitter", "type": "quantitative", "scale": {"domain": [-1, 1]}},
                    "y": y,
                    "href": {"field": "href", "type": "nominal"},
                    "tooltip": _tooltip(("run", "nominal"), ("group", "nominal"), ("value", "quantitative", ".4f")),
                },
            },
        ],
    )


def group_curves(rows: list[dict[str, Any]], *, order: Sequence[str], step: int | None, by: str | None):
    """One task over training, a line per group: the mean over its runs and a band of ± 1 SD; the chosen step marked."""
    x = {"field": "step", "type": "quantitative", "title": "training step"}
    color = {"field": "group", "type": "nominal", "scale": palette(order), "sort": list(order), "title": by or None}
    layers: list[dict[str, Any]] = [
        {
            "name": "bands",
            "mark": {"type": "area", "opacity": 0.2},
            "encoding": {
                "x": x,
                "y": {"field": "low", "type": "quantitative", "title": "score", "scale": {"zero": False}},
                "y2": {"field": "high"},
                "color": color,
            },
        },  # fmt: skip
        {
            "name": "means",
            "mark": {"type": "line", "strokeWidth": 2},
            "encoding": {
                "x": x,
                "y": {"field": "mean", "type": "quantitative"},
                "color": color,
                "tooltip": _tooltip(
                    ("group", "nominal"),
                    ("step", "quantitative"),
                    ("mean", "quantitative", ".4f"),
                    ("runs", "quantitative"),
                ),
            },  # fmt: skip
        },
    ]
    if step is not None:
        layers.append(
            {
                "name": "step",
                "data": {"values": [{}]},
                "mark": {"type": "rule", "strokeDash": [4, 3], "color": "#555"},
                "encoding": {"x": {"datum": step}},
            }
        )
    return _spec(data={"values": rows}, width=620, height=260, layer=layers)


def coverage(cells: list[dict[str, Any]], *, tasks: Sequence[str], runs: Sequence[str]):
    """Tasks × runs: each cell the share of the run's checkpoints that have the task; red where it has none."""
    cell = 10 if len(runs) > 40 or len(tasks) > 40 else 18
    x = {
        "field": "run",
        "type": "nominal",
        "sort": list(runs),
        "axis": {"labels": len(runs) <= 40, "title": "run", "labelAngle": -45},
    }
    y = {"field": "task", "type": "nominal", "sort": list(tasks), "axis": {"title": None}}
    tooltip = _tooltip(("task", "nominal"), ("run", "nominal"), ("checkpoints", "quantitative"),
                       ("of", "quantitative"))  # fmt: skip
    return _spec(
        data={"values": cells},
        width=cell * max(1, len(runs)),
        height=cell * max(1, len(tasks)),
        layer=[
            {
                "name": "present",
                "transform": [{"filter": "datum.checkpoints > 0"}],
                "mark": {"type": "rect"},
                "encoding": {
                    "x": x,
                    "y": y,
                    "color": {
                        "field": "share",
                        "type": "quantitative",
                        "scale": {"domain": [0, 1], "scheme": "greens"},
                        "title": "share of checkpoints",
                    },
                    "href": {"field": "href", "type": "nominal"},
                    "tooltip": tooltip,
                },  # fmt: skip
            },
            {
                "name": "holes",
                "transform": [{"filter": "datum.checkpoints === 0"}],
                "mark": {"type": "rect", "color": "#d62728"},
                "encoding": {"x": x, "y": y, "href": {"field": "href", "type": "nominal"}, "tooltip": tooltip},
            },
        ],
    )
