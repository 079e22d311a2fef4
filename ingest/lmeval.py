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

Every problem raises :class:`~ood_store.errors.InputError` naming the file
and the field.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from pathlib import Path
from typing import Any

from ood_store.errors import InputError
from ood_store.ingest.identity import Overrides, identify, parse_model_args
from ood_store.ingest.jsontext import describe, optional_text
from ood_store.ingest.records import EvaluationRecord, ScoreRow
from ood_store.ingest.values import count

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
    identity = identify(args, config or {}, doc, overrides)
    if identity is None:
        raise InputError(
            path,
            "config.model_args",
            "names no model (no pretrained=, no model_name): cannot tell which run it is; pass `run`",
        )
    if identity.step is not None and not -(2**63) <= identity.step < 2**63:
        raise InputError(path, "config.model_args", f"step {identity.step} is out of range; pass `step`")

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

    default_shots = _int_or_none(path, "config.num_fewshot", (config or {}).get("num_fewshot"))
    group_names = set(groups) | {name for name, subs in group_subtasks.items() if subs}

    entries: dict[str, tuple[str, Any]] = {name: ("results", entry) for name, entry in doc["results"].items()}
    for name, entry in groups.items():
        entries.setdefault(name, ("groups", entry))

    scores: list[ScoreRow] = []
    for task, (section, entry) in entries.items():
        where = f"{section}[{json.dumps(task, ensure_ascii=False)}]"
        if not isinstance(entry, dict):
            raise InputError(path, where, f"expected an object of metrics, got {describe(entry)}")
        shots = _shots(path, task, n_shot, group_subtasks, default_shots)
        count = _n_samples(path, task, n_samples, entry)
        version = versions.get(task)
        hib = entry_of(higher, task)
        for metric, filt, value, stderr, key in _metrics(path, where, entry, is_v04):
            per_metric = entry.get("sample_count")
            if isinstance(per_metric, dict) and key in per_metric:  # groups, from v0.4.13 on
                n = _int_or_none(path, f'{where}["sample_count"][{json.dumps(key)}]', per_metric[key])
            else:
                n = count
            scores.append(
                ScoreRow(
                    task=task,
                    num_fewshot=shots,
                    metric=metric,
                    filter=filt,
                    value=value,
                    stderr=stderr,
                    n_samples=n,
                    is_group=task in group_names,
                    higher_is_better=hib.get(metric) if isinstance(hib.get(metric), bool) else None,
                    task_version=None if version is None else str(version),
                )
            )
    if not scores:
        raise InputError(path, "results", "holds no metric values")

    all_shots = {row.num_fewshot for row in scores if not row.is_group}
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


def _metrics(path: str, where: str, entry: dict[str, Any], is_v04: bool):
    """Yield (metric, filter, value, stderr, key) for one task's entry."""
    values: dict[tuple[str, str], tuple[Any, str]] = {}
    stderrs: dict[tuple[str, str], tuple[Any, str]] = {}
    for key, raw in entry.items():
        if key in _ENTRY_METADATA:
            continue
        if is_v04:
            if "," not in key:
                continue  # v0.4 metric keys always carry a filter; anything else is metadata
            name, filt = key.rsplit(",", 1)
        else:
            name, filt = key, "none"
        if name.endswith(_STDERR):
            stderrs[(name[: -len(_STDERR)], filt)] = (raw, key)
        else:
            values[(name, filt)] = (raw, key)
    for (name, filt), (raw, key) in values.items():
        value = _value(path, where, key, raw)
        stderr = None
        if (name, filt) in stderrs:
            raw_err, err_key = stderrs[(name, filt)]
            stderr = _stderr(path, where, err_key, raw_err)
        yield name, filt, value, stderr, key


def _value(path: str, where: str, key: str, raw: Any) -> float:
    if type(raw) is float and math.isfinite(raw):
        return raw
    field = f"{where}[{json.dumps(key)}]"
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise InputError(path, field, f"expected a number, got {describe(raw)}")
    value = float(raw)
    if math.isnan(value):
        raise InputError(path, field, "value is NaN")
    if math.isinf(value):
        raise InputError(path, field, "value is infinite")
    return value


def _stderr(path: str, where: str, key: str, raw: Any) -> float | None:
    if raw is None or raw == "N/A":
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise InputError(path, f"{where}[{json.dumps(key)}]", f'expected a number or "N/A", got {describe(raw)}')
    value = float(raw)
    return None if math.isnan(value) else value


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
    return float(raw)


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
    return any(isinstance(entry, dict) and any("," in key for key in entry) for entry in doc["results"].values())


def _optional_object(path: str, doc: dict, key: str) -> dict | None:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InputError(path, key, f"expected an object, got {describe(value)}")
    return value
