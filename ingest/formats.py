"""Which reader reads a file that ``ingest`` found: every format ood-store reads results from.

=========================  ==================================================  ==================
format                     recognised by                                       module
=========================  ==================================================  ==================
lm-eval results            ``*.json`` with a top-level ``results`` object       :mod:`.lmeval`
Every Eval Ever            ``*.json`` with ``schema_version``, ``model_info``   :mod:`.eee`
                           and ``evaluation_results``
inspect_ai log             ``*.eval``, or ``*.json`` with an ``eval`` object    :mod:`.inspect_logs`
                           naming a ``task``
W&B run history            ``*.csv`` or ``*.parquet`` with a step column        :mod:`.wandb`
                           (``_step`` unless told otherwise)
=========================  ==================================================  ==================

Each reader validates the whole file before anything is written and returns one
:class:`~ood_store._ingest.records.EvaluationRecord` per evaluation it holds (one,
except a W&B history: one per step). A file none of them recognises raises
:class:`NotResults`, and is skipped when it was found by searching a folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ood_store._ingest import jsontext
from ood_store._ingest.eee import is_eee, parse_eee
from ood_store._ingest.identity import Overrides
from ood_store._ingest.lmeval import NotLmEval, parse_results
from ood_store._ingest.records import EvaluationRecord
from ood_store._ingest.wandb import HistoryOptions, is_history_file, read_history

#: What a file that is none of these is called in messages.
KNOWN = "lm-eval, Every Eval Ever, inspect_ai or W&B history"


class NotResults(NotLmEval):
    """A file in none of the formats ood-store reads."""


def read(
    path: Path, shown: str, data: bytes, digest: str, overrides: Overrides, history: HistoryOptions
) -> list[EvaluationRecord]:
    """The validated records of one file; :class:`NotResults` when it is in no format ood-store reads."""
    suffix = path.suffix.lower()
    if suffix == ".eval":
        from ood_store._ingest.inspect_logs import read_log

        return [read_log(path, shown, digest, overrides)]
    if is_history_file(path):
        if not history.recognises(path, data):
            raise NotResults(shown)
        return read_history(path, shown, data, overrides, history)
    doc = jsontext.loads(shown, None, data)
    if _is_inspect_log(doc):
        from ood_store._ingest.inspect_logs import read_log

        return [read_log(path, shown, digest, overrides)]
    if is_eee(doc):
        return [parse_eee(shown, digest, doc, overrides)]
    try:
        return [parse_results(shown, digest, doc, overrides)]
    except NotLmEval:
        raise NotResults(shown) from None


def _is_inspect_log(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("eval"), dict) and "task" in doc["eval"] and "version" in doc
