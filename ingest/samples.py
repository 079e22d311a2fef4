"""Reads lm-eval per-sample files, ``samples_<task>_<timestamp>.jsonl``, into ``samples``.

lm-eval (``--log_samples``) writes one such file per task next to
``results_<timestamp>.json``; each line is one document under one filter.
Log-likelihoods inside ``resps``/``filtered_resps`` are strings there
(``[["-1.23", "False"], ...]``): they are stored as DOUBLE and BOOLEAN lists.

A samples file is streamed by DuckDB's JSON reader with an explicit schema
and checked row by row in SQL as it is inserted (``insert_samples.sql``), so
that it is never held in memory and goes in at the reader's speed. The files of
a batch that share a layout and columns (:func:`groups`: the same task's file
of every checkpoint, the tasks of a suite) are read by one statement, which
DuckDB spreads over its threads file by file and, within a large file, buffer
by buffer; a file is first read with DuckDB's own bound on a line, whose
buffers of twice that size let it split a file (a longer line: :class:`Replan`). The rules
are the ones :func:`explain` applies line by line in Python: that slow path
runs only when DuckDB has refused a file, to name the line and the field.
Numbers are read as DuckDB's reader reads them: NaN and ±Infinity are data,
and a literal beyond DOUBLE's range (``1e999``) is ±Infinity. Nesting is not
limited either (the reader takes any depth): a line too deep for Python's
parsers is left to DuckDB, whether it is the first line, which plans the
insert, or one read again to explain a refusal. Lines of a
log-likelihood task are read by a typed layout (``insert_samples_scored.sql``),
which reads a string of a number where a per-sample metric is expected as that
number (``"nan"`` too); any line that does not fit it sends the file to the
layout for anything lm-eval writes.

Each line's document (its ``doc`` object) goes into ``documents`` once per task and ``doc_hash``
(:func:`store_documents`, once the batch's samples are in): read again by DuckDB's JSON reader, two keys
only, from one file per task whose documents the store lacks, since a testset's documents are the same at
every checkpoint; the files of a batch in one statement, as the samples are.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import InputError, first_line
from ood_store._ingest import jsontext
from ood_store._ingest.jsontext import describe
from ood_store._ingest.limits import MAX_SAMPLE_LINE_BYTES
from ood_store._ingest.records import SamplesFile
from ood_store._ingest.regular import cannot_read, check_name, open_regular
from ood_store._store.damage import is_store_problem

# Keys of a sample line that are not per-sample metric values.
FIXED = (
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
    "task_name",
    "task",
    "index",
)

# The columns the JSON reader extracts besides the metric keys; everything else on a line is skipped.
_READ = {
    "doc_id": "JSON",
    "filter": "JSON",
    "target": "JSON",
    "filtered_resps": "JSON",
    "metrics": "JSON",
    "doc_hash": "VARCHAR",
    "prompt_hash": "VARCHAR",
    "target_hash": "VARCHAR",
}
# The same, typed by the reader, for the "scored" layout (insert_samples_scored.sql).
_READ_SCORED = {**_READ, "filtered_resps": "VARCHAR[][]", "metrics": "VARCHAR[]"}
# A metric column for files without per-sample metrics (no line has this key): the SQL needs one.
_NO_METRIC = "\u0001"


def samples_beside(results_path: Path) -> list[Path]:
    """The ``samples_<task>_<ts>.jsonl`` files written with ``results_<ts>.json``."""
    name = results_path.name
    if not (name.startswith("results_") and name.endswith(".json")):
        return []
    stamp = name[len("results_") : -len(".json")]
    return sorted(results_path.parent.glob(f"samples_*_{_glob_escape(stamp)}.jsonl"))


def results_beside(samples_path: Path) -> Path:
    """The results file a samples file belongs to (which may not exist).

    The timestamp is what follows the last ``_``, as ``lm_eval.utils.get_file_datetime`` reads it.
    """
    name = samples_path.name
    return samples_path.parent / f"results_{name[name.rfind('_') + 1 :].replace('.jsonl', '')}.json"


def task_of(samples_path: Path) -> str:
    """The task a samples file holds: between the first and the last ``_`` (``lm_eval.utils.get_file_task_name``)."""
    name = samples_path.name.removesuffix(".jsonl")
    return name[name.find("_") + 1 : name.rfind("_")]


def plan(path: Path, output_type: str | None, known_metrics: tuple[str, ...] = ()) -> SamplesFile:
    """A samples file ready to be inserted, checked as far as its first line.

    ``known_metrics`` are the task's metric names in the results file; the
    first line adds its own per-sample keys. Raises InputError naming the file.
    """
    shown = str(path)
    check_name(path.resolve(), shown)
    first: dict[str, Any] | None = None
    with open_regular(path, shown) as lines:
        try:
            size = os.fstat(lines.fileno()).st_size
            for number, line in enumerate(lines, start=1):
                if line.strip():
                    first = _line(shown, number, line)
                    break
        except OSError as exc:
            raise cannot_read(shown, exc) from None
        except jsontext.TooDeep:  # DuckDB's reader takes any nesting: plan without this line, for "json"
            first = None
    names = list(known_metrics)
    if first is not None:
        names.extend(_metric_names(first))
    metric_names = _readable(names)
    layout = "scored" if first is not None and _is_scored(first, metric_names) else "json"
    return SamplesFile(path, task_of(path), output_type, metric_names, size, layout)


def _is_scored(sample: dict[str, Any], metric_names: tuple[str, ...]) -> bool:
    """Whether a line fits the "scored" layout: (log-likelihood, is-greedy) pairs and numeric metrics."""
    pairs = sample.get("filtered_resps")
    if not (isinstance(pairs, list) and pairs):
        return False
    for pair in pairs:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str | int | float)):
            return False
        if isinstance(pair[0], bool) or pair[1] not in (None, True, False, "True", "False", "true", "false"):
            return False
    listed = sample.get("metrics")
    if listed is not None and not (isinstance(listed, list) and all(isinstance(n, str) for n in listed)):
        return False
    return all(isinstance(sample.get(name, 0.0), int | float) for name in metric_names)


class Replan(Exception):
    """``file`` must be read again, in a new transaction (DuckDB's is aborted by the refusal): a line
    does not fit the "scored" layout (``what == "layout"``: read it as "json"), lists a per-sample
    metric its first line did not (``"metrics"``: read :func:`all_metric_names`), or is longer than the
    reader was first told to expect (``"long lines"``: read it with ``MAX_SAMPLE_LINE_BYTES``)."""

    def __init__(self, file: SamplesFile, what: str):
        super().__init__(f"{file.path}: {what}")
        self.file = file
        self.what = what


class GroupRefused(Exception):
    """DuckDB refused the statement that inserts several samples files at once: insert them one by one
    (:func:`insert` of each alone), in a new transaction, to learn which file and why."""


def groups(files: Sequence[tuple[int, SamplesFile]]) -> list[list[tuple[int, SamplesFile]]]:
    """``files`` (each with its evaluation's id) in groups that one statement can insert: the same layout,
    metric columns and bound on a line (and, for the "json" layout, output type), each path once."""
    found: dict[tuple, list[list[tuple[int, SamplesFile]]]] = {}
    for evaluation_id, file in files:
        key = (file.layout, file.metric_names, file.line_bytes, None if file.layout == "scored" else file.output_type)
        lists = found.setdefault(key, [[]])
        if any(other.path == file.path for _, other in lists[-1]):
            lists.append([])
        lists[-1].append((evaluation_id, file))
    return [group for lists in found.values() for group in lists]


def insert(con: duckdb.DuckDBPyConnection, files: Sequence[tuple[int, SamplesFile]]) -> list[int]:
    """Insert the rows of samples files of one group (:func:`groups`), each with its evaluation's id, in
    one statement inside the caller's transaction; returns how many rows each file holds.

    DuckDB reads the files at once, in parallel. A single file that DuckDB refuses raises InputError
    naming the line and the field, or :class:`Replan`; several raise :class:`GroupRefused`.
    """
    try:
        _insert(con, files)
    except duckdb.Error as exc:
        if len(files) > 1:
            raise GroupRefused(str(exc)) from None
        file = files[0][1]
        if "maximum_object_size" in str(exc) and file.line_bytes < MAX_SAMPLE_LINE_BYTES:
            raise Replan(file, "long lines") from None
        if file.layout == "scored":
            raise Replan(file, "layout") from None
        if "ood-store: unknown metric" in str(exc):
            raise Replan(file, "metrics") from None
        raise explain(file, exc) from None
    ids, tasks = [evaluation_id for evaluation_id, _ in files], [file.task for _, file in files]
    rows = con.execute(
        sqlfiles.load("ood_store._ingest", "sample_counts"), {"evaluation_ids": ids, "tasks": tasks}
    ).fetchall()
    counts = {(evaluation_id, task): (n, twice) for evaluation_id, task, n, twice in rows}
    out = []
    for evaluation_id, file in files:
        n, twice = counts.get((evaluation_id, file.task), (0, False))
        if twice:  # a document twice under one filter
            if len(files) > 1:
                raise GroupRefused(f"{file.path}: a document twice")
            raise explain(file, None)
        out.append(int(n))
    return out


class DocumentsRefused(Exception):
    """DuckDB refused the documents of one samples file (of evaluation ``key[0]``, task ``key[1]``) whose rows
    went in: ``error`` names the file."""

    def __init__(self, key: tuple[int, str], error: InputError):
        super().__init__(str(error))
        self.key = key
        self.error = error


def store_documents(
    con: duckdb.DuckDBPyConnection, files: Sequence[tuple[int, SamplesFile]], grouped: bool = True
) -> None:
    """Add to ``documents`` the documents of ``files`` (just inserted) that the store does not hold yet.

    A task's documents are the same at every checkpoint: the files read are, round by round, one file per
    task among those whose samples name a document not held yet, until none is left (or every such file
    is read), so that a batch of many checkpoints of one task reads its documents once. A round's files
    are read by one statement of DuckDB's JSON reader (``insert_documents.sql``), which reads only two keys
    and the files in parallel; files whose every line is a new document of its own go in by another, without
    deduplication (``insert_new_documents.sql``). When DuckDB refuses a statement of several files,
    :class:`GroupRefused` is raised (read them again with ``grouped=False``, in a new transaction: each
    file by a statement of its own); a file alone that it refuses raises :class:`DocumentsRefused`.
    """
    sqlfiles.execute(con, sqlfiles.load("ood_store._ingest", "sample_macros"))  # ood_document_lines
    missing_sql = sqlfiles.load("ood_store._ingest", "missing_documents")
    by_key = {(evaluation_id, file.task): file for evaluation_id, file in files}
    ids = sorted({evaluation_id for evaluation_id, _ in files})
    read: set[tuple[int, str]] = set()
    while True:
        chosen: dict[str, tuple[int, SamplesFile, bool]] = {}
        pending = con.execute(missing_sql, {"evaluation_ids": ids}).fetchall()
        for evaluation_id, task, hashed, distinct, missing in pending:
            key = (evaluation_id, task)
            if key in by_key and key not in read and task not in chosen:
                chosen[task] = (evaluation_id, by_key[key], hashed == distinct == missing)
                read.add(key)
        if not chosen:
            return
        statements: dict[tuple[bool, int], list[tuple[int, SamplesFile]]] = {}
        for evaluation_id, file, fresh in chosen.values():
            statements.setdefault((fresh, file.line_bytes), []).append((evaluation_id, file))
        for (fresh, line_bytes), part in statements.items():
            for batch in [part] if grouped else [[item] for item in part]:
                _insert_documents(con, batch, fresh, line_bytes)
        if len(pending) == len(chosen):  # every file that lacked documents was read: none is left
            return


def _insert_documents(
    con: duckdb.DuckDBPyConnection, batch: list[tuple[int, SamplesFile]], fresh: bool, line_bytes: int
) -> None:
    try:
        con.execute(
            sqlfiles.load("ood_store._ingest", "insert_new_documents" if fresh else "insert_documents"),
            {
                "paths": [str(file.path) for _, file in batch],
                "tasks": [file.task for _, file in batch],
                "max_line_bytes": line_bytes,
            },
        )
    except duckdb.Error as exc:
        if len(batch) > 1:
            raise GroupRefused(str(exc)) from None
        if is_store_problem(exc):
            raise
        evaluation_id, file = batch[0]
        error = InputError(str(file.path), "doc", f"refused by DuckDB's JSON reader: {first_line(exc)}")
        raise DocumentsRefused((evaluation_id, file.task), error) from None


def _insert(con: duckdb.DuckDBPyConnection, files: Sequence[tuple[int, SamplesFile]]) -> None:
    first = files[0][1]
    names = first.metric_names or (_NO_METRIC,)
    scored = first.layout == "scored"
    sqlfiles.execute(con, sqlfiles.load("ood_store._ingest", "sample_macros"))
    con.execute(
        sqlfiles.load("ood_store._ingest", "insert_samples_scored" if scored else "insert_samples"),
        {
            "paths": [str(file.path) for _, file in files],
            "columns": {**(_READ_SCORED if scored else _READ), **dict.fromkeys(names, "DOUBLE" if scored else "JSON")},
            "metric_names": list(names),
            "max_line_bytes": first.line_bytes,
            "evaluation_ids": [evaluation_id for evaluation_id, _ in files],
            "tasks": [file.task for _, file in files],
            **({} if scored else {"output_type": first.output_type}),
        },
    ).fetchall()


def all_metric_names(con: duckdb.DuckDBPyConnection, file: SamplesFile) -> tuple[str, ...]:
    """Every per-sample metric a line of ``file`` lists (for a file whose lines differ)."""
    sql = sqlfiles.load("ood_store._ingest", "listed_metrics")
    try:
        rows = con.execute(sql, {"path": str(file.path), "max_line_bytes": file.line_bytes}).fetchall()
    except duckdb.Error as exc:
        if "maximum_object_size" not in str(exc):
            raise
        rows = con.execute(sql, {"path": str(file.path), "max_line_bytes": MAX_SAMPLE_LINE_BYTES}).fetchall()
    return _readable([*file.metric_names, *(name for (name,) in rows)])


def _readable(names: list[str]) -> tuple[str, ...]:
    """Metric keys the JSON reader can read as columns: not a fixed key, not empty, distinct ignoring case."""
    seen: set[str] = set()
    out = []
    for name in names:
        if name and name not in FIXED and name.lower() not in seen:
            seen.add(name.lower())
            out.append(name)
    return tuple(out)


def explain(file: SamplesFile, error: duckdb.Error | None) -> InputError:
    """Why DuckDB refused ``file``: the first line that breaks a rule, found by reading it line by line."""
    shown = str(file.path)
    seen: set[tuple[int, str]] = set()
    try:
        with open_regular(file.path, shown) as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    sample = _line(shown, number, line)
                except jsontext.TooDeep:  # too deep to check here; DuckDB's reader takes any nesting
                    continue
                where = f"line {number}"
                doc_id = _doc_id(shown, where, sample.get("doc_id"))
                filt = sample.get("filter", "none")
                if not isinstance(filt, str):
                    raise InputError(shown, f"{where}: filter", f"expected a string, got {describe(filt)}")
                if (doc_id, filt) in seen:
                    raise InputError(
                        shown, f"{where}: doc_id", f"document {doc_id} appears twice under filter {filt!r}"
                    )
                seen.add((doc_id, filt))
                _check_responses(shown, where, sample.get("filtered_resps"), file.output_type)
    except InputError as exc:
        return exc
    except OSError as exc:
        return cannot_read(shown, exc)
    reason = "it changed while it was read" if error is None else first_line(error)
    return InputError(shown, None, f"refused by DuckDB's JSON reader: {reason}")


def _line(path: str, number: int, line: bytes) -> dict[str, Any]:
    where = f"line {number}"
    if len(line) > MAX_SAMPLE_LINE_BYTES:
        raise InputError(path, where, f"longer than {MAX_SAMPLE_LINE_BYTES // 2**20} MB")
    sample = jsontext.loads(path, where, line, too_large=False)
    if not isinstance(sample, dict):
        raise InputError(path, where, "expected a JSON object")
    return sample


def _metric_names(sample: dict[str, Any]) -> list[str]:
    names = sample.get("metrics")
    if isinstance(names, list) and all(isinstance(n, str) for n in names):
        return names
    return [key for key in sample if key not in FIXED]


def _doc_id(path: str, where: str, raw: Any) -> int:
    value = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    elif isinstance(raw, str) and raw.strip().isascii() and raw.strip().isdigit() and len(raw.strip()) <= 18:
        value = int(raw)
    if value is None or not 0 <= value < 2**63:
        raise InputError(path, f"{where}: doc_id", f"expected a document index, got {describe(raw)}")
    return value


def _check_responses(path: str, where: str, raw: Any, output_type: str | None) -> None:
    """Log-likelihood responses must be numbers (or strings of numbers)."""
    if raw is None:
        return
    items = raw if isinstance(raw, list) else [raw]
    if output_type == "loglikelihood_rolling" or (items and all(_is_pair(r) for r in items)):
        for item in items:
            value = item[0] if _is_pair(item) else item
            try:
                float(value)
            except (TypeError, ValueError):
                raise InputError(
                    path, f"{where}: filtered_resps", f"expected a log-likelihood, got {describe(value)}"
                ) from None


def _is_pair(item: Any) -> bool:
    return isinstance(item, list) and len(item) == 2 and not isinstance(item[0], list | dict)


def _glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[]" else c for c in text)
