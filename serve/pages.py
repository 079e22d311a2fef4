"""Each page of the viewer: what it reads from the store, through the results objects the CLI uses, as a Page.

A page builder takes the store (opened read-only for this one computation),
the request's :class:`~ood_store._serve.model.Query` and its path arguments,
and returns a :class:`~ood_store._serve.model.Page`. Saved analyses are read
with ``Store.analysis`` and compared with :func:`~ood_store._analysis.compare`
and :func:`~ood_store._analysis.between_groups`, as ``ood-store compare`` does;
faceted grids pool runs as ``ood-store plot grid`` does (:mod:`ood_store._export.heatmaps`),
sign matrices style verdicts as ``plot signs`` does; the residual series of
one pair come from :func:`~ood_store._analysis.pair.pair_residuals`. The viewer's own
SQL (counts, curves, coverage) is in ``serve/*.sql``.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
import polars as pl

from ood_store._analysis.compare import INFERENCE, between_groups, compare
from ood_store._analysis.pair import pair_residuals
from ood_store._errors import AnalysisError
from ood_store._export import display
from ood_store._export import steps as step_axis
from ood_store._export.captions import p_column
from ood_store._export.display import analysis_order
from ood_store._export.heatmaps import SEEDS, _pooled, _Test, facet_header
from ood_store._serve import charts
from ood_store._serve.model import (
    BadRequest,
    Chart,
    Choice,
    Link,
    NotFound,
    Page,
    Query,
    Table,
    json_rows,
    segment,
    url,
)
from ood_store._serve.reading import rows, sql_text
from ood_store._store.runs import COLUMNS, attribute_columns

if TYPE_CHECKING:
    from ood_store._analysis.results import PartialCorrelations
    from ood_store._api import Store

#: The run attributes with a column of their own in ``runs``, by the names the CLI takes (``--where``, ``--by``).
ATTRIBUTES = ("family", "size", "seed", "in_domain", "base_model")
#: Sign-matrix styles of verdicts, as ``plot signs`` draws them (:data:`ood_store._export.figures.VERDICT_STYLE`).
VERDICT_STYLE = {"model-dependent": "hatched", "consistently positive": "bold", "consistently negative": "bold"}
#: A facet of the runs page lists at most this many values (an attribute with more is not offered as one).
MAX_FACET_VALUES = 40
#: A grid prints r in its cells up to this many OOD tasks.
NUMBERS_UP_TO = 9


# -- URLs ----------------------------------------------------------------------------------------------------


def run_url(run: str, params: Any = ()) -> str:
    return url("/runs/" + segment(run, slashes=True), params)


def analysis_url(name: str, *rest: str, params: Any = ()) -> str:
    return url("/analyses/" + "/".join(segment(part) for part in (name, *rest)), params)


def sql_url(sql: str) -> str:
    return url("/sql", {"sql": sql})


# -- overview ------------------------------------------------------------------------------------------------


def overview(store: Store, q: Query) -> Page:
    """The study at a glance: what the store holds, its saved analyses, the warnings that matter."""
    counts = rows(store, "overview_counts").row(0, named=True)
    conflicts = rows(store, "conflict_count").row(0, named=True)
    mixes = rows(store, "campaign_mixes")
    missing = rows(store, "missing_tasks")
    mixed_runs = mixes["run"].n_unique()
    warnings = [
        {
            "warning": "repeated evaluations disagree",
            "count": conflicts["keys"],
            "runs": conflicts["runs"],
            "detail": "scores of one checkpoint, task and metric that two evaluations give different values; "
            "the newest is used",
            "sql": "SELECT * FROM score_conflicts ORDER BY run, step, task, metric",
        },
        {
            "warning": "series mix campaigns",
            "count": mixed_runs,
            "runs": mixed_runs,
            "detail": "runs whose checkpoints come from several evaluation campaigns: an analysis mixes them "
            "unless it picks one (--campaign)",
            "sql": sql_text("campaign_mixes"),
        },
        {
            "warning": "runs miss tasks",
            "count": int(missing["missing"].sum() or 0),
            "runs": missing.height,
            "detail": "tasks that some runs have and these lack: holes an analysis of those tasks would meet",
            "sql": sql_text("missing_tasks"),
        },
    ]
    analyses = store.analyses().drop("params", strict=False)
    return Page(
        "overview",
        "The study at a glance",
        data={"counts": counts, "store": str(store.path)},
        tables=[
            Table.of(
                "warnings",
                "Warnings",
                pl.DataFrame(warnings),
                links={"warning": lambda row: sql_url(row["sql"]), "sql": lambda row: sql_url(row["sql"])},
                note="Each warning links to the query that lists it.",
            ),
            Table.of("analyses", "Saved analyses", analyses, links={"name": lambda row: analysis_url(row["name"])}),
        ],  # fmt: skip
        context={"counts": counts},
    )


# -- runs ----------------------------------------------------------------------------------------------------


def _attribute_keys(listing: pl.DataFrame) -> list[str]:
    """The free-form attribute keys of the runs (those without a column of their own), in order of first use."""
    keys: dict[str, None] = {}
    for text in listing["attributes"].drop_nulls():
        for key in orjson.loads(text):
            keys.setdefault(str(key))
    return [k for k in keys if k not in COLUMNS]


def _where(q: Query) -> dict[str, list[str]]:
    """``where=KEY=VALUE`` parameters (as ``--where``): a key given twice matches either value; globs allowed."""
    wanted: dict[str, list[str]] = {}
    for condition in q.all("where"):
        key, sep, value = condition.partition("=")
        if not sep or not key.strip():
            raise BadRequest(f"where: expected KEY=VALUE, got {condition!r}")
        wanted.setdefault(key.strip(), []).append(value.strip())
    return wanted


def _matching(values: pl.DataFrame, wanted: dict[str, list[str]], skip: str | None = None) -> pl.Series:
    """Which runs (rows of ``values``) have every condition of ``wanted`` but ``skip``'s: a boolean Series."""
    keep = np.ones(values.height, dtype=bool)
    for key, patterns in wanted.items():
        if key == skip:
            continue
        if key not in values.columns:
            keep[:] = False
            continue
        column = values[key].to_list()
        keep &= np.array([_has(v, patterns) for v in column], dtype=bool)
    return pl.Series(keep)


def _has(value: Any, patterns: list[str]) -> bool:
    found = value if isinstance(value, list) else [value]
    return any(v is not None and any(fnmatch.fnmatchcase(str(v), p) for p in patterns) for v in found)


def runs_page(store: Store, q: Query) -> Page:
    """The runs with facets on every attribute (click to filter), their checkpoints and an in-domain sparkline."""
    listing = store.runs()
    free = _attribute_keys(listing)
    facets_of = [*ATTRIBUTES, *free]
    values = attribute_columns(store, facets_of)
    campaigns = listing.select("run", "campaigns").with_columns(pl.col("campaigns").map_elements(
        _campaign_names, return_dtype=pl.List(pl.String)).alias("campaign"))  # fmt: skip
    values = values.join(campaigns.select("run", "campaign"), on="run", how="left")
    wanted = _where(q)
    chosen = values.filter(_matching(values, wanted))
    facets = []
    for key in [*facets_of, "campaign"]:
        pool = values.filter(_matching(values, wanted, skip=key))
        column = pool[key].explode() if key == "campaign" else pool[key]
        counted = column.drop_nulls().value_counts()
        if counted.is_empty():
            continue
        items = sorted(counted.iter_rows(), key=lambda item: display.natural_key(item[0]))
        selected = wanted.get(key, [])
        if not selected and (len(items) > MAX_FACET_VALUES or (len(items) > 1 and len(items) == pool.height)):
            continue  # a value per run (a base model per run, say) or too many: no help in choosing runs
        options = []
        for value, count in items:
            on = value in selected
            others = [c for c in q.all("where") if c != f"{key}={value}"]
            href = url("/runs", q.with_(where=others if on else [*q.all("where"), f"{key}={value}"]))
            options.append({"value": value, "count": count, "selected": on, "href": href})
        facets.append({"name": key, "values": options})
    metric, filter_ = q.get("metric", "acc"), q.get("filter", "none")
    spark_task = q.get("spark")
    table = listing.filter(pl.col("run").is_in(chosen["run"].to_list()))
    extra = table.select(
        "run",
        *[pl.col("attributes").str.json_path_match(_json_path(key)).alias(key) for key in free],
    )
    shown = table.drop("attributes").rename({"in_domain_task": "in_domain"}).join(extra, on="run", how="left")
    tasks = sorted({t for t in ([spark_task] if spark_task else shown["in_domain"].drop_nulls().to_list())})
    curves = rows(store, "sparklines", tasks=tasks, metric=metric, filter=filter_) if tasks else None
    sparklines = _sparklines(curves, shown, spark_task)
    page = Page(
        "runs",
        "Runs",
        data={"where": wanted, "facets": facets, "sparklines": {k: v["points"] for k, v in sparklines.items()}},
        tables=[Table.of("rows", f"{shown.height} of {listing.height} runs", shown,
                         links={"run": lambda r: run_url(r["run"])})],
        context={"facets": facets, "sparklines": sparklines, "spark_task": spark_task, "metric": metric},
    )  # fmt: skip
    return page


def _json_path(key: str) -> str:
    return "$." + key if key.isidentifier() else "$[" + orjson.dumps(key).decode() + "]"


def _campaign_names(text: str | None) -> list[str]:
    """The campaigns of ``runs()``'s ``campaigns`` column (``'baseline: 10, zero-shot: 27'``)."""
    if not text:
        return []
    return [part.rsplit(": ", 1)[0] for part in text.split(", ")]


def _sparklines(curves: pl.DataFrame | None, shown: pl.DataFrame, task: str | None) -> dict[str, dict[str, Any]]:
    """Per run, the points of an SVG polyline (120 × 24) of its curve on its in-domain task (or ``task``)."""
    if curves is None or curves.is_empty():
        return {}
    low, high = curves["value"].min(), curves["value"].max()
    span = (float(high) - float(low)) or 1.0  # type: ignore[arg-type]
    out = {}
    wanted = dict(zip(shown["run"], shown["in_domain"], strict=True))
    for (run,), part in curves.partition_by("run", as_dict=True, maintain_order=True).items():
        if run not in wanted:
            continue
        part = part.filter(pl.col("task") == (task or wanted[run])).drop_nulls("value")
        if part.height < 2:
            continue
        steps, values = part["step"].to_numpy().astype(float), part["value"].to_numpy().astype(float)
        x = 1 + 118 * (steps - steps.min()) / ((steps.max() - steps.min()) or 1.0)
        y = 23 - 22 * (values - float(low)) / span  # type: ignore[arg-type]
        out[run] = {
            "points": [[int(s), float(v)] for s, v in zip(steps, values, strict=True)],
            "svg": " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x, y, strict=True)),
            "task": task or wanted[run],
            "last": float(values[-1]),
        }
    return out


# -- one run -------------------------------------------------------------------------------------------------


def _metric(store: Store, q: Query, *, run: str | None = None, task: str | None = None) -> tuple[str, str, list]:
    """The (metric, filter) asked for, else acc/none where there is one, else the most used; and the choices."""
    choices = rows(store, "metric_choices", run=run, task=task)
    pairs = list(zip(choices["metric"], choices["filter"], strict=True))
    asked = (q.get("metric"), q.get("filter"))
    if asked[0] is not None:
        return asked[0], asked[1] or "none", pairs
    if ("acc", "none") in pairs or not pairs:
        return "acc", "none", pairs
    return pairs[0][0], pairs[0][1], pairs


def _metric_choice(pairs: list, metric: str, filter_: str) -> list[Choice]:
    metrics = sorted({m for m, _ in pairs} | {metric})
    filters = sorted({f for _, f in pairs} | {filter_})
    return [
        Choice("metric", "metric", tuple((m, m) for m in metrics), metric),
        Choice("filter", "filter", tuple((f, f) for f in filters), filter_),
    ]


def _series_names(frame: pl.DataFrame) -> pl.DataFrame:
    """A ``series`` column: the task, with its shot count where the task was evaluated at several."""
    several = frame.group_by("task").agg(pl.col("num_fewshot").n_unique().alias("counts"))
    return frame.join(several, on="task").with_columns(
        series=pl.when(pl.col("counts") > 1)
        .then(pl.format("{} ({}-shot)", "task", pl.col("num_fewshot").fill_null(-1)))
        .otherwise(pl.col("task"))
    )


def run_page(store: Store, q: Query, run: str) -> Page:
    """One run: training curves of every task against step (log-step toggle), in-domain highlighted, campaigns
    marked; the checkpoint × task table."""
    listing = store.runs()
    found = listing.filter(pl.col("run") == run)
    if found.is_empty():
        raise NotFound(f"no run {run!r} in the store")
    attributes = found.row(0, named=True)
    metric, filter_, pairs = _metric(store, q, run=run)
    scores = _series_names(rows(store, "run_scores", run=run, metric=metric, filter=filter_))
    in_domain = q.get("in_domain", attributes.get("in_domain_task") or _analysed_in_domain(store, run))
    picked = q.all("tasks")
    if picked:
        wanted = {t.strip() for item in picked for t in item.split(",") if t.strip()}
        scores = scores.filter(pl.col("task").is_in(wanted | {in_domain}))
    x_scale = x_scale_of(q)
    log = step_axis.step_scale(scores["step"].to_list(), x_scale) == "log"
    series = list(dict.fromkeys(scores["series"].to_list()))
    if in_domain in series:
        series.remove(in_domain)
        series.insert(0, in_domain)
    campaigns = scores["campaign"].n_unique()
    points = json_rows(
        scores.select(
            "series", "step", "value", "stderr", pl.col("campaign").fill_null("(none)"),
            (pl.col("series") == (in_domain or "")).alias("in_domain"),
        )
    )  # fmt: skip
    wide = (
        scores.pivot(on="series", index="step", values="value", aggregate_function="first", sort_columns=False)
        .join(
            scores.group_by("step").agg(pl.col("campaign").fill_null("(none)").unique().sort().str.join(", ")),
            on="step",
        )
        .sort("step")
    )
    wide = wide.select("step", "campaign", *[s for s in series if s in wide.columns])
    attrs = {k: v for k, v in attributes.items() if k != "attributes" and v is not None}
    attrs.update(orjson.loads(attributes["attributes"]) if attributes.get("attributes") else {})
    params = q.pairs
    figure_params = [(k, v) for k, v in params if k in ("metric", "filter", "tasks", "in_domain", "log", "x_scale")]
    chart = Chart(
        "curves",
        f"{metric}" + ("" if filter_ == "none" else f" ({filter_})") + " over training",
        charts.curves(
            points,
            series=series,
            in_domain=in_domain,
            log=log,
            campaigns=campaigns,
            linthresh=step_axis.linear_threshold(scores["step"].to_list()),
        ),  # fmt: skip
        figures=(
            ("PDF", _figure_url("/runs", run, "pdf", figure_params, slashes=True)),
            ("SVG", _figure_url("/runs", run, "svg", figure_params, slashes=True)),
        ),
        note=(f"In black: the in-domain task {in_domain}. " if in_domain in series else "")
        + (f"Point shapes: the campaign of each score ({campaigns} campaigns). " if campaigns > 1 else ""),
    )
    toggles = [
        Link("linear steps", run_url(run, q.with_(log=None, x_scale="linear")), not log),
        Link("log steps", run_url(run, q.with_(log=None, x_scale="log")), log),
    ]
    return Page(
        "run",
        run,
        data={"run": run, "attributes": attrs, "metric": metric, "filter": filter_, "in_domain": in_domain},
        tables=[Table.of("rows", f"Checkpoints × tasks ({metric}, {filter_})", wide)],
        charts=[chart],
        choices=_metric_choice(pairs, metric, filter_),
        toggles=toggles,
        context={
            "attributes": attrs,
            "hidden": [(k, v) for k, v in params if k in ("log", "x_scale", "tasks", "in_domain")],
        },
    )


def x_scale_of(q: Query) -> str:
    """The step axis a run page asks for: ``x_scale`` (linear, log, auto: the default), or the older ``log=1``."""
    if q.flag("log"):
        return "log"
    chosen = q.get("x_scale", "auto")
    return chosen if chosen in step_axis.X_SCALES else "auto"


def _analysed_in_domain(store: Store, run: str) -> str | None:
    """For a run without an in_domain attribute: the in-domain task of the newest saved analysis of it, if any."""
    for row in store.analyses().iter_rows(named=True):
        if run in (orjson.loads(row["params"]).get("runs_analyzed") or ()):
            return row["in_domain"]
    return None


def _figure_url(base: str, name: str, ext: str, params: Any, *, slashes: bool = False) -> str:
    """The paper figure (``ext``: pdf or svg) of the chart of page ``base/name``: the page's URL with that suffix."""
    return url(f"{base}/{segment(name + '.' + ext, slashes=slashes)}", params)


# -- one task at one step across runs --------------------------------------------------------------------------


def compare_step(store: Store, q: Query) -> Page:
    """One task at one step across runs, grouped by a run attribute: mean over each group with a band (± 1 SD),
    and the task's curve over training per group."""
    tasks = rows(store, "task_list")["task"].to_list()
    if not tasks:
        raise NotFound("the store has no scores")
    listing = store.runs()
    in_domain = listing["in_domain_task"].drop_nulls().mode().to_list()
    default = next((t for t in sorted(in_domain) if t in tasks), tasks[0])
    task = q.get("task", default)
    if task not in tasks:
        raise NotFound(f"no task {task!r} in the store")
    metric, filter_, pairs = _metric(store, q, task=task)
    scores = rows(store, "task_scores", task=task, metric=metric, filter=filter_)
    shots = sorted({s for s in scores["num_fewshot"].to_list() if s is not None})
    if len(shots) > 1:
        chosen = q.integer("shots")
        chosen = chosen if chosen in shots else shots[0]
        scores = scores.filter(pl.col("num_fewshot") == chosen)
    free = _attribute_keys(listing)
    options = [a for a in (*ATTRIBUTES, *free)]
    present = attribute_columns(store, options)
    usable = [a for a in options if present[a].drop_nulls().n_unique() > 0]
    default_by = "family" if "family" in usable else None
    by = q.get("by", default_by)
    if by is not None and by not in options:
        raise BadRequest(f"by: no run attribute {by!r}; the runs have: {', '.join(usable)}")
    steps = scores.group_by("step").agg(pl.col("run").n_unique().alias("runs")).sort("step")
    if steps.is_empty():
        raise NotFound(f"task {task!r} has no {metric!r} scores at a training step")
    most = steps["runs"].max()
    step = q.integer("step")
    if step is None:
        step = int(steps.filter(pl.col("runs") == most)["step"].max())  # type: ignore[arg-type]
    elif step not in set(steps["step"]):
        shown = ", ".join(str(s) for s in steps["step"].head(12)) + (", ..." if steps.height > 12 else "")
        raise NotFound(f"task {task!r} has no {metric!r} scores at step {step}; its steps: {shown}")
    groups_of = (
        present.select("run", pl.col(by).alias("group"))
        if by
        else present.select("run", pl.lit("all runs").alias("group"))
    )
    scored = scores.join(groups_of, on="run", how="left").with_columns(pl.col("group").fill_null(f"no {by}"))
    at_step = scored.filter(pl.col("step") == step).select("run", "group", "value", "stderr")
    order = sorted(scored["group"].unique().to_list(), key=display.natural_key)
    stats = _group_stats(at_step, ["group"]).sort(
        pl.col("group").replace_strict({g: i for i, g in enumerate(order)}, default=len(order))
    )
    curve = _group_stats(scored, ["group", "step"]).sort("group", "step")
    points = json_rows(at_step.with_columns(
        jitter=pl.col("run").map_elements(_jitter, return_dtype=pl.Float64),
        href=pl.col("run").map_elements(lambda r: run_url(r), return_dtype=pl.String),
    ))  # fmt: skip
    choices = [
        Choice("task", "task", tuple((t, t) for t in tasks), task),
        Choice("step", "step", tuple((str(s), f"{s} ({n} runs)") for s, n in steps.iter_rows()), str(step)),
        Choice("by", "group by", (("", "(none)"), *((a, a) for a in usable)), by or ""),
        *_metric_choice(pairs, metric, filter_),
    ]
    label = f"{task} at step {step}" + (f", by {by}" if by else "")
    return Page(
        "compare-step",
        f"Compare runs at one step: {label}",
        data={"task": task, "step": step, "by": by, "metric": metric, "filter": filter_},
        tables=[
            Table.of("groups", "Groups", stats),
            Table.of(
                "rows",
                f"Runs with a {metric} score at step {step}",
                at_step,
                links={"run": lambda r: run_url(r["run"])},
            ),
        ],  # fmt: skip
        charts=[
            Chart(
                "step",
                label,
                charts.step_groups(points, json_rows(stats), order=order, by=by),
                note="Each run's score; the black tick is the group's mean, the bar its mean ± 1 SD over runs.",
            ),
            Chart(
                "groups",
                f"{task} over training" + (f", mean of each {by}" if by else ""),
                charts.group_curves(json_rows(curve), order=order, step=step, by=by),
                note="Lines: mean over the group's runs; bands: ± 1 SD; dashed: the step compared above.",
            ),
        ],  # fmt: skip
        choices=choices,
    )


def _group_stats(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    return (
        frame.group_by(keys)
        .agg(
            pl.len().alias("runs"),
            pl.col("value").mean().alias("mean"),
            pl.col("value").std().alias("sd"),
            pl.col("value").min().alias("min"),
            pl.col("value").max().alias("max"),
        )
        .with_columns(
            low=pl.col("mean") - pl.col("sd").fill_null(0.0),
            high=pl.col("mean") + pl.col("sd").fill_null(0.0),
        )
    )


def _jitter(run: str) -> float:
    """A run's horizontal offset within its group, the same on every visit (from its name)."""
    return (zlib.crc32(run.encode()) % 1000) / 500.0 - 1.0


# -- saved analyses ----------------------------------------------------------------------------------------------


def analyses_page(store: Store, q: Query) -> Page:
    listing = store.analyses()
    return Page(
        "analyses",
        "Saved analyses",
        tables=[Table.of("rows", f"{listing.height} saved analyses", listing,
                         links={"name": lambda r: analysis_url(r["name"])})],
    )  # fmt: skip


def _analysis(store: Store, name: str) -> PartialCorrelations:
    if name not in set(store.analyses()["name"]):
        raise NotFound(f"no saved analysis named {name!r}")
    return store.analysis(name)


def _test(q: Query) -> tuple[float, str]:
    return q.number("alpha", 0.05, 0.0, 1.0), q.one_of("inference", INFERENCE, "effective")


def _short_names(runs: Sequence[str]) -> dict[str, str]:
    """Each run's name less what all share (its part after the last ``/`` at least), if that keeps them apart."""
    tails = [r.rsplit("/", 1)[-1] for r in runs]
    short = display.shorten(tails)[0] if len(runs) > 1 else tails
    if len(set(short)) == len(short):
        return dict(zip(runs, short, strict=True))
    return {r: r for r in runs}


def _ordered_pair(order: Sequence[str], x: str, y: str) -> tuple[str, str]:
    """The pair as the lower triangle draws it: the task earlier in the analysis' order on the x axis."""
    index = {t: i for i, t in enumerate(order)}
    return (x, y) if index.get(x, 0) <= index.get(y, 0) else (y, x)


def analysis_page(store: Store, q: Query, name: str) -> Page:
    """The grid of partial correlations, faceted as ``plot grid``; fragile pairs framed; each cell links to its pair."""
    analysis = _analysis(store, name)
    alpha, inference = _test(q)
    rows_by, cols_by = q.get("rows"), q.get("cols")
    seeds = q.one_of("seeds", SEEDS, "pool")
    if rows_by is not None and rows_by == cols_by:
        raise BadRequest(f"rows and cols are both {rows_by!r}: facet by two different attributes")
    sensitivity = q.flag("sensitivity")
    order = analysis_order(analysis)
    table = analysis.table
    runs = display.run_order(store, table["run"].unique().to_list())
    p_col = p_column(inference)
    fragile = _fragile(store, analysis, alpha, inference) if sensitivity else None
    keep = [(k, v) for k, v in q.pairs if k in ("alpha", "inference")]
    cells: list[dict[str, Any]] = []
    facet: dict[str, Any]
    by = [a for a in (rows_by, cols_by) if a]
    grid = _Grid(name, order, alpha, keep, fragile)
    if not by:
        titles = _short_names(runs)
        for row in table.iter_rows(named=True):
            cells.append({**grid.cell(row, row["r"], row[p_col], row["run"]), "panel": titles[row["run"]]})
        panels = {"field": "panel", "type": "nominal", "sort": [titles[r] for r in runs], "header": {"title": None}}
        facet = {"facet": panels, "columns": max(1, min(6, math.ceil(math.sqrt(len(runs)))))}
    else:
        values = attribute_columns(store, by).filter(pl.col("run").is_in(runs))
        for attribute in by:
            if values[attribute].is_null().all():
                raise BadRequest(f"no run has attribute {attribute!r}")
        attributes = {row["run"]: row for row in values.iter_rows(named=True)}
        cells, facet = _faceted_cells(
            grid, table, runs, attributes, rows_by, cols_by, seeds, p_col, analysis.options.adjust
        )
    comparison = compare(analysis, alpha=alpha, inference=inference, items=store).table
    pairs = comparison.select([c for c in comparison.columns if not c.startswith("r:")])
    x_order, y_order = order[:-1], order[1:]
    every_row = (
        "SELECT * FROM partial_correlations WHERE analysis = " + _sql_literal(name) + " ORDER BY run, task_x, task_y"
    )
    figure_params = [(k, v) for k, v in q.pairs if k in ("alpha", "inference", "rows", "cols", "seeds")]
    toggles = [
        Link("without residualizer sensitivity", analysis_url(name, params=q.with_(sensitivity=None)), not sensitivity),
        Link("mark fragile pairs (recomputes the analysis with each residualizer)",
             analysis_url(name, params=q.with_(sensitivity=1)), sensitivity),
        Link("sign agreement", analysis_url(name, "signs", params=keep)),
        Link(f"every row ({table.height}) in the SQL box", sql_url(every_row)),
    ]  # fmt: skip
    attribute_choices = _attribute_choices(store)
    note = (
        f"Color: r; faded: not significant ({p_col} \u2265 {alpha:g}"
        + (", pooled p adjusted over each panel's pairs" if by and seeds == "pool" else "")
        + "). Click a cell for the pair across runs."
        + (
            " Framed in black: fragile under another residualizer (linear, GAM by GCV, GAM by REML)."
            if sensitivity
            else ""
        )
    )
    return Page(
        "analysis",
        f"Analysis {name}",
        data={"analysis": name, "params": analysis.params, "alpha": alpha, "inference": inference},
        tables=[
            Table.of(
                "pairs",
                "Pairs across runs (compare)",
                pairs,
                links={
                    "task_x": lambda r: analysis_url(name, "pair", r["task_x"], r["task_y"], params=keep),
                    "verdict": lambda r: analysis_url(name, "pair", r["task_x"], r["task_y"], params=keep),
                },
            ),
        ],  # fmt: skip
        charts=[
            Chart(
                "grid",
                "Partial correlations, run by run" if not by else f"Partial correlations by {' and '.join(by)}",
                charts.grid(
                    cells,
                    x_order=x_order,
                    y_order=y_order,
                    facet=facet,
                    numbers=len(order) <= NUMBERS_UP_TO,
                    cell_size=26 if len(order) <= NUMBERS_UP_TO else 14,
                ),
                figures=(
                    ("PDF", _figure_url("/analyses", name, "pdf", figure_params)),
                    ("SVG", _figure_url("/analyses", name, "svg", figure_params)),
                ),
                note=note,
            )
        ],  # fmt: skip
        choices=[
            Choice("rows", "rows", (("", "(none)"), *attribute_choices), rows_by or ""),
            Choice("cols", "columns", (("", "(none)"), *attribute_choices), cols_by or ""),
            Choice("seeds", "runs of a panel", (("pool", "pooled"), ("each", "each")), seeds),
            Choice("inference", "inference", tuple((i, i) for i in INFERENCE), inference),
        ],
        toggles=toggles,
        context={"hidden": [(k, v) for k, v in q.pairs if k in ("sensitivity", "alpha")]},
    )


def _sql_literal(text: str) -> str:
    """``text`` as a SQL string literal (quotes doubled), for the queries the viewer's links put in the SQL box."""
    return "'" + text.replace("'", "''") + "'"


def _attribute_choices(store: Store) -> tuple[tuple[str, str], ...]:
    free = _attribute_keys(store.runs())
    names = [*ATTRIBUTES, *free]
    present = attribute_columns(store, names)
    return tuple((a, a) for a in names if present[a].drop_nulls().n_unique() > 1)


@dataclass(frozen=True)
class _Grid:
    """What every cell of an analysis' grid needs: the analysis, the tasks' order, the test, the links' parameters."""

    name: str
    order: Sequence[str]
    alpha: float
    keep: Sequence[tuple[str, str]]  # query parameters the cells' links keep
    fragile: dict | None  # (run, pair) -> fragile, when sensitivity was asked for

    def cell(self, row: dict[str, Any], r: float | None, p: float | None, run: str | None) -> dict[str, Any]:
        """One cell: the pair as the lower triangle draws it, r, its test, the link to the pair's page."""
        x, y = _ordered_pair(self.order, row["task_x"], row["task_y"])
        finite = r is not None and math.isfinite(r)
        tested = p is not None and math.isfinite(p)
        params = [*self.keep, ("run", run)] if run else list(self.keep)
        low = row.get("ci_low")
        return {
            "x": x,
            "y": y,
            "r": r if finite else None,
            "label": f"{r:.2f}".replace("-", "\u2212") if finite else "n/a",
            "p": p if tested else None,
            "significant": bool(tested and p < self.alpha),  # type: ignore[operator]
            "n": row.get("n"),
            "ci": f"{low:.2f} to {row['ci_high']:.2f}" if finite and low is not None else None,
            "note": row.get("reason") or row.get("note"),
            "fragile": None if self.fragile is None or run is None else self.fragile.get((run, frozenset((x, y)))),
            "href": analysis_url(self.name, "pair", x, y, params=params),
        }

    def any_fragile(self, members: Sequence[str], row: dict[str, Any]) -> bool | None:
        """Whether some run of a pooled panel is fragile on the pair (None without sensitivity)."""
        if self.fragile is None:
            return None
        pair = frozenset(_ordered_pair(self.order, row["task_x"], row["task_y"]))
        known = [f for f in (self.fragile.get((run, pair)) for run in members) if f is not None]
        return any(known) if known else None


def _faceted_cells(
    grid: _Grid,
    table: pl.DataFrame,
    runs: Sequence[str],
    attributes: dict[str, dict[str, Any]],
    rows_by: str | None,
    cols_by: str | None,
    seeds: str,
    p_col: str,
    adjust: str,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Cells of a grid faceted by run attributes, one panel per (rows, cols) value with its runs pooled as
    ``plot grid --seeds pool`` pools them (random effects; a lone run as it is), or (``each``) a panel per
    run, its runs told apart by what their names do not share (``seed1``, ``seed2``)."""

    def value(run: str, attribute: str | None) -> Any:
        return None if attribute is None else attributes[run][attribute]

    def header(attribute: str | None, v: Any) -> str:
        return "" if attribute is None else facet_header(attribute, v, {})

    groups: dict[tuple[Any, Any], list[str]] = {}
    for run in runs:
        groups.setdefault((value(run, rows_by), value(run, cols_by)), []).append(run)
    row_values = sorted({k[0] for k in groups}, key=display.natural_key)
    col_values = sorted({k[1] for k in groups}, key=display.natural_key)
    by = [a for a in (rows_by, cols_by) if a]
    cells: list[dict[str, Any]] = []
    columns: list[str] = [header(cols_by, v) for v in col_values]
    if seeds == "pool":
        frame = pl.DataFrame([{"run": r, **{a: attributes[r][a] for a in by}} for r in runs])
        pooled = _pooled(table, list(runs), frame, by, _Test(p_col, grid.alpha, adjust))
        for (rv, cv), members in groups.items():
            place = {"row": header(rows_by, rv), "col": header(cols_by, cv), "runs": len(members)}
            if len(members) > 1:
                key = tuple(v for v, a in ((rv, rows_by), (cv, cols_by)) if a)
                for row in pooled.get(key, []):
                    cell = grid.cell(row, row["r"], row["p"], None)
                    cells.append({**cell, **place, "fragile": grid.any_fragile(members, row)})
            else:
                for row in table.filter(pl.col("run") == members[0]).iter_rows(named=True):
                    cells.append({**grid.cell(row, row["r"], row[p_col], members[0]), **place})
    else:
        within: dict[str, str] = {}
        for members in groups.values():
            names = [r.rsplit("/", 1)[-1] for r in members]
            within.update(zip(members, display.shorten(names)[0] if len(members) > 1 else [""], strict=True))
        slots = sorted(set(within.values()), key=display.natural_key)
        columns = [f"{c} {s}".strip() for c in columns for s in slots]
        for (rv, cv), members in groups.items():
            for run in members:
                place = {"row": header(rows_by, rv), "col": f"{header(cols_by, cv)} {within[run]}".strip(), "runs": 1}
                for row in table.filter(pl.col("run") == run).iter_rows(named=True):
                    cells.append({**grid.cell(row, row["r"], row[p_col], run), **place})
    facet: dict[str, Any] = {
        "column": {
            "field": "col",
            "type": "nominal",
            "sort": list(dict.fromkeys(columns)),
            "header": {"title": cols_by},
        }
    }
    if rows_by:
        facet["row"] = {"field": "row", "type": "nominal", "sort": [header(rows_by, v) for v in row_values],
                        "header": {"title": rows_by}}  # fmt: skip
    return cells, {"facet": facet}


def _fragile(store: Store, analysis: PartialCorrelations, alpha: float, inference: str) -> dict:
    """(run, pair) -> whether the pair's finding changes with the residualizer (``analyze --sensitivity``)."""
    from ood_store._analysis.sensitivity import sensitivity_of

    options = dataclasses.replace(analysis.options, bootstrap=0)
    report = sensitivity_of(store, options, alpha=alpha, inference=inference).table
    return {
        (row["run"], frozenset((row["task_x"], row["task_y"]))): row["fragile"]
        for row in report.select("run", "task_x", "task_y", "fragile").iter_rows(named=True)
    }


# -- one pair ------------------------------------------------------------------------------------------------


def pair_page(store: Store, q: Query, name: str, task_x: str, task_y: str) -> Page:
    """One pair across runs (r, interval, n_eff, family color, pooled r, verdict, the test between groups) beside
    the two residual series of one run and their scatter: the data behind one r."""
    analysis = _analysis(store, name)
    alpha, inference = _test(q)
    table = analysis.table.filter(
        ((pl.col("task_x") == task_x) & (pl.col("task_y") == task_y))
        | ((pl.col("task_x") == task_y) & (pl.col("task_y") == task_x))
    )
    if table.is_empty():
        raise NotFound(f"no pair {task_x!r}, {task_y!r} in analysis {name!r}")
    stored_x, stored_y = table["task_x"][0], table["task_y"][0]
    runs = display.run_order(store, table["run"].to_list())
    color = q.get("color") or "family"
    groups = attribute_columns(store, [color]).filter(pl.col("run").is_in(runs)) if color else None
    group_of = dict(zip(groups["run"], groups[color], strict=True)) if groups is not None else {}
    group_name = color if any(v is not None for v in group_of.values()) else None
    # verdicts are adjusted across the analysis' pairs (as `ood-store compare` adjusts them): test every pair,
    # show this one
    this_pair = (pl.col("task_x") == stored_x) & (pl.col("task_y") == stored_y)
    comparison = compare(analysis, alpha=alpha, inference=inference, items=store).table.filter(this_pair)
    pooled = comparison.row(0, named=True)
    between, within = q.get("between") or "family", q.get("within") or "seed"
    between_note = None
    between_table = None
    try:
        result = between_groups(
            analysis, between=between, within=within, attributes=store, alpha=alpha, inference=inference, items=store
        )
        between_table = result.table.filter(this_pair).select(
            [c for c in result.table.columns if not c.startswith("r:")]
        )
    except AnalysisError as exc:
        between_note = f"No test between groups of {between} beyond {within}: {exc.message}"
    p_col = p_column(inference)
    titles = _short_names(runs)
    keep = [(k, v) for k, v in q.pairs if k in ("alpha", "inference", "color", "between", "within")]
    chosen = q.get("run", runs[0])
    if chosen not in runs:
        raise NotFound(f"no run {chosen!r} in analysis {name!r}")
    by_run = {row["run"]: row for row in table.iter_rows(named=True)}
    forest_rows = []
    for run in runs:
        row = by_run[run]
        p = row[p_col]
        forest_rows.append({
            "kind": "run", "label": titles[run], "run": run, "r": row["r"], "ci_low": row["ci_low"],
            "ci_high": row["ci_high"], "n_eff": row["n_eff"], "p": p, "group": group_of.get(run),
            "significant": bool(p is not None and math.isfinite(p) and p < alpha), "chosen": run == chosen,
            "href": analysis_url(name, "pair", task_x, task_y, params=[*keep, ("run", run)]),
        })  # fmt: skip
    pooled_label = "pooled (random effects)"
    forest_rows.append({
        "kind": "pooled", "label": pooled_label, "r": pooled["r_pooled"], "ci_low": pooled["ci_low"],
        "ci_high": pooled["ci_high"], "p": pooled["p_pooled"], "group": None, "significant": True,
    })  # fmt: skip
    group_values = sorted({g for g in group_of.values() if g is not None}, key=display.natural_key)
    attributes = tuple((a, a) for a in (*ATTRIBUTES, *_attribute_keys(store.runs())))
    residual = pair_residuals(store, analysis.options, chosen, stored_x, stored_y)
    used = residual.table.filter(pl.col("used") & pl.col("residual_x").is_not_null())
    series = [
        {"step": s, "series": task, "value": v}
        for task, column in ((stored_x, "residual_x"), (stored_y, "residual_y"))
        for s, v in zip(used["step"], used[column], strict=True)
    ]
    saved_r = by_run[chosen]["r"]
    r_text = (
        f"{titles[chosen]}: r = {residual.r:.3f}" if residual.reason is None else f"{titles[chosen]}: {residual.reason}"
    )
    figure_params = [(k, v) for k, v in keep if k in ("alpha", "inference", "color")]
    rows_frame = (
        table.select("run", "n", "r", "ci_low", "ci_high", "p_adj", "n_eff", "p_eff_adj", "reason", "note")
        .with_columns(pl.col("run").replace_strict({r: i for i, r in enumerate(runs)}).alias("_order"))
        .sort("_order")
        .drop("_order")
    )
    verdict = pooled.get("verdict")
    tables = [
        Table.of(
            "rows",
            "Runs",
            rows_frame,
            links={"run": lambda r: analysis_url(name, "pair", task_x, task_y, params=[*keep, ("run", r["run"])])},
        ),  # fmt: skip
        Table.of(
            "pooled",
            "Pooled across runs (compare)",
            comparison.select([c for c in comparison.columns if not c.startswith("r:")]),
        ),  # fmt: skip
    ]
    if between_table is not None:
        tables.append(Table.of("between", f"Between {between} beyond {within} (between_groups)", between_table))
    tables.append(Table.of("residuals", f"Series of {chosen}", residual.table, folded=True))
    return Page(
        "pair",
        f"{stored_x} and {stored_y} in analysis {name}",
        data={
            "analysis": name,
            "task_x": stored_x,
            "task_y": stored_y,
            "run": chosen,
            "verdict": verdict,
            "residual_r": None if math.isnan(residual.r) else residual.r,
            "saved_r": saved_r,
            "reason": residual.reason,
            "between_note": between_note,
        },  # fmt: skip
        tables=tables,
        charts=[
            Chart(
                "forest",
                f"Across {len(runs)} runs: {verdict}",
                charts.forest(
                    forest_rows,
                    order=[*(titles[r] for r in runs), pooled_label],
                    groups=group_values,
                    group_name=group_name,
                ),
                figures=(
                    (
                        "PDF",
                        _figure_url(f"/analyses/{segment(name)}/pair/{segment(task_x)}", task_y, "pdf", figure_params),
                    ),
                    (
                        "SVG",
                        _figure_url(f"/analyses/{segment(name)}/pair/{segment(task_x)}", task_y, "svg", figure_params),
                    ),
                ),
                note=f"Filled: {p_col} < {alpha:g}. Diamond: the pooled r (random effects on Fisher z) and its "
                "interval. Click a run to see its residuals.",
            ),
            Chart(
                "residuals",
                f"The data behind one r: {chosen}",
                charts.residuals(
                    series,
                    json_rows(used),
                    x_title=f"residual of {stored_x}",
                    y_title=f"residual of {stored_y}",
                    r_text=r_text,
                ),
                note=f"{stored_x} and {stored_y} with the in-domain {residual.in_domain} regressed out "
                f"({analysis.options.residualizer}); the analysis' r for this run: "
                + ("n/a" if saved_r is None or not math.isfinite(saved_r) else f"{saved_r:.3f}")
                + ".",
            ),
        ],  # fmt: skip
        choices=[
            Choice("run", "run", tuple((r, titles[r]) for r in runs), chosen),
            Choice("color", "color by", attributes, color),
            Choice("between", "test between", attributes, between),
            Choice("within", "beyond", attributes, within),
            Choice("inference", "inference", tuple((i, i) for i in INFERENCE), inference),
        ],
        context={"between_note": between_note, "hidden": [(k, v) for k, v in q.pairs if k == "alpha"]},
    )


# -- sign agreement ------------------------------------------------------------------------------------------


def signs_page(store: Store, q: Query, name: str) -> Page:
    """How many runs agree on each pair's sign (``plot signs``), optionally one panel per group of a run attribute."""
    analysis = _analysis(store, name)
    alpha, inference = _test(q)
    by = q.get("by")
    result = compare(analysis, by=[by] if by else None, attributes=store, alpha=alpha, inference=inference).table
    order = analysis_order(analysis)
    keep = [(k, v) for k, v in q.pairs if k in ("alpha", "inference")]
    cells = []
    panels: list[str] = []
    for row in result.iter_rows(named=True):
        x, y = _ordered_pair(order, row["task_x"], row["task_y"])
        panel = facet_header(by, row[by], {}) if by else ""
        panels.append(panel)
        runs = row["runs"] or 0
        cells.append({
            "panel": panel, "x": x, "y": y, "balance": (row["n_positive"] - row["n_negative"]) / runs if runs else None,
            "label": f"{row['n_positive']}+ {row['n_negative']}\u2212", "verdict": row["verdict"],
            "style": VERDICT_STYLE.get(str(row["verdict"]), ""), "r_pooled": row["r_pooled"],
            "href": analysis_url(name, "pair", x, y, params=keep),
        })  # fmt: skip
    ordered_panels = sorted(set(panels), key=display.natural_key)
    facet: dict[str, Any] = {
        "facet": {"field": "panel", "type": "nominal", "sort": ordered_panels, "header": {"title": None}}
    }
    if by:
        facet["columns"] = max(1, min(4, len(ordered_panels)))
    shown = result.select([c for c in result.columns if not c.startswith("r:")])
    figure_params = [(k, v) for k, v in q.pairs if k in ("alpha", "inference", "by")]
    return Page(
        "signs",
        f"Sign agreement in analysis {name}",
        data={"analysis": name, "by": by, "alpha": alpha, "inference": inference},
        tables=[Table.of("rows", "Pairs (compare)", shown)],
        charts=[
            Chart(
                "signs",
                "Runs with r > 0 and r < 0, per pair" + (f", by {by}" if by else ""),
                charts.signs(cells, x_order=order[:-1], y_order=order[1:], facet=facet),
                figures=(
                    ("PDF", _figure_url(f"/analyses/{segment(name)}", "signs", "pdf", figure_params)),
                    ("SVG", _figure_url(f"/analyses/{segment(name)}", "signs", "svg", figure_params)),
                ),
                note="Framed: consistently positive or negative; dashed frame: model-dependent (the verdicts of "
                f"compare at alpha {alpha:g}, {inference} inference). Click a cell for the pair.",
            ),
        ],  # fmt: skip
        choices=[
            Choice("by", "one panel per", (("", "(all runs)"), *_attribute_choices(store)), by or ""),
            Choice("inference", "inference", tuple((i, i) for i in INFERENCE), inference),
        ],
    )


# -- tasks ---------------------------------------------------------------------------------------------------


def tasks_page(store: Store, q: Query) -> Page:
    """Tasks × runs coverage: which runs have each task at how many of their checkpoints (holes before an analysis)."""
    listing = store.runs()
    runs = display.run_order(store, listing["run"].to_list())
    total = dict(zip(listing["run"], listing["checkpoints"], strict=True))
    coverage = rows(store, "coverage")
    kinds = {task: (metrics, shots) for task, metrics, shots in rows(store, "task_kinds").iter_rows()}
    tasks = sorted(coverage["task"].unique().to_list())
    have = {(t, r): c for t, r, c in coverage.iter_rows()}
    cells = []
    summary = []
    for task in tasks:
        missing = [r for r in runs if (task, r) not in have]
        partial = [r for r in runs if (task, r) in have and have[(task, r)] < total[r]]
        metrics, shots = kinds.get(task, ([], []))
        summary.append({
            "task": task, "metrics": metrics, "shots": shots or [], "runs": len(runs) - len(missing),
            "missing_runs": len(missing), "partial_runs": len(partial), "missing": missing[:20],
        })  # fmt: skip
        for run in runs:
            count = have.get((task, run), 0)
            cells.append({
                "task": task, "run": run, "checkpoints": count, "of": total[run],
                "share": count / total[run] if total[run] else 0.0, "href": run_url(run),
            })  # fmt: skip
    schema: dict[str, Any] = {"task": pl.String, "metrics": pl.List(pl.String), "shots": pl.List(pl.Int64),
                              "runs": pl.Int64, "missing_runs": pl.Int64, "partial_runs": pl.Int64,
                              "missing": pl.List(pl.String)}  # fmt: skip
    frame = pl.DataFrame(summary, schema=schema)
    return Page(
        "tasks",
        "Tasks × runs",
        data={"runs": runs},
        tables=[
            Table.of(
                "rows",
                f"{len(tasks)} tasks in {len(runs)} runs",
                frame,
                note="missing: the first 20 runs without the task; partial: runs that have it at fewer "
                "checkpoints than they have.",
            ),
        ],  # fmt: skip
        charts=[
            Chart(
                "coverage",
                "Coverage",
                charts.coverage(cells, tasks=tasks, runs=runs),
                note="Green: the share of the run's checkpoints with a score of the task; red: none.",
            )
        ],
    )
