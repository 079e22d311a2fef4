"""Reads one lm-eval results file (v0.3 through v0.4.x) into an EvaluationRecord.

Format facts this module relies on (see tests/fixtures/lm-eval-real/README.md):

* v0.3 (``results``/``versions``/``config``): metric keys ``acc`` and
  ``acc_stderr``; no filters (stored as filter ``'none'``, lm-eval's default);
  ``config.num_fewshot`` holds the shots.
* v0.4: metric keys ``"<metric>,<filter>"`` (split on the last comma), shots in
  ``n-shot``, document counts in ``n-samples``, aggregating groups in
  ``groups`` (0.4.2) or marked by ``group_subtasks``; non-aggregating groups
  are placeholders ``{" ": " ", "alias": ...}`` and hold no scores.
* a stderr may be the string ``"N/A"``, ``null``, ``NaN`` or missing: stored NULL.
* ``config.model_args`` is a string, an object or null.
* a v0.3-era fork writes ``config.num_fewshot`` as a list, one entry per task.

Non-finite numbers are data (lm-eval writes ``NaN``, ``Infinity`` and
``-Infinity`` where a metric is undefined or overflows): a value or stderr
that is NaN is stored as NULL, ±Infinity as it is. A numeric literal that
does not fit a DOUBLE (``1e999``) is a bad value (:mod:`~ood_store._ingest.jsontext`).

Every problem raises :class:`~ood_store._errors.InputError` naming the file
and the field.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from pathlib import Path
from typing import Any

from ood_store._errors import InputError
from ood_store._ingest.identity import Overrides, StepTooLong, identify, parse_model_args
from ood_store._ingest.jsontext import describe, optional_text
from ood_store._ingest.limits import MAX_NAME_LENGTH
from ood_store._ingest.records import EvaluationRecord, ScoreTuple
from ood_store._ingest.values import count

# Keys of a task's entry that are not metrics.
_ENTRY_METADATA = {"alias", "name", "sample_len", "sample_count", " ", "samples"}
_STDERR = "_stderr"
_FILE_TS = re.compile(r"results_(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.json$")


class NotLmEval(Exception):
    """Valid JSON, but not an lm-eval results file (no top-level ``results`` object)."""


def parse_results(path: str, content_hash: str, doc: Any, overrides: Overrides) -> EvaluationRecord:
    """Validate a parsed results document and turn it into a record."""
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), dict):
        raise NotLmEval(path)
    config = _optional_object(path, doc, "config")
    is_v04 = _is_v04(doc)
    try:
        args = parse_model_args((config or {}).get("model_args"))
    except TypeError as exc:
        raise InputError(path, "config.model_args", str(exc)) from None
    try:
        identity = identify(args, config or {}, doc, overrides)
    except StepTooLong as exc:
        raise InputError(path, "config.model_args", f"{exc}; pass `step`") from None
    if identity is None:
        raise InputError(
            path,
            "config.model_args",
            "names no model (no pretrained=, no model_name): cannot tell which run it is; pass `run`",
        )
    if identity.step is not None and not -(2**63) <= identity.step < 2**63:
        raise InputError(path, "config.model_args", f"step {identity.step} is out of range; pass `step`")
    for what, name in (("run", identity.run), ("model", identity.model)):
        if name is not None and len(name) > MAX_NAME_LENGTH:
            raise InputError(
                path, "config.model_args", f"the {what} name is longer than {MAX_NAME_LENGTH:,} characters"
            )

    n_shot = _optional_object(path, doc, "n-shot") or {}
    n_samples = _optional_object(path, doc, "n-samples") or {}
    versions = _optional_object(path, doc, "versions") or {}
    higher = _optional_object(path, doc, "higher_is_better") or {}
    group_subtasks = _optional_object(path, doc, "group_subtasks") or {}
    for name, subs in group_subtasks.items():
        if not (isinstance(subs, list) and all(isinstance(sub, str) for sub in subs)):
            raise InputError(path, f"group_subtasks[{json.dumps(name)}]", "expected a list of task names")
    groups = _optional_object(path, doc, "groups") or {}
    configs = _optional_object(path, doc, "configs") or {}

    warnings: list[str] = []
    default_shots, shots_of = _config_shots(path, config or {}, list(doc["results"]), warnings)
    group_names = set(groups) | {name for name, subs in group_subtasks.items() if subs}

    entries: dict[str, tuple[str, Any]] = {name: ("results", entry) for name, entry in doc["results"].items()}
    for name, entry in groups.items():
        entries.setdefault(name, ("groups", entry))

    scores: list[ScoreTuple] = []
    for task, (section, entry) in entries.items():
        if len(task) > MAX_NAME_LENGTH:
            raise InputError(path, section, f"a task name is longer than {MAX_NAME_LENGTH:,} characters")
        if not isinstance(entry, dict):
            where = f"{section}[{json.dumps(task, ensure_ascii=False)}]"
            raise InputError(path, where, f"expected an object of metrics, got {describe(entry)}")
        default = shots_of.get(task, default_shots)
        shots = _shots(path, task, n_shot, group_subtasks, default) if n_shot or group_subtasks else default
        if shots is None:  # the file gives none: the count given on the command line, if any
            shots = overrides.shots
        version = versions.get(task)
        _task_scores(
            path,
            section,
            task,
            entry,
            is_v04,
            (shots, _n_samples(path, task, n_samples, entry), task in group_names),
            entry_of(higher, task) if higher else {},
            None if version is None else str(version),
            scores,
        )
    if not scores:
        raise InputError(path, "results", "holds no metric values")

    all_shots = {shots for _, shots, _, _, _, _, _, is_group, _, _ in scores if not is_group}
    return EvaluationRecord(
        path=path,
        content_hash=content_hash,
        format="v0.4" if is_v04 else "v0.3",
        identity=identity,
        model_type=optional_text((config or {}).get("model")),
        model_name=optional_text(doc.get("model_name")) or optional_text(args.get("pretrained")) or identity.model,
        model_args=(config or {}).get("model_args"),
        lm_eval_version=optional_text(doc.get("lm_eval_version")),
        git_hash=optional_text(doc.get("git_hash")),
        date=_date(path, doc),
        num_fewshot=all_shots.pop() if len(all_shots) == 1 else None,
        sample_limit=_limit(path, (config or {}).get("limit")),
        batch_size=optional_text((config or {}).get("batch_size")),
        task_hashes=doc.get("task_hashes") if isinstance(doc.get("task_hashes"), dict) else None,
        task_versions=versions or None,
        config=config,
        warnings=warnings,
        output_types={
            task: cfg["output_type"]
            for task, cfg in configs.items()
            if isinstance(cfg, dict) and isinstance(cfg.get("output_type"), str)
        },
        scores=scores,
    )


def entry_of(section: dict, task: str) -> dict:
    """``section[task]`` when it is an object, else an empty one."""
    value = section.get(task)
    return value if isinstance(value, dict) else {}


def _task_scores(
    path: str,
    section: str,
    task: str,
    entry: dict[str, Any],
    is_v04: bool,
    counts: tuple[int | None, int | None, bool],
    higher: dict[str, Any],
    version: str | None,
    out: list[ScoreTuple],
) -> None:
    """Append one task's scores to ``out``; ``counts`` are its shots, documents and whether it is a group.

    The hot loop of ingest (a Pythia file holds 170 scores): numbers are taken as
    they are, and a field's name is only spelled out for an error.
    """
    shots, documents, is_group = counts
    per_metric = entry.get("sample_count")
    per_metric = per_metric if isinstance(per_metric, dict) else {}
    for key, raw in entry.items():
        if key in _ENTRY_METADATA:
            continue
        if is_v04:
            name, comma, filt = key.rpartition(",")
            if not comma or name.endswith(_STDERR):
                continue  # v0.4 metric keys always carry a filter; anything else is metadata
            err_key = f"{name}{_STDERR},{filt}"
        else:
            if key.endswith(_STDERR):
                continue
            name, filt, err_key = key, "none", key + _STDERR
        if len(key) > MAX_NAME_LENGTH:
            raise InputError(
                path, _where(section, task), f"a metric name is longer than {MAX_NAME_LENGTH:,} characters"
            )
        # a score: a number; NaN is stored as NULL (None), ±inf as it is
        if type(raw) is float:
            value = raw if raw == raw else None
        else:
            value = _number(path, _where(section, task, key), raw, "a number")
        # a stderr: as a score, and "N/A" or null (lm-eval cannot estimate it) is NULL too
        raw_err = entry.get(err_key)
        if type(raw_err) is float:
            stderr = raw_err if raw_err == raw_err else None
        elif raw_err is None or raw_err == "N/A":
            stderr = None
        else:
            stderr = _number(path, _where(section, task, err_key), raw_err, 'a number or "N/A"')
        n = documents
        if key in per_metric:  # groups, from v0.4.13 on
            n = _int_or_none(path, f'{_where(section, task)}["sample_count"][{json.dumps(key)}]', per_metric[key])
        hib = higher.get(name)
        # a plain tuple in ScoreRow's order (see ScoreRow)
        out.append((task, shots, name, filt, value, stderr, n, is_group, hib if type(hib) is bool else None, version))


def _where(section: str, task: str, key: str | None = None) -> str:
    where = f"{section}[{json.dumps(task, ensure_ascii=False)}]"
    return where if key is None else f"{where}[{json.dumps(key)}]"


def _number(path: str, field: str, raw: Any, expected: str) -> float | None:
    """A value that is not a float: an integer as a float, anything else an error."""
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise InputError(path, field, f"expected {expected}, got {describe(raw)}")
    return _as_double(path, field, raw)


def _as_double(path: str, field: str, raw: int | float) -> float:
    try:
        return float(raw)
    except OverflowError:  # an integer that jsontext.loads would have refused, from another parser
        raise InputError(path, field, f"{str(raw)[:20]}... does not fit a DOUBLE") from None


def _config_shots(
    path: str, config: dict[str, Any], tasks: list[str], warnings: list[str]
) -> tuple[int | None, dict[str, int | None]]:
    """``config.num_fewshot``: one count for every task, or (a v0.3-era fork) a list, one per task in order.

    Returns the default count and the counts by task. A list whose length is
    not the number of tasks leaves every count NULL, with a warning.
    """
    raw = config.get("num_fewshot")
    if not isinstance(raw, list):
        return _int_or_none(path, "config.num_fewshot", raw), {}
    counts = [_int_or_none(path, f"config.num_fewshot[{i}]", item) for i, item in enumerate(raw)]
    named = config.get("tasks")
    if isinstance(named, list) and all(isinstance(t, str) for t in named) and len(named) == len(counts):
        return None, dict(zip(named, counts, strict=True))
    if len(counts) == len(tasks):
        return None, dict(zip(tasks, counts, strict=True))
    warnings.append(
        f"{path}: config.num_fewshot: {len(counts)} shot counts for {len(tasks)} tasks; shots stored as NULL"
    )
    return None, {}


def _shots(path: str, task: str, n_shot: dict, group_subtasks: dict, default: int | None) -> int | None:
    if task in n_shot:
        return _int_or_none(path, f"n-shot[{json.dumps(task)}]", n_shot[task])
    subs = [sub for sub in group_subtasks.get(task) or [] if sub in n_shot]
    found = {_int_or_none(path, f"n-shot[{json.dumps(sub)}]", n_shot[sub]) for sub in subs}
    if len(found) == 1:
        return found.pop()
    return default


def _n_samples(path: str, task: str, n_samples: dict, entry: dict) -> int | None:
    counts = n_samples.get(task)
    if isinstance(counts, dict) and "effective" in counts:
        return _int_or_none(path, f'n-samples[{json.dumps(task)}]["effective"]', counts["effective"])
    if isinstance(entry.get("sample_len"), int) and not isinstance(entry.get("sample_len"), bool):
        return entry["sample_len"]
    return None


def _int_or_none(path: str, field: str, raw: Any) -> int | None:
    """A count (shots, documents): a non-negative integer that fits the store's columns."""
    return count(path, field, raw, limit=2**31)


def _limit(path: str, raw: Any) -> float | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise InputError(path, "config.limit", f"expected a number or null, got {describe(raw)}")
    value = _as_double(path, "config.limit", raw)
    return None if math.isnan(value) else value


def _date(path: str, doc: dict) -> dt.datetime | None:
    raw = doc.get("date")
    if isinstance(raw, int | float) and not isinstance(raw, bool) and math.isfinite(raw):
        try:
            return dt.datetime.fromtimestamp(raw, dt.UTC).replace(tzinfo=None)
        except (OverflowError, OSError, ValueError):
            raise InputError(path, "date", f"not a Unix time: {raw!r}") from None
    match = _FILE_TS.search(Path(path).name)
    if match:
        stamp = match.group(1)
        try:
            return dt.datetime.strptime(stamp, "%Y-%m-%dT%H-%M-%S.%f" if "." in stamp else "%Y-%m-%dT%H-%M-%S")
        except ValueError:  # a name that only looks like a timestamp
            return None
    return None


def _is_v04(doc: dict) -> bool:
    if any(k in doc for k in ("n-shot", "configs", "n-samples", "lm_eval_version", "group_subtasks")):
        return True
    # Every metric key of a v0.4 entry has a comma, none of a v0.3 one: the first entry with a metric tells.
    for entry in doc["results"].values():
        if isinstance(entry, dict):
            keys = [key for key in entry if key not in _ENTRY_METADATA]
            if keys:
                return any("," in key for key in keys)
    return False


def _optional_object(path: str, doc: dict, key: str) -> dict | None:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InputError(path, key, f"expected an object, got {describe(value)}")
    return value
