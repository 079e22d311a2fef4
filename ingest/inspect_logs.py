"""Reads inspect_ai evaluation logs (``.eval`` or ``.json``) into EvaluationRecords, through inspect_ai's own reader.

Each log is read with ``inspect_ai.analysis.evals_df`` (its header only, not the
samples), in the ``inspect`` extra. One log is one evaluation:

* **task** is the log's task name (``eval.task`` without its package prefix);
* **run and step** follow from the model the way they do for lm-eval files:
  inspect_ai names models ``provider/model`` (``hf/EleutherAI/pythia-160m``);
  without the provider, with ``model_path`` from the model args standing for it
  when given, the model is the run, and a ``revision`` in the model args naming
  a step (``-M revision=step1000``) or a model path ending in a checkpoint
  folder (``checkpoint-500``) gives the step;
* **scores** are every metric of every scorer in ``results.scores``, the headline
  one first: metric as inspect_ai names it (``accuracy``, ``mean``), the
  scorer's name as the filter (``match``, ``includes``), and the scorer's
  ``stderr`` metric as the standard error of its other metrics;
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

from ood_store._errors import InputError, first_line
from ood_store._ingest import jsontext
from ood_store._ingest.identity import Identity, Overrides, identify
from ood_store._ingest.records import EvaluationRecord, ScoreRow
from ood_store._ingest.values import optional_score_value, score_value, timestamp

SOURCE_FORMAT = "inspect"


def _columns(shown: str) -> list[Any]:
    try:
        from inspect_ai.analysis import EvalColumn, EvalInfo, EvalModel, EvalResults, EvalTask
    except ImportError:
        raise InputError(
            shown, None, "reading inspect_ai logs needs inspect_ai: pip install 'ood-store[inspect]'"
        ) from None
    return [
        *EvalInfo,
        *EvalTask,
        *EvalModel,
        *EvalResults,
        EvalColumn("ood_store_model_args", path="eval.model_args"),
        EvalColumn("ood_store_log_version", path="version"),
        EvalColumn("ood_store_task_args", path="eval.task_args"),
        EvalColumn("ood_store_scores", path=_scores_of),
    ]


def _scores_of(log: Any) -> list[dict[str, Any]]:
    """Every metric of every scorer of a log's results, in their order (the headline first)."""
    if log.results is None:
        return []
    return [
        {
            "scorer": score.name,
            "reducer": score.reducer,
            "scored_samples": score.scored_samples,
            "metrics": {key: metric.value for key, metric in score.metrics.items()},
        }
        for score in log.results.scores
    ]


def read_log(path: Path, shown: str, digest: str, overrides: Overrides) -> EvaluationRecord:
    """Read and validate one inspect_ai log; every problem is an InputError naming the file and field."""
    row = _header(path, shown)
    if row.get("status") != "success":
        error = f": {first_line(Exception(row['error_message']))}" if row.get("error_message") else ""
        raise InputError(shown, "status", f"{row.get('status')!r}, not 'success': the evaluation did not finish{error}")
    model_args = _json(row.get("ood_store_model_args")) or {}
    identity = _identity(shown, str(row["model"]), model_args, overrides)
    scores = _scores(shown, str(row["task_name"]), _json(row.get("ood_store_scores")) or [], row)
    return EvaluationRecord(
        path=shown,
        content_hash=digest,
        format=f"inspect-log-v{row.get('ood_store_log_version')}",
        identity=identity,
        model_type=str(row["model"]).split("/", 1)[0],
        model_name=str(row["model"]),
        model_args=model_args or None,
        lm_eval_version=None,
        git_hash=row.get("git_commit"),
        date=timestamp(shown, "eval.created", row["created"].isoformat() if row.get("created") else None),
        num_fewshot=None,
        sample_limit=None,
        batch_size=None,
        task_hashes=None,
        task_versions={str(row["task_name"]): row.get("task_version")},
        config={
            "eval_id": row.get("eval_id"),
            "run_id": row.get("run_id"),
            "task_args": _json(row.get("ood_store_task_args")),
            "packages": _json(row.get("packages")),
        },
        output_types={},
        scores=scores,
        source_format=SOURCE_FORMAT,
    )


def _header(path: Path, shown: str) -> dict[str, Any]:
    import polars as pl

    columns = _columns(shown)
    from inspect_ai.analysis import evals_df

    try:
        frame = evals_df([str(path)], columns=columns, quiet=True)
    except Exception as exc:  # inspect_ai raises many kinds (zip, JSON, pydantic validation): all are "unreadable"
        raise InputError(shown, None, f"inspect_ai cannot read the log: {first_line(exc)}") from None
    if path.suffix.lower() == ".eval":
        _check_header(path, shown)
    rows = pl.from_pandas(frame).to_dicts()
    if len(rows) != 1:
        raise InputError(shown, None, f"expected one evaluation in the log, inspect_ai read {len(rows)}")
    return rows[0]


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


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) and value else value


def _identity(shown: str, model: str, model_args: dict[str, Any], overrides: Overrides) -> Identity:
    provider, _, name = model.partition("/")
    args = {key: value for key, value in model_args.items() if isinstance(value, str | int | float)}
    args["pretrained"] = str(model_args.get("model_path") or name or provider)
    identity = identify(args, {}, {}, overrides)
    if identity is None:
        raise InputError(shown, "eval.model", "names no model: cannot tell which run it is; pass `run`")
    return identity


def _scores(shown: str, task: str, raw: list[dict[str, Any]], row: dict[str, Any]) -> list[ScoreRow]:
    rows: list[ScoreRow] = []
    reducers: dict[str, set] = {}
    for score in raw:
        reducers.setdefault(score["scorer"], set()).add(score["reducer"])
    for index, score in enumerate(raw):
        where = f"results.scores[{index}]"
        scorer = score["scorer"]
        filt = scorer if len(reducers[scorer]) == 1 else f"{scorer}/{score['reducer']}"
        metrics: dict[str, Any] = score["metrics"]
        stderr = optional_score_value(shown, f"{where}.metrics.stderr", metrics.get("stderr"))
        n = score.get("scored_samples") or row.get("completed_samples")
        for metric, value in metrics.items():
            if metric == "stderr" and len(metrics) > 1:
                continue
            rows.append(
                ScoreRow(
                    task=task,
                    num_fewshot=None,
                    metric=metric,
                    filter=filt,
                    value=score_value(shown, f"{where}.metrics.{metric}", value),
                    stderr=stderr if metric != "stderr" else None,
                    n_samples=int(n) if n is not None else None,
                    is_group=False,
                    higher_is_better=None,
                    task_version=None if row.get("task_version") is None else str(row["task_version"]),
                )
            )
    if not rows:
        raise InputError(shown, "results.scores", "holds no scores")
    return rows
