"""A planted study of many runs: 4 families × 2 sizes × 3 seeds, 8 OOD NLI testsets, correlations known in advance.

Real studies compare twenty runs or more; the bundled Pythia files have three.
:func:`write_files` writes synthetic lm-eval (v0.4) results files, one per
checkpoint, whose OOD scores are a linear function of the in-domain score plus
residuals with a correlation planted per family (:data:`PLANTED`):

- ``snli``–``scitail`` +0.7 and ``anli_r1``–``anli_r2`` +0.5 in every family;
- ``anli_r3``–``wnli`` −0.5 in every family;
- ``hans``–``rte`` +0.6 in pythia and opt, −0.6 in qwen and llama (the
  pair whose sign depends on the model);
- every other pair 0.

The residuals are AR(1) over checkpoints (φ = :data:`AR1`), as training
curves are. :func:`build` ingests the files, sets each run's family, size and
seed, and saves the partial correlations as analysis :data:`ANALYSIS`
(what ``ood-store demo`` builds when asked for the planted study). Everything is seeded: the same files on every
machine.
"""

from __future__ import annotations

import itertools
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import orjson

if TYPE_CHECKING:
    from ood_store._analysis.results import PartialCorrelations
    from ood_store._api import Store

FAMILIES = ("pythia", "opt", "qwen", "llama")
SIZES = ("350m", "1.3b")
SEEDS = (1, 2, 3)
IN_DOMAIN = "mnli"
OOD = ("snli", "scitail", "rte", "hans", "anli_r1", "anli_r2", "anli_r3", "wnli")
STEPS = tuple(range(0, 6000, 250))  # 24 checkpoints
AR1 = 0.3
ANALYSIS = "planted"
#: Residual correlation of each planted pair, per family; every other pair has 0.
PLANTED = {
    ("snli", "scitail"): dict.fromkeys(FAMILIES, 0.7),
    ("anli_r1", "anli_r2"): dict.fromkeys(FAMILIES, 0.5),
    ("anli_r3", "wnli"): dict.fromkeys(FAMILIES, -0.5),
    ("rte", "hans"): {"pythia": 0.6, "opt": 0.6, "qwen": -0.6, "llama": -0.6},
}


@dataclass(frozen=True)
class PlantedRun:
    """One run of the planted study: its name, attributes and the folder of its results files."""

    run: str
    family: str
    size: str
    seed: int
    folder: Path


def run_name(family: str, size: str, seed: int) -> str:
    """The run's name, as a lab would spell it: ``ood-lab/nli-ft-pythia-350m-seed1``."""
    return f"ood-lab/nli-ft-{family}-{size}-seed{seed}"


def correlation(family: str) -> np.ndarray:
    """The planted correlation matrix of the OOD residuals of ``family`` (order of :data:`OOD`)."""
    matrix = np.eye(len(OOD))
    for (x, y), by_family in PLANTED.items():
        i, j = OOD.index(x), OOD.index(y)
        matrix[i, j] = matrix[j, i] = by_family[family]
    return matrix


def write_files(folder: Path) -> list[PlantedRun]:
    """Write one lm-eval results file per run and checkpoint under ``folder``; returns the runs."""
    runs = []
    for family, size, seed in itertools.product(FAMILIES, SIZES, SEEDS):
        name = run_name(family, size, seed)
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        scores = _scores(rng, family, size)
        target = folder / name.replace("/", "__")
        for index, step in enumerate(STEPS):
            path = target / f"step-{step}" / "results_2026-01-01T00-00-00.000000.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            results = {task: values[index] for task, values in scores.items()}
            path.write_bytes(orjson.dumps(_results_file(name, step, results)))
        runs.append(PlantedRun(name, family, size, seed, target))
    return runs


def _scores(rng: np.random.Generator, family: str, size: str) -> dict[str, np.ndarray]:
    """Accuracy per task over :data:`STEPS`: in-domain rising, OOD following it plus correlated AR(1) residuals."""
    n = len(STEPS)
    progress = 1 - np.exp(-np.arange(n) / 6)
    ceiling = 0.78 if size == SIZES[0] else 0.86
    z = 0.45 + (ceiling - 0.45) * progress + rng.normal(0, 0.004, n)
    chol = np.linalg.cholesky(correlation(family))
    shocks = rng.normal(size=(n, len(OOD))) @ chol.T
    residuals = np.empty_like(shocks)
    residuals[0] = shocks[0]
    for t in range(1, n):  # AR(1) with unit variance and the planted correlation between tasks
        residuals[t] = AR1 * residuals[t - 1] + np.sqrt(1 - AR1**2) * shocks[t]
    out = {IN_DOMAIN: z}
    for k, task in enumerate(OOD):
        slope = rng.uniform(0.3, 0.8)
        out[task] = np.clip(0.2 + slope * z + 0.015 * residuals[:, k], 0, 1)
    return {task: np.round(values, 5) for task, values in out.items()}


def _results_file(run: str, step: int, scores: dict[str, float]) -> dict:
    """A minimal lm-eval v0.4 results document of one checkpoint."""
    return {
        "results": {
            task: {"alias": task, "acc,none": float(value), "acc_stderr,none": 0.01} for task, value in scores.items()
        },
        "versions": dict.fromkeys(scores, 1.0),
        "n-shot": dict.fromkeys(scores, 0),
        "higher_is_better": {task: {"acc": True} for task in scores},
        "config": {"model": "hf", "model_args": f"pretrained={run},revision=step{step}"},
        "lm_eval_version": "0.4.13",
        "date": 1767225600.0 + step,
    }


def build(store: Store, folder: Path, *, progress: bool = False) -> PartialCorrelations:
    """Write the planted files under ``folder``, ingest them into ``store`` with each run's attributes,
    and save their partial correlations (linear, Pearson) as analysis :data:`ANALYSIS` (replacing it)."""
    from ood_store._analysis import partial_correlations

    runs = write_files(folder)
    report = store.ingest([folder], progress=progress)
    if not report.ok:  # the files are made here; this would be a bug
        raise RuntimeError("; ".join(f.reason or str(f.path) for f in report.rejected))
    for run in runs:
        store.set_run_attributes(run.run, {"family": run.family, "size": run.size, "seed": str(run.seed)})
    result = partial_correlations(store, IN_DOMAIN, OOD, runs=[run.run for run in runs])
    store.save_analysis(ANALYSIS, result, replace=True)
    return result
