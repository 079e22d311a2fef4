"""The per-sample rows of an evaluation in an Every Eval Ever samples file, both ways.

EEE keeps per-sample rows beside the aggregate file, ``<uuid>_samples.jsonl``, one
JSON object per line in its instance-level schema (``detailed_evaluation_results``
names the file, its sha256 and its row count). ``ood-store export-eee`` writes one
line per per-sample metric of each ``samples`` row (EEE asks for one per aggregate
result a sample counts towards; a row without a finite metric gets one line of score
0 pointing at no result, as EEE's own lm-eval converter writes it), each with the
whole ``samples`` row in ``metadata["ood_store.sample"]`` as JSON: log-likelihoods,
greedy flags, response, every metric (NaN and ±Infinity included, which EEE's
``score`` cannot hold) and the hashes. Reading such a file gives the rows back as
they were.

Lines other tools wrote carry no such row; they are counted in a warning, not read
into ``samples`` (EEE's instance rows do not hold what ``samples`` does: the
log-likelihoods of each choice, lm-eval's document index).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import polars as pl

from ood_store._counts import n
from ood_store._errors import InputError
from ood_store._ingest import jsontext
from ood_store._ingest.jsontext import describe
from ood_store._ingest.regular import read_regular
from ood_store._ingest.values import double

SAMPLE = "ood_store.sample"
SUFFIX = "_samples.jsonl"

#: ``samples``' columns as a frame holds them (the metrics map as two lists).
FRAME_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "task": pl.String,
    "doc_id": pl.Int64,
    "filter": pl.String,
    "target": pl.String,
    "loglikelihoods": pl.List(pl.Float64),
    "is_greedy": pl.List(pl.Boolean),
    "response": pl.String,
    "metric_keys": pl.List(pl.String),
    "metric_values": pl.List(pl.Float64),
    "metrics_other": pl.String,
    "doc_hash": pl.String,
    "prompt_hash": pl.String,
    "target_hash": pl.String,
}
_TEXT = ("target", "response", "metrics_other", "doc_hash", "prompt_hash", "target_hash")


def encode(row: dict[str, Any]) -> str:
    """One ``samples`` row (``metrics`` a dict) as the text of ``metadata["ood_store.sample"]``."""
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"), allow_nan=True)


def samples_path(aggregate: Path, doc: dict[str, Any]) -> Path | None:
    """The samples file of an aggregate file: the one ``detailed_evaluation_results`` names, in the same
    folder, else ``<name>_samples.jsonl`` when it is there."""
    pointer = doc.get("detailed_evaluation_results")
    if isinstance(pointer, dict) and isinstance(pointer.get("file_path"), str) and pointer["file_path"]:
        return aggregate.parent / pointer["file_path"].rsplit("/", 1)[-1]
    beside = aggregate.parent / f"{aggregate.stem}{SUFFIX}"
    return beside if beside.is_file() else None


def read_beside(shown: str, aggregate: Path, doc: dict[str, Any]) -> tuple[pl.DataFrame | None, list[str]]:
    """The ``samples`` rows of the samples file beside ``aggregate`` (None if there is none or it holds no
    ood-store rows), and warnings about what was not read."""
    path = samples_path(aggregate, doc)
    if path is None:
        return None, []
    name = str(path)
    if not path.exists():
        return None, [f"{shown}: its samples file {path.name} is not beside it: no per-sample rows stored"]
    data = read_regular(path, name)
    pointer = doc.get("detailed_evaluation_results")
    rows: dict[tuple[str, int, str], dict[str, Any]] = {}
    foreign = 0
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        item = jsontext.loads(name, where, line)
        metadata = item.get("metadata") if isinstance(item, dict) else None
        text = metadata.get(SAMPLE) if isinstance(metadata, dict) else None
        if text is None:
            foreign += 1
            continue
        row = _decoded(name, where, text)
        key = (row["task"], row["doc_id"], row["filter"])
        if key in rows and rows[key] != row:
            raise InputError(name, where, f"task {key[0]!r}, document {key[1]}, filter {key[2]!r} again, "
                             "with other values")  # fmt: skip
        rows[key] = row
    checksum = pointer.get("checksum") if isinstance(pointer, dict) else None
    algorithm = pointer.get("hash_algorithm", "sha256") if isinstance(pointer, dict) else None
    if rows and isinstance(checksum, str) and algorithm == "sha256" and hashlib.sha256(data).hexdigest() != checksum:
        raise InputError(shown, "detailed_evaluation_results.checksum", f"{path.name} is not the samples file "
                         "it names (its sha256 differs)")  # fmt: skip
    warnings = []
    if foreign:
        warnings.append(
            f"{shown}: {n(foreign, 'line')} of its samples file {path.name} are not ood-store's (no "
            f'metadata["{SAMPLE}"]): not read into samples'
        )
    if not rows:
        return None, warnings
    return _frame(list(rows.values())), warnings


def _decoded(name: str, where: str, text: Any) -> dict[str, Any]:
    """One ``samples`` row from its JSON text, each field checked."""
    field = f'{where}: metadata["{SAMPLE}"]'
    if not isinstance(text, str):
        raise InputError(name, field, f"expected JSON text, got {describe(text)}")
    row = jsontext.loads(name, field, text.encode("utf-8", "surrogatepass"))
    if not isinstance(row, dict):
        raise InputError(name, field, f"expected an object, got {describe(row)}")
    for key in ("task", "filter"):
        if not isinstance(row.get(key), str) or not row[key]:
            raise InputError(name, f"{field}.{key}", f"expected a name, got {describe(row.get(key))}")
    doc_id = row.get("doc_id")
    if isinstance(doc_id, bool) or not isinstance(doc_id, int) or not 0 <= doc_id < 2**63:
        raise InputError(name, f"{field}.doc_id", f"expected a document index, got {describe(doc_id)}")
    for key in _TEXT:
        if row.get(key) is not None and not isinstance(row[key], str):
            raise InputError(name, f"{field}.{key}", f"expected text or null, got {describe(row[key])}")
    out = {key: row.get(key) for key in ("task", "doc_id", "filter", *_TEXT)}
    out["loglikelihoods"] = _list(name, f"{field}.loglikelihoods", row.get("loglikelihoods"), _number)
    out["is_greedy"] = _list(name, f"{field}.is_greedy", row.get("is_greedy"), _boolean)
    metrics = row.get("metrics")
    if metrics is not None and not isinstance(metrics, dict):
        raise InputError(name, f"{field}.metrics", f"expected an object or null, got {describe(metrics)}")
    if metrics is None:
        out["metric_keys"] = out["metric_values"] = None
    else:
        out["metric_keys"] = list(metrics)
        out["metric_values"] = [_number(name, f"{field}.metrics.{key}", value) for key, value in metrics.items()]
    return out


def _list(name: str, field: str, value: Any, item: Any) -> list[Any] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise InputError(name, field, f"expected a list or null, got {describe(value)}")
    return [item(name, f"{field}[{i}]", v) for i, v in enumerate(value)]


def _number(name: str, field: str, value: Any) -> float | None:
    return None if value is None else double(name, field, value)


def _boolean(name: str, field: str, value: Any) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise InputError(name, field, f"expected true, false or null, got {describe(value)}")
    return value


def _frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=FRAME_SCHEMA)
