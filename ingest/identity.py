"""Which run and which training step an lm-eval results file belongs to.

The rules, in order (flags given to ``ood-store ingest`` win over all of them):

1. ``revision=`` in ``model_args`` (or the file's ``config.model_revision``)
   naming a step: ``step1000``, ``step-1000``, ``global_step1000``,
   ``checkpoint-1000`` or an OLMo-style ``stage1-step1000-tokens5B``.
   The run is the model (``pretrained=``).
2. The evaluated path ending in such a folder name: ``.../opt-mnli/checkpoint-500``
   gives run ``.../opt-mnli`` and step 500. With ``peft=`` the adapter path is
   the evaluated path and ``pretrained=`` is the run's base model.
3. Otherwise the model itself is the run and the step is NULL (a final model
   evaluated once).

The campaign (a batch of evaluations such as ``zero-shot`` or ``five-shot``) is
the folder the file sits in, looking past the folders that name the model
(lm-eval's ``<model_name_sanitized>/``) or a checkpoint (``step-N``,
``checkpoint-N``, ``final``) or one unit of ``evaluate`` (``unit-<hash>``), and
stopping at the run's own folder (ood-store's layout
``<output_dir>/<run>/step-N/unit-<hash>/``): files there belong to no campaign.
``pythia-160m/zero-shot/160m_step1000.json`` is campaign ``zero-shot``;
``outputs/MedNLI/0-shot/meta-llama__Llama-3.1-8B-Instruct/results_<ts>.json``
is ``0-shot``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ood_store._ingest.jsontext import optional_text
from ood_store._ingest.limits import MAX_STEP_DIGITS
from ood_store._names import is_unit_folder, run_folder_name

# A step inside a revision or folder name: step1000, step-1000, global_step1000,
# checkpoint-1000, ckpt_1000, stage1-step1000-tokens5B.
_STEP = re.compile(r"(?:^|[-_./])(?:global_step|step|checkpoint|ckpt)[-_]?(\d+)(?=$|[-_.])", re.IGNORECASE)

# Folder names of a final model in a layout of checkpoint folders.
_FINAL = {"final", "latest"}

# lm-eval's model_name_sanitized (lm_eval.utils.sanitize_model_name), the folder it writes results into.
_LM_EVAL_UNSAFE = re.compile(r"[\"<>:/|\\?*\[\]]+")

# model_args keys naming what was evaluated, most specific first.
_MODEL_KEYS = ("peft", "delta", "pretrained", "model", "path", "engine")


@dataclass(frozen=True)
class Overrides:
    """Values given on the command line that replace what the file says."""

    run: str | None = None
    step: int | None = None
    model: str | None = None
    campaign: str | None = None  # None: from the folder the file sits in


@dataclass(frozen=True)
class Identity:
    run: str
    step: int | None
    model: str | None  # the path or repo that was evaluated
    revision: str | None
    base_model: str | None
    source: str  # 'revision', 'path', 'model' or 'flags'


class StepTooLong(ValueError):
    """A name encodes a step with more digits than a step can have."""


def parse_model_args(model_args: Any) -> dict[str, Any]:
    """``model_args`` as a dict; lm-eval writes a string, a dict or null.

    A string ``key=value,key=value`` is read as ``lm_eval.utils.simple_parse_args_string``
    reads it (values typed by ``handle_arg_string``: booleans, None, integers,
    floats, quoted strings), without importing lm-eval, which ingesting does not
    need (it is the ``eval`` extra) and which takes 0.3 s to import.
    """
    if model_args is None:
        return {}
    if isinstance(model_args, dict):
        return dict(model_args)
    if isinstance(model_args, str):
        pairs = [arg.split("=") for arg in model_args.strip().split(",") if arg]
        return {pair[0]: _typed("=".join(pair[1:])) for pair in pairs}
    raise TypeError(f"expected a string, an object or null, got {type(model_args).__name__}")


def _typed(text: str) -> Any:
    """One ``model_args`` value as ``lm_eval.utils.handle_arg_string`` types it."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in ("'", '"'):
        return text[1:-1]
    lower = text.lower()
    if lower in ("true", "false", "none"):
        return {"true": True, "false": False, "none": None}[lower]
    if text.lstrip("+-").isdigit() and text not in ("", "+", "-"):
        try:
            return int(text)
        except ValueError:  # Unicode digits int() refuses, or more than Python's 4,300
            pass
    try:
        return float(text)
    except ValueError:
        return text


def step_in(name: str | None) -> int | None:
    """The training step a revision or folder name encodes, if any.

    Raises :class:`StepTooLong` when it has more than ``MAX_STEP_DIGITS`` digits.
    """
    if not name:
        return None
    match = _STEP.search(name)
    if not match:
        return None
    digits = match.group(1)
    if len(digits) > MAX_STEP_DIGITS:
        shown = digits if len(digits) <= 40 else f"{digits[:20]}... ({len(digits):,} digits)"
        raise StepTooLong(f"step {shown} is out of range")
    return int(digits)


def campaign_of(folders: Sequence[str], identity: Identity, model_name: str | None) -> str | None:
    """The campaign named by the folders a file sits in (outermost first), by the rule in this module's doc."""
    model_folders = {_lm_eval_folder(name) for name in (model_name, identity.model, identity.base_model) if name}
    run_folders = {_lm_eval_folder(identity.run), run_folder_name(identity.run), _basename(identity.run)}
    for index, name in enumerate(reversed(folders)):
        if name in ("", ".", "..", "/") or (index == 0 and name in model_folders):
            continue
        if name.lower() in _FINAL or _has_step(name) or is_unit_folder(name):
            continue
        return None if name in run_folders else name
    return None


def _has_step(name: str) -> bool:
    try:
        return step_in(name) is not None
    except StepTooLong:
        return True


def _lm_eval_folder(model: str) -> str:
    return _LM_EVAL_UNSAFE.sub("__", model)


def identify(
    args: dict[str, Any], config: dict[str, Any], top: dict[str, Any], overrides: Overrides
) -> Identity | None:
    """Run and step for one results file; None when nothing names the model."""
    evaluated = overrides.model or _first(args, _MODEL_KEYS) or optional_text(top.get("model_name"))
    evaluated = evaluated.rstrip("/") if evaluated else None
    revision = optional_text(args.get("revision"))
    if revision is None and optional_text(config.get("model_revision")) not in (None, "main"):
        revision = optional_text(config.get("model_revision"))
    pretrained = optional_text(args.get("pretrained"))
    is_adapter = any(k in args for k in ("peft", "delta")) and overrides.model is None

    run, step, source = evaluated, None, "model"
    if step_in(revision) is not None:
        step, source = step_in(revision), "revision"
    elif evaluated and step_in(_basename(evaluated)) is not None:
        step, source = step_in(_basename(evaluated)), "path"
        run = _dirname(evaluated) or evaluated

    if overrides.run is not None or overrides.step is not None:
        source = "flags" if overrides.run is not None and overrides.step is not None else source + "+flags"
    run = overrides.run if overrides.run is not None else run
    step = overrides.step if overrides.step is not None else step
    if not run:
        return None
    base_model = pretrained if (is_adapter or source.startswith("revision")) else None
    return Identity(run=run, step=step, model=evaluated, revision=revision, base_model=base_model, source=source)


def _first(args: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = optional_text(args.get(key))
        if value:
            return value
    return None


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _dirname(path: str) -> str:
    head, _, _ = path.rstrip("/").rpartition("/")
    return head
