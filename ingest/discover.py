"""Turns the paths a user gives (files, folders, globs) into results files to read.

* A file is read as a results file (:mod:`ood_store._ingest.formats` says which
  formats); a ``samples_<task>_<ts>.jsonl`` stands for the ``results_<ts>.json``
  beside it.
* A folder is searched recursively for ``*.json``, ``*.eval``, ``*.csv``,
  ``*.parquet`` and ``*.wandb`` files, skipping hidden folders and the files a
  model checkpoint holds (``config.json``, ``tokenizer.json``, ...). Files in none
  of the formats are skipped there, each named with what it is instead (a W&B
  binary run file, JSON of another kind); a folder with no results file at all is
  an error that names the first few it skipped.
* Anything else with ``*``, ``?`` or ``[`` is a glob (``**`` recurses).

Only regular files are read: a FIFO, a socket or a device found under a results
file's name is named as a problem, never opened. Links to folders are not
followed (a link loop cannot trap the search); a link to a file is, and a file
link that loops or leads nowhere is named as unreadable, as is every folder that
cannot be listed, a glob's included (glob.glob passes over those in silence, so the
folders a glob lists are tried one by one). Each problem rejects that path only;
the exit status is then 1.
"""

from __future__ import annotations

import errno
import glob
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ood_store._errors import InputError
from ood_store._ingest.regular import cannot_read, not_regular
from ood_store._ingest.report import unexpected
from ood_store._ingest.samples import results_beside

# File name endings a folder search reads (samples files are found beside their results file).
SEARCHED = (".json", ".eval", ".csv", ".parquet", ".wandb")

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
    searched (each must turn out to hold an lm-eval file), and the problems:
    arguments that name nothing usable, folders that cannot be listed, files
    found that cannot be read (a link loop) or are not regular files (a FIFO)."""
    search = _Search()
    for argument in arguments:
        try:
            search.argument(argument)
        except Exception as exc:  # one argument's surprise must not stop the others
            search.errors.append(
                InputError(None, None, f"internal error while searching {argument}: {unexpected(exc)}")
            )
    # A glob and the folders it matches can meet a file twice: each problem is named once.
    errors = list({str(error): error for error in search.errors}.values())
    return sorted(search.found.values(), key=lambda c: str(c.path)), search.searched, errors


class _Search:
    """What the arguments have found so far: candidates by resolved path, the arguments searched, the problems."""

    def __init__(self) -> None:
        self.searched: list[str] = []
        self.found: dict[Path, Candidate] = {}
        self.errors: list[InputError] = []

    def argument(self, argument: str) -> None:
        path = Path(os.path.expanduser(argument))
        try:
            mode = path.stat().st_mode
        except ValueError:  # a NUL character, which no path holds
            self.errors.append(InputError(argument, None, "not a path: it holds a NUL character"))
            return
        except OSError as exc:
            if glob.has_magic(argument):
                self.glob(argument)
            elif exc.errno == errno.ENOENT:
                self.errors.append(InputError(argument, None, "no such file or directory"))
            else:
                self.errors.append(cannot_read(argument, exc))
            return
        if stat.S_ISDIR(mode):
            self.searched.append(argument)
            self.folder(path, argument, shown=argument)
        else:
            self.file(path, argument, explicit=True)

    def glob(self, argument: str) -> None:
        self.searched.append(argument)
        pattern = os.path.expanduser(argument)
        matches = sorted(glob.glob(pattern, recursive=True))
        self.errors.extend(_unreadable(exc) for exc in _unlisted(pattern))
        if not matches:
            self.errors.append(InputError(argument, None, "no files match this pattern"))
        for match in matches:
            sub = Path(match)
            if sub.is_dir():
                self.folder(sub, argument)
            elif _is_candidate_name(sub.name):
                self.file(sub, argument, explicit=False)

    def folder(self, folder: Path, root: str, shown: str | None = None) -> None:
        """Search ``folder`` (``shown`` as the user named it), naming each folder in it that cannot be listed."""

        def unreadable(exc: OSError) -> None:
            self.errors.append(_unreadable(exc, shown if shown is not None and exc.filename == str(folder) else None))

        for dirpath, dirnames, filenames in os.walk(folder, onerror=unreadable):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if name.lower().endswith(SEARCHED) and name not in CHECKPOINT_FILES and not name.startswith("."):
                    self.file(Path(dirpath) / name, root, explicit=False)

    def file(self, path: Path, root: str, *, explicit: bool) -> None:
        """A results file (or the one a samples file stands for), or the reason it cannot be read."""
        try:
            path = _as_results(path)
            error = not_regular(str(path), path.stat().st_mode)
        except InputError as exc:
            error = exc
        except OSError as exc:
            error = cannot_read(str(path), exc)
        if error is not None:
            self.errors.append(error)
        elif explicit:
            self.found[path.resolve()] = Candidate(path, root, explicit=True)
        else:
            self.found.setdefault(path.resolve(), Candidate(path, root, explicit=False))


def _unlisted(pattern: str) -> list[OSError]:
    """The folders the glob ``pattern`` had to list and could not: glob.glob passes over them in silence.

    Level by level, the folders glob lists are the fixed start of the pattern and
    those its leading folder patterns match (glob.glob itself finds them, with the
    same rules for ``**`` and hidden names); each is tried with os.scandir."""
    parts = Path(pattern).parts
    fixed = next((i for i, part in enumerate(parts) if glob.has_magic(part)), len(parts))
    problems = []
    for depth in range(max(fixed, 1), len(parts)):
        level = os.path.join(*parts[:depth])
        for folder in glob.glob(level, recursive=True) if glob.has_magic(level) else [level]:
            if os.path.isdir(folder):
                try:
                    with os.scandir(folder):
                        pass
                except OSError as exc:
                    problems.append(exc)
    if fixed == 0:  # a pattern that starts in the current folder
        try:
            with os.scandir(os.curdir):
                pass
        except OSError as exc:
            problems.append(exc)
    return problems


def _unreadable(exc: OSError, shown: str | None = None) -> InputError:
    return InputError(shown or exc.filename, None, f"cannot read this folder: {exc.strerror}")


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
