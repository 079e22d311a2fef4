"""Reads Every Eval Ever (EEE) aggregate files, schema 0.1.0 to 0.3.0, into EvaluationRecords.

An EEE file holds one evaluation of one model: ``model_info`` and a list of
``evaluation_results``, each a score of one metric on one evaluation.

**Versions.** Each file is validated against the schema of the version it
declares (``schema_version``), each shipped beside this module as EEE released it
(``eee-eval-<version>.schema.json``; every-eval-ever, MIT licence, © 2026
EvalEval): 0.1.0, 0.2.0, 0.2.1 and 0.2.2 from the tags of those names in
evaleval/every_eval_ever, 0.2.3 from its commit a91fcae (never tagged), 0.3.0 the
every-eval-ever package's own. A field a version lacks is NULL in the store
(0.1.0 and 0.2.0 have no ``eval_library``; before 0.2.2 a result has no
``metric_name``, whose score is then metric ``score``; 0.1.0 has no
``evaluation_timestamp`` or ``uncertainty``), and every message names the
version (``... (EEE schema 0.2.0 requires it)``). A version EEE never released,
or one newer than 0.3.0, is refused in one line naming it.

**ood-store's convention** (written by ``ood-store export-eee``,
:mod:`ood_store._export.eee`): ``model_info.additional_details`` holds
``ood_store.run``, ``ood_store.step``, ``ood_store.campaign``,
``ood_store.attributes``; ``source_metadata.additional_details`` holds
``ood_store.content_hash`` and ``ood_store.evaluation``, the evaluation's row
(source path, ``identity_from``, ``model_args`` as given, git hash, batch size,
task versions, lm-eval version, the scores EEE cannot hold, ...) as JSON, so that
an evaluation exported and read back is the same evaluation, row for row; its
per-sample rows are the samples file beside it (``<uuid>_samples.jsonl``, EEE's
instance-level schema, each row's ``metadata["ood_store.sample"]``). Each result's
filter, shots, group flag and task version are in its ``metric_config`` /
``generation_config`` ``additional_details``.

**Other tools' files** are read by the rules of :mod:`~ood_store._ingest.identity`:

* EEE's lm-eval converter (``eval_library.name`` ``lm_eval``): run and step from
  ``model_info.additional_details.model_args`` as lm-eval gave them (string or
  dict), and its ``revision``; a result named ``task/filter`` with the id
  ``metric:filter`` has that filter; a ``<metric>_stderr`` result beside
  ``<metric>`` (what the converter makes of an lm-eval v0.3 file) is that
  metric's standard error; shots from ``generation_config.additional_details.
  num_fewshot``, which the converter writes for generation tasks only (the others
  have none: NULL, unless ``shots`` is given).
* EEE's inspect_ai converter (``eval_library.name`` ``inspect_ai``): the run is
  ``model_info.name`` less its provider, as ingesting the log itself gives it
  (:mod:`~ood_store._ingest.inspect_logs`); the task is the result's name less
  its package (``inspect_evals/pubmedqa`` is ``pubmedqa``); the id
  ``scorer:metric`` gives the scorer as the filter.
* Any other (the datastore's leaderboards, HELM, HAL): the run is
  ``model_info.id``, a step only from a ``revision`` in
  ``model_info.additional_details`` or the id's ``@revision``.
* EEE's HELM converter (schema 0.1.0): a result's metric is named in
  ``metric_config.evaluation_description`` (``exact_match``), which in 0.1.x names
  the metric when it is a name and nothing else does (leaderboards wrote prose
  there: metric ``score``); a HELM perturbation in
  ``score_details.details.perturbation`` is the result's filter, part of its
  identity as lm-eval's filter is: its name, any parameters, and what it was
  computed on (``robustness:worst``); a result without one has filter ``none``.

A result that repeats another byte for byte (EEE's HELM converter writes each
twice) is stored once, and the ingest report counts it (``collapsed``); a result
under the same task, metric and filter with anything else different is refused,
naming both.

The campaign of a file without ood-store's is its source
(``source_metadata.source_name``: the leaderboard or the harness), never a folder
of the datastore's layout. An imported file's whole document is kept as the
evaluation's ``config``, so that ``export-eee`` writes it back with its
provenance.
"""

from __future__ import annotations

import ast
import copy
import json
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ood_store._errors import InputError, install_hint
from ood_store._ingest import eee_samples
from ood_store._ingest.identity import Identity, Overrides, StepTooLong, identify, parse_model_args, with_flags
from ood_store._ingest.jsontext import as_object, describe, optional_text
from ood_store._ingest.limits import MAX_NAME_LENGTH
from ood_store._ingest.records import EvaluationRecord, Recorded, ScoreRow
from ood_store._ingest.values import count, optional_score_value, score_value, timestamp

#: The version ``export-eee`` writes.
SCHEMA_VERSION = "0.3.0"
#: The versions read, oldest first (each with its schema beside this module).
VERSIONS = ("0.1.0", "0.2.0", "0.2.1", "0.2.2", "0.2.3", "0.3.0")
SOURCE_FORMAT = "eee"
# The keys of the convention (see the module docstring).
RUN, STEP, CAMPAIGN, ATTRIBUTES = "ood_store.run", "ood_store.step", "ood_store.campaign", "ood_store.attributes"
CONTENT_HASH, SOURCE, MODEL_TYPE = "ood_store.content_hash", "ood_store.source_format", "ood_store.model_type"
EVALUATION = "ood_store.evaluation"
IS_GROUP, TASK_VERSION, DIRECTION = "ood_store.is_group", "ood_store.task_version", "ood_store.direction"
FILTER, SHOTS = "filter", "num_fewshot"
#: eval_library.name of each source format, and back.
LIBRARY = {"lm-eval": "lm_eval", "inspect": "inspect_ai", "wandb": "wandb"}
_LM_EVAL = ("lm_eval", "lm-evaluation-harness", "lm-eval")
_INSPECT = "inspect_ai"
_STDERR = "_stderr"
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
# A metric's name, not a description (see _described_metric).
_METRIC_NAME = re.compile(r"[A-Za-z][\w.@+-]{0,99}")
# The campaign rule, as ingest --dry-run names it.
CAMPAIGN_FROM_SOURCE = "source_metadata.source_name"
CAMPAIGN_RECORDED = "ood_store.campaign"


def is_eee(doc: Any) -> bool:
    """Whether a parsed JSON document is an EEE aggregate file."""
    return isinstance(doc, dict) and "evaluation_results" in doc and "model_info" in doc and "schema_version" in doc


def version_of(path: str, doc: dict[str, Any]) -> str:
    """The file's ``schema_version``, one of :data:`VERSIONS`; anything else is refused in one line naming it."""
    raw = doc.get("schema_version")
    if raw in VERSIONS:
        return str(raw)
    read = f"ood-store reads {', '.join(VERSIONS[:-1])} and {VERSIONS[-1]}"
    match = _VERSION.fullmatch(raw) if isinstance(raw, str) else None
    if match is None:
        raise InputError(path, "schema_version", f"expected an Every Eval Ever version such as \"{VERSIONS[-1]}\", "
                         f"got {describe(raw)} ({read})")  # fmt: skip
    declared = tuple(int(part) for part in match.groups())
    if declared > _parts(VERSIONS[-1]):
        why = f"is newer than the Every Eval Ever versions {read}; a newer ood-store may read it"
    elif declared < _parts(VERSIONS[0]):
        why = f"predates {VERSIONS[0]}, the oldest Every Eval Ever version ood-store reads"
    else:
        why = f"is not an Every Eval Ever release ({read})"
    raise InputError(path, "schema_version", f"{raw} {why}")


def _parts(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@cache
def _validator(version: str, nulls: bool = False) -> Any:
    import jsonschema

    name = f"eee-eval-{version}.schema.json"
    schema = json.loads(resources.files(__package__).joinpath(name).read_text("utf-8"))
    return jsonschema.Draft7Validator(_optional_nulls(schema) if nulls else schema)


def _optional_nulls(schema: Any) -> Any:
    """``schema`` with ``null`` allowed in every field an object may lack (not in its ``required``, or
    one of its ``additionalProperties``).

    Each such field's schema ``S`` becomes ``{"if": {"type": "null"}, "else": S}``, so that any other
    value is checked by ``S`` and refused in its words. The conditions of ``if`` are left as they are:
    a null ``score_type`` is not ``"levels"``.
    """
    if isinstance(schema, list):
        return [_optional_nulls(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: value if key == "if" else _optional_nulls(value) for key, value in schema.items()}
    fields = out.get("properties")
    if isinstance(fields, dict) and all(isinstance(field, dict) for field in fields.values()):
        required = set(schema.get("required", ()))
        out["properties"] = {
            name: field if name in required else {"if": {"type": "null"}, "else": field}
            for name, field in fields.items()
        }
    extra = out.get("additionalProperties")
    if isinstance(extra, dict):  # any other key (additional_details' values) may be left out too
        out["additionalProperties"] = {"if": {"type": "null"}, "else": extra}
    return out


def validate(path: str, doc: Any, version: str = SCHEMA_VERSION, nulls: bool = False) -> None:
    """Check ``doc`` against EEE's schema ``version``; the first problem is an InputError naming its field.

    With ``nulls``, a ``null`` in a field that an object may lack passes (see :func:`without_nulls`).
    """
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        raise InputError(path, None, f"reading Every Eval Ever files needs jsonschema: {install_hint('eee')}") from None
    error = _best_match(_validator(version, nulls), doc)
    if error is None:
        return
    where = _field(error.absolute_path)
    schema = f"EEE schema {version}"
    if error.validator == "required":
        raise InputError(path, _required_field(error), f"missing ({schema} requires it)")
    if error.validator in ("oneOf", "anyOf"):
        message = f"matches none of the forms {schema} allows"
    elif error.validator == "type":
        expected = " or ".join(json.dumps(t) for t in _as_list(error.validator_value))
        message = f"expected {expected}, got {describe(error.instance)} ({schema})"
    elif error.validator == "enum":
        allowed = ", ".join(map(json.dumps, error.validator_value))
        message = f"expected one of {allowed}, got {describe(error.instance)} ({schema})"
    elif error.validator == "additionalProperties":
        message = f"{_clipped(error.message)} ({schema})"
    else:
        message = f"{_clipped(error.message)} ({schema})"
    raise InputError(path, where or None, message)


def without_nulls(doc: dict[str, Any], version: str) -> dict[str, Any]:
    """``doc`` less the ``null`` values that its version's schema types otherwise, for a document that
    :func:`validate` passed with ``nulls``: each such null is in a field an object may lack.

    Real files carry ``null`` where their schema types a field as a string or a number (EEE's HELM
    converter writes 0.1.0 files with hundreds): a null in a field that may be left out is a missing
    value, NULL in the store; a null in a field the schema requires is refused as any other wrong type.
    """
    found = {
        tuple(error.absolute_path)
        for error in _type_errors(_validator(version).iter_errors(doc))
        if error.instance is None and error.absolute_path and isinstance(error.absolute_path[-1], str)
    }
    if not found:
        return doc
    cleaned = copy.deepcopy(doc)
    for where in found:
        parent: Any = cleaned
        for key in where[:-1]:
            parent = parent[key]
        parent.pop(where[-1], None)
    return cleaned


def _best_match(validator: Any, doc: Any) -> Any:
    import jsonschema

    return jsonschema.exceptions.best_match(validator.iter_errors(doc))


def _type_errors(errors: Any) -> Any:
    """The "type" errors among ``errors`` and the errors of the forms of their oneOf/anyOf, at any depth."""
    for error in errors:
        if error.validator == "type":
            yield error
        yield from _type_errors(error.context or ())


def _required_field(error: Any) -> str:
    missing = error.message.split("'")[1] if "'" in error.message else ""
    return f"{_field(error.absolute_path)}.{missing}".lstrip(".")


def _field(where: Any) -> str:
    """A path into a document as messages write it: ``evaluation_results[0].score_details``."""
    return ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in where).replace(".[", "[")


def _clipped(text: str) -> str:
    return text if len(text) <= 160 else text[:157] + "..."


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def producer_of(doc: dict[str, Any]) -> str | None:
    """Which tool wrote an EEE file, where its reading depends on it: ``ood-store``, ``lm_eval``,
    ``inspect_ai`` (EEE's converters), or None."""
    details = as_object(doc.get("model_info")).get("additional_details")
    if isinstance(details, dict) and RUN in details:
        return "ood-store"
    name = as_object(doc.get("eval_library")).get("name")
    source = as_object(doc.get("source_metadata")).get("source_name")
    if name in _LM_EVAL or source == "lm-evaluation-harness":
        return "lm_eval"
    if name == _INSPECT or source == _INSPECT:
        return _INSPECT
    return None


def parse_eee(
    path: str, digest: str, doc: dict[str, Any], overrides: Overrides, file: Path | None = None
) -> EvaluationRecord:
    """Validate an EEE file (of any version read) and turn it into one record; ``file`` is where it is,
    for the samples file beside it. Every problem is an InputError naming the file, the field and the
    schema version."""
    version = version_of(path, doc)
    try:
        return _parse(path, digest, doc, overrides, file, version)
    except InputError as exc:
        if f"EEE schema {version}" in exc.message or exc.path != path:  # (a samples file's names its own)
            raise
        raise InputError(exc.path, exc.field, f"{exc.message} (EEE schema {version})") from None


def _parse(
    path: str, digest: str, doc: dict[str, Any], overrides: Overrides, file: Path | None, version: str
) -> EvaluationRecord:
    validate(path, doc, version, nulls=True)
    doc = without_nulls(doc, version)
    producer = producer_of(doc)
    model = doc["model_info"]
    details = _strings(model.get("additional_details"))
    source_details = _strings(doc["source_metadata"].get("additional_details"))
    kept = _recorded_row(path, source_details.get(EVALUATION)) if producer == "ood-store" else {}
    try:
        identity = _identity(path, doc, producer, details, kept, overrides)
    except StepTooLong as exc:
        raise InputError(path, "model_info", f"{exc}; pass `step`") from None
    for what, name in (("run", identity.run), ("model", identity.model)):
        if name is not None and len(name) > MAX_NAME_LENGTH:
            raise InputError(path, "model_info", f"the {what} name is longer than {MAX_NAME_LENGTH:,} characters")
    scores, collapsed = _scores(path, version, doc["evaluation_results"], producer, overrides)
    scores += _kept_scores(path, kept.get("non_finite"))
    library = as_object(doc.get("eval_library"))
    shots = {row.num_fewshot for row in scores if not row.is_group}
    if producer == "ood-store" and CAMPAIGN in details:
        campaign, campaign_from = details[CAMPAIGN], CAMPAIGN_RECORDED
    elif producer == "ood-store":
        campaign, campaign_from = None, CAMPAIGN_RECORDED
    else:
        source = doc["source_metadata"]
        campaign = optional_text(source.get("source_name")) or optional_text(source.get("source_organization_name"))
        campaign_from = CAMPAIGN_FROM_SOURCE
    samples, warnings = eee_samples.read_beside(path, file, doc) if file is not None else (None, [])
    record = EvaluationRecord(
        path=path,
        content_hash=source_details.get(CONTENT_HASH) or digest,
        format=f"eee-{version}",
        identity=identity,
        model_type=details.get(MODEL_TYPE) or _engine(model),
        model_name=model["name"],
        model_args=_model_args(details.get("model_args")),
        lm_eval_version=_lm_eval_version(library),
        git_hash=None,
        date=timestamp(path, "evaluation_timestamp", doc.get("evaluation_timestamp")),
        num_fewshot=shots.pop() if len(shots) == 1 else None,
        sample_limit=None,
        batch_size=None,
        task_hashes=None,
        task_versions=None,
        config={key: value for key, value in doc.items() if key != "detailed_evaluation_results_per_samples"},
        output_types={},
        scores=scores,
        source_format=SOURCE_FORMAT,
        campaign=campaign,
        campaign_from=campaign_from,
        run_attributes=_attributes(path, details.get(ATTRIBUTES)),
        sample_rows=samples,
        warnings=warnings,
        collapsed=collapsed,
    )
    if kept:
        _restore(path, record, kept)
    return record


def _strings(value: Any) -> dict[str, str]:
    """An ``additional_details`` object's string values (0.1.0 and 0.2.0 allow any value; 0.2.1 on, strings)."""
    if not isinstance(value, dict):
        return {}
    return {key: item for key, item in value.items() if isinstance(item, str)}


def _engine(model: dict[str, Any]) -> str | None:
    engine = model.get("inference_engine")
    if isinstance(engine, dict):  # 0.2.0 on: {"name": ..., "version": ...}
        return optional_text(engine.get("name"))
    return optional_text(engine) if isinstance(engine, str) else None  # 0.1.0: a name


def _lm_eval_version(library: dict[str, Any]) -> str | None:
    version = optional_text(library.get("version"))
    return version if library.get("name") in _LM_EVAL and version not in (None, "unknown") else None


def _model_args(raw: str | None) -> Any:
    """``model_args`` as lm-eval gave them: the string as it is, or the object EEE's converter wrote as
    Python's ``str()`` of a dict (``{'pretrained': ...}``) or as JSON."""
    if raw is None:
        return None
    text = raw.strip()
    if text.startswith("{") and text.endswith("}"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return raw
        if isinstance(value, dict):
            return value
    return raw


def _identity(
    path: str,
    doc: dict[str, Any],
    producer: str | None,
    details: dict[str, str],
    kept: dict[str, Any],
    overrides: Overrides,
) -> Identity:
    model = doc["model_info"]
    if producer == "ood-store":
        field = f"model_info.additional_details[{json.dumps(STEP)}]"
        step = count(path, field, details.get(STEP))
        evidence = f"ood_store.run {details[RUN]}" + ("" if step is None else f", ood_store.step {step}")
        recorded = Identity(
            run=details[RUN],
            step=step,
            model=overrides.model or kept.get("checkpoint_model") or model["name"],
            revision=details.get("revision"),
            base_model=None,  # the run's base_model is one of its attributes
            source=str(kept.get("identity_from") or "recorded"),
            evidence=evidence,
        )
        return with_flags(recorded, overrides)
    revision = {"revision": details["revision"]} if "revision" in details else {}
    if producer == "lm_eval" and details.get("model_args"):
        args = _model_args(details["model_args"])
        try:
            parsed = parse_model_args(args)
        except TypeError:
            parsed = {}
        identity = identify(parsed, {"model_revision": details.get("revision")}, {"model_name": model["id"]},
                            overrides, where="model_info.additional_details.model_args")  # fmt: skip
    elif producer == _INSPECT:
        name = str(model["name"])
        shown = {"pretrained": "model_info.name less its provider ", "revision": "model_info.additional_details "}
        args = {"pretrained": name.split("/", 1)[1] if "/" in name else name, **revision}
        identity = identify(args, {}, {}, overrides, shown=shown)
    else:
        shown = {"pretrained": "model_info.id ", "revision": "model_info.additional_details "}
        identity = identify({"pretrained": model["id"], **revision}, {}, {}, overrides, shown=shown)
    if identity is None:  # model_info.id is required by every version, so identify always finds a run
        raise InputError(path, "model_info.id", "names no model")
    return identity


def _scores(
    path: str, version: str, results: list[dict[str, Any]], producer: str | None, overrides: Overrides
) -> tuple[list[ScoreRow], int]:
    """The file's scores, and how many results it repeats byte for byte (each stored once)."""
    rows: list[ScoreRow] = []
    seen: dict[tuple[str, str, str], int] = {}
    collapsed = 0
    for index, result in enumerate(results):
        where = f"evaluation_results[{index}]"
        metric_config = result["metric_config"]
        metric_details = _strings(metric_config.get("additional_details"))
        task, metric, filt = _key(path, where, version, result, metric_details, producer)
        for what, name in (("task", task), ("metric", metric), ("filter", filt)):
            if len(name) > MAX_NAME_LENGTH:
                raise InputError(path, where, f"the {what} name is longer than {MAX_NAME_LENGTH:,} characters")
        key = (task, metric, filt)
        if key in seen:
            first = seen[key]
            if result == results[first]:  # the same result written twice (EEE's HELM converter does)
                collapsed += 1
                continue
            raise InputError(path, where, f"repeats task {task!r}, metric {metric!r}, filter {filt!r} of "
                             f"evaluation_results[{first}] with {_difference(results[first], result)} "
                             f"(EEE schema {version})")  # fmt: skip
        seen[key] = index
        score = result["score_details"]
        if not isinstance(score, dict):  # 0.1.0's schema gives score_details no type
            raise InputError(path, f"{where}.score_details", f"expected an object, got {describe(score)}")
        uncertainty = as_object(score.get("uncertainty"))
        generation = _strings(as_object(result.get("generation_config")).get("additional_details"))
        shots = _shots(path, where, generation.get(SHOTS))
        rows.append(
            ScoreRow(
                task=task,
                num_fewshot=overrides.shots if shots is None else shots,
                metric=metric,
                filter=filt,
                value=score_value(path, f"{where}.score_details.score", score["score"]),
                stderr=optional_score_value(
                    path,
                    f"{where}.score_details.uncertainty.standard_error.value",
                    as_object(uncertainty.get("standard_error")).get("value"),
                ),
                n_samples=count(path, f"{where}.score_details.uncertainty.num_samples", uncertainty.get("num_samples")),
                is_group=metric_details.get(IS_GROUP) == "true",
                higher_is_better=None
                if metric_details.get(DIRECTION) == "assumed"
                else not metric_config["lower_is_better"],
                task_version=metric_details.get(TASK_VERSION),
            )
        )
    if not rows:
        raise InputError(path, "evaluation_results", f"holds no results (EEE schema {version})")
    return (_stderr_results(rows) if producer == "lm_eval" else rows), collapsed


def _key(
    path: str, where: str, version: str, result: dict[str, Any], metric_details: dict[str, str], producer: str | None
) -> tuple[str, str, str]:
    """(task, metric, filter) of one result, by the writer's convention."""
    name: str = result["evaluation_name"]
    metric_config = result["metric_config"]
    metric = (
        optional_text(metric_config.get("metric_name"))
        or optional_text(metric_config.get("metric_id"))
        or _described_metric(version, metric_config.get("evaluation_description"))
        or "score"
    )
    if FILTER in metric_details:
        return name, metric, metric_details[FILTER]
    result_id = result.get("evaluation_result_id") or ""
    if producer == _INSPECT:  # 'scorer:metric'; the task without its package ('inspect_evals/pubmedqa')
        scorer, colon, named = result_id.rpartition(":")
        return name.rsplit("/", 1)[-1], metric, scorer if colon and scorer and named == metric else "none"
    _, colon, filt = result_id.rpartition(":")
    if colon and filt and name.endswith("/" + filt):  # EEE's lm-eval converter: 'task/filter', 'metric:filter'
        return name[: -len(filt) - 1], metric, filt
    details = result["score_details"].get("details") if isinstance(result["score_details"], dict) else None
    return name, metric, _perturbation(path, f"{where}.score_details.details.perturbation", details) or "none"


def _described_metric(version: str, description: Any) -> str | None:
    """The metric 0.1.x names in ``evaluation_description`` (EEE's HELM converter wrote HELM's metric name
    there, ``exact_match``; leaderboards wrote prose, ``Accuracy on IFEval``, which names none)."""
    if not version.startswith("0.1.") or not isinstance(description, str):
        return None
    return description if _METRIC_NAME.fullmatch(description) else None


def _perturbation(path: str, field: str, details: Any) -> str | None:
    """A HELM perturbation (``score_details.details.perturbation``) as the filter of the result's identity:
    its name, any parameters but the robustness and fairness flags its name implies, and what it was
    computed on: ``robustness:worst``, ``typos(prob=0.1):perturbed``; None for none."""
    raw = details.get("perturbation") if isinstance(details, dict) else None
    if isinstance(raw, str) and raw.lstrip().startswith("{"):  # 0.2.x: details hold strings
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            raise InputError(path, field, "not a JSON object") from None
    if raw is None or raw == "":
        return None
    if isinstance(raw, str):
        return raw
    name = raw.get("name") if isinstance(raw, dict) else None
    if not isinstance(name, str) or not name:
        raise InputError(path, field, f"expected a perturbation with a name, got {describe(raw)}")
    extra = {k: v for k, v in raw.items() if k not in ("name", "robustness", "fairness", "computed_on")}
    params = ",".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in sorted(extra.items()))
    computed_on = raw.get("computed_on")
    return name + (f"({params})" if params else "") + (f":{computed_on}" if computed_on else "")


def _difference(first: dict[str, Any], other: dict[str, Any], where: str = "") -> str:
    """Where two results differ, as a message says it: ``another score_details.score (0.25, not 0.26)``."""
    keys = list(first) + [k for k in other if k not in first]
    for key in keys:
        a, b = first.get(key), other.get(key)
        if a == b:
            continue
        field = f"{where}.{key}" if where else key
        if isinstance(a, dict) and isinstance(b, dict):
            return _difference(a, b, field)
        return f"another {field} ({_clipped(json.dumps(b))}, not {_clipped(json.dumps(a))})"
    return "another value"


def _stderr_results(rows: list[ScoreRow]) -> list[ScoreRow]:
    """EEE's lm-eval converter keeps an lm-eval v0.3 ``acc_stderr`` as a result of its own: it is the
    standard error of ``acc`` beside it."""
    keys = {(row.task, row.metric, row.filter): i for i, row in enumerate(rows)}
    merged = list(rows)
    dropped = set()
    for i, row in enumerate(rows):
        if not row.metric.endswith(_STDERR):
            continue
        target = keys.get((row.task, row.metric[: -len(_STDERR)], row.filter))
        if target is not None and rows[target].stderr is None:
            merged[target] = rows[target]._replace(stderr=row.value)
            dropped.add(i)
    return [row for i, row in enumerate(merged) if i not in dropped]


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


# -- ood-store's record of the evaluation (source_metadata.additional_details["ood_store.evaluation"]) ---------

#: The fields of ``ood_store.evaluation`` and the JSON types each may have (None: null allowed).
RECORDED_FIELDS: dict[str, tuple[type, ...]] = {
    "source_path": (str,),
    "identity_from": (str,),
    "model_type": (str, type(None)),
    "model_name": (str, type(None)),
    "model_args": (str, dict, type(None)),
    "format": (str,),
    "lm_eval_version": (str, type(None)),
    "git_hash": (str, type(None)),
    "date": (str, type(None)),
    "sample_limit": (int, float, type(None)),
    "batch_size": (str, type(None)),
    "task_hashes": (dict, type(None)),
    "task_versions": (dict, type(None)),
    "config": (dict, type(None)),
    "samples_files": (list,),
    "ood_store_version": (str,),
    "source_format": (str,),
    "checkpoint_model": (str, type(None)),
    "non_finite": (list,),
}


def _recorded_row(path: str, raw: str | None) -> dict[str, Any]:
    """The evaluation's row as ood-store recorded it (empty for a file from before it did)."""
    if raw is None:
        return {}
    field = f"source_metadata.additional_details[{json.dumps(EVALUATION)}]"
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InputError(path, field, f"not a JSON object: {getattr(exc, 'msg', 'nested too deep')}") from None
    if not isinstance(value, dict):
        raise InputError(path, field, f"expected a JSON object, got {describe(value)}")
    for key, types in RECORDED_FIELDS.items():
        if key in value and (isinstance(value[key], bool) or not isinstance(value[key], types)):
            raise InputError(path, f"{field}.{key}", f"unexpected {describe(value[key])}")
    if not all(isinstance(item, str) for item in value.get("samples_files", [])):
        raise InputError(path, f"{field}.samples_files", "expected a list of paths")
    return value


def _restore(path: str, record: EvaluationRecord, kept: dict[str, Any]) -> None:
    """The evaluation's own row, as the store it came from held it."""
    field = f"source_metadata.additional_details[{json.dumps(EVALUATION)}]"
    record.format = kept.get("format", record.format)
    record.source_format = kept.get("source_format", record.source_format)
    for name in ("model_type", "model_name", "model_args", "lm_eval_version", "git_hash", "batch_size",
                 "task_hashes", "task_versions", "config"):  # fmt: skip
        if name in kept:
            setattr(record, name, kept[name])
    if "sample_limit" in kept:
        record.sample_limit = None if kept["sample_limit"] is None else float(kept["sample_limit"])
    if "date" in kept:
        record.date = timestamp(path, f"{field}.date", kept["date"])
    shots = {row[1] for row in record.scores if not row[7]}
    record.num_fewshot = shots.pop() if len(shots) == 1 else None
    record.recorded = Recorded(
        source_path=kept.get("source_path"),
        samples_files=tuple(kept.get("samples_files", ())),
        ood_store_version=kept.get("ood_store_version"),
    )


_NON_FINITE = {"NaN": None, "Infinity": float("inf"), "-Infinity": float("-inf")}


def _kept_scores(path: str, raw: Any) -> list[ScoreRow]:
    """The scores EEE cannot hold (NaN, ±Infinity), as ``ood_store.evaluation.non_finite`` lists them."""
    if not raw:
        return []
    field = f"source_metadata.additional_details[{json.dumps(EVALUATION)}].non_finite"
    rows = []
    for index, item in enumerate(raw):
        if not (isinstance(item, list) and len(item) == len(ScoreRow._fields) and item[4] in _NON_FINITE):
            raise InputError(path, f"{field}[{index}]", "expected a score row with NaN, Infinity or -Infinity")
        task, shots, metric, filt, value, stderr, n, is_group, higher, version = item
        if not (isinstance(task, str) and isinstance(metric, str) and isinstance(filt, str)):
            raise InputError(path, f"{field}[{index}]", "expected task, metric and filter names")
        rows.append(
            ScoreRow(
                task,
                count(path, f"{field}[{index}][1]", shots, limit=2**31),
                metric,
                filt,
                _NON_FINITE[value],
                optional_score_value(path, f"{field}[{index}][5]", stderr),
                count(path, f"{field}[{index}][6]", n),
                bool(is_group),
                higher if isinstance(higher, bool) else None,
                version if isinstance(version, str) else None,
            )
        )
    return rows
