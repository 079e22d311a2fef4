"""Where scores enter: results files of every format ood-store reads (lm-eval, Every Eval Ever, inspect_ai logs,
W&B histories) found, parsed, validated and written to the store.

:func:`ingest` (in :mod:`~ood_store._ingest.pipeline`) is the entry point;
discovery, parsing, validation and writing each have a module of their own.
"""

from ood_store._ingest.identity import Overrides
from ood_store._ingest.pipeline import CampaignMix, Conflict, FileOutcome, IngestReport, ingest

__all__ = ["CampaignMix", "Conflict", "FileOutcome", "IngestReport", "Overrides", "ingest"]
