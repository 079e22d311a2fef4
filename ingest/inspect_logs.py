"""Reads inspect_ai evaluation logs (``.eval`` or ``.json``, any file name) into EvaluationRecords.

Each log is read with inspect_ai's own reader, ``inspect_ai.log.read_eval_log``
(its header only; the whole log for a JSON log whose header it cannot stream, such
as one without ``version``), in the ``inspect`` extra; without inspect_ai the
message names the log and its format version. One log is one evaluation, mapped
as EEE's inspect_ai converter maps it, so that a log ingested itself and the same
log through that converter (:mod:`~ood_store._ingest.eee`) give the same run,
task, metric and filter:

* **task**: the log's task (its display name where it has one, as the converter
  takes it) without its package prefix (``inspect_evals/pubmedqa`` is ``pubmedqa``);
* **run and step**: the model as the provider named it in the first sample's output
  (``openai/gpt-4o-mini`` answered as ``gpt-4o-mini-2024-07-18``), without the
  provider (``hf/``, ``openai/``, ...), with ``model_path`` from the model args
  standing for it when given; then the rules of lm-eval files
  (:mod:`~ood_store._ingest.identity`): a ``revision`` in the model args naming a
  step (``-M revision=step1000``), or a model path ending in a checkpoint folder
  (``checkpoint-500``), gives the step;
* **scores**: every metric of every scorer in ``results.scores``, the headline one
  first: metric as inspect_ai names it (``accuracy``, ``mean``), the scorer's name
  as the filter (``match``, ``includes``; ``scorer/reducer`` where one scorer has
  several reducers). A scorer's ``stderr`` (else its ``bootstrap_stderr``) is the
  standard error of its other metrics; its ``std``/``stddev`` describe them and are
  not scores, as in the converter (unless they are all the scorer has);
* a log whose status is not ``success`` (an error, a cancelled run) is rejected;
* the header of a ``.eval`` log keeps the limits of every JSON input
  (:mod:`~ood_store._ingest.jsontext`: nesting, numbers beyond DOUBLE, invalid
  Unicode), as a ``.json`` log does, so that its numbers follow the rule of
  lm-eval files: NaN stored as NULL, ±Infinity as it is, ``1e999`` a bad value.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from ood_store._errors import InputError, first_line, install_hint
from ood_store._ingest import jsontext
from ood_store._ingest.identity import Identity, Overrides, StepTooLong, identify
from ood_store._ingest.jsontext import as_object
from ood_store._ingest.limits import MAX_NAME_LENGTH
from ood_store._ingest.records import EvaluationRecord, ScoreRow
from ood_store._ingest.values import optional_score_value, score_value, timestamp

SOURCE_FORMAT = "inspect"
# Metrics that describe a scorer's others (EEE's inspect_ai converter's reading): standard errors, by
# preference, and dispersion.
_STDERRS = ("stderr", "bootstrap_stderr")
_DISPERSION = ("std", "stddev")


def read_log(
    path: Path, shown: str, digest: str, overrides: Overrides, doc: dict[str, Any] | None = None
) -> EvaluationRecord:
    """Read and validate one inspect_ai log; ``doc`` is a JSON log already parsed. Every problem is an
    InputError naming the file and field."""
    kind = "json" if doc is not None else "eval"  # by content, whatever the file's name ends with
    log = _read(path, shown, doc, kind)
    if doc is None:
        _check_header(path, shown)
    spec = log.eval
    if log.status != "success":
        error = f": {first_line(Exception(log.error.message))}" if log.error and log.error.message else ""
        raise InputError(shown, "status", f"{log.status!r}, not 'success': the evaluation did not finish{error}")
    model_args = dict(spec.model_args or {})
    try:
        identity = _identity(shown, str(spec.model), _answered_by(path, doc, kind), model_args, overrides)
    except StepTooLong as exc:
        raise InputError(shown, "eval.model_args", f"{exc}; pass `step`") from None
    task = str(getattr(spec, "task_display_name", None) or spec.task).rsplit("/", 1)[-1]
    for what, name, where in (("task", task, "eval.task"), ("run", identity.run, "eval.model")):
        if len(name) > MAX_NAME_LENGTH:
            raise InputError(shown, where, f"the {what} name is longer than {MAX_NAME_LENGTH:,} characters")
    version = None if spec.task_version is None else str(spec.task_version)
    completed = log.results.completed_samples if log.results else None
    scores = _scores(shown, task, log.results.scores if log.results else [], completed, version, overrides)
    return EvaluationRecord(
        path=shown,
        content_hash=digest,
        format=f"inspect-log-v{log.version}",
        identity=identity,
        model_type=str(spec.model).split("/", 1)[0],
        model_name=str(spec.model),
        model_args=model_args or None,
        lm_eval_version=None,
        git_hash=spec.revision.commit if spec.revision else None,
        date=timestamp(shown, "eval.created", spec.created),
        num_fewshot=overrides.shots,
        sample_limit=None,
        batch_size=None,
        task_hashes=None,
        task_versions={task: spec.task_version},
        config={
            "eval_id": getattr(spec, "eval_id", None),
            "run_id": spec.run_id,
            "task": spec.task,
            "task_args": _plain(spec.task_args),
            "packages": _plain(spec.packages),
        },
        output_types={},
        scores=scores,
        source_format=SOURCE_FORMAT,
    )


def _read(path: Path, shown: str, doc: dict[str, Any] | None, kind: Any) -> Any:
    """The log's header by inspect_ai's reader (the whole JSON log when its header cannot be streamed)."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise InputError(
            shown, None, f"an inspect_ai log{_version(path, doc)}: reading it needs inspect_ai: "
            f"{install_hint('inspect')}"
        ) from None  # fmt: skip
    try:
        return read_eval_log(str(path), header_only=True, format=kind)
    except Exception as exc:  # inspect_ai raises many kinds (zip, JSON, pydantic validation): all are "unreadable"
        if doc is None:
            raise InputError(shown, None, f"inspect_ai cannot read the log: {first_line(exc)}") from None
        header_error = exc
    try:  # a JSON log whose header inspect_ai cannot stream (no "version" first): its whole-log reader
        return read_eval_log(str(path), format=kind)
    except Exception as exc:
        raise InputError(shown, None, f"inspect_ai cannot read the log: {first_line(exc)} "
                         f"(its header: {first_line(header_error)})") from None  # fmt: skip


def _version(path: Path, doc: dict[str, Any] | None) -> str:
    """`` (log format version 2, written by inspect_ai 0.3.41)`` from what can be read without inspect_ai."""
    header = doc
    if header is None:
        try:
            with zipfile.ZipFile(path) as archive:
                header = json.loads(archive.read("header.json"))
        except Exception:  # a zstd member (which zipfile reads only once inspect_ai is imported), or no header
            return " (.eval)"
    if not isinstance(header, dict):
        return ""
    packages = as_object(as_object(header.get("eval")).get("packages"))
    parts = [f"log format version {header['version']}" if "version" in header else "no log format version"]
    if isinstance(packages.get("inspect_ai"), str):
        parts.append(f"written by inspect_ai {packages['inspect_ai']}")
    return f" ({', '.join(parts)})"


def _check_header(path: Path, shown: str) -> None:
    """The JSON limits on a ``.eval`` log's ``header.json`` (importing inspect_ai taught zipfile its zstd)."""
    try:
        with zipfile.ZipFile(path) as archive:
            data = archive.read("header.json")
    except KeyError:  # a log without a header (inspect_ai reads its journal): nothing more to check
        return
    except (OSError, zipfile.BadZipFile) as exc:
        raise InputError(shown, None, f"cannot read the log: {first_line(exc)}") from None
    jsontext.loads(shown, "header.json", data)


def _answered_by(path: Path, doc: dict[str, Any] | None, kind: Any) -> str | None:
    """The model the first sample's output names (``gpt-4o-mini-2024-07-18``), as EEE's converter reads it."""
    if doc is not None:
        samples = doc.get("samples")
        first = as_object(samples[0]) if isinstance(samples, list) and samples else {}
        model = as_object(first.get("output")).get("model")
        return model if isinstance(model, str) else None
    try:
        from inspect_ai.log import read_eval_log_sample, read_eval_log_sample_summaries

        summaries = read_eval_log_sample_summaries(str(path), format=kind)
        if not summaries:
            return None
        sample = read_eval_log_sample(str(path), summaries[0].id, summaries[0].epoch, format=kind)
        return sample.output.model if sample.output and isinstance(sample.output.model, str) else None
    except Exception:  # a log without samples (or whose samples inspect_ai cannot read): the header's model
        return None


def _identity(
    shown: str, model: str, answered: str | None, model_args: dict[str, Any], overrides: Overrides
) -> Identity:
    provider, _, name = model.partition("/")
    # The model as the provider named it: a bare name (the dated version of an alias); a name that repeats
    # the provider (mockllm's "mockllm/model") names nothing more.
    refined = answered is not None and answered not in ("", name, provider) and not answered.startswith(provider + "/")
    if refined and name and answered is not None:
        name = answered
    args = {key: value for key, value in model_args.items() if isinstance(value, str | int | float)}
    args["pretrained"] = str(model_args.get("model_path") or name or provider)
    named = f"eval.model {model}" + (f" answered as {answered}" if refined else "") + ", less its provider: "
    shown_as = {"pretrained": "eval.model_args model_path=" if model_args.get("model_path") else named,
                "revision": "eval.model_args revision="}  # fmt: skip
    identity = identify(args, {}, {}, overrides, shown=shown_as)
    if identity is None:
        raise InputError(shown, "eval.model", "names no model: cannot tell which run it is; pass `run`")
    return identity


def _scores(
    shown: str, task: str, scores: list[Any], completed: int | None, version: str | None, overrides: Overrides
) -> list[ScoreRow]:
    rows: list[ScoreRow] = []
    reducers: dict[str, set] = {}
    for score in scores:
        reducers.setdefault(_scorer(score), set()).add(score.reducer)
    for index, score in enumerate(scores):
        where = f"results.scores[{index}]"
        scorer = _scorer(score)
        filt = scorer if len(reducers[scorer]) == 1 else f"{scorer}/{score.reducer}"
        metrics = {key: metric.value for key, metric in score.metrics.items()}
        names = {key: metric.name for key, metric in score.metrics.items()}
        errors = [key for name in _STDERRS for key in metrics if names[key] == name]
        stderr = optional_score_value(shown, f"{where}.metrics.{errors[0]}", metrics[errors[0]]) if errors else None
        scored = [key for key in metrics if names[key] not in (*_STDERRS, *_DISPERSION)] or list(metrics)
        n = getattr(score, "scored_samples", None) or completed
        for key in scored:
            if len(names[key]) > MAX_NAME_LENGTH or len(filt) > MAX_NAME_LENGTH:
                raise InputError(shown, f"{where}.metrics", f"a name is longer than {MAX_NAME_LENGTH:,} characters")
            describes_itself = names[key] in (*_STDERRS, *_DISPERSION)
            rows.append(
                ScoreRow(
                    task=task,
                    num_fewshot=overrides.shots,
                    metric=names[key],
                    filter=filt,
                    value=score_value(shown, f"{where}.metrics.{key}.value", metrics[key]),
                    stderr=None if describes_itself else stderr,
                    n_samples=int(n) if n is not None else None,
                    is_group=False,
                    higher_is_better=None,
                    task_version=version,
                )
            )
    if not rows:
        raise InputError(shown, "results.scores", "holds no scores")
    return rows


def _scorer(score: Any) -> str:
    return str(score.name or score.scorer)


def _plain(value: Any) -> Any:
    """A JSON value of pydantic models and the like."""
    return json.loads(json.dumps(value, default=str)) if value is not None else None
