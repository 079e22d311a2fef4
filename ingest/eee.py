"""Reads Every Eval Ever (EEE) aggregate files (schema 0.3.0) into EvaluationRecords.

An EEE file holds one evaluation of one model: ``model_info`` and a list of
``evaluation_results``, each a score of one metric on one evaluation. EEE has no
notion of a training checkpoint, so ood-store uses one convention, written by
``ood-store export-eee`` (:mod:`ood_store._export.eee`) and read here:

* ``model_info.additional_details`` (all values strings) holds
  ``ood_store.run``, ``ood_store.step`` (absent for a final model),
  ``ood_store.campaign`` (when known) and ``ood_store.attributes`` (the run's
  attributes as a JSON object); ``revision`` and ``model_args`` as lm-eval gave them.
* ``source_metadata.additional_details["ood_store.content_hash"]`` is the
  evaluation's content hash in the store it came from, so that an evaluation
  exported and imported again is recognised as the same one; the file's name and
  ``evaluation_id`` are a UUID derived from it.
* Each result's ``evaluation_name`` is the task; its filter (lm-eval's, ``none``
  by default) is ``metric_config.additional_details.filter``, its shots
  ``generation_config.additional_details.num_fewshot``.

Files without these keys (from other tools, such as EEE's own converters) are
read by the same rules ``ingest`` applies to lm-eval files: the run is
``model_info.id``, the step comes from a ``revision`` naming one (``step1000``)
in ``model_info.additional_details``; a result named ``task/filter`` with an
``evaluation_result_id`` of ``metric:filter`` (the lm-eval converter's
spelling) has that filter.

Files are validated against EEE's ``eval.schema.json`` (a copy of version
0.3.0 of the ``every-eval-ever`` package, MIT licence, © 2026 EvalEval, is
``eee_eval.schema.json`` beside this module) with ``jsonschema``, in the
``eee`` extra.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from ood_store._errors import InputError
from ood_store._ingest.identity import Identity, Overrides, identify
from ood_store._ingest.jsontext import describe, optional_text
from ood_store._ingest.records import EvaluationRecord, ScoreRow
from ood_store._ingest.values import count, optional_score_value, score_value, timestamp

SCHEMA_VERSION = "0.3.0"
SOURCE_FORMAT = "eee"
# The keys of the convention (see the module docstring).
RUN, STEP, CAMPAIGN, ATTRIBUTES = "ood_store.run", "ood_store.step", "ood_store.campaign", "ood_store.attributes"
CONTENT_HASH, SOURCE, MODEL_TYPE = "ood_store.content_hash", "ood_store.source_format", "ood_store.model_type"
IS_GROUP, TASK_VERSION, DIRECTION = "ood_store.is_group", "ood_store.task_version", "ood_store.direction"
FILTER, SHOTS = "filter", "num_fewshot"
#: eval_library.name of each source format, and back.
LIBRARY = {"lm-eval": "lm_eval", "inspect": "inspect_ai", "wandb": "wandb"}


def is_eee(doc: Any) -> bool:
    """Whether a parsed JSON document is an EEE aggregate file."""
    return isinstance(doc, dict) and "evaluation_results" in doc and "model_info" in doc and "schema_version" in doc


@cache
def _validator() -> Any:
    import jsonschema

    schema = json.loads(resources.files(__package__).joinpath("eee_eval.schema.json").read_text("utf-8"))
    return jsonschema.Draft7Validator(schema)


def validate(path: str, doc: Any) -> None:
    """Check ``doc`` against EEE's schema; the first problem is an InputError naming its field."""
    try:
        import jsonschema
    except ImportError:
        raise InputError(
            path, None, "reading Every Eval Ever files needs jsonschema: pip install 'ood-store[eee]'"
        ) from None
    error = jsonschema.exceptions.best_match(_validator().iter_errors(doc))
    if error is None:
        return
    where = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in error.absolute_path).replace(".[", "[")
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else ""
        raise InputError(path, f"{where}.{missing}".lstrip("."), "missing (the EEE schema requires it)")
    if error.validator in ("oneOf", "anyOf"):
        message = "matches none of the forms the EEE schema allows"
    elif error.validator == "type":
        expected = " or ".join(json.dumps(t) for t in _as_list(error.validator_value))
        message = f"expected {expected}, got {describe(error.instance)}"
    elif error.validator == "enum":
        message = f"expected one of {', '.join(map(json.dumps, error.validator_value))}, got {describe(error.instance)}"
    else:
        message = error.message if len(error.message) <= 160 else error.message[:157] + "..."
    raise InputError(path, where or None, message)


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def parse_eee(path: str, digest: str, doc: dict[str, Any], overrides: Overrides) -> EvaluationRecord:
    """Validate an EEE file and turn it into one record."""
    validate(path, doc)
    model = doc["model_info"]
    details: dict[str, str] = model.get("additional_details") or {}
    source_details: dict[str, str] = doc["source_metadata"].get("additional_details") or {}
    identity = _identity(path, model, details, overrides)
    scores = _scores(path, doc["evaluation_results"])
    library = doc["eval_library"]
    content_hash = source_details.get(CONTENT_HASH) or digest
    shots = {row.num_fewshot for row in scores if not row.is_group}
    return EvaluationRecord(
        path=path,
        content_hash=content_hash,
        format=f"eee-{doc['schema_version']}",
        identity=identity,
        model_type=details.get(MODEL_TYPE) or optional_text((model.get("inference_engine") or {}).get("name")),
        model_name=model["name"],
        model_args=details.get("model_args"),
        lm_eval_version=library["version"] if library["name"] in ("lm_eval", "lm-evaluation-harness") else None,
        git_hash=None,
        date=timestamp(path, "evaluation_timestamp", doc.get("evaluation_timestamp")),
        num_fewshot=shots.pop() if len(shots) == 1 else None,
        sample_limit=None,
        batch_size=None,
        task_hashes=None,
        task_versions=None,
        config={
            key: doc[key] for key in ("evaluation_id", "source_metadata", "eval_library", "model_info") if key in doc
        },
        output_types={},
        scores=scores,
        source_format=SOURCE_FORMAT,
        campaign=details.get(CAMPAIGN),
        run_attributes=_attributes(path, details.get(ATTRIBUTES)),
    )


def _identity(path: str, model: dict[str, Any], details: dict[str, str], overrides: Overrides) -> Identity:
    if RUN in details:
        step = count(path, f"model_info.additional_details[{json.dumps(STEP)}]", details.get(STEP))
        source = "recorded"
        if overrides.run is not None or overrides.step is not None:
            source = "flags" if overrides.run is not None and overrides.step is not None else source + "+flags"
        return Identity(
            run=overrides.run if overrides.run is not None else details[RUN],
            step=overrides.step if overrides.step is not None else step,
            model=overrides.model or model["name"],
            revision=details.get("revision"),
            base_model=None,  # the run's base_model is one of its attributes
            source=source,
        )
    args = {"pretrained": model["id"], **({"revision": details["revision"]} if "revision" in details else {})}
    identity = identify(args, {}, {}, overrides)
    if identity is None:  # model_info.id is required by the schema, so identify always finds a run
        raise InputError(path, "model_info.id", "names no model")
    return identity


def _scores(path: str, results: list[dict[str, Any]]) -> list[ScoreRow]:
    rows: list[ScoreRow] = []
    seen: dict[tuple[str, str, str], int] = {}
    for index, result in enumerate(results):
        where = f"evaluation_results[{index}]"
        metric_config = result["metric_config"]
        metric_details = metric_config.get("additional_details") or {}
        task, filt = _task_and_filter(result, metric_details)
        metric = metric_config.get("metric_name") or metric_config.get("metric_id") or "score"
        key = (task, metric, filt)
        if key in seen:
            raise InputError(
                path,
                where,
                f"repeats task {task!r}, metric {metric!r}, filter {filt!r} of evaluation_results[{seen[key]}]",
            )
        seen[key] = index
        score = result["score_details"]
        uncertainty = score.get("uncertainty") or {}
        generation = ((result.get("generation_config") or {}).get("additional_details")) or {}
        rows.append(
            ScoreRow(
                task=task,
                num_fewshot=_shots(path, where, generation.get(SHOTS)),
                metric=metric,
                filter=filt,
                value=score_value(path, f"{where}.score_details.score", score["score"]),
                stderr=optional_score_value(
                    path,
                    f"{where}.score_details.uncertainty.standard_error.value",
                    (uncertainty.get("standard_error") or {}).get("value"),
                ),
                n_samples=uncertainty.get("num_samples"),
                is_group=metric_details.get(IS_GROUP) == "true",
                higher_is_better=None
                if metric_details.get(DIRECTION) == "assumed"
                else not metric_config["lower_is_better"],
                task_version=metric_details.get(TASK_VERSION),
            )
        )
    if not rows:
        raise InputError(path, "evaluation_results", "holds no results")
    return rows


def _task_and_filter(result: dict[str, Any], metric_details: dict[str, str]) -> tuple[str, str]:
    name: str = result["evaluation_name"]
    if FILTER in metric_details:
        return name, metric_details[FILTER]
    result_id = result.get("evaluation_result_id") or ""
    _, colon, filt = result_id.rpartition(":")
    if colon and filt and name.endswith("/" + filt):  # EEE's lm-eval converter: 'task/filter', 'metric:filter'
        return name[: -len(filt) - 1], filt
    return name, "none"


def _shots(path: str, where: str, raw: str | None) -> int | None:
    return count(path, f"{where}.generation_config.additional_details.num_fewshot", raw, limit=2**31)


def _attributes(path: str, raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    field = f"model_info.additional_details[{json.dumps(ATTRIBUTES)}]"
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(path, field, f"not a JSON object: {exc.msg}") from None
    if not isinstance(value, dict) or not all(isinstance(v, str | int | float | bool) for v in value.values()):
        raise InputError(path, field, "expected a JSON object of strings, numbers or booleans")
    return value
