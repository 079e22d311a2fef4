"""The finetuning study file (TOML or YAML), or the same options given as arguments: read, checked, expanded.

::

    base_model = "facebook/opt-125m"   # a causal LM's folder or hub id (per run overridable)
    in_domain = "mnli"                 # a testset of the ood_nli suite (its training split), or a local set
    pattern = "minimal"                # a shipped pattern or a text; verbalizer, neutral as the suite's
    method = "lora"                    # lora | full
    loss = "vocabulary"                # vocabulary (llmft's) | verbalizers
    shots = [16, 64]
    data_seeds = [0, 1, 2]             # which shots (llmft's rule); seeds: the Trainer's seed
    schedule = { kind = "log", checkpoints = 24 }
    tasks = ["ood_nli"]                # what the written study file evaluates
    [training]                         # transformers.TrainingArguments
    learning_rate = 2e-4
    [lora]                             # peft.LoraConfig
    r = 8
    [evaluate]                         # options of the written study file (batch_size, dtype, ...)
    [[runs]]                           # optional: one entry per model; any other key is an attribute
    family = "OPT"
    size = "125m"

Every run of the grid is each ``[[runs]]`` entry (or the top level alone)
crossed with its ``shots``, ``data_seeds`` and ``seeds``; a run's keys win
over the top level's (``training`` and ``lora`` tables merge key by key).
Relative paths are read from the file's folder. Options given as arguments
(``ood-store finetune --shots 16 ...``, or keywords of
:func:`~ood_store._finetune.runner.finetune`) win over the file's top level
and are named as arguments in errors; a file's errors name the file and the
field. Nothing here imports torch or transformers: what only the model, the
data or transformers can check is checked by the runner before any run trains.
"""

from __future__ import annotations

import os
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ood_store._errors import InputError
from ood_store._evaluate.suite.testsets import SUITE, TESTSETS
from ood_store._evaluate.suite.variant import Variant
from ood_store._finetune.schedule import Schedule, parse
from ood_store._names import did_you_mean
from ood_store._store.runs import load_run_file, parse_attributes

METHODS = ("lora", "full")
#: ``vocabulary``: cross-entropy over the whole vocabulary at the verbalizer position (llmft's);
#: ``verbalizers``: cross-entropy over the two verbalizer logits only.
LOSSES = ("vocabulary", "verbalizers")
TRUNCATION = ("left", "right")
DTYPES = ("float32", "bfloat16", "float16", "auto")
KEEP = ("all", "weights", "none")
DEFAULT_NAME = "{model}-{in_domain}-{method}-k{shots}-d{data_seed}-s{seed}"

#: Keys a run (or the top level, for every run) may set.
RUN_KEYS = (
    "base_model", "in_domain", "pattern", "verbalizer", "neutral", "method", "loss", "shots", "data_seeds",
    "data_seed", "seeds", "seed", "balanced", "schedule", "max_length", "truncation", "dtype", "name", "training",
    "lora", "attributes",
)  # fmt: skip
#: Keys of the top level only.
STUDY_KEYS = (
    "runs", "tasks", "include_path", "data_dir", "output_dir", "evaluate", "executor", "keep_checkpoints", "in_loop",
)  # fmt: skip
#: Keys of the [evaluate] table: options of evaluate's study files, written into the study file for every run.
EVALUATE_KEYS = ("batch_size", "device", "dtype", "num_fewshot", "limit", "samples", "lm_eval")
#: Grid keys, each with its one-value spelling.
_GRID = {"shots": "shots", "data_seeds": "data_seed", "seeds": "seed"}

#: Defaults of the Trainer's arguments, by method: llmft's (Mosbach et al. 2023): full finetuning with lr 1e-5
#: for 40 epochs, LoRA with lr 2e-4 for 80; warm-up 0.5 and 0.25 of the steps; batches of 32; no weight decay.
TRAINING_DEFAULTS: dict[str, dict[str, Any]] = {
    "full": {"learning_rate": 1e-5, "num_train_epochs": 40, "warmup": 0.5, "per_device_train_batch_size": 32,
             "weight_decay": 0.0},
    "lora": {"learning_rate": 2e-4, "num_train_epochs": 80, "warmup": 0.25, "per_device_train_batch_size": 32,
             "weight_decay": 0.0},
}  # fmt: skip
#: LoRA's defaults (llmft's rank 8); the rest is peft.LoraConfig's own.
LORA_DEFAULTS: dict[str, Any] = {"r": 8}

#: TrainingArguments that ood-store sets itself, and why a study cannot.
TRAINING_OWN = {
    "output_dir": "each run's folder is under the study's output_dir",
    "overwrite_output_dir": "runs resume; remove a run's folder to train it again",
    "save_strategy": "the checkpoint schedule decides when to save (schedule)",
    "save_steps": "the checkpoint schedule decides when to save (schedule)",
    "save_total_limit": "every scheduled checkpoint is kept (keep_checkpoints says what of it)",
    "resume_from_checkpoint": "a run resumes from its last checkpoint by itself",
    "seed": "each seed is a run of the grid (seeds = [...] in a study, or the seed option)",
    "data_seed": "set data_seeds: the data seed chooses the shots (llmft's rule), not the Trainer",
    "remove_unused_columns": "the training examples are ood-store's",
    "eval_strategy": "the OOD suite is evaluated on the saved checkpoints (or in the loop: in_loop)",
    "do_eval": "the OOD suite is evaluated on the saved checkpoints (or in the loop: in_loop)",
    "load_best_model_at_end": "every checkpoint is kept; none is 'best'",
}


@dataclass(frozen=True)
class RunConfig:
    """One run of the grid, resolved: what it trains, on which shots, with which prompt, saved when."""

    run: str
    base_model: str
    in_domain: str  # as given: a suite testset's short name ("mnli") or a local set's name
    testset: str | None  # the suite's testset ("ood_nli_mnli"), or None for a local set
    variant: Variant
    method: str
    loss: str
    shots: int
    data_seed: int
    seed: int
    balanced: bool
    schedule: Schedule
    max_length: int | None
    truncation: str
    dtype: str | None
    training: dict[str, Any]  # TrainingArguments keywords given (defaults added by the runner)
    lora: dict[str, Any]  # LoraConfig keywords (method lora)
    attributes: dict[str, Any]
    fields: dict[str, str] = field(default_factory=dict, compare=False)  # key -> where it was set (for errors)

    @property
    def in_domain_task(self) -> str:
        """The evaluation task of the training data: the suite's testset under this run's variant, or the local set."""
        return self.variant.task_name(self.testset) if self.testset else self.in_domain

    def identity(self) -> dict[str, Any]:
        """What defines the training (attributes aside): a run folder trained otherwise is not resumed."""
        return {
            "base_model": self.base_model,
            "in_domain": self.in_domain,
            "variant": {k: self.variant.record()[k] for k in ("pattern", "verbalizers", "neutral")},
            "method": self.method,
            "loss": self.loss,
            "shots": self.shots,
            "data_seed": self.data_seed,
            "seed": self.seed,
            "balanced": self.balanced,
            "schedule": self.schedule.record(),
            "max_length": self.max_length,
            "truncation": self.truncation,
            "dtype": self.dtype,
            "training": dict(sorted(self.training.items())),
            "lora": dict(sorted(self.lora.items())) if self.method == "lora" else None,
        }

    def record(self) -> dict[str, Any]:
        """Everything, as plain JSON (the run folder's ``finetune.json`` holds it)."""
        return {"run": self.run, "testset": self.testset, **self.identity(), "attributes": self.attributes}

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> RunConfig:
        variant = data["variant"]
        return cls(
            run=data["run"],
            base_model=data["base_model"],
            in_domain=data["in_domain"],
            testset=data["testset"],
            variant=Variant(variant["pattern"], tuple(variant["verbalizers"]), variant["neutral"]),
            method=data["method"],
            loss=data["loss"],
            shots=data["shots"],
            data_seed=data["data_seed"],
            seed=data["seed"],
            balanced=data["balanced"],
            schedule=parse(data["schedule"]),
            max_length=data["max_length"],
            truncation=data["truncation"],
            dtype=data["dtype"],
            training=dict(data["training"]),
            lora=dict(data["lora"] or {}),
            attributes=dict(data["attributes"]),
        )

    def where(self, key: str) -> str:
        """The field (or argument) that set ``key`` for this run: ``runs[2].pattern``, ``shots``, ..."""
        return self.fields.get(key, key)


@dataclass(frozen=True)
class FinetuneStudy:
    """A finetuning study, read and checked (:func:`load_finetune_study`): its runs and what the written study file
    evaluates."""

    path: Path | None
    runs: list[RunConfig]
    tasks: list[str]
    include_paths: list[str]
    data_dir: str | None
    evaluate: dict[str, Any]  # options of the written study file (evaluate's keys)
    executor: dict[str, Any]
    output_dir: Path | None
    keep_checkpoints: str
    in_loop: bool
    given: frozenset[str] = frozenset()  # top-level keys given as arguments, not in the file

    def error(self, run: RunConfig | None, key: str, message: str) -> InputError:
        """A one-line error about ``key`` as ``run`` (or the study) got it: the file and field, or the argument."""
        return _located(self.path, self.given, run.where(key) if run is not None else key, message)


class _Reader:
    """Reads one study: errors name the file's fields, or the arguments given."""

    def __init__(self, path: Path | None, given: frozenset[str]):
        self.path, self.given = path, given
        self.base = path.resolve().parent if path is not None else Path.cwd()

    def error(self, where: str, message: str) -> InputError:
        return _located(self.path, self.given, where, message)

    def path_of(self, value: str, key: str) -> str:
        """A path from the file, read from its folder; given as an argument, from the working directory."""
        base = Path.cwd() if key in self.given or self.path is None else self.base
        return str(base / os.path.expanduser(value))


def _located(path: Path | None, given: frozenset[str], where: str, message: str) -> InputError:
    """An error about the field ``where`` of the file ``path``, or about an argument (``training.seed``: the key
    ``seed`` of the argument ``training``) when it was given as one."""
    root, _, rest = where.partition(".")
    if path is None or (root in given and "[" not in root):
        return InputError(None, rest or None, message, parameter=root)
    return InputError(str(path), where, message)


def load_finetune_study(path: str | os.PathLike[str] | None = None, **given: Any) -> FinetuneStudy:
    """Read a study file (or none) with ``given`` options on top; see the module docstring.

    ``given`` are top-level keys (``base_model``, ``shots``, ``training``, ...);
    a value of None is not given. Raises :class:`InputError` naming the file
    and field, or the argument, for the first thing wrong.
    """
    file = Path(path) if path is not None else None
    data = load_run_file(file, what="finetuning study file") if file is not None else {}
    options = {k: v for k, v in given.items() if v is not None}
    reader = _Reader(file, frozenset(options))
    known = (*RUN_KEYS, *STUDY_KEYS)
    for key in [*data, *options]:
        if key not in known:
            hint = did_you_mean(str(key), known) or " (run attributes go in [attributes] or a [[runs]] entry)"
            raise reader.error(str(key), f"not a key of a finetuning study{hint}")
    top = {**data, **options}
    for name in ("training", "lora", "attributes"):  # tables given as arguments merge over the file's
        if name in options and isinstance(data.get(name), Mapping) and isinstance(options[name], Mapping):
            top[name] = {**data[name], **options[name]}
    entries = top.get("runs", [{}])
    if not isinstance(entries, list) or not entries or not all(isinstance(e, Mapping) for e in entries):
        raise reader.error("runs", "expected [[runs]] tables (one per model), or none")
    defaults = {k: v for k, v in top.items() if k in RUN_KEYS}
    runs: list[RunConfig] = []
    for index, entry in enumerate(entries, start=1):
        prefix = f"runs[{index}]" if "runs" in top else ""
        runs.extend(_expand(reader, defaults, dict(entry), prefix, {k: v for k, v in options.items() if k in RUN_KEYS}))
    names: dict[str, RunConfig] = {}
    for run in runs:
        if run.run in names:
            raise reader.error(
                run.where("name"), f"two runs are named {run.run!r}: set the name template (fields: "
                f"{', '.join(_NAME_FIELDS)}, attributes) to tell them apart",
            )  # fmt: skip
        names[run.run] = run
    tasks = _names(reader, top.get("tasks", ["ood_nli"]), "tasks")
    include = [reader.path_of(p, "include_path") for p in _names(reader, top.get("include_path", []), "include_path")]
    data_dir = top.get("data_dir")
    if data_dir is not None:
        data_dir = reader.path_of(_text(reader, data_dir, "data_dir"), "data_dir")
    for run in runs:
        _check_in_domain(reader, run, data_dir)
    output_dir = top.get("output_dir")
    return FinetuneStudy(
        path=file,
        runs=runs,
        tasks=tasks,
        include_paths=include,
        data_dir=data_dir,
        evaluate=_evaluate_options(reader, top.get("evaluate", {})),
        executor=_executor(reader, top.get("executor")),
        output_dir=None if output_dir is None else _folder(reader, output_dir, "output_dir"),
        keep_checkpoints=_choice(reader, top.get("keep_checkpoints", "weights"), KEEP, "keep_checkpoints"),
        in_loop=_flag(reader, top.get("in_loop", False), "in_loop"),
        given=frozenset(options),
    )


_NAME_FIELDS = ("model", "in_domain", "method", "loss", "shots", "data_seed", "seed", "pattern")


def _expand(
    reader: _Reader, defaults: Mapping[str, Any], entry: dict[str, Any], prefix: str, given: Mapping[str, Any]
) -> list[RunConfig]:
    """The runs of one [[runs]] entry: its settings over the top level's (and the arguments over both), crossed
    with its grid."""
    dot = f"{prefix}." if prefix else ""
    own = {k: v for k, v in entry.items() if k in RUN_KEYS}
    extra = {k: v for k, v in entry.items() if k not in RUN_KEYS}
    for key in extra:
        if key in STUDY_KEYS:
            raise reader.error(f"{dot}{key}", "a key of the study, not of a run: give it at the top level")
    defaults = dict(defaults)
    for plural, singular in _GRID.items():  # an argument replaces both spellings of the file's
        if plural in given or singular in given:
            for table in (defaults, own):
                table.pop(plural, None)
                table.pop(singular, None)
    settings = {**defaults, **own, **given}
    for name in ("training", "lora", "attributes"):
        parts: list[Mapping[str, Any]] = [t[name] for t in (defaults, own, given) if isinstance(t.get(name), Mapping)]
        if len(parts) > 1:
            settings[name] = {k: v for part in parts for k, v in part.items()}
    fields = {k: (k if k in given else f"{dot}{k}" if k in own else k) for k in settings}

    def where(key: str) -> str:
        return fields.get(key, key)

    grid = {}
    for plural, singular in _GRID.items():
        if plural in settings and singular in settings and plural != singular:
            both = [k for k in (plural, singular) if k in own] or [plural, singular]
            raise reader.error(where(both[0]), f"give {plural} or {singular}, not both")
        key = plural if plural in settings else singular
        values = settings.get(key, [0] if plural != "shots" else None)
        if values is None:
            raise reader.error(f"{dot}shots", "missing: how many training examples, e.g. shots = [16, 64]")
        least = 1 if plural == "shots" else 0
        grid[plural] = _integers(reader, values, where(key), least)
        fields[singular] = fields[plural] = where(key)
    base_model = settings.get("base_model")
    if base_model is None:
        raise reader.error(f"{dot}base_model", "missing: a causal LM's folder or hub id, e.g. facebook/opt-125m")
    base_model = _model(reader, _text(reader, base_model, where("base_model")), where("base_model"))
    in_domain = settings.get("in_domain")
    if in_domain is None:
        raise reader.error(f"{dot}in_domain", "missing: a testset of the ood_nli suite (mnli, snli, ...), or your own")
    in_domain = _text(reader, in_domain, where("in_domain"))
    testset = _testset(in_domain)
    variant = _variant(reader, settings, where)
    method = _choice(reader, settings.get("method", "lora"), METHODS, where("method"))
    loss = _choice(reader, settings.get("loss", "vocabulary"), LOSSES, where("loss"))
    balanced = _flag(reader, settings.get("balanced", False), where("balanced"))
    try:
        schedule = parse(settings.get("schedule", {"kind": "log"}), where("schedule"))
    except InputError as exc:
        raise reader.error(exc.field or where("schedule"), exc.message) from None
    max_length = settings.get("max_length")
    if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2):
        raise reader.error(where("max_length"), f"expected a whole number of tokens, 2 or more, got {max_length!r}")
    truncation = _choice(reader, settings.get("truncation", "left"), TRUNCATION, where("truncation"))
    dtype = settings.get("dtype")
    if dtype is not None:
        dtype = _choice(reader, dtype, DTYPES, where("dtype"))
    training = _table(reader, settings.get("training", {}), where("training"))
    for key in training:
        if key in TRAINING_OWN:
            raise reader.error(f"{where('training')}.{key}", f"set by ood-store: {TRAINING_OWN[key]}")
    lora = _table(reader, settings.get("lora", {}), where("lora"))
    if "task_type" in lora:
        raise reader.error(f"{where('lora')}.task_type", "set by ood-store: a causal LM (CAUSAL_LM)")
    attributes = _attributes(reader, {**_table(reader, settings.get("attributes", {}), where("attributes")), **extra},
                             where("attributes"), dot)  # fmt: skip
    template = _text(reader, settings.get("name", DEFAULT_NAME), where("name"))
    runs = []
    for shots in grid["shots"]:
        for data_seed in grid["data_seeds"]:
            for seed in grid["seeds"]:
                values = {"shots": shots, "data_seed": data_seed, "seed": seed}
                name = _name(reader, template, where("name"), base_model, in_domain, method, loss, variant, values,
                             attributes)  # fmt: skip
                run_attributes = {**attributes}
                runs.append(
                    RunConfig(
                        run=name, base_model=base_model, in_domain=in_domain, testset=testset, variant=variant,
                        method=method, loss=loss, shots=shots, data_seed=data_seed, seed=seed, balanced=balanced,
                        schedule=schedule, max_length=max_length, truncation=truncation, dtype=dtype,
                        training=training, lora=lora if method == "lora" else {}, attributes=run_attributes,
                        fields={**fields, "name": where("name")},
                    )
                )  # fmt: skip
    return runs


def _testset(name: str) -> str | None:
    """The suite's testset a training set name means (``mnli``, ``ood_nli_mnli``), or None (a local set)."""
    for candidate in (name, f"ood_nli_{name}"):
        if candidate in SUITE:
            return candidate
    return None


def _check_in_domain(reader: _Reader, run: RunConfig, data_dir: str | None) -> None:
    if run.testset is not None:
        return
    if data_dir is None:
        shown = ", ".join(t.removeprefix("ood_nli_") for t in SUITE)
        raise reader.error(
            run.where("in_domain"), f"{run.in_domain!r} is not a testset of the ood_nli suite ({shown}); a set of "
            "your own needs data_dir, holding its training split as NAME.train.jsonl",
        )  # fmt: skip
    if run.in_domain in TESTSETS:  # a HANS sub-task: not a training set of its own
        raise reader.error(run.where("in_domain"), f"{run.in_domain!r} is a part of HANS, not a training set")


def _variant(reader: _Reader, settings: Mapping[str, Any], where: Any) -> Variant:
    table = {k: settings[k] for k in ("pattern", "verbalizer", "neutral") if k in settings}
    try:
        variant = Variant.of(**table)
    except InputError as exc:
        raise reader.error(where(exc.parameter or "pattern"), exc.message) from None
    names = {f for _, f, _, _ in string.Formatter().parse(variant.pattern) if f is not None}
    if "premise" not in names:
        raise reader.error(where("pattern"), f"{variant.pattern!r} has no {{premise}}: a pattern needs both fields")
    return variant


def _model(reader: _Reader, value: str, where: str) -> str:
    """A folder (relative to the study file) as an absolute path; a hub id (``org/name``) as it is."""
    local = Path(reader.path_of(value, where))
    if local.exists():
        return str(local)
    if value.startswith(("/", ".", "~")) or value.count("/") > 1:
        raise reader.error(where, f"no such model folder: {local}")
    return value


def _name(
    reader: _Reader,
    template: str,
    where: str,
    base_model: str,
    in_domain: str,
    method: str,
    loss: str,
    variant: Variant,
    values: Mapping[str, int],
    attributes: Mapping[str, Any],
) -> str:
    fields = {
        **{str(k): v for k, v in attributes.items()},
        "model": Path(base_model.rstrip("/")).name or base_model,
        "in_domain": in_domain,
        "method": method,
        "loss": loss,
        "pattern": variant.pattern_name or variant.key.split("__")[0],
        **values,
    }
    try:
        name = template.format(**fields)
    except KeyError as exc:
        raise reader.error(
            where, f"{template!r} names {{{exc.args[0]}}}, which is neither a field ({', '.join(_NAME_FIELDS)}) nor "
            "an attribute of the run",
        ) from None  # fmt: skip
    except (ValueError, IndexError) as exc:
        raise reader.error(where, f"{template!r}: {exc}") from None
    if not name.strip():
        raise reader.error(where, "the run's name is empty")
    return name


def _integers(reader: _Reader, value: Any, where: str, least: int) -> list[int]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, int) and not isinstance(v, bool) and v >= least for v in items):
        raise reader.error(where, f"expected a whole number ({least} or more) or a list of them, got {value!r}")
    if len(set(items)) != len(items):
        raise reader.error(where, f"a value is given twice: {value!r}")
    return list(items)


def _text(reader: _Reader, value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise reader.error(where, f"expected a non-empty string, got {value!r}")
    return value


def _names(reader: _Reader, value: Any, where: str) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v.strip() for v in items):
        raise reader.error(where, "expected a name or a list of names")
    return list(items)


def _folder(reader: _Reader, value: Any, where: str) -> Path:
    return Path(reader.path_of(_text(reader, value, where), where))


def _choice(reader: _Reader, value: Any, choices: tuple[str, ...], where: str) -> str:
    if value not in choices:
        raise reader.error(where, f"expected one of {', '.join(choices)}, got {value!r}")
    return value


def _flag(reader: _Reader, value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise reader.error(where, f"expected true or false, got {value!r}")
    return value


def _table(reader: _Reader, value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise reader.error(where, "expected a table of key = value pairs")
    return dict(value)


def _attributes(reader: _Reader, table: Mapping[str, Any], where: str, dot: str) -> dict[str, Any]:
    for key, value in table.items():
        if not isinstance(value, str | int | float | bool):
            raise reader.error(
                f"{dot}{key}", f"an attribute must be a string, number or boolean, got {type(value).__name__}"
            )
    try:
        return parse_attributes(dict(table))
    except InputError as exc:
        raise reader.error(f"{where}.{exc.field}", exc.message) from None


def _evaluate_options(reader: _Reader, value: Any) -> dict[str, Any]:
    """The [evaluate] table: options of every run of the written study file, checked as evaluate checks them."""
    from ood_store._evaluate import options

    table = _table(reader, value, "evaluate")
    for key, item in table.items():
        if key not in EVALUATE_KEYS:
            raise reader.error(f"evaluate.{key}", f"not an option here (one of {', '.join(EVALUATE_KEYS)})")
        if key == "lm_eval":
            _table(reader, item, "evaluate.lm_eval")
            continue
        try:
            options.check(key, item)
        except InputError as exc:
            raise reader.error(f"evaluate.{key}", exc.message) from None
    return table


def _executor(reader: _Reader, value: Any) -> dict[str, Any]:
    """The [executor] table (or name) that runs the grid, checked by evaluate's own check of study files."""
    from ood_store._evaluate import study

    return study._executor(value, cast(Any, reader))  # the reader names the file's fields, or the arguments
