"""The toy demo behind ``ood-store demo``: finetune a tiny model, evaluate its checkpoints, show the scores.

Fully offline: the model, tokenizer and data are built from code
(:mod:`ood_store._examples.toy`), the tasks are local JSONL lm-eval tasks, and
the checkpoints go through the same ``evaluate`` as a real run.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ood_store import _sqlfiles as sqlfiles
from ood_store._analysis import PartialCorrelations, partial_correlations
from ood_store._api import Store
from ood_store._evaluate.runner import EvaluateReport
from ood_store._examples import toy
from ood_store._store.database import read

RUN = "toy-gpt2-nli-s0"
ATTRIBUTES = {"family": "toy-gpt2", "size": "42k", "in_domain": "toy_nli", "seed": 0}


IN_DOMAIN = "toy_nli"
OOD = ("toy_ood_long", "toy_ood_never", "toy_ood_reported")


@dataclass(frozen=True)
class DemoSettings:
    steps: int = 48  # finetuning steps
    save_every: int = 6  # a checkpoint every this many steps, plus checkpoint-0: 9 in all
    docs: int = 100  # documents per toy testset


@dataclass
class DemoResult:
    workdir: Path
    trained: bool  # False when the checkpoints of an earlier demo were reused
    report: EvaluateReport
    scores: pl.DataFrame  # step, then one accuracy column per task
    partial: PartialCorrelations  # partial correlations of the OOD sets, toy_nli regressed out


def run_demo(store: Store, workdir: Path, settings: DemoSettings | None = None, progress: bool = False) -> DemoResult:
    """Build the toy run in ``workdir`` (unless an earlier demo did), evaluate it into ``store``, pivot the scores."""
    settings = settings or DemoSettings()
    checkpoints, tasks = workdir / "toy-run", workdir / "tasks"
    trained = not _complete(checkpoints, settings)
    if trained:
        _build(workdir, settings)
    toy.write_tasks(tasks, toy.toy_sets(settings.docs))  # the same files each time
    report = store.evaluate(
        [checkpoints],
        run=RUN,
        tasks=["toy_demo"],
        include_paths=[tasks],
        output_dir=workdir / "lm-eval-results",
        batch_size=16,
        attributes=ATTRIBUTES,
        progress=progress,
        log_to_file=True,
    )
    long = read(store, sqlfiles.load("ood_store._examples", "demo_toy"), run=RUN)
    scores = long.pivot(on="task", index="step", values="acc", sort_columns=True).sort("step")
    partial = partial_correlations(store, IN_DOMAIN, OOD, runs=[RUN])
    return DemoResult(workdir, trained, report, scores, partial)


def _steps(settings: DemoSettings) -> list[int]:
    return sorted({0, *range(settings.save_every, settings.steps + 1, settings.save_every), settings.steps})


def _complete(checkpoints: Path, settings: DemoSettings) -> bool:
    return all((checkpoints / f"checkpoint-{s}" / "config.json").is_file() for s in _steps(settings))


def _build(workdir: Path, settings: DemoSettings) -> None:
    """Finetune in a scratch folder, then move the checkpoints into place (no half-built demo)."""
    workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".build-", dir=workdir) as tmp:
        scratch = Path(tmp)
        tokenizer = toy.build_tokenizer()
        model = toy.build_model(tokenizer)
        toy.finetune(
            model, tokenizer, toy.training_rows(), scratch / "toy-run", steps=settings.steps,
            save_every=settings.save_every,
        )  # fmt: skip
        shutil.rmtree(workdir / "toy-run", ignore_errors=True)
        (scratch / "toy-run").rename(workdir / "toy-run")
