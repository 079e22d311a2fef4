"""Exports the store's evaluations as Every Eval Ever (EEE) files, provenance and per-sample rows kept.

One file per evaluation (one checkpoint evaluated on its tasks), laid out as the
EEE datastore is, ``DIR/data/<collection>/<developer>/<model>/<uuid>.json``, so
that the folder validates with EEE's own validator and can be contributed as it
is. The convention for what EEE has no field for is
:mod:`ood_store._ingest.eee`'s, which reads these files back:

* **ood-store's own evaluations** (from lm-eval files, inspect_ai logs, W&B
  histories) are written in schema 0.3.0 as ``evaluation_run``\\ s of the
  ``source`` given; run, step, campaign and run attributes are in
  ``model_info.additional_details``, filters, shots, groups and task versions in
  each result, and the evaluation's whole row in
  ``source_metadata.additional_details["ood_store.evaluation"]``: ``model_args``
  as given (string or object), git hash, batch size, limit, task hashes and
  versions, the lm-eval version (``eval_library.version`` must be a string:
  ``unknown`` there, NULL again when read back), the source path, the config, and
  the scores EEE cannot hold (NaN, ±Infinity: EEE's score is a finite number).
  Its per-sample rows are the samples file beside it (``<uuid>_samples.jsonl``,
  :mod:`ood_store._ingest.eee_samples`), named by ``detailed_evaluation_results``.
* **Evaluations imported from EEE files** (a leaderboard's, a converter's) are
  written back as the document they came from, in its own schema version, with
  its source (``source_type``, ``evaluator_relationship``, ``source_name``, the
  organization), ``eval_library``, ``model_info``, every result's metric
  configuration (kind, unit, bounds) and ``source_data`` as they were; ood-store
  only adds its keys, so that reading the file again gives the same evaluation.

Reading an export back into a new store gives the same ``evaluations`` rows
(ids and ingest times aside), the same scores and the same samples. What EEE
cannot hold at all is listed in :attr:`EeeExport.not_written`: an evaluation
without a single finite score has no file (an EEE result needs one).

Everything in a file is a function of the store's content: the UUID (file name
and ``evaluation_id``) is derived from the evaluation's content hash, and the
timestamps are the evaluation's own (``date``, and ``ingested_at`` as the time the
record was retrieved), so exporting again writes the same bytes.
"""

from __future__ import annotations

import copy
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
from ood_store._counts import n
from ood_store._errors import OodStoreError, StoreError
from ood_store._ingest import eee, eee_samples
from ood_store._store import query
from ood_store._summary import Presented, Summary, first_rows

if TYPE_CHECKING:
    from ood_store._store import Database

RELATIONSHIPS = ("first_party", "third_party", "collaborative", "other")
# lm-eval and inspect_ai back-ends that run the model on the evaluator's own hardware.
_SELF_DEPLOYED = re.compile(r"^(hf|vllm|sglang|gguf|ggml|mamba|openvino|ipex|neuronx|nemo|steered|transformers)")
# Metrics for which lower is better, for files that do not say (lm-eval v0.3 has no higher_is_better).
_LOWER_IS_BETTER = re.compile(r"perplexity|ppl|bits_per_byte|bpb|loss|^ter$|error", re.IGNORECASE)
_UNPORTABLE = re.compile(r'[<>:"\\|?*\x00-\x1f]')
_ENGINES = {"hf": "transformers", "vllm": "vllm", "gguf": "llama.cpp", "sglang": "sglang"}
_NON_FINITE_TEXT = {math.inf: "Infinity", -math.inf: "-Infinity"}


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

    These describe ood-store's own evaluations; an evaluation imported from an EEE
    file keeps the source it came with.
    """

    collection: str = "ood-store"
    organization: str = "unknown"
    relationship: str = "first_party"


@dataclass(repr=False)
class EeeExport(Presented):
    """The files written (aggregate and samples files), what went into them, and what EEE cannot hold.

    ``not_finite`` counts the scores EEE's ``score`` cannot hold (NaN, ±Infinity): they are in
    each file's ``ood_store.evaluation`` record, which ``ingest`` reads back, not in its results.
    ``not_written`` names each evaluation that has no file, and why.
    """

    folder: Path
    files: list[Path] = field(default_factory=list)
    samples_files: list[Path] = field(default_factory=list)
    scores: int = 0
    samples: int = 0
    not_finite: int = 0
    imported: int = 0  # evaluations written back as the EEE document they came from
    not_written: list[str] = field(default_factory=list)

    def summary(self) -> Summary:
        """The counts in the title; the files written (aggregate files and their samples files); what has none."""
        import polars as pl

        samples = {path.parent / path.name.replace("_samples.jsonl", ".json") for path in self.samples_files}
        frame = pl.DataFrame(
            {"file": [str(p) for p in self.files], "samples_file": [p in samples for p in self.files]},
            schema={"file": pl.String, "samples_file": pl.Boolean},
        )
        shown, notes = first_rows(frame, "files", "report.files")
        if self.not_finite:
            notes += (f"{self.not_finite:,} scores EEE cannot hold (NaN, ±Infinity) are kept in each file's "
                      "ood_store.evaluation record.",)  # fmt: skip
        notes += tuple(f"Not written: {why}" for why in self.not_written)
        title = (
            f"EeeExport: {n(len(self.files), 'file')} under {self.folder} ({self.scores:,} scores, "
            f"{self.samples:,} samples)"
        )
        return Summary(title, shown, notes)


def _sql(name: str) -> str:
    return sqlfiles.load("ood_store._export", name)


def export_eee(
    store: Database,
    folder: str | os.PathLike[str],
    *,
    runs: Sequence[str] | None = None,
    source: EeeSource | None = None,
) -> EeeExport:
    """Write one EEE file per evaluation of ``runs`` (default: every run) under ``folder``/data/COLLECTION,
    with its per-sample rows as the samples file beside it.

    Parameters
    ----------
    store
        The store to export from (read-only is enough).
    folder
        Where ``data/<collection>/<developer>/<model>/<uuid>.json`` go (created if need be).
    runs
        Only these runs.
    source
        The collection and who made ood-store's own results (:class:`EeeSource`; by default
        collection ``ood-store``, organization ``unknown``, ``first_party``).
    """
    source = source or EeeSource()
    if source.relationship not in RELATIONSHIPS:
        raise OodStoreError(
            f"expected one of {', '.join(RELATIONSHIPS)}, got {source.relationship!r}", parameter="relationship"
        )
    collection = source.collection
    if not collection or "/" in collection or _UNPORTABLE.search(collection) or collection in (".", "..", "data"):
        raise OodStoreError(f"{collection!r} is not a portable folder name", parameter="collection")
    con = store.connection
    names = list(runs) if runs else None
    if names:
        missing = [row[0] for row in con.execute(_sql("missing_runs"), {"runs": names}).fetchall()]
        if missing:
            raise OodStoreError(f"no such run in the store: {', '.join(map(repr, missing))}", parameter="runs")
    evaluations = query.rows(con, _sql("eee_evaluations"), {"runs": names}).to_dicts()
    scores: dict[int, list[dict[str, Any]]] = {}
    ids = [e["evaluation_id"] for e in evaluations]
    for row in query.rows(con, _sql("eee_scores"), {"ids": ids}).to_dicts() if ids else []:
        scores.setdefault(row["evaluation_id"], []).append(row)
    report = EeeExport(Path(folder))
    for evaluation in evaluations:
        rows = scores.get(evaluation["evaluation_id"], [])
        finite = [r for r in rows if _finite(r["value"])]
        if not finite:
            report.not_written.append(
                f"{evaluation['run']} at step {evaluation['step']} ({evaluation['source_path']}): "
                f"no file: none of its {n(len(rows), 'score')} is a finite number, and an EEE result needs one"
            )
            continue
        report.not_finite += len(rows) - len(finite)
        samples = query.rows(con, _sql("eee_samples"), {"id": evaluation["evaluation_id"]}).to_dicts()
        _write(report, *_document(evaluation, rows, source), samples)
    return report


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _write(
    report: EeeExport, doc: dict[str, Any], relative: Path, imported: bool, samples: list[dict[str, Any]]
) -> None:
    path = report.folder / relative
    lines = _sample_lines(doc, samples)
    samples_path = path.with_name(f"{path.stem}{eee_samples.SUFFIX}")
    if lines:
        data = ("\n".join(lines) + "\n").encode("utf-8")
        doc["detailed_evaluation_results"] = {
            "format": "jsonl",
            "file_path": (relative.parent / samples_path.name).as_posix(),
            "hash_algorithm": "sha256",
            "checksum": hashlib.sha256(data).hexdigest(),
            "total_rows": len(lines),
        }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n", "utf-8")
        if lines:
            samples_path.write_bytes(data)
    except OSError as exc:
        raise StoreError(f"{path}: cannot write: {exc.strerror}") from None
    report.files.append(path)
    report.scores += sum(1 for r in doc["evaluation_results"] if _finite(r["score_details"]["score"]))
    report.imported += imported
    if lines:
        report.samples_files.append(samples_path)
        report.samples += len(samples)


def file_uuid(content_hash: str) -> uuid.UUID:
    """The UUID (version 4 form, as EEE file names need) that an evaluation's content hash gives."""
    return uuid.UUID(bytes=hashlib.sha256(content_hash.encode()).digest()[:16], version=4)


def _document(e: dict[str, Any], rows: list[dict[str, Any]], source: EeeSource) -> tuple[dict[str, Any], Path, bool]:
    """The EEE document of one evaluation, the path it goes to, and whether it is an imported one written back."""
    config = orjson.loads(e["config"]) if e["config"] else {}
    imported = (
        e["source_format"] == eee.SOURCE_FORMAT and eee.is_eee(config) and config.get("schema_version") in eee.VERSIONS
    )
    doc = _reissued(e, config) if imported else _own(e, rows, source)
    if not imported and e["source_format"] == eee.SOURCE_FORMAT:
        _kept_source(doc, config)
    name = doc["evaluation_id"] if not imported else str(file_uuid(e["content_hash"]))
    model_id, developer = _model_id(e["run"], e["family"])
    model_developer, _, model_name = model_id.partition("/")
    relative = Path(
        "data", source.collection, model_developer if model_name else developer, model_name or model_id, f"{name}.json"
    )
    record = _recorded(e, config, rows)
    doc["source_metadata"].setdefault("additional_details", {}).update(
        {eee.CONTENT_HASH: e["content_hash"], eee.EVALUATION: json.dumps(record, allow_nan=False)}
    )
    doc["model_info"].setdefault("additional_details", {}).update(_convention(e))
    return doc, relative, imported


def _own(e: dict[str, Any], rows: list[dict[str, Any]], source: EeeSource) -> dict[str, Any]:
    """An evaluation of ood-store's own (from lm-eval, inspect_ai, W&B) as an EEE 0.3.0 evaluation run."""
    model_id, developer = _model_id(e["run"], e["family"])
    when = _epoch(e["date"])
    return {
        "schema_version": eee.SCHEMA_VERSION,
        "evaluation_id": str(file_uuid(e["content_hash"])),
        **({"evaluation_timestamp": when} if when else {}),
        "retrieved_timestamp": _epoch(e["ingested_at"]),
        "source_metadata": {
            "source_name": "ood-store",
            "source_type": "evaluation_run",
            "source_organization_name": source.organization,
            "evaluator_relationship": source.relationship,
            "additional_details": {eee.SOURCE: e["source_format"], "ood_store.version": __version__},
        },
        "eval_library": {
            "name": eee.LIBRARY.get(e["source_format"], e["source_format"]),
            "version": e["lm_eval_version"] or "unknown",
        },
        "model_info": _model_info(e, model_id, developer),
        "evaluation_results": [_result(r, when) for r in rows if _finite(r["value"])],
    }


def _reissued(e: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """An evaluation imported from an EEE file: the document it came from, in schema 0.3.0 (:func:`upgraded`),
    or in its own version where it does not convert."""
    doc = copy.deepcopy(config)
    doc.pop("detailed_evaluation_results", None)  # its samples file is not ours to copy; ours is written anew
    for details in (doc["source_metadata"].get("additional_details"), doc["model_info"].get("additional_details")):
        for key in [k for k in (details or {}) if k.startswith("ood_store.")]:
            del details[key]
    if doc["schema_version"] == eee.SCHEMA_VERSION:
        return doc
    new = upgraded(doc)
    try:
        eee.validate("", new)
    except OodStoreError:
        return doc  # kept in its own version (EEE's validator checks 0.3.0 only)
    return new


def upgraded(doc: dict[str, Any]) -> dict[str, Any]:
    """An EEE document of 0.1.0 to 0.2.3 in schema 0.3.0, as EEE's own migration of its datastore does it
    (every_eval_ever.adapters.rewardbench.migrate_to_v030): the top-level ``source_data`` (0.1.0) goes into each
    result that has none (a list of URLs as ``url``; a result without any gets ``source_type`` ``other``);
    a missing ``eval_library`` (before 0.2.1) is ``unknown``; a ``model_info.inference_platform`` of
    ``unknown`` is dropped and ``deployment_type``/``model_availability`` default to ``unknown``;
    ``additional_details`` and ``score_details.details`` values become text (JSON for anything but a
    string), and a ``generation_config``'s keys other than ``generation_args`` go into its
    ``additional_details``. The original document is what ``ood_store.evaluation`` keeps."""
    new = copy.deepcopy(doc)
    new["schema_version"] = eee.SCHEMA_VERSION
    new.pop("detailed_evaluation_results_per_samples", None)
    top = new.pop("source_data", None)
    new.setdefault("eval_library", {"name": "unknown", "version": "unknown"})
    for part in ("source_metadata", "eval_library"):
        _as_text(new[part], "additional_details")
    model = new["model_info"]
    if model.get("inference_platform") == "unknown":
        del model["inference_platform"]
    if isinstance(model.get("inference_engine"), str):
        model["inference_engine"] = {"name": model["inference_engine"]}
    details = _as_text(model, "additional_details", create=True)
    details.setdefault("deployment_type", "unknown")
    details.setdefault("model_availability", "unknown")
    for result in new["evaluation_results"]:
        if "source_data" not in result:
            result["source_data"] = _source_data(top, result["evaluation_name"])
        _as_text(result["metric_config"], "additional_details")
        _as_text(result["score_details"], "details")
        generation = result.get("generation_config")
        if isinstance(generation, dict):
            extra = {k: v for k, v in generation.items() if k not in ("generation_args", "additional_details")}
            kept = {k: v for k, v in generation.items() if k in ("generation_args", "additional_details")}
            kept.setdefault("additional_details", {}).update(extra)
            result["generation_config"] = kept
            _as_text(kept, "additional_details")
            if not kept["additional_details"]:
                del kept["additional_details"]
            if not kept:
                del result["generation_config"]
    return new


def _as_text(holder: dict[str, Any], key: str, *, create: bool = False) -> dict[str, str]:
    """``holder[key]`` (an object) with every value as text; created empty with ``create``."""
    value = holder.get(key)
    if not isinstance(value, dict):
        if not create:
            return {}
        value = holder[key] = {}
    holder[key] = {k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in value.items()}
    return holder[key]


def _source_data(top: Any, name: str) -> dict[str, Any]:
    """A result's ``source_data`` from a 0.1.0 file's top-level one."""
    if isinstance(top, list) and top and all(isinstance(u, str) for u in top):
        return {"dataset_name": name, "source_type": "url", "url": list(top)}
    if isinstance(top, dict):
        return {"dataset_name": name, **top}
    return {"dataset_name": name, "source_type": "other"}


def _kept_source(doc: dict[str, Any], config: dict[str, Any]) -> None:
    """An EEE evaluation ingested before ood-store kept whole documents (its config holds the file's
    source_metadata and eval_library only): those, instead of ood-store's."""
    for part in ("source_metadata", "eval_library"):
        if isinstance(config.get(part), dict):
            kept = copy.deepcopy(config[part])
            if part == "source_metadata":
                kept["additional_details"] = {
                    **(kept.get("additional_details") or {}),
                    **doc[part]["additional_details"],
                }
            doc[part] = kept


def _convention(e: dict[str, Any]) -> dict[str, str]:
    """ood-store's keys in ``model_info.additional_details``: run, step, campaign, run attributes."""
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
    return {
        eee.RUN: e["run"],
        **({eee.STEP: str(e["step"])} if e["step"] is not None else {}),
        **({eee.CAMPAIGN: e["campaign"]} if e["campaign"] else {}),
        **({eee.ATTRIBUTES: json.dumps(attributes, sort_keys=True)} if attributes else {}),
    }


def _recorded(e: dict[str, Any], config: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The evaluation's row for ``ood_store.evaluation`` (:data:`ood_store._ingest.eee.RECORDED_FIELDS`)."""
    return {
        "source_path": e["source_path"],
        "identity_from": e["identity_from"],
        "model_type": e["model_type"],
        "model_name": e["model_name"],
        "model_args": orjson.loads(e["model_args"]) if e["model_args"] is not None else None,
        "format": e["format"],
        "lm_eval_version": e["lm_eval_version"],
        "git_hash": e["git_hash"],
        "date": e["date"].isoformat() if e["date"] is not None else None,
        "sample_limit": e["sample_limit"] if e["sample_limit"] is None or math.isfinite(e["sample_limit"]) else None,
        "batch_size": e["batch_size"],
        "task_hashes": orjson.loads(e["task_hashes"]) if e["task_hashes"] else None,
        "task_versions": orjson.loads(e["task_versions"]) if e["task_versions"] else None,
        "config": config or None,
        "samples_files": list(e["samples_files"]),
        "ood_store_version": e["ood_store_version"],
        "source_format": e["source_format"],
        "checkpoint_model": e["checkpoint_model"],
        "non_finite": [
            [
                r["task"],
                r["num_fewshot"],
                r["metric"],
                r["filter"],
                _NON_FINITE_TEXT.get(r["value"], "NaN"),
                r["stderr"] if _finite(r["stderr"]) else None,
                r["n_samples"],
                r["is_group"],
                r["higher_is_better"],
                r["task_version"],
            ]  # fmt: skip
            for r in rows
            if not _finite(r["value"])
        ],
    }


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


def _model_info(e: dict[str, Any], model_id: str, developer: str) -> dict[str, Any]:
    details = {
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
    """``model_args`` for EEE's string field: lm-eval's string as is, an object as JSON text (``ood_store.evaluation``
    keeps the value itself)."""
    value = orjson.loads(stored)
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _result_id(row: dict[str, Any]) -> str:
    return f"{row['task']}/{row['metric']},{row['filter']}"


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
    if _finite(row["stderr"]):
        uncertainty["standard_error"] = {"value": row["stderr"]}
    if row["n_samples"] is not None:
        uncertainty["num_samples"] = row["n_samples"]
    result: dict[str, Any] = {
        "evaluation_result_id": _result_id(row),
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


def _sample_lines(doc: dict[str, Any], samples: list[dict[str, Any]]) -> list[str]:
    """The samples file's lines: one per finite per-sample metric of each row (a row without one: one line of
    score 0 pointing at no result, as EEE's lm-eval converter writes it), each carrying the whole row."""
    results = {r.get("evaluation_result_id") for r in doc["evaluation_results"]}
    lines = []
    for sample in samples:
        keys, values = sample["metric_keys"], sample["metric_values"]
        metrics = None if keys is None else dict(zip(keys, values, strict=True))
        row = {
            "task": sample["task"],
            "doc_id": sample["doc_id"],
            "filter": sample["filter"],
            "target": sample["target"],
            "loglikelihoods": sample["loglikelihoods"],
            "is_greedy": sample["is_greedy"],
            "response": sample["response"],
            "metrics": metrics,
            "metrics_other": sample["metrics_other"],
            "doc_hash": sample["doc_hash"],
            "prompt_hash": sample["prompt_hash"],
            "target_hash": sample["target_hash"],
        }
        text = eee_samples.encode(row)
        scored = [(m, v) for m, v in (metrics or {}).items() if _finite(v)] or [(None, 0.0)]
        for metric, value in scored:
            result = _result_id({"task": sample["task"], "metric": metric, "filter": sample["filter"]})
            line = {
                "schema_version": eee.SCHEMA_VERSION,
                "evaluation_id": doc["evaluation_id"],
                "model_id": doc["model_info"]["id"],
                "evaluation_name": sample["task"],
                **({"evaluation_result_id": result} if metric is not None and result in results else {}),
                "sample_id": str(sample["doc_id"]),
                "interaction_type": "single_turn",
                "input": {"raw": "", "reference": [] if sample["target"] is None else [sample["target"]]},
                "output": {"raw": [] if sample["response"] is None else [sample["response"]]},
                "answer_attribution": [],
                "evaluation": {"score": value, "is_correct": value == 1.0},
                "metadata": {eee_samples.SAMPLE: text},
            }
            lines.append(json.dumps(line, ensure_ascii=False, allow_nan=False))
    return lines
