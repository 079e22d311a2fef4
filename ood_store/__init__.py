"""ood-store: a results store for out-of-distribution generalization studies.

Everything a notebook needs is importable from here, and only from here: every other module is
private (its name starts with ``_``) and may change without notice.

>>> import ood_store
>>> store = ood_store.open(tmp / "tour.duckdb")
>>> report = store.ingest([pythia_160m])
>>> result = ood_store.partial_correlations(
...     store, in_domain="lambada_openai", ood=["piqa", "arc_easy", "sciq"], residualizer="linear"
... )
>>> result.table.height
3
>>> store.close()

The stages follow the data: finetune (the checkpoint series) → evaluate (lm-eval on every
checkpoint) → ingest (files in) → the store (one DuckDB file) → analysis (partial correlations,
comparisons, planning) → export (tables and figures for papers). Names are loaded on first use,
so ``import ood_store`` is cheap and loads neither DuckDB, nor lm-eval, nor matplotlib.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version
from typing import TYPE_CHECKING, Any

try:
    __version__ = _version("ood-store")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

from ood_store._errors import (
    AnalysisError,
    InputError,
    OodStoreError,
    QueryError,
    SchemaError,
    StoreDamagedError,
    StoreError,
    StoreLockedError,
)

if TYPE_CHECKING:
    from ood_store._analysis import (
        BetweenGroups,
        Comparison,
        Options,
        PartialCorrelations,
        Sensitivity,
        pairwise_partial,
        partial_correlations,
    )
    from ood_store._analysis import residualizer_sensitivity as sensitivity
    from ood_store._analysis.compare import between_groups, compare
    from ood_store._analysis.dynamics import ItemDynamics, item_dynamics
    from ood_store._analysis.items import ItemCorrelations, item_correlations
    from ood_store._api import Store, default_path, open
    from ood_store._evaluate.runner import EvaluateReport
    from ood_store._evaluate.suite.stored import variant_scores
    from ood_store._evaluate.suite.variant import PATTERNS, Variant
    from ood_store._export.figure_files import PaperFigure
    from ood_store._export.figures import curves_of_run, sign_agreement, training_curves
    from ood_store._export.figures import from_analysis as figure_of_analysis
    from ood_store._export.forest import forest
    from ood_store._export.heatmaps import heatmap, heatmap_grid
    from ood_store._export.paper_table import PaperTable
    from ood_store._export.tables import compare_table, partial_table, query_table
    from ood_store._export.tables import from_analysis as table_of_analysis
    from ood_store._export.tables import from_query as table_of_query
    from ood_store._finetune.runner import finetune
    from ood_store._ingest import IngestReport, Overrides

#: Public name -> (private module, name there). Loaded on first use (see the module docstring).
_LAZY = {
    # the store
    "Store": ("ood_store._api", "Store"),
    "open": ("ood_store._api", "open"),
    "default_path": ("ood_store._api", "default_path"),
    # finetune (needs the finetune extra), ingest and evaluate
    "finetune": ("ood_store._finetune.runner", "finetune"),
    "Overrides": ("ood_store._ingest", "Overrides"),
    "IngestReport": ("ood_store._ingest", "IngestReport"),
    "EvaluateReport": ("ood_store._evaluate.runner", "EvaluateReport"),
    # the NLI suite
    "Variant": ("ood_store._evaluate.suite.variant", "Variant"),
    "PATTERNS": ("ood_store._evaluate.suite.variant", "PATTERNS"),
    "variant_scores": ("ood_store._evaluate.suite.stored", "variant_scores"),
    # analysis
    "partial_correlations": ("ood_store._analysis", "partial_correlations"),
    "pairwise_partial": ("ood_store._analysis", "pairwise_partial"),
    "Options": ("ood_store._analysis", "Options"),
    "compare": ("ood_store._analysis", "compare"),
    "between_groups": ("ood_store._analysis", "between_groups"),
    "sensitivity": ("ood_store._analysis", "residualizer_sensitivity"),
    "PartialCorrelations": ("ood_store._analysis", "PartialCorrelations"),
    "item_correlations": ("ood_store._analysis.items", "item_correlations"),
    "ItemCorrelations": ("ood_store._analysis.items", "ItemCorrelations"),
    "item_dynamics": ("ood_store._analysis.dynamics", "item_dynamics"),
    "ItemDynamics": ("ood_store._analysis.dynamics", "ItemDynamics"),
    "Comparison": ("ood_store._analysis", "Comparison"),
    "BetweenGroups": ("ood_store._analysis", "BetweenGroups"),
    "Sensitivity": ("ood_store._analysis", "Sensitivity"),
    # tables for papers
    "PaperTable": ("ood_store._export.paper_table", "PaperTable"),
    "partial_table": ("ood_store._export.tables", "partial_table"),
    "compare_table": ("ood_store._export.tables", "compare_table"),
    "query_table": ("ood_store._export.tables", "query_table"),
    "table_of_analysis": ("ood_store._export.tables", "from_analysis"),
    "table_of_query": ("ood_store._export.tables", "from_query"),
    # figures for papers
    "PaperFigure": ("ood_store._export.figure_files", "PaperFigure"),
    "heatmap": ("ood_store._export.heatmaps", "heatmap"),
    "heatmap_grid": ("ood_store._export.heatmaps", "heatmap_grid"),
    "sign_agreement": ("ood_store._export.figures", "sign_agreement"),
    "forest": ("ood_store._export.forest", "forest"),
    "training_curves": ("ood_store._export.figures", "training_curves"),
    "curves_of_run": ("ood_store._export.figures", "curves_of_run"),
    "figure_of_analysis": ("ood_store._export.figures", "from_analysis"),
}


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'ood_store' has no attribute {name!r}") from None
    value = getattr(import_module(module), attribute)
    globals()[name] = value  # the next lookup does not come here
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "AnalysisError",
    "BetweenGroups",
    "Comparison",
    "EvaluateReport",
    "IngestReport",
    "InputError",
    "ItemCorrelations",
    "ItemDynamics",
    "OodStoreError",
    "Options",
    "Overrides",
    "PATTERNS",
    "PaperFigure",
    "PaperTable",
    "PartialCorrelations",
    "QueryError",
    "SchemaError",
    "Sensitivity",
    "Store",
    "StoreDamagedError",
    "StoreError",
    "StoreLockedError",
    "Variant",
    "__version__",
    "between_groups",
    "compare",
    "compare_table",
    "curves_of_run",
    "default_path",
    "figure_of_analysis",
    "forest",
    "heatmap",
    "heatmap_grid",
    "finetune",
    "item_correlations",
    "item_dynamics",
    "open",
    "pairwise_partial",
    "partial_correlations",
    "partial_table",
    "query_table",
    "sensitivity",
    "sign_agreement",
    "table_of_analysis",
    "table_of_query",
    "training_curves",
    "variant_scores",
]
