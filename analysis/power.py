"""Planning a study: how many seeds and checkpoints it takes to tell models apart, by simulating it.

For a design (families of models, seeds per family, checkpoints and their
schedule) and a pair of OOD testsets whose partial correlation the user
expects to be ``effects[f]`` in family ``f`` (an effect worth detecting,
never a pilot's own estimate: power computed from it says nothing new, as
simr's authors warn), :func:`power_analysis` simulates the study
``replications`` times (:mod:`~ood_store._analysis.simulate`: autocorrelated
residual curves at the real step positions, seeds spread by ``tau`` on
Fisher's z, item noise), analyses every simulated study with the analysis'
own code and counts how often its test finds the difference:

- two families or more: the test between families of
  :func:`~ood_store._analysis.between_groups` (``compare --between family
  --within seed``; Knapp–Hartung's F or the z test's χ², Paule–Mandel τ²);
- one family: the pooled estimate of :func:`~ood_store._analysis.compare`
  (its interval excludes 0);
- one run: the run's own t test (``p_eff`` or ``p``).

The same test under no difference (every family at the mean of the effects
on Fisher's z; 0 for one family or run) gives its type I error, from its own
simulations. Verdicts are adjusted over a study's pairs: with ``pairs`` pairs
the test is made at ``alpha / pairs`` (Holm's first step, so the power is a
lower bound of Holm's; ``adjust_pairs="none"``: at ``alpha``) and the pooled
test at ``alpha / (2 pairs)``, as ``compare`` puts each pair's heterogeneity
and pooled tests in one family.

Every cell of the grid (seeds × checkpoints) draws its own random numbers
from ``seed`` and the design (not from the grid or the order of the work),
so a design's power is the same in any grid, on any number of ``threads``.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import polars as pl

from ood_store._analysis import meta
from ood_store._analysis.compare import ADJUST_PAIRS, DEFAULT_ADJUST_PAIRS, DEFAULT_TEST, MIN_WITHIN
from ood_store._analysis.results import Result
from ood_store._analysis.simulate import Analysis, Curves, run_statistics, simulate
from ood_store._errors import AnalysisError
from ood_store._progress import progress_bar

#: Replications simulated in one batch: the unit of the random streams (and of the progress bar).
CHUNK = 500

#: Columns of a power table, in order.
POWER_COLUMNS = (
    "families", "seeds", "checkpoints", "runs", "evaluations", "test", "power", "power_se",
    "type1", "type1_se", "ci_width", "note",
)  # fmt: skip


@dataclass(frozen=True)
class Settings:
    """Everything about a power analysis but the grid of designs."""

    effects: tuple[float, ...]
    tau: float = 0.0
    curves: Curves = field(default_factory=Curves)
    analysis: Analysis = field(default_factory=Analysis)
    schedule: str = "linear"
    alpha: float = 0.05
    pairs: int = 1
    adjust_pairs: str = DEFAULT_ADJUST_PAIRS
    test: str = DEFAULT_TEST
    replications: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.effects:
            raise AnalysisError("give the partial correlation to detect in each family", parameter="effects")
        if not all(-1 < e < 1 for e in self.effects):
            raise AnalysisError(f"correlations between -1 and 1, not {list(self.effects)}", parameter="effects")
        if not 0 <= self.tau < 5:
            raise AnalysisError(f"must be at least 0 (and below 5), not {self.tau}", parameter="tau")
        if not 0 < self.alpha < 1:
            raise AnalysisError(f"must be between 0 and 1, not {self.alpha}", parameter="alpha")
        if self.pairs < 1:
            raise AnalysisError(f"must be at least 1, not {self.pairs}", parameter="pairs")
        if self.adjust_pairs not in ADJUST_PAIRS:
            raise AnalysisError(f"must be one of {', '.join(ADJUST_PAIRS)}", parameter="adjust_pairs")
        if self.test not in meta.TESTS:
            raise AnalysisError(f"must be one of {', '.join(meta.TESTS)}, not {self.test!r}", parameter="test")
        if self.replications < 10:
            raise AnalysisError(f"must be at least 10, not {self.replications}", parameter="replications")

    @property
    def families(self) -> int:
        return len(self.effects)

    def level(self, tests_per_pair: int) -> float:
        """The level of one pair's test after the adjustment over ``pairs`` (Holm's first step)."""
        return self.alpha if self.adjust_pairs == "none" else self.alpha / (self.pairs * tests_per_pair)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Design:
    """One study: ``seeds`` runs of each family, ``checkpoints`` evaluated checkpoints each."""

    families: int
    seeds: int
    checkpoints: int

    @property
    def runs(self) -> int:
        return self.families * self.seeds

    @property
    def evaluations(self) -> int:
        """What the design costs: checkpoints evaluated, over every run."""
        return self.runs * self.checkpoints


@dataclass(frozen=True, repr=False)
class PowerAnalysis(Result):
    """Power, type I error and cost per design (one row each, :data:`POWER_COLUMNS`), and what made them."""

    summary_columns = (
        "seeds",
        "checkpoints",
        "runs",
        "evaluations",
        "test",
        "power",
        "power_se",
        "type1",
        "ci_width",
        "note",
    )

    settings: Settings
    #: With a target: the power sought, and the cheapest design that reaches it (None when none does).
    target_power: float | None = None
    chosen: Design | None = None

    def _summary(self) -> str:
        s = self.settings
        found = ""
        if self.target_power is not None:
            found = (
                f"; power {self.target_power:g} first at {self.chosen.seeds} seeds x {self.chosen.checkpoints} "
                f"checkpoints"
                if self.chosen
                else f"; no design reaches power {self.target_power:g}"
            )
        return f": {self.table.height} designs, {s.families} families, {s.replications} replications{found}"


def power_analysis(
    effects: Sequence[float],
    *,
    seeds: Sequence[int],
    checkpoints: Sequence[int],
    tau: float = 0.0,
    curves: Curves | None = None,
    schedule: str = "linear",
    analysis: Analysis | None = None,
    alpha: float = 0.05,
    pairs: int = 1,
    adjust_pairs: str = DEFAULT_ADJUST_PAIRS,
    test: str = DEFAULT_TEST,
    replications: int = 1000,
    seed: int = 0,
    target_power: float | None = None,
    threads: int = 1,
    progress: bool = False,
) -> PowerAnalysis:
    """Power of a study's test for every design of the grid ``seeds`` × ``checkpoints``, by simulation.

    Parameters
    ----------
    effects : list of float
        The partial correlation to detect in each family (of the residual curves
        without item noise); their number is the number of families.
    seeds, checkpoints : list of int
        The grid: seeds (runs) per family, and checkpoints per run.
    tau : float
        Between-seed standard deviation of a family's correlations on Fisher's z.
    curves : Curves
        Autocorrelation, item noise, training span and in-domain curve
        (:class:`~ood_store._analysis.simulate.Curves`); default white curves without noise.
    schedule : {"linear", "log", "pilot"}
        Where the checkpoints are.
    analysis : Analysis
        Residualizer (``linear`` or ``gam``) and inference (``effective`` or ``naive``).
    alpha, pairs, adjust_pairs
        The level, the number of pairs the study tests, and the adjustment over them.
    test : {"knha", "z"}
        As in :func:`~ood_store._analysis.between_groups`.
    replications : int
        Simulated studies per design and hypothesis (the effect, and no difference).
    seed : int
        Seed of the simulations.
    target_power : float, optional
        Find the cheapest design (fewest checkpoint evaluations) whose power reaches it.
    threads : int
        Designs simulated at once; the result does not depend on it.
    progress : bool
        A progress bar on a terminal.

    Returns
    -------
    PowerAnalysis
        ``.table`` with one row per design (:data:`POWER_COLUMNS`): ``evaluations``
        (runs × checkpoints: what the design costs), ``power`` and ``type1``
        with their Monte Carlo standard errors ``sqrt(p (1 - p) / replications)``,
        ``ci_width`` (the mean width of a family's pooled interval on the r scale,
        at the adjusted level) and ``note`` (why a design has no test).

    Examples
    --------
    One family of three seeds, r = 0.5 on 20 evenly spaced checkpoints without autocorrelation:

    >>> out = power_analysis([0.5], seeds=[3], checkpoints=[20], replications=200, test="z", seed=1)
    >>> out.table.select("runs", "evaluations", "test").row(0)
    (3, 60, 'pooled')
    >>> bool(out.table["power"][0] > 0.8)
    True
    """
    settings = Settings(
        effects=tuple(float(e) for e in effects), tau=float(tau), curves=curves or Curves(),
        analysis=analysis or Analysis(), schedule=schedule, alpha=alpha, pairs=pairs, adjust_pairs=adjust_pairs,
        test=test, replications=replications, seed=seed,
    )  # fmt: skip
    seeds = sorted({int(s) for s in seeds})
    checkpoints = sorted({int(c) for c in checkpoints})
    if not seeds or min(seeds) < 1:
        raise AnalysisError(f"at least one seed per family, not {seeds}", parameter="seeds")
    if not checkpoints or min(checkpoints) < 6:
        raise AnalysisError(f"at least 6 checkpoints per run, not {checkpoints}", parameter="checkpoints")
    if settings.analysis.residualizer == "gam" and min(checkpoints) < 8:
        raise AnalysisError("the GAM residualizer needs at least 8 checkpoints", parameter="checkpoints")
    if target_power is not None and not 0 < target_power < 1:
        raise AnalysisError(f"must be between 0 and 1, not {target_power}", parameter="target_power")
    if threads < 1:
        raise AnalysisError(f"must be at least 1, not {threads}", parameter="threads")
    settings.curves.positions(checkpoints[0], schedule)  # a bad schedule fails before anything runs
    designs = [Design(settings.families, s, c) for s in seeds for c in checkpoints]
    chunks = -(-replications // CHUNK)
    rows: list[dict | None] = [None] * len(designs)
    with progress_bar(progress, len(designs) * 2 * chunks, "simulating") as advance:
        if threads == 1:
            for i, design in enumerate(designs):
                rows[i] = _row(design, settings, advance)
        else:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                futures = {pool.submit(_row, design, settings): i for i, design in enumerate(designs)}
                for future in as_completed(futures):
                    rows[futures[future]] = future.result()
                    advance(2 * chunks, _label(designs[futures[future]]))
    table = pl.DataFrame(rows, schema=_SCHEMA, orient="row")
    chosen = _cheapest(table, designs, target_power) if target_power is not None else None
    return PowerAnalysis(table, settings, target_power, chosen)


_SCHEMA = {
    "families": pl.Int64,
    "seeds": pl.Int64,
    "checkpoints": pl.Int64,
    "runs": pl.Int64,
    "evaluations": pl.Int64,
    "test": pl.String,
    "power": pl.Float64,
    "power_se": pl.Float64,
    "type1": pl.Float64,
    "type1_se": pl.Float64,
    "ci_width": pl.Float64,
    "note": pl.String,
}


def _label(design: Design) -> str:
    return f"{design.seeds} seeds x {design.checkpoints} checkpoints"


def _cheapest(table: pl.DataFrame, designs: list[Design], target: float) -> Design | None:
    """The design of fewest evaluations (then fewest seeds) whose power reaches ``target``."""
    reached = [
        (design.evaluations, design.seeds, i)
        for i, (design, power) in enumerate(zip(designs, table["power"], strict=True))
        if power is not None and power >= target
    ]
    return designs[min(reached)[2]] if reached else None


def _test(design: Design, settings: Settings) -> tuple[str, str | None]:
    """Which test the design's study makes, or why it makes none."""
    if design.families >= 2:
        minimum = MIN_WITHIN
        if design.seeds < minimum:
            return "between", f"family and seed confounded: {design.seeds} seed per family (needs {minimum})"
        return "between", None
    if design.seeds >= 2:
        return "pooled", None
    return "run", None


def _row(design: Design, settings: Settings, advance=None) -> dict:
    """The table's row of one design: both hypotheses simulated."""
    test, note = _test(design, settings)
    row: dict[str, Any] = {
        "families": design.families, "seeds": design.seeds, "checkpoints": design.checkpoints, "runs": design.runs,
        "evaluations": design.evaluations, "test": test, "power": None, "power_se": None, "type1": None,
        "type1_se": None, "ci_width": None, "note": note,
    }  # fmt: skip
    chunks = -(-settings.replications // CHUNK)
    if note is not None:
        if advance is not None:
            advance(2 * chunks, _label(design))
        return row
    zeta = np.arctanh(np.asarray(settings.effects))
    null = np.zeros_like(zeta) if test != "between" else np.full_like(zeta, zeta.mean())
    same = np.array_equal(zeta, null)  # the effects are no difference: one simulation gives both
    for name, means in (("power", zeta), ("type1", null)):
        if name == "power" or not same:
            rejected, widths = _simulate(design, settings, means, test, "type1" if same else name, advance)
        elif advance is not None:
            advance(chunks, _label(design))
        share = rejected.mean()
        row[name] = float(share)
        row[f"{name}_se"] = math.sqrt(share * (1 - share) / rejected.size)
        if name == "power" and widths.size and np.isfinite(widths).any():
            row["ci_width"] = float(np.nanmean(widths))
    return row


def _simulate(design: Design, settings: Settings, means: np.ndarray, test: str, kind: str, advance=None):
    """Whether each replication's test rejects, and its families' pooled interval widths (r scale)."""
    curves = settings.curves
    positions = curves.positions(design.checkpoints, settings.schedule)
    z = curves.in_domain_curve(positions)
    neighbours = curves.neighbours(positions)
    key = zlib.crc32(f"{design.families}|{design.seeds}|{design.checkpoints}|{settings.schedule}|{kind}".encode())
    family_of_run = np.repeat(np.arange(design.families), design.seeds)
    labels = [f"f{f}" for f in family_of_run]
    level = settings.level(2 if test == "pooled" else 1)
    rejected, widths = [], []
    for chunk, start in enumerate(range(0, settings.replications, CHUNK)):
        count = min(CHUNK, settings.replications - start)
        rng = np.random.default_rng([settings.seed, key, chunk])
        zeta = means[family_of_run] + settings.tau * rng.standard_normal((count, design.runs))
        x, y = simulate(rng, np.tanh(zeta), neighbours, curves.noise)
        stats = run_statistics(z, x, y, settings.analysis)
        effect = stats["effect"].reshape(count, design.runs)
        variance = stats["variance"].reshape(count, design.runs)
        if test == "run":
            p = (stats["p_eff"] if settings.analysis.inference == "effective" else stats["p"]).reshape(count)
        elif test == "pooled":
            p = meta.pool_many(effect, variance, settings.test).pvalue
        else:
            p = meta.subgroups_many(effect, variance, labels, "PM", settings.test).p_between
        rejected.append(np.isfinite(p) & (p < level))
        if design.seeds >= 2:
            pooled = meta.pool_many(
                effect.reshape(count * design.families, design.seeds),
                variance.reshape(count * design.families, design.seeds),
                settings.test,
            )
            low, high = pooled.interval(level)
            widths.append(np.tanh(high) - np.tanh(low))
        if advance is not None:
            advance(1, _label(design))
    return np.concatenate(rejected), np.concatenate(widths) if widths else np.zeros(0)
