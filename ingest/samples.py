"""Reads lm-eval per-sample files, ``samples_<task>_<timestamp>.jsonl``.

lm-eval (``--log_samples``) writes one such file per task next to
``results_<timestamp>.json``; each line is one document under one filter.
Log-likelihoods inside ``resps``/``filtered_resps`` are strings there
(``[["-1.23", "False"], ...]``): they are stored as DOUBLE and BOOLEAN lists.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from ood_store.errors import InputError
from ood_store.ingest import jsontext
from ood_store.ingest.jsontext import describe

# Keys of a sample line that are not per-sample metric values.
_FIXED = {
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
}

SAMPLE_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "task": pl.String,
    "doc_id": pl.Int64,
    "filter": pl.String,
    "target": pl.String,
    "loglikelihoods": pl.List(pl.Float64),
    "is_greedy": pl.List(pl.Boolean),
    "response": pl.String,
    "metrics": pl.List(pl.Struct({"key": pl.String, "value": pl.Float64})),
    "metrics_other": pl.String,
    "doc_hash": pl.String,
    "prompt_hash": pl.String,
    "target_hash": pl.String,
}


def samples_beside(results_path: Path) -> list[Path]:
    """The ``samples_<task>_<ts>.jsonl`` files written with ``results_<ts>.json``."""
    name = results_path.name
    if not (name.startswith("results_") and name.endswith(".json")):
        return []
    stamp = name[len("results_") : -len(".json")]
    return sorted(results_path.parent.glob(f"samples_*_{_glob_escape(stamp)}.jsonl"))


def results_beside(samples_path: Path) -> Path:
    """The results file a samples file belongs to (which may not exist)."""
    from lm_eval.utils import get_file_datetime

    return samples_path.parent / f"results_{get_file_datetime(samples_path.name)}.json"


def task_of(samples_path: Path) -> str:
    from lm_eval.utils import get_file_task_name

    return get_file_task_name(samples_path.name.removesuffix(".jsonl"))


def read_samples(path: Path, output_type: str | None) -> pl.DataFrame:
    """All rows of one samples file; raises InputError naming the line and field."""
    task = task_of(path)
    shown = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(shown, None, f"cannot read: {exc.strerror}") from None
    rows: list[tuple] = []
    seen: set[tuple[int, str]] = set()
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        sample = jsontext.loads(shown, where, line)
        if not isinstance(sample, dict):
            raise InputError(shown, where, "expected a JSON object")
        doc_id = _doc_id(shown, where, sample.get("doc_id"))
        filt = sample.get("filter", "none")
        if not isinstance(filt, str):
            raise InputError(shown, f"{where}: filter", f"expected a string, got {describe(filt)}")
        if (doc_id, filt) in seen:
            raise InputError(shown, f"{where}: doc_id", f"document {doc_id} appears twice under filter {filt!r}")
        seen.add((doc_id, filt))
        lls, greedy, response = _responses(shown, where, sample.get("filtered_resps"), output_type)
        metrics, other = _metric_values(sample)
        rows.append(
            (
                task,
                doc_id,
                filt,
                _as_text(sample.get("target")),
                lls,
                greedy,
                response,
                metrics,
                orjson.dumps(other).decode() if other else None,
                _opt_str(sample.get("doc_hash")),
                _opt_str(sample.get("prompt_hash")),
                _opt_str(sample.get("target_hash")),
            )
        )
    return pl.DataFrame(rows, schema=SAMPLE_SCHEMA, orient="row")


def _doc_id(path: str, where: str, raw: Any) -> int:
    value = None
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    elif isinstance(raw, str) and raw.strip().isdigit():
        value = int(raw)
    if value is None or not 0 <= value < 2**63:
        raise InputError(path, f"{where}: doc_id", f"expected a document index, got {describe(raw)}")
    return value


def _responses(path: str, where: str, raw: Any, output_type: str | None):
    """(log-likelihoods, is_greedy, response text) from ``filtered_resps``."""
    if raw is None:
        return None, None, None
    if not isinstance(raw, list):
        raw = [raw]
    if output_type == "loglikelihood_rolling" or (raw and all(_is_pair(r) for r in raw)):
        lls, greedy = [], []
        for item in raw:
            ll, g = (item[0], item[1]) if _is_pair(item) else (item, None)
            lls.append(_float(path, f"{where}: filtered_resps", ll))
            greedy.append(None if g is None else g in (True, "True", "true"))
        return lls, (greedy if any(g is not None for g in greedy) else None), None
    if all(isinstance(r, str) for r in raw):
        return None, None, raw[0] if len(raw) == 1 else orjson.dumps(raw).decode()
    return None, None, orjson.dumps(raw).decode()


def _is_pair(item: Any) -> bool:
    return isinstance(item, list | tuple) and len(item) == 2 and not isinstance(item[0], list | dict)


def _float(path: str, field: str, raw: Any) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise InputError(path, field, f"expected a log-likelihood, got {describe(raw)}") from None
    return value


def _metric_values(sample: dict) -> tuple[list[dict], dict]:
    names = sample.get("metrics")
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        names = [k for k in sample if k not in _FIXED]
    numbers, other = [], {}
    for name in names:
        if name not in sample:
            continue
        value = _number(sample[name])
        if value is None:
            other[name] = sample[name]
        else:
            numbers.append({"key": name, "value": value})
    return numbers, other


def _number(raw: Any) -> float | None:
    if isinstance(raw, bool):
        return float(raw)
    if isinstance(raw, int | float):
        return float(raw)
    if isinstance(raw, str):
        try:
            value = float(raw)
        except ValueError:
            return None
        return value if math.isfinite(value) else None
    return None


def _as_text(raw: Any) -> str | None:
    if raw is None or isinstance(raw, str):
        return raw
    return (
        orjson.dumps(raw, option=orjson.OPT_SERIALIZE_NUMPY).decode() if not isinstance(raw, int | float) else str(raw)
    )


def _opt_str(raw: Any) -> str | None:
    return None if raw is None else str(raw)


def _glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[]" else c for c in text)
