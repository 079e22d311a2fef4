"""A planted study of items shared by its runs: the null and alternative behind the crossed verdicts.

Every run (a model) is scored at ``checkpoints`` checkpoints on three testsets,
in-domain, X and Y, whose items are the same in every run, as in a real study.
Item ``i`` of testset ``j`` has a difficulty ``d_ji`` drawn once for the
study; at checkpoint ``t`` of run ``r`` it is answered correctly with
probability ``logistic(theta_rt + s_jrt - d_ji)``: ``theta`` the run's ability
(rising over a log-spaced schedule at a speed of the run's own, with a wobble),
``s`` the testset's own signal (0 for the in-domain testset). X's and Y's
signals have standard deviation ``signal`` on the logit scale and correlate
``shared`` at each checkpoint (independent over runs; over checkpoints
independent too, or a Gaussian AR(1) of lag-1 correlation
``signal_persistence``: a testset's own drift over training, which checkpoints
close in time share). An item's answers persist over checkpoints (a Gaussian
AR(1) of correlation ``persistence`` thresholded at that probability).

With ``shared`` 0, X and Y are independent given ability: the nulls are
``signal > 0`` (independent signals of their own) and ``signal`` 0 (X and Y
pure functions of ability, with their own items). ``shared`` > 0 plants a
partial correlation of about ``shared`` between X's and Y's noise-free scores
given ability. With the default difficulties (all centered on 0) the testsets'
noise-free scores are nearly linear in one another; ``difficulty_means`` that
differ bend them (a linear residualizer's misfit).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special


@dataclass(frozen=True)
class PlantedStudy:
    """Runs' item matrices (in-domain, X, Y: items × checkpoints, 0/1) and their steps."""

    runs: dict[str, tuple[np.ndarray, ...]]
    steps: tuple[int, ...]


def planted_study(
    rng: np.random.Generator,
    *,
    runs: int = 8,
    checkpoints: int = 30,
    items: Sequence[int] = (5000, 1500, 1500),
    signal: float = 0.3,
    shared: float | Sequence[float] = 0.0,
    span: float | Sequence[float] = 1.5,
    difficulty_means: Sequence[float] = (0.0, 0.0, 0.0),
    difficulty_sd: float = 1.0,
    persistence: float = 0.5,
    signal_persistence: float = 0.0,
) -> PlantedStudy:
    """One planted study (see the module); ``items``: the in-domain, X and Y testsets' sizes; ``shared`` and
    ``span`` (the rise of ability over training) one for every run or one per run."""
    shares = np.broadcast_to(np.asarray(shared, dtype=float), (runs,))
    spans = np.broadcast_to(np.asarray(span, dtype=float), (runs,))
    if not (np.abs(shares) <= 1.0).all():
        raise ValueError(f"shared must be a correlation, not {shared}")
    if not -1.0 < signal_persistence < 1.0:
        raise ValueError(f"signal_persistence must be a lag-1 correlation in (-1, 1), not {signal_persistence}")
    steps = np.r_[0, np.geomspace(10, 10000, checkpoints - 1)].round().astype(int)  # distinct, log-spaced
    schedule = np.log1p(steps) / np.log1p(steps[-1])
    difficulties = [rng.normal(mu, difficulty_sd, n) for mu, n in zip(difficulty_means, items, strict=True)]
    out: dict[str, tuple[np.ndarray, ...]] = {}
    for r in range(runs):
        shared = float(shares[r])
        start, gain = rng.normal(-0.75, 0.3), spans[r] * rng.uniform(0.7, 1.3)
        theta = start + gain * schedule + 0.15 * rng.standard_normal(checkpoints)
        if signal_persistence:
            drifting = _persistent(rng, 3, checkpoints, signal_persistence)
            common, own = drifting[0], drifting[1:]
        else:  # the draws of the studies measured before signal_persistence existed
            common, own = rng.standard_normal(checkpoints), rng.standard_normal((2, checkpoints))
        signals = np.zeros((3, checkpoints))
        signals[1] = signal * (np.sqrt(abs(shared)) * common + np.sqrt(1.0 - abs(shared)) * own[0])
        signals[2] = signal * (
            np.sign(shared or 1.0) * np.sqrt(abs(shared)) * common + np.sqrt(1.0 - abs(shared)) * own[1]
        )
        matrices = []
        for j, d in enumerate(difficulties):
            p = special.expit(theta[None, :] + signals[j][None, :] - d[:, None])
            matrices.append((special.ndtr(_persistent(rng, d.size, checkpoints, persistence)) < p).astype(np.float32))
        out[f"run-{r:02d}"] = tuple(matrices)
    return PlantedStudy(out, tuple(int(s) for s in steps))


def _persistent(rng: np.random.Generator, n: int, T: int, phi: float) -> np.ndarray:
    """n stationary Gaussian AR(1) series of length T and lag-1 correlation ``phi`` (n × T)."""
    noise = np.empty((n, T))
    noise[:, 0] = rng.standard_normal(n)
    scale = np.sqrt(1.0 - phi**2)
    for t in range(1, T):
        noise[:, t] = phi * noise[:, t - 1] + scale * rng.standard_normal(n)
    return noise


def study_frames(study: PlantedStudy, tasks: Sequence[str] = ("in-domain", "x", "y")) -> tuple:
    """The study as the frames an analysis reads: scores (``run, step, task, value``, each the mean over its
    items) and items (``run, step, task, item, value``, as :func:`~ood_store._analysis.items.item_correlations`
    and :func:`~ood_store._analysis.compare.compare` read them)."""
    import polars as pl

    scores, items = [], []
    steps = np.asarray(study.steps)
    for run, matrices in study.runs.items():
        for task, Y in zip(tasks, matrices, strict=True):
            n, T = Y.shape
            scores.append(
                pl.DataFrame({"run": run, "step": steps, "task": task, "value": Y.mean(axis=0).astype(float)})
            )
            items.append(
                pl.DataFrame(
                    {
                        "run": run,
                        "step": np.tile(steps, n),
                        "task": task,
                        "item": np.repeat(np.arange(n), T),
                        "value": Y.ravel().astype(float),
                    }
                )
            )
    return pl.concat(scores), pl.concat(items)
