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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ood_store.ingest.jsontext import optional_text

# A step inside a revision or folder name: step1000, step-1000, global_step1000,
# checkpoint-1000, ckpt_1000, stage1-step1000-tokens5B.
_STEP = re.compile(r"(?:^|[-_./])(?:global_step|step|checkpoint|ckpt)[-_]?(\d+)(?=$|[-_.])", re.IGNORECASE)

# model_args keys naming what was evaluated, most specific first.
_MODEL_KEYS = ("peft", "delta", "pretrained", "model", "path", "engine")


@dataclass(frozen=True)
class Overrides:
    """Values given on the command line that replace what the file says."""

    run: str | None = None
    step: int | None = None
    model: str | None = None


@dataclass(frozen=True)
class Identity:
    run: str
    step: int | None
    model: str | None  # the path or repo that was evaluated
    revision: str | None
    base_model: str | None
    source: str  # 'revision', 'path', 'model' or 'flags'


def parse_model_args(model_args: Any) -> dict[str, Any]:
    """``model_args`` as a dict; lm-eval writes a string, a dict or null."""
    if model_args is None:
        return {}
    if isinstance(model_args, dict):
        return dict(model_args)
    if isinstance(model_args, str):
        from lm_eval.utils import simple_parse_args_string  # lazily: importing lm_eval takes ~0.3 s

        return simple_parse_args_string(model_args)
    raise TypeError(f"expected a string, an object or null, got {type(model_args).__name__}")


def step_in(name: str | None) -> int | None:
    """The training step a revision or folder name encodes, if any."""
    if not name:
        return None
    match = _STEP.search(name)
    return int(match.group(1)) if match else None


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
