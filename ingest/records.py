"""Typed records for what one evaluation file holds, before it is stored.

These mirror the store's tables (``schema/``): one :class:`EvaluationRecord`
per results file becomes one ``evaluations`` row, its :class:`ScoreRow` list
the ``evaluation_scores`` rows, and its :class:`SamplesFile` list the
``samples`` rows (read by DuckDB straight from the files when written). Any
parser that fills an :class:`EvaluationRecord` can use the same writer
(:mod:`ood_store._ingest.write`); ``source_format`` says which one made it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

from ood_store._ingest.identity import Identity
from ood_store._ingest.limits import SAMPLE_READ_LINE_BYTES


class ScoreRow(NamedTuple):
    """One (task, metric, filter) score. ``value`` is None where the file says NaN; ±inf stays.

    A parser may append plain tuples in this order instead (lm-eval's does: a
    NamedTuple costs ten times as much to make, and a study has millions).
    """

    task: str
    num_fewshot: int | None
    metric: str
    filter: str
    value: float | None
    stderr: float | None
    n_samples: int | None
    is_group: bool
    higher_is_better: bool | None
    task_version: str | None


#: A score as a plain tuple in :class:`ScoreRow`'s order (every ScoreRow is one).
ScoreTuple = tuple[str, int | None, str, str, float | None, float | None, int | None, bool, bool | None, str | None]

SCORE_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "task": pl.String,
    "num_fewshot": pl.Int32,
    "metric": pl.String,
    "filter": pl.String,
    "value": pl.Float64,
    "stderr": pl.Float64,
    "n_samples": pl.Int64,
    "is_group": pl.Boolean,
    "higher_is_better": pl.Boolean,
    "task_version": pl.String,
}


@dataclass(frozen=True)
class SamplesFile:
    """A per-sample file to be read into ``samples``, checked as far as its first line.

    ``metric_names`` are the keys of a line that hold per-sample metric values:
    those of the first line and the task's metrics in the results file.
    ``layout`` is how DuckDB reads the lines: ``"scored"`` for (log-likelihood,
    is-greedy) pairs and numeric metrics, typed by the JSON reader itself;
    ``"json"`` for anything lm-eval may write.
    """

    path: Path
    task: str
    output_type: str | None
    metric_names: tuple[str, ...]
    size: int  # bytes
    layout: str = "json"
    line_bytes: int = SAMPLE_READ_LINE_BYTES  # the longest line DuckDB's reader is told to expect


@dataclass(frozen=True)
class Recorded:
    """What the store an evaluation came from recorded of it (an EEE file ood-store wrote keeps it): kept as it
    was, as a dump's load keeps it, instead of this ingest's own."""

    source_path: str | None
    samples_files: tuple[str, ...]
    ood_store_version: str | None


@dataclass
class EvaluationRecord:
    """One evaluation of one checkpoint, validated: an lm-eval results file, or one read by
    another importer (``source_format`` names it; see ``ood_store._ingest.formats``)."""

    path: str
    content_hash: str
    format: str  # 'v0.3' or 'v0.4'
    identity: Identity
    model_type: str | None
    model_name: str | None
    model_args: Any  # as given: str, dict or None
    lm_eval_version: str | None
    git_hash: str | None
    date: dt.datetime | None
    num_fewshot: int | None
    sample_limit: float | None
    batch_size: str | None
    task_hashes: dict[str, Any] | None
    task_versions: dict[str, Any] | None
    config: dict[str, Any] | None
    output_types: dict[str, str]  # task -> lm-eval output_type, from `configs`
    scores: Sequence[ScoreTuple]  # ScoreRows, or plain tuples in their order
    campaign: str | None = None
    campaign_from: str = "folder"  # the campaign rule applied (see ood_store._ingest.identity); 'folder' until set
    source_format: str = "lm-eval"
    samples: list[SamplesFile] = field(default_factory=list)
    display_path: str = ""  # the path as the user gave it, for messages
    warnings: list[str] = field(default_factory=list)  # one line each, naming the field
    run_attributes: dict[str, Any] | None = None  # attributes the file gives its run (set where the run has none)
    recorded: Recorded | None = None
    detected: str = ""  # the format the file was taken for and why (ood_store._ingest.formats.Detected)
    # per-sample rows read by the importer itself (an EEE samples file), in ``samples``' columns
    # (metrics as metric_keys, metric_values): see ood_store._ingest.eee_samples
    sample_rows: pl.DataFrame | None = None
    collapsed: int = 0  # results repeated byte for byte in the file (an EEE file), stored once

    @property
    def non_finite(self) -> int:
        """Scores whose value is NaN (None) or infinite."""
        return sum(1 for row in self.scores if row[_VALUE] is None or row[_VALUE] in (_INF, -_INF))

    def scores_frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.scores, schema=SCORE_SCHEMA, orient="row")


_INF = float("inf")
_VALUE = ScoreRow._fields.index("value")
