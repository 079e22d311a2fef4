"""Study files: many runs, each with its checkpoints, tasks, lm-eval options and attributes, in one TOML or YAML file.

::

    tasks = ["ood_nli"]                  # shared by every run unless a run sets its own
    include_path = ["my_tasks/"]
    batch_size = 16                      # any option below, for every run
    [executor]                           # optional: how to run it (as the evaluate options)
    name = "slurm"
    slurm_partition = "gpu"
    gpus_per_task = 1
    [[runs]]
    run = "opt-1.3b-mnli-s0"
    checkpoints = "runs/opt-1.3b-mnli-s0/checkpoint-*"   # a string or a list, as evaluate takes them
    family = "OPT"                       # any other key is a run attribute
    size = "1.3b"
    in_domain = "mnli"
    seed = 0

The keys of a run (and the top-level defaults of every run) that are
options: :data:`FILE_OPTIONS`, the per-run fields of
:class:`~ood_store._evaluate.plan.RunRequest` (so that an option added there
is an option here too), with ``include_path`` and ``lm_eval`` accepted for
``include_paths`` and ``lm_eval_kwargs``, and the ood_nli suite's prompt
variant written as a ``[suite]`` table (``pattern``, ``verbalizer``,
``neutral``, as in run files; a run's ``[runs.suite]`` keys win over the
top-level ``[suite]``). The options ``max_length`` and ``truncation`` may be
written in a ``[suite]`` table too (as ``ood-store finetune`` writes the
prompt length a run was trained with), not in both places. Everything else in
a run is an attribute (scalars only), as is everything in an
``[attributes]`` table (top level: shared by every run). Relative paths
(checkpoints, include paths, data, output and work folders) are read from the
study file's folder.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ood_store._errors import InputError, OodStoreError
from ood_store._evaluate.plan import RunRequest
from ood_store._evaluate.suite.variant import PROMPT_LENGTH_KEYS, SUITE_KEYS, VARIANT_KEYS, Variant
from ood_store._store.runs import load_run_file, parse_attributes

#: Per-run options: the fields of RunRequest other than the run, its checkpoints and attributes.
RUN_OPTIONS = tuple(f.name for f in fields(RunRequest) if f.name not in ("run", "checkpoints", "attributes"))
#: Spellings of options in files that are not the option's own name: the prompt variant is a [suite] table.
ALIASES = {"include_path": "include_paths", "lm_eval": "lm_eval_kwargs", "suite": "variant"}
#: Each key of a file that is an option, and the option it sets.
FILE_OPTIONS = {**{name: name for name in RUN_OPTIONS if name not in ALIASES.values()}, **ALIASES}
#: Top-level keys that are not run options.
STUDY_KEYS = ("runs", "executor", "attributes", "output_dir", "work_dir")
_PATH_OPTIONS = ("include_paths", "data_dir")


@dataclass(frozen=True)
class StudyRun:
    """One run of a study: its name, checkpoints, options (``RUN_OPTIONS`` keys) and attributes."""

    run: str
    checkpoints: list[str]
    options: dict[str, Any] = field(default_factory=dict)
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Study:
    """A study file, read and checked (:func:`load_study`)."""

    path: Path
    runs: list[StudyRun]
    executor: dict[str, Any] = field(default_factory=dict)  # "name" and executor options
    output_dir: Path | None = None
    work_dir: Path | None = None

    def with_attributes(self, extra: Callable[[str], Mapping[str, Any]]) -> Study:
        """This study with ``extra(run)`` added to each run's attributes (winning over the file's)."""
        runs = [replace(r, attributes={**r.attributes, **parse_attributes(dict(extra(r.run)))}) for r in self.runs]
        return replace(self, runs=runs)

    def requests(self, overrides: Mapping[str, Any] | None = None) -> list[RunRequest]:
        """One :class:`RunRequest` per run; ``overrides`` (options given for every run) win over the file."""
        out = []
        for run in self.runs:
            options = {**run.options, **(overrides or {})}
            out.append(
                RunRequest(run=run.run, checkpoints=run.checkpoints, attributes=run.attributes or None, **options)
            )
        return out


def load_study(path: str | os.PathLike[str]) -> Study:
    """Read and check a study file (TOML, or YAML for ``.yaml``/``.yml``).

    Raises :class:`InputError` naming the file and the field for a missing
    key, a value of the wrong type, an unknown key or an attribute that is not
    a string, number or boolean.
    """
    path = Path(path)
    data = load_run_file(path, what="study file")
    base = path.resolve().parent
    where = _Where(path)
    unknown = [k for k in data if k not in STUDY_KEYS and _option_name(k) is None]
    if unknown:
        known = ", ".join([*FILE_OPTIONS, *STUDY_KEYS])
        raise InputError(str(path), str(unknown[0]), f"not a study key (one of {known}; run attributes go in a run)")
    defaults = _options(data, base, where, "")
    shared = _attributes(data.get("attributes") or {}, where, "attributes")
    runs_data = data.get("runs")
    if not isinstance(runs_data, list) or not runs_data:
        raise InputError(str(path), "runs", "missing: a study needs at least one [[runs]] table")
    runs, names = [], set()
    for index, entry in enumerate(runs_data, start=1):
        prefix = f"runs[{index}]"
        if not isinstance(entry, dict):
            raise InputError(str(path), prefix, "expected a table (run = ..., checkpoints = ...)")
        run = entry.get("run")
        if not isinstance(run, str) or not run.strip():
            raise InputError(str(path), f"{prefix}.run", 'missing: every run needs a name (run = "...")')
        if run in names:
            raise InputError(str(path), f"{prefix}.run", f"{run!r} is in the study twice")
        names.add(run)
        checkpoints = entry.get("checkpoints")
        if isinstance(checkpoints, str):
            checkpoints = [checkpoints]
        if not isinstance(checkpoints, list) or not checkpoints or not all(isinstance(c, str) for c in checkpoints):
            raise InputError(
                str(path), f"{prefix}.checkpoints", "missing: a folder, glob or HF_REPO@REVISION, or a list"
            )
        own = _options(entry, base, where, prefix + ".")
        options = {**defaults, **own}
        if "tasks" not in options:
            raise InputError(str(path), f"{prefix}.tasks", "missing: give tasks = [...] at the top or in the run")
        if "variant" in options:  # the run's [suite] keys over the study's
            table = {**defaults.get("variant", {}), **own.get("variant", {})}
            options["variant"] = _variant(table, where, f"{prefix}.suite" if "variant" in own else "suite")
        named = ("run", "checkpoints", "attributes")
        extra = {k: v for k, v in entry.items() if k not in named and not _option_name(k)}
        attributes = {
            **shared,
            **_attributes(extra, where, prefix),
            **_attributes(entry.get("attributes") or {}, where, f"{prefix}.attributes"),
        }
        runs.append(StudyRun(run, [_checkpoint(base, c) for c in checkpoints], options, attributes))
    executor = _executor(data.get("executor"), where)
    folders = {k: None if data.get(k) is None else base / _text(data[k], where, k) for k in ("output_dir", "work_dir")}
    return Study(path, runs, executor, folders["output_dir"], folders["work_dir"])


class _Where:
    def __init__(self, path: Path):
        self.path = path

    def error(self, field_: str, message: str) -> InputError:
        return InputError(str(self.path), field_, message)


def _option_name(key: Any) -> str | None:
    """The option a file's key sets, or None for a key that is not an option."""
    return FILE_OPTIONS.get(str(key))


def _options(table: Mapping[str, Any], base: Path, where: _Where, prefix: str) -> dict[str, Any]:
    """The run options in ``table`` (aliases resolved, relative paths read from ``base``), checked."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = _option_name(key)
        if name is None:
            continue
        field_ = f"{prefix}{key}"
        if name in out:
            raise where.error(field_, f"given twice (as {name} too)")
        out[name] = _option(name, value, base, where, field_)
    suite = out.get("variant")
    for key in PROMPT_LENGTH_KEYS:  # run options written in [suite], as ood-store finetune writes them
        if suite is not None and key in suite:
            if key in out:
                raise where.error(f"{prefix}suite.{key}", f"given twice (as {key} too)")
            out[key] = _option(key, suite.pop(key), base, where, f"{prefix}suite.{key}")
    if suite is not None and not suite:
        del out["variant"]
    return out


def _option(name: str, value: Any, base: Path, where: _Where, field_: str) -> Any:
    from ood_store._evaluate import options as checks

    try:
        if name in ("tasks", "include_paths"):
            items = [value] if isinstance(value, str) else value
            if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
                raise where.error(field_, "expected a name or a list of names")
            return [str(base / _expand(v)) for v in items] if name == "include_paths" else items
        if name == "data_dir":
            return str(base / _expand(_text(value, where, field_)))
        if name == "lm_eval_kwargs":
            if not isinstance(value, dict):
                raise where.error(field_, "expected a table of lm_eval.simple_evaluate arguments")
            return dict(value)
        if name == "variant":
            if not isinstance(value, dict):
                raise where.error(field_, f"expected a table: [suite] with {', '.join(SUITE_KEYS)}")
            unknown = sorted(set(value) - set(SUITE_KEYS))
            if unknown:
                known = ", ".join(SUITE_KEYS)
                raise where.error(f"{field_}.{unknown[0]}", f"unknown key (a [suite] table has {known})")
            _variant({k: v for k, v in value.items() if k in VARIANT_KEYS}, where, field_)
            return dict(value)
        return checks.check(name, value)
    except InputError as exc:
        if exc.path == str(where.path):
            raise
        raise where.error(field_, exc.message) from None


def _variant(table: Mapping[str, Any], where: _Where, field_: str) -> Variant:
    """The prompt variant of a [suite] table, or a one-line error naming the table's key at fault."""
    try:
        return Variant.of(**table)
    except InputError as exc:
        raise where.error(f"{field_}.{exc.parameter}", exc.message) from None


def _attributes(table: Any, where: _Where, prefix: str) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise where.error(prefix, "expected a table of key = value pairs")
    for key, value in table.items():
        if not isinstance(value, str | int | float | bool):
            raise where.error(
                f"{prefix}.{key}", f"an attribute must be a string, number or boolean, got {type(value).__name__}"
            )
    try:
        return parse_attributes(table)
    except InputError as exc:
        raise where.error(f"{prefix}.{exc.field}", exc.message) from None


def _executor(value: Any, where: _Where) -> dict[str, Any]:
    from ood_store._evaluate import executors

    if value is None:
        return {}
    table = {"name": value} if isinstance(value, str) else value
    if not isinstance(table, dict):
        raise where.error("executor", "expected a name (inline, local, slurm, ray) or a table")
    options = {k: v for k, v in table.items() if k != "name"}
    try:
        executors.settings(table.get("name"), **options)
    except InputError as exc:
        if exc.parameter == "executor":
            raise where.error("executor.name", exc.message) from None
        inner = f".{exc.field}" if exc.field else ""
        raise where.error(f"executor.{exc.parameter}{inner}", exc.message) from None
    except OodStoreError as exc:
        raise where.error("executor", exc.message) from None
    return dict(table)


def _text(value: Any, where: _Where, field_: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise where.error(field_, "expected a non-empty string")
    return value


def _expand(value: str) -> str:
    return os.path.expanduser(value)


def _checkpoint(base: Path, value: str) -> str:
    """A checkpoint argument with a relative folder or glob read from the study's folder (HF_REPO@REVISION as is)."""
    value = _expand(value)
    if os.path.isabs(value):
        return value
    candidate = base / value
    if "@" in value and not candidate.exists() and not glob.has_magic(value):
        return value
    return str(candidate)
