"""Typed records for what one lm-eval results file holds, before it is stored.

These mirror the store's tables (``schema/``): one :class:`EvaluationRecord`
per results file becomes one ``evaluations`` row, its :class:`ScoreRow` list
the ``evaluation_scores`` rows, and its samples the ``samples`` rows.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ood_store.ingest.identity import Identity


@dataclass(frozen=True, slots=True)
class ScoreRow:
    task: str
    num_fewshot: int | None
    metric: str
    filter: str
    value: float
    stderr: float | None
    n_samples: int | None
    is_group: bool
    higher_is_better: bool | None
    task_version: str | None


SCORE_SCHEMA = {
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


@dataclass
class EvaluationRecord:
    """One evaluation of one checkpoint, validated: an lm-eval results file, or one read by
    another importer (``source_format`` names it; see ``ood_store.ingest.formats``)."""

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
    scores: list[ScoreRow]
    samples_files: list[str] = field(default_factory=list)
    display_path: str = ""  # the path as the user gave it, for messages
    samples: pl.DataFrame | None = None
    source_format: str = "lm-eval"  # evaluations.source_format: 'lm-eval', 'eee', 'wandb', 'inspect'
    campaign: str | None = None  # evaluations.campaign
    run_attributes: dict[str, Any] | None = None  # attributes the file gives its run (set where the run has none)

    def scores_frame(self) -> pl.DataFrame:
        return pl.DataFrame(
            [[getattr(row, name) for name in SCORE_SCHEMA] for row in self.scores],
            schema=SCORE_SCHEMA,
            orient="row",
        )
