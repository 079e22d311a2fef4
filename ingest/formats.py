"""Which reader reads a file that ``ingest`` found: every format ood-store reads results from, told apart by content.

=========================  =====================================================  ==================
format                     recognized by (whatever the file's name)               module
=========================  =====================================================  ==================
inspect_ai log (.eval)     a zip archive holding ``header.json`` or               :mod:`.inspect_logs`
                           ``_journal/start.json`` (any ``*.eval``)
inspect_ai log (JSON)      JSON with an ``eval`` object naming a ``task``         :mod:`.inspect_logs`
Every Eval Ever            JSON with ``schema_version``, ``model_info`` and       :mod:`.eee`
                           ``evaluation_results``
lm-eval results            JSON with a top-level ``results`` object               :mod:`.lmeval`
W&B run history            ``*.csv`` or ``*.parquet`` with the step column        :mod:`.wandb`
                           (``_step`` unless told otherwise)
=========================  =====================================================  ==================

Each reader validates the whole file before anything is written and returns one
:class:`~ood_store._ingest.records.EvaluationRecord` per evaluation it holds (one,
except a W&B history: one per step); :class:`Detected` says which format a file was
taken for and why, for ``ingest --dry-run`` and for messages. A file none of them
recognizes raises :class:`NotResults` saying what it is instead (a W&B binary run
file, a zip archive of something else, JSON without any of the keys above), and is
skipped, and named, when it was found by searching a folder.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ood_store._errors import InputError
from ood_store._ingest import jsontext
from ood_store._ingest.eee import is_eee, parse_eee, producer_of
from ood_store._ingest.identity import Overrides
from ood_store._ingest.lmeval import NotLmEval, parse_results
from ood_store._ingest.records import EvaluationRecord
from ood_store._ingest.wandb import HistoryOptions, is_history_file, read_history

#: What a file that is none of these is called in messages.
KNOWN = "lm-eval, Every Eval Ever, inspect_ai or W&B history"

# The first bytes of files of known tools that are not results.
_WANDB_RUN = b":W&B"  # wandb.sdk.internal.datastore: the header of a run's binary .wandb file
_ZIP = b"PK\x03\x04"
_INSPECT_MEMBERS = ("header.json", "_journal/start.json")

WANDB_BINARY = (
    "a W&B run file (binary records wandb writes while a run logs), not a history: `wandb sync` the run "
    "folder, then ingest its history as W&B exports it (`run.history().to_csv(...)`)"
)
NOT_JSON_KEYS = (
    'JSON with none of a top-level "results" object (lm-eval), "schema_version", "model_info" and '
    '"evaluation_results" (Every Eval Ever), an "eval" object naming a "task" (inspect_ai)'
)


@dataclass(frozen=True)
class Detected:
    """The format a file was taken for (``eee-0.2.0``, ``lm-eval``, ...) and why, in words."""

    format: str
    why: str

    def __str__(self) -> str:
        return f"{self.format} ({self.why})"


class NotResults(NotLmEval):
    """A file in none of the formats ood-store reads; ``why`` says what it is instead."""

    def __init__(self, path: str, why: str):
        super().__init__(path)
        self.why = why


def read(
    path: Path, shown: str, data: bytes, digest: str, overrides: Overrides, history: HistoryOptions
) -> tuple[list[EvaluationRecord], Detected]:
    """The validated records of one file and what it was taken for; :class:`NotResults` when it is in no
    format ood-store reads. An InputError from a reader (the file is of that format, but broken) carries
    ``detected``, which the rejection names under ``ingest -v``."""
    detected, reader = _detect(path, shown, data, history)
    try:
        return reader(path, shown, data, digest, overrides), detected
    except InputError as exc:
        exc.detected = detected  # type: ignore[attr-defined]
        raise


Reader = Callable[[Path, str, bytes, str, Overrides], list[EvaluationRecord]]


def _detect(path: Path, shown: str, data: bytes, history: HistoryOptions) -> tuple[Detected, Reader]:
    """The format of a file by its content (and, for ``.eval`` and W&B histories, its name's ending)."""
    suffix = path.suffix.lower()
    if data.startswith(_WANDB_RUN):
        raise NotResults(shown, WANDB_BINARY)
    if suffix == ".eval" or (data.startswith(_ZIP) and _is_inspect_zip(data)):
        why = "a .eval file" if suffix == ".eval" else "a zip archive holding an inspect_ai log's header"
        return Detected("inspect_ai log", why), _inspect
    if data.startswith(_ZIP):
        raise NotResults(shown, "a zip archive without an inspect_ai log's header.json")
    if is_history_file(path):
        kind = suffix[1:].upper() if suffix == ".csv" else "Parquet"
        if not history.recognizes(path, data):
            raise NotResults(shown, f'a {kind} file without the step column "{history.step}" (a W&B history has '
                             "it; `wandb_step` names another)")  # fmt: skip
        return Detected("W&B history", f'a {kind} file with the step column "{history.step}"'), partial(
            _history, history=history
        )
    doc = jsontext.loads(shown, None, data)
    if is_inspect_json(doc):
        return Detected("inspect_ai log", 'JSON with an "eval" object naming a "task"'), partial(_inspect, doc=doc)
    if is_eee(doc):
        by = {"ood-store": ", written by ood-store", "lm_eval": ", from EEE's lm-eval converter",
              "inspect_ai": ", from EEE's inspect_ai converter"}.get(producer_of(doc) or "", "")  # fmt: skip
        why = f'JSON with "schema_version", "model_info" and "evaluation_results"{by}'
        return Detected(f"Every Eval Ever {doc['schema_version']}", why), partial(_eee, doc=doc)
    if isinstance(doc, dict) and isinstance(doc.get("results"), dict):
        return Detected("lm-eval results", 'JSON with a top-level "results" object'), partial(_lm_eval, doc=doc)
    raise NotResults(shown, NOT_JSON_KEYS)


def _inspect(
    path: Path, shown: str, data: bytes, digest: str, overrides: Overrides, doc: Any = None
) -> list[EvaluationRecord]:
    from ood_store._ingest.inspect_logs import read_log

    return [read_log(path, shown, digest, overrides, doc)]


def _history(
    path: Path, shown: str, data: bytes, digest: str, overrides: Overrides, history: HistoryOptions
) -> list[EvaluationRecord]:
    return read_history(path, shown, data, overrides, history)


def _eee(path: Path, shown: str, data: bytes, digest: str, overrides: Overrides, doc: Any) -> list[EvaluationRecord]:
    return [parse_eee(shown, digest, doc, overrides, path)]


def _lm_eval(
    path: Path, shown: str, data: bytes, digest: str, overrides: Overrides, doc: Any
) -> list[EvaluationRecord]:
    return [parse_results(shown, digest, doc, overrides)]


def is_inspect_json(doc: Any) -> bool:
    """An inspect_ai log in JSON: an ``eval`` object naming a ``task`` (``version``, which some writers
    leave out, is not needed: inspect_ai's reader takes the current one)."""
    return isinstance(doc, dict) and isinstance(doc.get("eval"), dict) and "task" in doc["eval"]


def _is_inspect_zip(data: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return False
    return any(member in names for member in _INSPECT_MEMBERS)
