"""Reads the history of a Weights & Biases run, as W&B exports it, into one EvaluationRecord per step.

The files are those of ``run.history()`` / ``run.scan_history()`` written out
(``.to_csv()``, ``.to_parquet()``) or of the run's ``wandb-history`` artifact:
one row per ``_step``, one column per logged key (``eval/hans_acc``,
``eval/hans/accuracy``, ``train/loss``; keys logged as nested dicts are joined
with ``.``), empty where a key was not logged at that step, plus W&B's own
``_step``, ``_runtime`` and ``_timestamp``. Nothing here needs ``wandb`` or the
network.

* **Columns to scores.** ``wandb_map`` patterns (``PATTERN`` or
  ``PATTERN=TASK:METRIC``) say which columns are scores of which task and
  metric. ``{task}`` and ``{metric}`` in a pattern match any text without
  ``/`` (the first as much as it can: ``eval/{task}_{metric}`` reads
  ``eval/anli_r1_accuracy`` as task ``anli_r1``, metric ``accuracy``);
  ``TASK:METRIC`` may use them too and defaults to ``{task}:{metric}``. The
  first pattern that matches a column wins. Without patterns, ``eval/{task}/{metric}``
  and then ``eval/{task}_{metric}`` are used.
* **Bookkeeping is never a score** unless a pattern names it: the keys the Hugging
  Face Trainer logs beside its metrics (``*runtime``, ``*samples_per_second``,
  ``*steps_per_second``, ``*epoch``, ``*loss``) are left out of what any
  ``{metric}`` placeholder matches; a pattern that names the metric itself takes
  them (``eval/loss=mnli:loss``, ``eval/{task}_loss={task}:loss``).
* **Steps.** ``_step`` unless ``wandb_step`` names another column (the Trainer's
  ``train/global_step``); rows with the same step are one evaluation; a step
  with no score is not one.
* **Run.** The file's name without its extension, unless ``run`` is given.
* **Campaign.** The W&B run the history is of: the id in the name of W&B's run
  folder the file sits in (``run-20240101_120000-<id>``, ``offline-run-...``), else
  the run; never the folder it was exported into, so that one history exported
  into two folders is one campaign.
* **Attributes.** The run's config, from ``config.yaml`` (W&B's own file,
  ``key: {desc: ..., value: ...}``) or ``config.json`` (``run.config``) beside
  the history file, or the file ``wandb_config`` names: every key that does not
  start with ``_``, nested keys joined with ``.``, set on the run where it has no
  such attribute yet.
* **Identity.** Each step's evaluation is identified by a hash of its run, step
  and scores, so that a history exported again later (with more steps) adds only
  the new steps.
* **Non-finite values**, by the rule of lm-eval files: ±Infinity is stored as it
  is (a CSV spells it ``inf``, as pandas writes it, or ``Infinity``, with either
  sign and in any case), and a CSV literal beyond DOUBLE's range (``1e999``) is a
  bad value. NaN, or an empty cell, is a key not logged at that step: no score.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ood_store._errors import InputError
from ood_store._ingest.identity import Identity, Overrides
from ood_store._ingest.jsontext import describe, literal
from ood_store._ingest.limits import MAX_NAME_LENGTH
from ood_store._ingest.records import EvaluationRecord, ScoreRow
from ood_store._ingest.values import count, score_value, timestamp

SOURCE_FORMAT = "wandb"
SUFFIXES = (".csv", ".parquet")
DEFAULT_MAP = ("eval/{task}/{metric}", "eval/{task}_{metric}")
# Logged beside each metric by the Hugging Face Trainer; not scores unless a pattern names them.
_TRAINER_BOOKKEEPING = re.compile(r"(?:^|[_/.])(runtime|samples_per_second|steps_per_second|epoch|loss)$")
# W&B's own folder for a run's files: run-<YYYYMMDD_HHMMSS>-<id> (offline-run-... offline).
_RUN_FOLDER = re.compile(r"(?:offline-)?run-\d{8}_\d{6}-([a-z0-9]+)")
_PLACEHOLDER = re.compile(r"\{(task|metric)\}")
CONFIG_FILES = ("config.yaml", "config.json")


@dataclass(frozen=True)
class ColumnRule:
    """One ``wandb_map`` entry: a column pattern and the (task, metric) it gives."""

    text: str
    regex: re.Pattern[str]
    task: str
    metric: str

    @property
    def names_metric(self) -> bool:
        """Whether the metric is named in the rule itself (``...=TASK:loss``), not matched by ``{metric}``."""
        return "{metric}" not in self.metric

    def apply(self, column: str) -> tuple[str, str] | None:
        match = self.regex.fullmatch(column)
        if match is None:
            return None
        found = match.groupdict()
        return self.task.format(**found), self.metric.format(**found)


def parse_rule(text: str) -> ColumnRule:
    """``"eval/{task}_acc={task}:acc"`` as a rule; a bad one is an error about ``wandb_map``."""
    pattern, sep, target = text.partition("=")
    if not pattern:
        raise InputError(None, None, f"{text!r}: empty column pattern", parameter="wandb_map")
    names = _PLACEHOLDER.findall(pattern)
    if len(names) != len(set(names)):
        raise InputError(None, None, f"{text!r}: a placeholder appears twice", parameter="wandb_map")
    task, colon, metric = (target or "{task}:{metric}").partition(":")
    if not (colon and task and metric):
        raise InputError(None, None, f"{text!r}: expected PATTERN or PATTERN=TASK:METRIC", parameter="wandb_map")
    for name in set(_PLACEHOLDER.findall(task + metric)) - set(names):
        raise InputError(
            None, None, f"{text!r}: {{{name}}} is not in the pattern; give it as =TASK:METRIC", parameter="wandb_map"
        )
    regex = "".join(
        f"(?P<{part}>[^/]+)" if i % 2 else re.escape(part) for i, part in enumerate(_PLACEHOLDER.split(pattern))
    )
    return ColumnRule(text, re.compile(regex), task, metric)


@dataclass(frozen=True)
class HistoryOptions:
    """How to read W&B history files: which columns are scores, which is the step, where the config is."""

    rules: tuple[ColumnRule, ...] = ()
    step: str = "_step"
    config: Path | None = None
    rule_texts: tuple[str, ...] = field(default=(), compare=False)

    @classmethod
    def build(
        cls, wandb_map: Sequence[str] = (), wandb_step: str | None = None, wandb_config: Any = None
    ) -> HistoryOptions:
        texts = tuple(wandb_map) or DEFAULT_MAP
        config = Path(wandb_config) if wandb_config is not None else None
        if config is not None and not config.is_file():
            raise InputError(str(config), None, "no such file", parameter="wandb_config")
        return cls(tuple(parse_rule(t) for t in texts), wandb_step or "_step", config, texts)

    def recognizes(self, path: Path, data: bytes) -> bool:
        """Whether the file is a history (it has the step column)."""
        try:
            return self.step in _columns(path, data)
        except Exception:  # not CSV or Parquet at all: not ours
            return False

    def mapping(self, column: str) -> tuple[str, str] | None:
        """(task, metric) of a score column; None for any other (W&B's own, the step, bookkeeping)."""
        if column.startswith("_") or column == self.step:
            return None
        bookkeeping = _TRAINER_BOOKKEEPING.search(column) is not None
        for rule in self.rules:
            found = rule.apply(column)
            if found is not None:
                return None if bookkeeping and not rule.names_metric else found
        return None


def is_history_file(path: Path) -> bool:
    return path.suffix.lower() in SUFFIXES


def _columns(path: Path, data: bytes) -> list[str]:
    import polars as pl

    if path.suffix.lower() == ".parquet":
        return list(pl.read_parquet_schema(io.BytesIO(data)))
    return pl.read_csv(io.BytesIO(data), n_rows=0).columns


def _frame(path: Path, shown: str, data: bytes) -> Any:
    import polars as pl

    try:
        if path.suffix.lower() == ".parquet":
            return pl.read_parquet(io.BytesIO(data))
        return pl.read_csv(io.BytesIO(data), infer_schema_length=None)
    except Exception as exc:  # polars' ComputeError, ParquetError...: the first line says what is wrong
        raise InputError(shown, None, f"cannot read the history: {str(exc).splitlines()[0]}") from None


def read_history(
    path: Path, shown: str, data: bytes, overrides: Overrides, options: HistoryOptions
) -> list[EvaluationRecord]:
    """One record per step of the history in ``data`` that has a score."""
    if overrides.step is not None:
        raise InputError(shown, None, "a W&B history holds many steps, one per row: `step` does not apply")
    frame = _frame(path, shown, data)
    found = {c: options.mapping(c) for c in frame.columns}
    mapped = {c: m for c, m in found.items() if m is not None}
    if not mapped:
        patterns = ", ".join(options.rule_texts)
        raise InputError(shown, None, f"no column is a score by the column patterns ({patterns}); give `wandb_map`")
    targets: dict[tuple[str, str], str] = {}
    for column, target in mapped.items():
        if max(len(target[0]), len(target[1])) > MAX_NAME_LENGTH:
            raise InputError(shown, None, f"a task or metric name is longer than {MAX_NAME_LENGTH:,} characters "
                             f"(column {column[:40]!r}...)")  # fmt: skip
        if target in targets:
            raise InputError(
                shown, column, f"gives task {target[0]!r}, metric {target[1]!r} as {targets[target]!r} does"
            )
        targets[target] = column
    steps = _by_step(shown, frame, options.step, mapped, _score_columns(path, shown, data, frame, mapped))
    run = overrides.run or path.name[: -len(path.suffix)]
    if len(run) > MAX_NAME_LENGTH:
        raise InputError(shown, None, f"the run name is longer than {MAX_NAME_LENGTH:,} characters")
    attributes = _config(path, shown, options.config)
    campaign = run_id(path) or run
    records = []
    for step, (values, when) in sorted(steps.items()):
        scores = [
            ScoreRow(task, overrides.shots, metric, "none", value, None, None, False, None, None)
            for (task, metric), value in sorted(values.items())
        ]
        record = _record(shown, run, step, scores, when, overrides, options, mapped, attributes)
        record.campaign, record.campaign_from = campaign, "W&B run id" if campaign != run else "W&B run"
        records.append(record)
    if not records:
        raise InputError(shown, options.step, "no step has a score")
    return records


def run_id(path: Path) -> str | None:
    """The W&B run id of the run folder a history sits in (``run-20240101_120000-<id>/files/``), if it does."""
    for folder in list(path.parents)[:3]:
        match = _RUN_FOLDER.fullmatch(folder.name)
        if match:
            return match.group(1)
    return None


# How a CSV spells an infinite value: pandas writes inf, W&B's JSON Infinity (either sign, any case).
_INFINITY = re.compile(r"[+-]?inf(inity)?", re.IGNORECASE)


def _score_columns(path: Path, shown: str, data: bytes, frame: Any, mapped: dict[str, Any]) -> dict[str, list[Any]]:
    """The values of each score column, a CSV's as its text spells them.

    polars reads ``1e999`` as infinity, and ``Infinity`` as text: a column with
    either is read again as text, each cell a number where polars' cast makes it
    one, except a literal beyond DOUBLE's range: a bad value, naming its row.
    """
    import polars as pl

    values = {column: frame.get_column(column).to_list() for column in mapped}
    if path.suffix.lower() != ".csv":
        return values
    again = [
        column
        for column in mapped
        if frame.schema[column] == pl.String or (frame.schema[column].is_float() and frame[column].is_infinite().any())
    ]
    if again:
        text = pl.read_csv(io.BytesIO(data), columns=again, infer_schema=False)
        for column in again:
            cells = text.get_column(column)
            numbers = cells.str.strip_chars().cast(pl.Float64, strict=False).to_list()
            values[column] = [
                _spelled(shown, column, row, raw, number)
                for row, (raw, number) in enumerate(zip(cells.to_list(), numbers, strict=True))
            ]
    return values


def _spelled(shown: str, column: str, row: int, raw: str | None, number: float | None) -> Any:
    """A CSV cell: the number polars reads (the text where it reads none, for the check to name)."""
    if number is None:
        return raw
    if math.isinf(number) and not _INFINITY.fullmatch((raw or "").strip()):
        raise InputError(shown, f"{column}, row {row + 1}", f"{literal((raw or '').strip())} does not fit a DOUBLE")
    return number


def _by_step(
    shown: str, frame: Any, step_column: str, mapped: dict[str, tuple[str, str]], columns: dict[str, list[Any]]
) -> dict[int, tuple[dict[tuple[str, str], float | None], Any]]:
    """step -> ({(task, metric): value}, the latest _timestamp), checking every value on the way."""
    steps: dict[int, tuple[dict[tuple[str, str], float | None], Any]] = {}
    stamps = frame.get_column("_timestamp").to_list() if "_timestamp" in frame.columns else [None] * frame.height
    step_values = frame.get_column(step_column).to_list()
    for row, raw_step in enumerate(step_values):
        present = {
            c: values[row] for c, values in columns.items() if values[row] is not None and values[row] == values[row]
        }
        if not present:
            continue
        where = f"{step_column}, row {row + 1}"
        if raw_step is None or raw_step != raw_step:
            raise InputError(shown, where, f"no step, but {next(iter(present))!r} has a value")
        step = count(shown, where, raw_step)
        assert step is not None
        values, when = steps.setdefault(step, ({}, None))
        for column, raw in present.items():
            value = score_value(shown, f"{column}, row {row + 1}", raw)
            target = mapped[column]
            if target in values and values[target] != value:
                raise InputError(shown, column, f"step {step} has two different values ({values[target]!r}, {value!r})")
            values[target] = value
        stamp = stamps[row]
        steps[step] = (values, stamp if stamp is not None and (when is None or stamp > when) else when)
    return steps


def _record(
    shown: str,
    run: str,
    step: int,
    scores: list[ScoreRow],
    when: Any,
    overrides: Overrides,
    options: HistoryOptions,
    mapped: dict[str, tuple[str, str]],
    attributes: dict[str, Any] | None,
) -> EvaluationRecord:
    identity_text = json.dumps(
        {"format": "wandb-history", "run": run, "step": step, "scores": [[s.task, s.metric, s.value] for s in scores]},
        sort_keys=True,
    )
    return EvaluationRecord(
        path=shown,
        content_hash=hashlib.sha256(identity_text.encode()).hexdigest(),
        format="wandb-history",
        identity=Identity(
            run=run,
            step=step,
            model=overrides.model,
            revision=None,
            base_model=None,
            source="field+flags" if overrides.run else "field",
            evidence=f"{'`run`' if overrides.run else 'file name'} {run}, step column {options.step}",
        ),
        model_type=None,
        model_name=overrides.model,
        model_args=None,
        lm_eval_version=None,
        git_hash=None,
        date=None if when is None else timestamp(shown, "_timestamp", when),
        num_fewshot=None,
        sample_limit=None,
        batch_size=None,
        task_hashes=None,
        task_versions=None,
        config={"step_column": options.step, "columns": {c: list(t) for c, t in sorted(mapped.items())}},
        output_types={},
        scores=scores,
        source_format=SOURCE_FORMAT,
        run_attributes=attributes,
    )


def _config(path: Path, shown: str, given: Path | None) -> dict[str, Any] | None:
    """The run's config as flat attributes, from the file given or the one beside the history."""
    file = given or next((path.parent / name for name in CONFIG_FILES if (path.parent / name).is_file()), None)
    if file is None:
        return None
    try:
        text = file.read_text("utf-8")
        if file.suffix.lower() == ".json":
            raw = json.loads(text)
        else:
            import yaml

            raw = yaml.safe_load(text)
    except Exception as exc:  # OSError, UnicodeDecodeError, JSON and YAML errors: all say what is wrong
        raise InputError(str(file), None, f"cannot read the run's config: {str(exc).splitlines()[0]}") from None
    if not isinstance(raw, dict):
        raise InputError(str(file), None, f"expected a mapping of config keys, got {describe(raw)}")
    raw.pop("wandb_version", None)
    flat: dict[str, Any] = {}
    for key, value in raw.items():
        if str(key).startswith("_"):
            continue
        if isinstance(value, dict) and "value" in value and set(value) <= {"value", "desc"}:
            value = value["value"]  # config.yaml wraps every value
        _flatten(str(key), value, flat)
    if "seed" in flat:
        flat["seed"] = count(str(file), "seed", flat["seed"])  # the runs column is an integer
    return flat or None


def _flatten(key: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for sub, inner in value.items():
            _flatten(f"{key}.{sub}", inner, out)
    elif isinstance(value, list):
        out[key] = json.dumps(value)
    elif value is not None:
        out[key] = value
