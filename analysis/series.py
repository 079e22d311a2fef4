"""The score series an analysis works on: pulled from the store with one SQL query, or taken from a frame.

The result is a long Polars frame ``run, step, task, value``: one score per
checkpoint of a run on a task, for one metric and filter.
"""

from __future__ import annotations

import fnmatch
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from ood_store import _sqlfiles as sqlfiles
from ood_store._counts import n as count
from ood_store._errors import AnalysisError, Note
from ood_store._names import did_you_mean, some_of, split_names
from ood_store._store.database import connection, read
from ood_store._store.runs import attribute_columns
from ood_store._store.selection import runs as list_runs

if TYPE_CHECKING:
    from ood_store._analysis.partial import Options
    from ood_store._store import Database

SINGLE_RUN = "(frame)"  # the run name given to a frame without a run column


@dataclass(frozen=True)
class Series:
    """Scores in long form plus the tasks and runs they were selected for."""

    scores: pl.DataFrame  # run, step, task, value
    in_domain: str
    ood: tuple[str, ...]
    runs: tuple[str, ...]
    from_store: bool = False  # a NULL value is then a NaN in the file, not a score that is absent


def read_series_sql(store: Database, name: str, /, **params: Any) -> pl.DataFrame:
    """The rows of the analysis' ``name``.sql on ``store``: a query that reads the series' scores through
    ``ood_series_scores`` (series_macros.sql, made on the store's connection first)."""
    sqlfiles.execute(connection(store), sqlfiles.load("ood_store._analysis", "series_macros"))
    return read(store, sqlfiles.load("ood_store._analysis", name), **params)


def load_series(data: Database | pl.DataFrame | Any, selection: Options) -> Series:
    """Select the in-domain and OOD series of the chosen runs, as ``selection`` says.

    ``data`` is a :class:`~ood_store.Store` or a long frame with columns
    ``step, task, value`` (``run`` optional; ``metric``, ``filter`` and
    ``num_fewshot`` are used for selection when present). Of ``selection``
    (an analysis' :class:`~ood_store._analysis.partial.Options`) this reads
    ``in_domain``, ``ood`` (None: every other task that has ``metric``),
    ``runs``, ``metric``, ``filter``, ``num_fewshot``, ``campaign`` (a frame
    needs a ``campaign`` column for it) and ``where`` (run attributes: a store only).
    Non-finite scores (NaN, stored as NULL, and ±Infinity) stay in the series:
    the analysis treats them as missing and says so.
    """
    in_domain, metric, filter, num_fewshot = (  # noqa: A001 - lm-eval's name for it
        selection.in_domain,
        selection.metric,
        selection.filter,
        selection.num_fewshot,
    )
    if in_domain is None:
        raise AnalysisError("no in-domain task given", parameter="in_domain")
    ood = split_names(selection.ood, "ood")
    runs = split_names(selection.runs, "runs")
    if not isinstance(data, pl.DataFrame) and not _is_pandas(data):
        in_domain = resolve_in_domain(data, in_domain)
    if ood is not None and in_domain in ood:
        raise AnalysisError(f"{in_domain!r} is the in-domain task; it cannot also be an OOD task", parameter="ood")
    wanted = None if ood is None else [in_domain, *ood]
    campaign = selection.campaign
    if isinstance(data, pl.DataFrame) or _is_pandas(data):
        if selection.slices:
            raise AnalysisError("slices are made from a store's per-sample rows: give a store", parameter="slices")
        if selection.where:
            raise AnalysisError("run attributes live in a store: give one, not a frame", parameter="where")
        frame = _from_frame(data, metric, filter, num_fewshot, wanted, runs, campaign)
        store = None
        known = frame_tasks(data)
    else:
        store = data
        if runs is not None:
            _check_runs(set(list_runs(store)["run"]), runs)
        if selection.where:
            runs = runs_where(store, selection.where, runs)
        if campaign is not None:
            _check_campaign(store, campaign)
        frame = read_series_sql(
            store,
            "series",
            metric=metric,
            filter=filter,
            tasks=wanted,
            runs=None if runs is None else list(runs),
            num_fewshot=num_fewshot,
            campaign=campaign,
        )
        known = []
        if selection.slices:
            sliced = slice_series(store, selection, runs)
            frame = pl.concat([frame, sliced.select(frame.columns)], how="vertical_relaxed")
            if ood is not None:
                ood = (*ood, *sorted(set(sliced["task"])))
                wanted = [in_domain, *ood]
    for task in wanted or [in_domain]:
        if frame.filter(pl.col("task") == task).is_empty():
            message = missing_task_message(store, task, metric, filter, num_fewshot, runs, known)
            # an unknown name is about the parameter that gave it; a missing metric, filter or shot count names its own
            about = ("in_domain" if task == in_domain else "ood") if message.startswith("no task ") else None
            raise AnalysisError(message, parameter=about)
    check_one_shot_count(frame)
    tasks = sorted(set(frame["task"].unique()) - {in_domain}) if ood is None else list(ood)
    if not tasks:
        raise AnalysisError(f"no OOD tasks: no task other than {in_domain!r} has {metric!r} scores")
    found_runs = tuple(sorted(frame["run"].unique()))
    scores = frame.select("run", "step", "task", pl.col("value").cast(pl.Float64))
    return Series(scores, in_domain, tuple(tasks), found_runs, from_store=store is not None)


#: The field a slice can split by without stored documents: the sample's own target (its label).
TARGET = "target"


def slice_series(store: Database, selection: Options, runs: Sequence[str] | None) -> pl.DataFrame:
    """The scores of the slices ``selection.slices`` (``TASK:FIELD``) asks for, from the per-sample rows (SQL).

    FIELD is ``target`` (the sample's label) or any top-level key of the items' documents (the store's
    ``documents``: HANS's ``heuristic``, ANLI's round). Each slice ``TASK[FIELD=VALUE]`` scores, at every
    checkpoint, the mean of its items' metric. A task without per-sample rows, runs whose documents the
    store does not hold, and a field no document has are errors that say so.
    """
    parts = []
    for spec in selection.slices or ():
        task, sep, field = spec.partition(":")
        task, field = task.strip(), field.strip()
        if not sep or not task or not field:
            raise AnalysisError(f"expected TASK:FIELD, got {spec!r}", parameter="slices")
        task = resolve_in_domain(store, task)
        found = read_series_sql(
            store,
            "slices",
            task=task,
            field=field,
            pointer="/" + field.replace("~", "~0").replace("/", "~1"),
            metric=selection.metric,
            filter=selection.filter,
            runs=None if runs is None else list(runs),
            num_fewshot=selection.num_fewshot,
            campaign=selection.campaign,
        )
        if found.is_empty():
            raise AnalysisError(
                f"{spec!r}: no per-sample rows of {task!r} with {selection.metric!r} (ingest stores them from "
                "lm-eval's samples files; `samples` turns that off)",
                parameter="slices",
            )
        if field != TARGET:
            _check_documents(store, spec, task, field, found)
        parts.append(found.select("run", "step", "task", "num_fewshot", "value"))
    return pl.concat(parts)


def _check_documents(store: Database, spec: str, task: str, field: str, found: pl.DataFrame) -> None:
    """Refuse a slice by a document's field where the store lacks the documents or none of them has the field."""
    unhashed = found.filter(pl.col("hashed") < pl.col("items"))
    if not unhashed.is_empty():
        names = sorted(unhashed["run"].unique())
        raise AnalysisError(
            f"{spec!r}: samples of {task!r} in {count(len(names), 'run')} ({', '.join(names)}) name no document "
            f"(their samples files have no doc_hash, which older lm-eval did not write): slice them by {task}:{TARGET}",
            parameter="slices",
        )
    lacking = found.filter(pl.col("documented") < pl.col("items"))
    if not lacking.is_empty():
        names = sorted(lacking["run"].unique())
        held = "none of its documents" if int(found["documented"].sum()) == 0 else "not all of its documents"
        raise AnalysisError(
            f"{spec!r}: the store holds {held} for {count(len(names), 'run')} ({', '.join(names)}): "
            f"{task!r} was ingested before ood-store kept documents; ingesting its results files again, with "
            "their samples files beside them, stores them",
            parameter="slices",
        )
    if int(found["with_field"].sum()) == 0:
        keys = read(store, sqlfiles.load("ood_store._analysis", "document_keys"), task=task)["key"].to_list()
        raise AnalysisError(
            f"{spec!r}: the documents of {task!r} have no field {field!r}; their fields: "
            f"{', '.join(keys) if keys else '(none: they are not JSON objects)'} (or {TARGET}, the label)",
            parameter="slices",
        )


def frame_tasks(data: pl.DataFrame | Any) -> list[str]:
    """The task names of a scores frame (Polars or pandas), whatever else selects its rows."""
    frame = pl.from_pandas(data) if _is_pandas(data) else data
    return frame["task"].unique().sort().to_list() if "task" in frame.columns else []


def resolve_in_domain(store: Database, name: str) -> str:
    """``name`` as the store spells it: itself if stored, else the one ood_nli suite task it names.

    ``mnli`` is ``ood_nli_mnli`` (or a variant of it, ``ood_nli_mnli__minimal``)
    when that is the only such task in the store, with a :class:`~ood_store._errors.Note`
    saying so; when there are several, an error lists them.
    """
    found = read(store, sqlfiles.load("ood_store._analysis", "suite_tasks"), name=name)["task"].to_list()
    if not found or name in found:
        return name
    if len(found) > 1:
        raise AnalysisError(
            f"no task {name!r} in the store; the ood_nli suite has {', '.join(found)}: choose one",
            parameter="in_domain",
        )
    warnings.warn(Note(f"in-domain task {name!r} read as {found[0]!r}, the one stored task of that name"), stacklevel=3)
    return found[0]


def _is_pandas(data: Any) -> bool:
    return type(data).__module__.startswith("pandas")


def _from_frame(data, metric, filter, num_fewshot, tasks, runs, campaign) -> pl.DataFrame:  # noqa: A002
    frame = pl.from_pandas(data) if _is_pandas(data) else data
    missing = {"step", "task", "value"} - set(frame.columns)
    if missing:
        raise AnalysisError(f"the scores frame has no column(s) {', '.join(sorted(missing))}")
    if campaign is not None:
        if "campaign" not in frame.columns:
            raise AnalysisError("the scores frame has no campaign column to select by", parameter="campaign")
        frame = frame.filter(pl.col("campaign") == campaign)
    if "run" not in frame.columns:
        frame = frame.with_columns(pl.lit(SINGLE_RUN).alias("run"))
    if runs is not None:
        _check_runs(set(frame["run"].unique()), runs)
    for column, value in (("metric", metric), ("filter", filter), ("num_fewshot", num_fewshot)):
        if column in frame.columns and value is not None:
            frame = frame.filter(pl.col(column) == value)
    if tasks is not None:
        frame = frame.filter(pl.col("task").is_in(tasks))
    if runs is not None:
        frame = frame.filter(pl.col("run").is_in(runs))
    if "num_fewshot" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, dtype=pl.Int64).alias("num_fewshot"))
    return frame.filter(pl.col("step").is_not_null()).select(
        pl.col("run").cast(pl.String), "step", pl.col("task").cast(pl.String), "num_fewshot", "value"
    )


def runs_where(store: Database, where: Sequence[str], runs: Sequence[str] | None = None) -> tuple[str, ...]:
    """The runs (of ``runs``, else of the store) whose attributes satisfy every ``KEY=VALUE`` of ``where``.

    VALUE may be a glob (``size=1*``); a key given twice matches either value.
    Keys are run attributes as ``ingest`` sets them (``family``, ``size``,
    ``in_domain``, ``seed``, or any other key).
    """
    wanted: dict[str, list[str]] = {}
    for condition in where:
        key, sep, value = str(condition).partition("=")
        if not sep or not key.strip():
            raise AnalysisError(f"expected KEY=VALUE, got {condition!r}", parameter="where")
        wanted.setdefault(key.strip(), []).append(value.strip())
    table = attribute_columns(store, list(wanted))
    chosen = [
        run
        for run, *values in table.select("run", *wanted).iter_rows()
        if (runs is None or run in runs)
        and all(
            value is not None and any(fnmatch.fnmatchcase(value, pattern) for pattern in patterns)
            for value, patterns in zip(values, wanted.values(), strict=True)
        )
    ]
    if not chosen:
        shown = " and ".join(f"{k}={'|'.join(v)}" for k, v in wanted.items())
        raise AnalysisError(f"no run has {shown} (see `ood-store runs`)", parameter="where")
    return tuple(chosen)


def _check_campaign(store: Database, campaign: str) -> None:
    known = read(store, sqlfiles.load("ood_store._analysis", "campaigns"))["campaign"].to_list()
    if campaign not in known:
        listed = ", ".join(known) if known else "none: the store holds no campaign names"
        raise AnalysisError(f"no campaign {campaign!r} in the store; it has: {listed}", parameter="campaign")


def _check_runs(known: set[str], runs: Sequence[str]) -> None:
    absent = [run for run in runs if run not in known]
    if absent:
        raise AnalysisError(
            f"no run {', '.join(map(repr, absent))} in the store (see `ood-store runs`)", parameter="runs"
        )


def check_one_shot_count(frame: pl.DataFrame) -> None:
    clash = (
        frame.group_by("task")
        .agg(pl.col("num_fewshot").unique().sort().alias("shots"))
        .filter(pl.col("shots").list.len() > 1)
        .sort("task")
    )
    if not clash.is_empty():
        task, shots = clash.row(0)
        listed = ", ".join(str(s) for s in shots)
        raise AnalysisError(
            f"task {task!r} has scores at several shot counts ({listed}); choose one with `num_fewshot`"
        )


def missing_task_message(store, task, metric, filter, num_fewshot, runs, known=()) -> str:  # noqa: A002
    """Why ``task`` has no series: absent (with the names it may be a misspelling of), or not with this metric..."""
    where = " in the chosen runs" if runs is not None else ""
    if store is None:
        if task not in known:
            return f"no task {task!r} in the scores{did_you_mean(task, known)}"
        return f"task {task!r} has no {metric!r} scores{where}"
    choices = read(
        store,
        sqlfiles.load("ood_store._analysis", "task_choices"),
        task=task,
        runs=None if runs is None else list(runs),
    )
    metrics, filters, shots = choices.row(0)
    if not metrics:
        names = read(store, sqlfiles.load("ood_store._analysis", "task_names"))["task"]
        if runs is not None and task in names:  # in the store, not in these runs: which runs have it
            having = read(store, sqlfiles.load("ood_store._analysis", "task_runs"), task=task)["run"].to_list()
            return f"no task {task!r}{where}; runs that have it: {some_of(having)} (see `ood-store runs`)"
        return f"no task {task!r} in the store{where}{did_you_mean(task, names)} (see `ood-store tasks`)"
    if metric not in metrics:
        return f"task {task!r} has no {metric!r} scores{where}; it has: {', '.join(metrics)} (choose with `metric`)"
    if filter not in filters:
        return (
            f"task {task!r} has no scores with filter {filter!r}; it has: {', '.join(filters)} (choose with `filter`)"
        )
    if num_fewshot is not None and num_fewshot not in shots:
        listed = ", ".join(str(s) for s in shots)
        return f"task {task!r} has no {num_fewshot}-shot scores; it has: {listed} (choose with `num_fewshot`)"
    return f"task {task!r} has no {metric!r} scores at a training step{where}"


def in_domain_of_runs(data: Database | pl.DataFrame | Any, runs: Sequence[str] | str | None) -> str:
    """The in-domain task the runs (all, or ``runs``) agree on: their ``in_domain`` attribute.

    For an analysis called without ``in_domain``. Every run must have the
    attribute, with one value; otherwise an error about ``in_domain`` says what
    the runs have.
    """
    if isinstance(data, pl.DataFrame) or _is_pandas(data):
        raise AnalysisError(
            "not given (a frame of scores has no run attributes to take it from)", parameter="in_domain"
        )
    chosen = split_names(runs, "runs")
    table = list_runs(data)
    if chosen is not None:
        _check_runs(set(table["run"]), chosen)
        table = table.filter(pl.col("run").is_in(chosen))
    counts = (
        table.group_by("in_domain_task").len().sort("len", "in_domain_task", descending=[True, False], nulls_last=True)
    )
    values = counts["in_domain_task"].to_list()
    if values and values[0] is not None and len(values) == 1:
        return values[0]
    if not values or values == [None]:
        raise AnalysisError(
            "not given, and no run has an in_domain attribute (set run attributes with `attributes` at ingest)",
            parameter="in_domain",
        )
    listed = ", ".join(
        f"{'unset' if value is None else repr(value)} ({count(n, 'run')})" for value, n in counts.iter_rows()
    )
    raise AnalysisError(f"not given, and the runs' in_domain attributes differ: {listed}", parameter="in_domain")
