"""The analysis layer: partial correlations between OOD testsets, per run and across runs.

Series come out of the store with one SQL query per analysis
(:mod:`~ood_store.analysis.series`), residualisers live in
:mod:`~ood_store.analysis.residuals`, tests and intervals in
:mod:`~ood_store.analysis.inference`, the per-run table in
:mod:`~ood_store.analysis.partial`.
"""

from ood_store.analysis.compare import between_groups, compare
from ood_store.analysis.partial import COLUMNS, Options, pairwise_partial, partial_correlations

__all__ = ["COLUMNS", "Options", "between_groups", "compare", "pairwise_partial", "partial_correlations"]
