"""Turns the paths a user gives (files, folders, globs) into results files to read.

* A file is read as a results file (:mod:`ood_store.ingest.formats` says which
  formats); a ``samples_<task>_<ts>.jsonl`` stands for the ``results_<ts>.json``
  beside it.
* A folder is searched recursively for ``*.json``, ``*.eval``, ``*.csv`` and
  ``*.parquet`` files, skipping hidden folders and the files a model checkpoint
  holds (``config.json``, ``tokenizer.json``, ...). Files in none of the formats
  are skipped there; a folder with no results file at all is an error.
* Anything else with ``*``, ``?`` or ``[`` is a glob (``**`` recurses).
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

from ood_store.errors import InputError
from ood_store.ingest.samples import results_beside

# File name endings a folder search reads (samples files are found beside their results file).
SEARCHED = (".json", ".eval", ".csv", ".parquet")

# Files written into model checkpoints and training folders: never lm-eval results.
CHECKPOINT_FILES = {
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "trainer_state.json",
    "training_args.json",
    "adapter_config.json",
    "preprocessor_config.json",
    "chat_template.json",
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
}


@dataclass(frozen=True)
class Candidate:
    path: Path
    root: str  # the argument that found it
    explicit: bool  # named directly (not found by searching a folder)


def discover(arguments: list[str]) -> tuple[list[Candidate], list[str], list[InputError]]:
    """Candidates in a stable order, the folder and glob arguments that were
    searched (each must turn out to hold an lm-eval file), and the arguments
    that named nothing usable."""
    searched: list[str] = []
    found: dict[Path, Candidate] = {}
    errors: list[InputError] = []
    for argument in arguments:
        path = Path(os.path.expanduser(argument))
        if path.is_dir():
            searched.append(argument)
            for file in _search(path):
                found.setdefault(file.resolve(), Candidate(file, argument, explicit=False))
        elif path.is_file():
            try:
                file = _as_results(path)
            except InputError as exc:
                errors.append(exc)
                continue
            found[file.resolve()] = Candidate(file, argument, explicit=True)
        elif glob.has_magic(argument):
            searched.append(argument)
            matches = sorted(glob.glob(os.path.expanduser(argument), recursive=True))
            if not matches:
                errors.append(InputError(argument, None, "no files match this pattern"))
            for match in matches:
                sub = Path(match)
                if sub.is_dir():
                    for file in _search(sub):
                        found.setdefault(file.resolve(), Candidate(file, argument, explicit=False))
                elif _is_candidate_name(sub.name):
                    try:
                        file = _as_results(sub)
                    except InputError as exc:
                        errors.append(exc)
                        continue
                    found.setdefault(file.resolve(), Candidate(file, argument, explicit=False))
        else:
            errors.append(InputError(argument, None, "no such file or directory"))
    return sorted(found.values(), key=lambda c: str(c.path)), searched, errors


def _search(folder: Path) -> list[Path]:
    files = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.lower().endswith(SEARCHED) and name not in CHECKPOINT_FILES and not name.startswith("."):
                files.append(Path(dirpath) / name)
    return files


def _is_candidate_name(name: str) -> bool:
    if name.startswith("samples_") and name.endswith(".jsonl"):
        return True
    return name.lower().endswith(SEARCHED) and name not in CHECKPOINT_FILES


def _as_results(path: Path) -> Path:
    if path.name.startswith("samples_") and path.name.endswith(".jsonl"):
        results = results_beside(path)
        if not results.is_file():
            raise InputError(
                str(path), None, f"a samples file without its results file ({results.name} is not beside it)"
            )
        return results
    return path
