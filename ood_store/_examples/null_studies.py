"""Planted studies where all but one pair is null: how many verdicts of `compare` are noise?

The shape of issue 22's measurement: 24 runs (4 families × 2 sizes × 3 seeds,
as :mod:`~ood_store._examples.planted`), 30 checkpoints, an in-domain task and
8 OOD testsets. One pair (:data:`PLANTED_PAIR`) has residual curves correlated
+0.6 in two families and -0.6 in the other two; the 27 other pairs are 0 in
every run. Each testset's residual curve is independent noise over the
checkpoints (``ar1 = 0``, the issue's shape) or an AR(1) of lag-1
autocorrelation ``ar1``, independent of every other but the planted pair's
partner. :func:`study` makes one such study as the frames the analysis reads,
seeded: study ``k`` is the same on every machine.
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl

from ood_store._examples.planted import FAMILIES, IN_DOMAIN, OOD, SEEDS, SIZES

CHECKPOINTS = 30
PLANTED_PAIR = ("rte", "hans")
#: The planted pair's correlation per family; every other pair is 0 everywhere.
PLANTED = {"pythia": 0.6, "opt": 0.6, "qwen": -0.6, "llama": -0.6}


def study(index: int, ar1: float = 0.0) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Study ``index``: its scores (``run, step, task, value``) and runs (``run, family, size, seed, replicate``)."""
    rng = np.random.default_rng([22, index, round(ar1 * 1000)])
    steps = np.arange(CHECKPOINTS) * 200
    i, j = OOD.index(PLANTED_PAIR[0]), OOD.index(PLANTED_PAIR[1])
    frames, runs = [], []
    for family, size, seed in itertools.product(FAMILIES, SIZES, SEEDS):
        run = f"null-{index}/{family}-{size}-seed{seed}"
        runs.append((run, family, size, str(seed), f"{size}-{seed}"))
        correlation = np.eye(len(OOD))
        correlation[i, j] = correlation[j, i] = PLANTED[family]
        shocks = rng.standard_normal((CHECKPOINTS, len(OOD))) @ np.linalg.cholesky(correlation).T
        curves = np.empty_like(shocks)
        curves[0] = shocks[0]
        for t in range(1, CHECKPOINTS):
            curves[t] = ar1 * curves[t - 1] + np.sqrt(1 - ar1**2) * shocks[t]
        z = 0.4 + 0.4 * (1 - np.exp(-np.arange(CHECKPOINTS) / 8)) + rng.normal(0, 0.003, CHECKPOINTS)
        values = {IN_DOMAIN: z}
        for k, task in enumerate(OOD):
            values[task] = 0.2 + rng.uniform(0.3, 0.8) * z + 0.015 * curves[:, k]
        frames.append(
            pl.DataFrame(
                {
                    "run": run,
                    "step": np.tile(steps, len(values)),
                    "task": np.repeat(list(values), CHECKPOINTS),
                    "value": np.concatenate(list(values.values())),
                }
            )
        )
    attributes = pl.DataFrame(runs, schema=["run", "family", "size", "seed", "replicate"], orient="row")
    return pl.concat(frames), attributes


def is_planted(task_x: str, task_y: str) -> bool:
    return {task_x, task_y} == set(PLANTED_PAIR)
