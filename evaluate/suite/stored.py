"""The ood_nli prompt variants a store holds, and the scores of one variant per run.

Each variant's tasks carry its key in their names (``ood_nli_hans__minimal``),
so that variants never collide. To compare runs that were each evaluated with
their own pattern, :func:`variant_scores` gives every run's scores of its
chosen variant under the suite's plain names (``ood_nli_hans``), ready for
:func:`ood_store._analysis.partial_correlations` and ``compare``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import polars as pl

from ood_store import _sqlfiles as sqlfiles
from ood_store._errors import AnalysisError
from ood_store._evaluate.suite.testsets import TESTSETS
from ood_store._store.database import read

if TYPE_CHECKING:
    from ood_store._store import Database


def variants(store: Database, runs: Sequence[str] | None = None) -> pl.DataFrame:
    """One row per run and variant: key, pattern, verbalizers, neutral scheme, checkpoints and tasks evaluated."""
    return read(
        store, sqlfiles.load("ood_store._evaluate.suite", "variants"), runs=None if runs is None else list(runs)
    )


def variant_scores(
    store: Database, variant: str | Mapping[str, str] | None = None, runs: Sequence[str] | None = None
) -> pl.DataFrame:
    """Every run's scores of one variant of the suite, under the suite's plain task names.

    Parameters
    ----------
    variant
        A variant key for all runs (``"minimal"``; ``""`` is the default
        variant), a mapping of run to key, or None: each run's only variant
        (an error for a run that has several).
    runs
        The runs to take (default: all with suite scores).

    Returns
    -------
    polars.DataFrame
        ``run, step, task, variant, num_fewshot, metric, filter, value, stderr``.
    """
    frame = read(
        store,
        sqlfiles.load("ood_store._evaluate.suite", "variant_scores"),
        testsets=list(TESTSETS),
        runs=None if runs is None else list(runs),
    )
    held = frame.group_by("run").agg(pl.col("variant").unique().sort()).sort("run")
    chosen: dict[str, str] = {}
    for run, keys in held.iter_rows():
        wanted = variant.get(run) if isinstance(variant, Mapping) else variant
        if wanted is None:
            if isinstance(variant, Mapping):
                continue
            if len(keys) > 1:
                raise AnalysisError(
                    f"run {run!r} has several ood_nli variants ({', '.join(map(repr, keys))}); choose one",
                    parameter="variant",
                )
            wanted = keys[0]
        if wanted not in keys:
            raise AnalysisError(
                f"run {run!r} has no ood_nli variant {wanted!r}; it has: {', '.join(map(repr, keys))}",
                parameter="variant",
            )
        chosen[run] = wanted
    if not chosen:
        raise AnalysisError("no ood_nli scores in the store for these runs", parameter="variant")
    pairs = pl.DataFrame({"run": list(chosen), "variant": list(chosen.values())})
    return frame.join(pairs, on=["run", "variant"], how="semi")
