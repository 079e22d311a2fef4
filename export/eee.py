"""Exports the store's evaluations as Every Eval Ever (EEE) aggregate files (schema 0.3.0).

One file per evaluation (one checkpoint evaluated on its tasks), laid out as the
EEE datastore is, ``DIR/data/<collection>/<developer>/<model>/<uuid>.json``, so
that the folder validates with EEE's own validator and can be contributed as it
is. The convention for what EEE has no field for (run, step, campaign, run
attributes, filters, shots) is :mod:`ood_store._ingest.eee`'s, which reads these
files back: export, then ingest into a new store, gives the same ``scores``.

Everything in a file is a function of the store's content: the UUID (file name
and ``evaluation_id``) is derived from the evaluation's content hash, and the
timestamps are the evaluation's own (``date``, and ``ingested_at`` as the time the
record was retrieved), so exporting again writes the same bytes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ood_store import __version__
from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import OodStoreError, StoreError
from ood_store._ingest import eee
from ood_store._store import query

if TYPE_CHECKING:
    from ood_store._store import Database

RELATIONSHIPS = ("first_party", "third_party", "collaborative", "other")
# lm-eval and inspect_ai back-ends that run the model on the evaluator's own hardware.
_SELF_DEPLOYED = re.compile(r"^(hf|vllm|sglang|gguf|ggml|mamba|openvino|ipex|neuronx|nemo|steered|transformers)")
# Metrics for which lower is better, for files that do not say (lm-eval v0.3 has no higher_is_better).
_LOWER_IS_BETTER = re.compile(r"perplexity|ppl|bits_per_byte|bpb|loss|^ter$|error", re.IGNORECASE)
_UNPORTABLE = re.compile(r'[<>:"\\|?*\x00-\x1f]')
_ENGINES = {"hf": "transformers", "vllm": "vllm", "gguf": "llama.cpp", "sglang": "sglang"}


@dataclass(frozen=True)
class EeeSource:
    """Who made the results, as EEE's ``source_metadata`` says, and the datastore collection they go to.

    Parameters
    ----------
    collection
        The datastore collection (EEE's benchmark folder), e.g. the study's name.
    organization
        ``source_metadata.source_organization_name``: who made the results.
    relationship
        ``source_metadata.evaluator_relationship``: one of ``first_party``, ``third_party``,
        ``collaborative``, ``other``.
    """

    collection: str = "ood-store"
    organization: str = "unknown"
    relationship: str = "first_party"


@dataclass
class EeeExport:
    """The files written, and the scores left out (EEE holds finite numbers only)."""

    folder: Path
    files: list[Path] = field(default_factory=list)
    scores: int = 0
    not_finite: int = 0


def _sql(name: str) -> str:
    return sqlfiles.load("ood_store._export", name)


def export_eee(
    store: Database,
    folder: str | os.PathLike[str],
    *,
    runs: Sequence[str] | None = None,
    source: EeeSource | None = None,
) -> EeeExport:
    """Write one EEE file per evaluation of ``runs`` (default: every run) under ``folder``/data/COLLECTION.

    Parameters
    ----------
    store
        The store to export from (read-only is enough).
    folder
        Where ``data/<collection>/<developer>/<model>/<uuid>.json`` go (created if need be).
    runs
        Only these runs.
    source
        The collection and who made the results (:class:`EeeSource`; by default collection
        ``ood-store``, organization ``unknown``, ``first_party``).
    """
    source = source or EeeSource()
    collection, organization, relationship = source.collection, source.organization, source.relationship
    if relationship not in RELATIONSHIPS:
        raise OodStoreError(
            f"expected one of {', '.join(RELATIONSHIPS)}, got {relationship!r}", parameter="relationship"
        )
    if not collection or "/" in collection or _UNPORTABLE.search(collection) or collection in (".", "..", "data"):
        raise OodStoreError(f"{collection!r} is not a portable folder name", parameter="collection")
    names = list(runs) if runs else None
    if names:
        missing = [row[0] for row in store.connection.execute(_sql("missing_runs"), {"runs": names}).fetchall()]
        if missing:
            raise OodStoreError(f"no such run in the store: {', '.join(map(repr, missing))}", parameter="runs")
    evaluations = query.rows(store.connection, _sql("eee_evaluations"), {"runs": names}).to_dicts()
    scores: dict[int, list[dict[str, Any]]] = {}
    ids = [e["evaluation_id"] for e in evaluations]
    for row in query.rows(store.connection, _sql("eee_scores"), {"ids": ids}).to_dicts() if ids else []:
        scores.setdefault(row["evaluation_id"], []).append(row)
    report = EeeExport(Path(folder))
    for evaluation in evaluations:
        rows = scores.get(evaluation["evaluation_id"], [])
        finite = [r for r in rows if r["value"] is not None and math.isfinite(r["value"])]
        report.not_finite += len(rows) - len(finite)
        if not finite:
            continue
        doc, relative = _document(evaluation, finite, collection, organization, relationship)
        path = report.folder / relative
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", "utf-8")
        except OSError as exc:
            raise StoreError(f"{path}: cannot write: {exc.strerror}") from None
        report.files.append(path)
        report.scores += len(finite)
    return report


def file_uuid(content_hash: str) -> uuid.UUID:
    """The UUID (version 4 form, as EEE file names need) that an evaluation's content hash gives."""
    return uuid.UUID(bytes=hashlib.sha256(content_hash.encode()).digest()[:16], version=4)


def _document(
    e: dict[str, Any], rows: list[dict[str, Any]], collection: str, organization: str, relationship: str
) -> tuple[dict[str, Any], Path]:
    model_id, developer = _model_id(e["run"], e["family"])
    name = str(file_uuid(e["content_hash"]))
    model_developer, _, model_name = model_id.partition("/")
    relative = Path(
        "data", collection, model_developer if model_name else developer, model_name or model_id, f"{name}.json"
    )
    when = _epoch(e["date"])
    config = orjson.loads(e["config"]) if e["config"] else {}
    doc: dict[str, Any] = {
        "schema_version": eee.SCHEMA_VERSION,
        "evaluation_id": name,
        **({"evaluation_timestamp": when} if when else {}),
        "retrieved_timestamp": _epoch(e["ingested_at"]),
        "source_metadata": {
            "source_name": "ood-store",
            "source_type": "evaluation_run",
            "source_organization_name": organization,
            "evaluator_relationship": relationship,
            "additional_details": {
                eee.CONTENT_HASH: e["content_hash"],
                eee.SOURCE: e["source_format"],
                "ood_store.version": __version__,
            },
        },
        "eval_library": _library(e, config),
        "model_info": _model_info(e, model_id, developer),
        "evaluation_results": [_result(r, when) for r in rows],
    }
    return doc, relative


def _model_id(run: str, family: str | None) -> tuple[str, str]:
    """EEE's ``model_info.id`` for a run (at most ``developer/model``, portable names), and the developer
    of a flat one. The run itself is kept in ``additional_details``."""
    parts = [_UNPORTABLE.sub("_", p).rstrip(". ") or "_" for p in run.split("/") if p not in ("", ".", "..")]
    parts = parts or ["_"]
    if len(parts) >= 2:
        return "/".join(parts[-2:]), parts[-2]
    developer = _UNPORTABLE.sub("_", family).strip() if family else ""
    return parts[0], developer or "local"


def _epoch(value: dt.datetime | None) -> str | None:
    if value is None:
        return None
    seconds = value.replace(tzinfo=dt.UTC).timestamp()
    return f"{seconds:.6f}".rstrip("0").rstrip(".")


def _library(e: dict[str, Any], config: dict[str, Any]) -> dict[str, str]:
    if e["source_format"] == eee.SOURCE_FORMAT and isinstance(config.get("eval_library"), dict):
        return {k: str(v) for k, v in config["eval_library"].items() if k in ("name", "version")}
    return {
        "name": eee.LIBRARY.get(e["source_format"], e["source_format"]),
        "version": e["lm_eval_version"] or "unknown",
    }


def _model_info(e: dict[str, Any], model_id: str, developer: str) -> dict[str, Any]:
    attributes = {
        key: value
        for key, value in {
            "base_model": e["base_model"],
            "family": e["family"],
            "size": e["size"],
            "in_domain_task": e["in_domain_task"],
            "seed": e["seed"],
            **(orjson.loads(e["attributes"]) if e["attributes"] else {}),
        }.items()
        if value is not None
    }
    details = {
        eee.RUN: e["run"],
        **({eee.STEP: str(e["step"])} if e["step"] is not None else {}),
        **({eee.CAMPAIGN: e["campaign"]} if e["campaign"] else {}),
        **({eee.ATTRIBUTES: json.dumps(attributes, sort_keys=True)} if attributes else {}),
        **({eee.MODEL_TYPE: e["model_type"]} if e["model_type"] else {}),
        **({"revision": e["revision"]} if e["revision"] else {}),
        **({"model_args": _model_args(e["model_args"])} if e["model_args"] not in (None, "null") else {}),
        "deployment_type": "self_deployed" if _SELF_DEPLOYED.match(e["model_type"] or "") else "unknown",
        "model_availability": "unknown",
    }
    info: dict[str, Any] = {
        "name": e["checkpoint_model"] or e["model_name"] or e["run"],
        "id": model_id,
        "developer": developer,
    }
    engine = _ENGINES.get((e["model_type"] or "").split("-")[0])
    if engine:
        info["inference_engine"] = {"name": engine}
    info["additional_details"] = details
    return info


def _model_args(stored: str) -> str:
    """``model_args`` as lm-eval gave them: its string as is, an object as JSON text."""
    value = orjson.loads(stored)
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _result(row: dict[str, Any], when: str | None) -> dict[str, Any]:
    metric, filt, task = row["metric"], row["filter"], row["task"]
    higher = row["higher_is_better"]
    metric_details = {eee.FILTER: filt}
    if higher is None:
        metric_details[eee.DIRECTION] = "assumed"
    if row["is_group"]:
        metric_details[eee.IS_GROUP] = "true"
    if row["task_version"] is not None:
        metric_details[eee.TASK_VERSION] = row["task_version"]
    uncertainty: dict[str, Any] = {}
    if row["stderr"] is not None and math.isfinite(row["stderr"]):
        uncertainty["standard_error"] = {"value": row["stderr"]}
    if row["n_samples"] is not None:
        uncertainty["num_samples"] = row["n_samples"]
    result: dict[str, Any] = {
        "evaluation_result_id": f"{task}/{metric},{filt}",
        "evaluation_name": task,
        "source_data": {"dataset_name": task, "source_type": "other"},
        **({"evaluation_timestamp": when} if when else {}),
        "metric_config": {
            "evaluation_description": f"{metric} on {task}" + ("" if filt == "none" else f" (filter: {filt})"),
            "metric_name": metric,
            "lower_is_better": (not higher) if higher is not None else bool(_LOWER_IS_BETTER.search(metric)),
            "additional_details": metric_details,
        },
        "score_details": {"score": row["value"], **({"uncertainty": uncertainty} if uncertainty else {})},
    }
    if row["num_fewshot"] is not None:
        result["generation_config"] = {"additional_details": {eee.SHOTS: str(row["num_fewshot"])}}
    return result
