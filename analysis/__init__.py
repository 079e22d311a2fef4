"""The analysis layer: partial correlations between OOD testsets, per run and across runs.

Series come out of the store with one SQL query per analysis
(:mod:`~ood_store.analysis.series`), residualisers live in
:mod:`~ood_store.analysis.residuals`, tests and intervals in
:mod:`~ood_store.analysis.inference`, the per-run table in
:mod:`~ood_store.analysis.partial`.
"""

from ood_store.analysis.compare import compare
from ood_store.analysis.partial import Options, pairwise_partial, partial_correlations
from ood_store.analysis.results import COMPARISON_COLUMNS, PARTIAL_COLUMNS, Comparison, PartialCorrelations

__all__ = [
    "COMPARISON_COLUMNS",
    "PARTIAL_COLUMNS",
    "Comparison",
    "Options",
    "PartialCorrelations",
    "compare",
    "pairwise_partial",
    "partial_correlations",
]
