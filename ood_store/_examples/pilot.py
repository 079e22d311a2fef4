"""A planted pilot study: a few seeds of two model families, whose curves' nuisance parameters are known.

Planning a study (``ood-store plan --pilot``) starts from a pilot; this one is
made from code, with every parameter :mod:`~ood_store._analysis.nuisance`
estimates planted (:class:`Truth`):

- the training schedule is log-spaced early and evenly spaced later, as real
  ones are (:data:`STEPS`);
- each OOD testset's accuracy is ``base + slope z(s) + sigma u(s)``, ``z`` the
  in-domain accuracy and ``u`` an Ornstein–Uhlenbeck process of correlation
  length ``length`` steps at the real step positions; the testsets' processes
  correlate as :data:`PLANTED` says for the run's family, plus a seed's
  deviation ``tau N(0, 1)`` on Fisher's z;
- each checkpoint's score is the share of ``items`` documents answered
  correctly, each correct with the true accuracy: item noise of variance
  ``p (1 - p) / items``. ``rte`` is written with its per-sample rows (lm-eval's
  samples file), the others with lm-eval's standard error and document count.

:func:`write_files` writes lm-eval v0.4 results files (one per checkpoint),
:func:`build` ingests them with each run's family and seed. Everything is
seeded: the same files on every machine.
"""

from __future__ import annotations

import hashlib
import itertools
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import orjson
import polars as pl

if TYPE_CHECKING:
    from ood_store._api import Store

IN_DOMAIN = "mnli"
OOD = ("hans", "rte", "wnli")
#: Documents per testset: MNLI's matched validation set, a HANS subsample, RTE's and WNLI's validation sets.
ITEMS = {"mnli": 9815, "hans": 3000, "rte": 277, "wnli": 71}
#: The testset written with its per-sample rows (the others with stderr and document counts).
WITH_SAMPLES = "rte"
#: Log-spaced, then every 1,250 steps to 30,000: 30 checkpoints.
STEPS = (0, 50, 100, 200, 400, 800, *range(1250, 30001, 1250))
#: The noise-free curves' correlation per pair and family; every other pair is 0.
PLANTED = {("hans", "rte"): {"opt": 0.5, "olmo": -0.5}, ("rte", "wnli"): {"opt": 0.3, "olmo": 0.3}}


@dataclass(frozen=True)
class Truth:
    """The planted parameters of a pilot."""

    families: tuple[str, ...] = ("opt", "olmo")
    seeds: int = 2
    length: float = 3000.0  # correlation length of the residual curves, in steps
    sigma: float = 0.02  # standard deviation of the residual curves (accuracy)
    tau: float = 0.3  # between-seed spread of the curves' correlations on Fisher's z
    items: dict[str, int] = field(default_factory=lambda: dict(ITEMS))
    seed: int = 0

    def correlation(self, family: str, rng: np.random.Generator) -> np.ndarray:
        """One run's correlation matrix of the OOD curves: its family's, each pair moved by ``tau`` on Fisher's z."""
        matrix = np.eye(len(OOD))
        for i, j in itertools.combinations(range(len(OOD)), 2):
            planted = PLANTED.get((OOD[i], OOD[j]), {}).get(family, 0.0)
            matrix[i, j] = matrix[j, i] = np.tanh(np.arctanh(planted) + self.tau * rng.standard_normal())
        values, vectors = np.linalg.eigh(matrix)  # the nearest correlation matrix, should tau make it indefinite
        matrix = vectors @ np.diag(np.maximum(values, 1e-3)) @ vectors.T
        scale = np.sqrt(np.diag(matrix))
        return matrix / np.outer(scale, scale)


@dataclass(frozen=True)
class PilotRun:
    run: str
    family: str
    seed: int
    folder: Path


def run_name(family: str, seed: int) -> str:
    return f"pilot/{family}-nli-seed{seed}"


def _draws(truth: Truth):
    """Per run: its name, family and seed, each task's true accuracy at each step, and per checkpoint each task's
    items answered correctly (booleans)."""
    for family, seed in itertools.product(truth.families, range(1, truth.seeds + 1)):
        name = run_name(family, seed)
        rng = np.random.default_rng([truth.seed, zlib.crc32(name.encode())])
        accuracy = _accuracy(rng, truth, family)
        checkpoints = [
            {task: rng.random(truth.items[task]) < accuracy[task][index] for task in accuracy}
            for index in range(len(STEPS))
        ]
        yield name, family, seed, accuracy, checkpoints


def planted_noise(truth: Truth = Truth()) -> dict[str, float]:
    """Each OOD task's planted item noise, as ``plan`` takes it: the mean over runs and checkpoints of the true
    accuracy's ``p (1 - p) / items``, over the curves' variance ``sigma²``."""
    variances: dict[str, list[float]] = {task: [] for task in OOD}
    for _, _, _, accuracy, _ in _draws(truth):
        for task in OOD:
            p = accuracy[task]
            variances[task].extend(p * (1 - p) / truth.items[task])
    return {task: float(np.mean(v)) / truth.sigma**2 for task, v in variances.items()}


def planted_ar1(truth: Truth = Truth()) -> float:
    """The planted lag-1 autocorrelation of the curves at 24 checkpoints evenly spaced over the pilot's steps."""
    return float(np.exp(-(STEPS[-1] - STEPS[0]) / 23 / truth.length))


def write_files(folder: Path, truth: Truth = Truth()) -> list[PilotRun]:
    """Write one lm-eval results file per run and checkpoint under ``folder`` (and ``rte``'s samples files)."""
    runs = []
    stamp = "2026-01-01T00-00-00.000000"
    for name, family, seed, _, checkpoints in _draws(truth):
        target = folder / name.replace("/", "__")
        for step, correct in zip(STEPS, checkpoints, strict=True):
            checkpoint = target / f"step-{step}"
            checkpoint.mkdir(parents=True, exist_ok=True)
            document = _results_file(name, step, {task: c.mean() for task, c in correct.items()}, truth.items)
            (checkpoint / f"results_{stamp}.json").write_bytes(orjson.dumps(document))
            lines = (orjson.dumps(_sample(i, bool(c))) for i, c in enumerate(correct[WITH_SAMPLES]))
            (checkpoint / f"samples_{WITH_SAMPLES}_{stamp}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
        runs.append(PilotRun(name, family, seed, target))
    return runs


def frames(truth: Truth = Truth()) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The same pilot without files: its scores (``run, step, task, value, stderr, n_samples``, as the store would
    hold them) and its runs' attributes (``run, family, seed``)."""
    rows, runs = [], []
    for name, family, seed, _, checkpoints in _draws(truth):
        runs.append((name, family, str(seed)))
        for step, correct in zip(STEPS, checkpoints, strict=True):
            for task, c in correct.items():
                value = float(c.mean())
                rows.append((name, step, task, value, float(np.sqrt(value * (1 - value) / (c.size - 1))), c.size))
    scores = pl.DataFrame(rows, schema=["run", "step", "task", "value", "stderr", "n_samples"], orient="row")
    return scores, pl.DataFrame(runs, schema=["run", "family", "seed"], orient="row")


def _accuracy(rng: np.random.Generator, truth: Truth, family: str) -> dict[str, np.ndarray]:
    """The true accuracy of every task at every step: the in-domain curve, the OOD ones following it."""
    steps = np.asarray(STEPS, dtype=float)
    z = 0.35 + 0.5 * (1 - np.exp(-steps / 6000.0))
    chol = np.linalg.cholesky(truth.correlation(family, rng))
    shocks = rng.standard_normal((steps.size, len(OOD))) @ chol.T
    curves = np.empty_like(shocks)
    curves[0] = shocks[0]
    neighbours = np.exp(-np.diff(steps) / truth.length)
    for t in range(1, steps.size):  # the Ornstein-Uhlenbeck process at the real steps, exactly
        curves[t] = neighbours[t - 1] * curves[t - 1] + np.sqrt(1 - neighbours[t - 1] ** 2) * shocks[t]
    out = {IN_DOMAIN: z}
    for k, task in enumerate(OOD):
        out[task] = np.clip(0.25 + rng.uniform(0.3, 0.6) * z + truth.sigma * curves[:, k], 0.01, 0.99)
    return out


def _results_file(run: str, step: int, scores: dict[str, float], items: dict[str, int]) -> dict:
    """An lm-eval v0.4 results document: accuracy, its standard error (sample sd / sqrt(n)) and document counts."""
    results = {}
    for task, value in scores.items():
        n = items[task]
        stderr = float(np.sqrt(value * (1 - value) / (n - 1)))
        results[task] = {"alias": task, "acc,none": float(value), "acc_stderr,none": stderr}
    return {
        "results": results,
        "versions": dict.fromkeys(scores, 1.0),
        "n-shot": dict.fromkeys(scores, 0),
        "n-samples": {task: {"original": items[task], "effective": items[task]} for task in scores},
        "higher_is_better": {task: {"acc": True} for task in scores},
        "config": {"model": "hf", "model_args": f"pretrained={run},revision=step{step}"},
        "lm_eval_version": "0.4.13",
        "date": 1767225600.0 + step,
    }


def _sample(doc_id: int, correct: bool) -> dict:
    """One document's line of a samples file (a two-choice task: the gold answer is choice 0)."""
    gold, other = ("-0.5", "True"), ("-1.5", "False")
    responses = [list(gold), list(other)] if correct else [[gold[0].replace("5", "9"), "False"], ["-0.7", "True"]]
    digest = hashlib.sha256(str(doc_id).encode()).hexdigest()
    return {
        "doc_id": doc_id,
        "doc": {"idx": doc_id},
        "target": "0",
        "arguments": {},
        "resps": [[r] for r in responses],
        "filtered_resps": responses,
        "filter": "none",
        "metrics": ["acc"],
        "doc_hash": digest,
        "prompt_hash": digest,
        "target_hash": digest,
        "acc": 1.0 if correct else 0.0,
    }


def build(store: Store, folder: Path, truth: Truth = Truth(), *, progress: bool = False) -> list[PilotRun]:
    """Write the pilot's files under ``folder`` and ingest them into ``store`` with each run's family and seed."""
    runs = write_files(folder, truth)
    report = store.ingest([folder], progress=progress)
    if not report.ok:  # the files are made here; this would be a bug
        raise RuntimeError("; ".join(f.reason or str(f.path) for f in report.rejected))
    for run in runs:
        store.set_run_attributes(run.run, {"family": run.family, "seed": str(run.seed), "in_domain": IN_DOMAIN})
    return runs
