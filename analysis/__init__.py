"""The analysis layer: partial correlations between OOD testsets, per run and across runs.

Series come out of the store with one SQL query per analysis
(:mod:`~ood_store._analysis.series`), residualizers live in
:mod:`~ood_store._analysis.residuals` (the GAM's basis in
:mod:`~ood_store._analysis.splines`, its smoothness selection in
:mod:`~ood_store._analysis.smoothing`), tests and intervals in
:mod:`~ood_store._analysis.inference`, the per-run table in
:mod:`~ood_store._analysis.partial`; across runs, the meta-analysis in
:mod:`~ood_store._analysis.meta`, the verdicts in
:mod:`~ood_store._analysis.verdicts`, the comparison in
:mod:`~ood_store._analysis.compare`, and the residualizer sensitivity report
in :mod:`~ood_store._analysis.sensitivity`. Planning a study: simulated
studies analyzed by that same code in :mod:`~ood_store._analysis.simulate`,
power by design in :mod:`~ood_store._analysis.power`, a pilot's nuisance
parameters in :mod:`~ood_store._analysis.nuisance`.
"""

from ood_store._analysis.compare import between_groups, compare
from ood_store._analysis.nuisance import Nuisance, estimate_nuisance
from ood_store._analysis.partial import Options, pairwise_partial, partial_correlations
from ood_store._analysis.power import PowerAnalysis, power_analysis
from ood_store._analysis.results import (
    BETWEEN_COLUMNS,
    COMPARISON_COLUMNS,
    PARTIAL_COLUMNS,
    SENSITIVITY_COLUMNS,
    BetweenGroups,
    Comparison,
    PartialCorrelations,
    Sensitivity,
)
from ood_store._analysis.sensitivity import residualizer_sensitivity

__all__ = [
    "BETWEEN_COLUMNS",
    "COMPARISON_COLUMNS",
    "PARTIAL_COLUMNS",
    "SENSITIVITY_COLUMNS",
    "BetweenGroups",
    "Comparison",
    "Nuisance",
    "Options",
    "PartialCorrelations",
    "PowerAnalysis",
    "Sensitivity",
    "between_groups",
    "compare",
    "estimate_nuisance",
    "pairwise_partial",
    "partial_correlations",
    "power_analysis",
    "residualizer_sensitivity",
]
