"""The toy demo behind ``ood-store demo``: the whole study on a toy: finetune, evaluate, analyze.

Fully offline: the base model, tokenizer and data are built from code
(:mod:`ood_store._examples.toy`). The model is finetuned by ``ood-store
finetune`` from the study file the demo writes (``WORKDIR/finetune.toml``),
the study file that finetuning writes is evaluated by ``evaluate --study``
(the tasks are local JSONL lm-eval tasks in the finetuning prompt), and the
scores are analyzed as a real run's are.
"""

from __future__ import annotations

import json
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
IN_DOMAIN = "toy_nli"
OOD = ("toy_ood_long", "toy_ood_never", "toy_ood_reported")


@dataclass(frozen=True)
class DemoSettings:
    steps: int = 48  # finetuning steps
    checkpoints: int = 9  # saved evenly from step 0 to the last: every 6 steps
    shots: int = 128  # training examples drawn from the toy training split
    docs: int = 100  # documents per toy testset


@dataclass
class DemoResult:
    workdir: Path
    trained: bool  # False when the checkpoints of an earlier demo were reused
    study: Path  # the finetuning study file the demo wrote
    report: EvaluateReport
    scores: pl.DataFrame  # step, then one accuracy column per task
    partial: PartialCorrelations  # partial correlations of the OOD sets, toy_nli regressed out


def study_text(settings: DemoSettings) -> str:
    """The finetuning study of the demo (read from WORKDIR): one full finetuning run of the toy GPT-2."""
    return f"""# The toy demo's finetuning study (written by ood-store demo): `ood-store finetune` reads it.
base_model = "toy-gpt2"            # built from code, saved here
in_domain = "{IN_DOMAIN}"              # data/{IN_DOMAIN}.train.jsonl
data_dir = "data"
pattern = "ood-nli"                # "{{premise}} Question: {{hypothesis}} Yes or No?" -> " Yes" / " No"
method = "full"
shots = {settings.shots}
data_seeds = [0]
schedule = {{ kind = "even", checkpoints = {settings.checkpoints} }}
name = "toy-gpt2-nli-s{{seed}}"
tasks = ["toy_demo"]               # the toy sets, lm-eval tasks in tasks/
include_path = ["tasks"]
output_dir = "runs"

[training]
max_steps = {settings.steps}
per_device_train_batch_size = 16
learning_rate = 3e-3
warmup_steps = 0
full_determinism = true

[evaluate]
batch_size = 16

[attributes]
family = "toy-gpt2"
size = "42k"
"""


def run_demo(store: Store, workdir: Path, settings: DemoSettings | None = None, progress: bool = False) -> DemoResult:
    """Finetune the toy run in ``workdir`` (unless an earlier demo did), evaluate it into ``store``, pivot scores."""
    from ood_store._finetune.runner import finetune

    settings = settings or DemoSettings()
    workdir.mkdir(parents=True, exist_ok=True)
    _inputs(workdir, settings)  # the same files each time
    study = workdir / "finetune.toml"
    study.write_text(study_text(settings), "utf-8")
    finetuned = finetune(study, progress=progress)
    trained = bool(finetuned.of("trained"))
    report = store.evaluate(
        study=finetuned.study_file,
        output_dir=workdir / "lm-eval-results",
        progress=progress,
        log_to_file=True,
    )
    long = read(store, sqlfiles.load("ood_store._examples", "demo_toy"), run=RUN)
    scores = long.pivot(on="task", index="step", values="acc", sort_columns=True).sort("step")
    partial = partial_correlations(store, IN_DOMAIN, OOD, runs=[RUN])
    return DemoResult(workdir, trained, study, report, scores, partial)


def _inputs(workdir: Path, settings: DemoSettings) -> None:
    """The toy base model (once), its training split and the toy tasks (in the study's prompt)."""
    base = workdir / "toy-gpt2"
    if not (base / "config.json").is_file():
        tokenizer = toy.build_tokenizer()
        toy.save_checkpoint(toy.build_model(tokenizer), tokenizer, base)
    data = workdir / "data"
    data.mkdir(exist_ok=True)
    rows = "".join(json.dumps(row) + "\n" for row in toy.training_rows())
    (data / f"{IN_DOMAIN}.train.jsonl").write_text(rows, "utf-8")
    toy.write_tasks(workdir / "tasks", toy.toy_sets(settings.docs))
