"""Which checkpoints ``evaluate`` runs: the arguments a user gives, resolved and checked.

An argument is one of

* a checkpoint folder (it holds ``config.json``, or ``adapter_config.json`` for
  a PEFT/LoRA adapter, whose base model comes from that file or ``base_model``);
* a folder of checkpoints: its sub-folders named with a step (``checkpoint-500``,
  ``step-500``, ``global_step500``, ...), in step order;
* a glob matching checkpoint folders;
* ``HF_REPO@REVISION`` for a model on the Hugging Face hub (``EleutherAI/pythia-160m@step1000``).

The step of each checkpoint follows the same rules as ingest (see
:mod:`ood_store._ingest.identity`): a step in the folder name or the revision,
else none (a final model).
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ood_store._errors import InputError
from ood_store._ingest.identity import step_in

_MODEL_FILES = ("config.json", "adapter_config.json")


@dataclass(frozen=True)
class Checkpoint:
    """One model to evaluate."""

    model: str  # absolute folder, or hub repo
    step: int | None
    revision: str | None = None
    base_model: str | None = None  # for an adapter: the model it applies to

    @property
    def is_adapter(self) -> bool:
        return self.base_model is not None

    def model_args(self, dtype: str | None = None) -> dict[str, Any]:
        """lm-eval ``hf`` model arguments (``pretrained=``, ``revision=``, ``peft=``, ``dtype=``)."""
        args: dict[str, Any] = {"pretrained": self.base_model or self.model}
        if self.is_adapter:
            args["peft"] = self.model
        if self.revision:
            args["revision"] = self.revision
        if dtype:
            args["dtype"] = dtype
        return args

    @property
    def label(self) -> str:
        return f"{self.model}@{self.revision}" if self.revision else self.model


def resolve(arguments: list[str], base_model: str | None = None) -> list[Checkpoint]:
    """The checkpoints the arguments name, in step order (final models last).

    Raises :class:`InputError` naming the argument for one that names nothing
    usable, and when two checkpoints would have the same step.
    """
    found: dict[str, Checkpoint] = {}
    for argument in arguments:
        for checkpoint in _resolve_one(argument, base_model):
            found.setdefault(checkpoint.label, checkpoint)
    if not found:
        raise InputError("CHECKPOINT", None, "no checkpoints given")
    by_step: dict[int | None, Checkpoint] = {}
    for checkpoint in found.values():
        other = by_step.setdefault(checkpoint.step, checkpoint)
        if other is not checkpoint:
            step = "no step (final model)" if checkpoint.step is None else f"step {checkpoint.step}"
            raise InputError(
                checkpoint.label, None, f"{step}, like {other.label}: one run holds one checkpoint per step"
            )
    return sorted(by_step.values(), key=lambda c: (c.step is None, c.step or 0))


def _resolve_one(argument: str, base_model: str | None) -> list[Checkpoint]:
    path = Path(os.path.expanduser(argument))
    if path.is_dir():
        steps = _step_folders(path)
        if steps:
            return [_local(p, base_model) for p in steps]
        if _is_checkpoint(path):
            return [_local(path, base_model)]
        raise InputError(
            argument,
            None,
            "neither a checkpoint (no config.json or adapter_config.json) nor a folder of checkpoints "
            "(no checkpoint-N, step-N, ... sub-folders)",
        )
    if glob.has_magic(argument):
        matches = [Path(m) for m in sorted(glob.glob(os.path.expanduser(argument)))]
        checkpoints = [_local(m, base_model) for m in matches if m.is_dir() and _is_checkpoint(m)]
        if not checkpoints:
            raise InputError(argument, None, "no checkpoint folders match this pattern")
        return checkpoints
    if "@" in argument and not path.exists():
        repo, _, revision = argument.rpartition("@")
        if not repo or not revision:
            raise InputError(argument, None, "expected HF_REPO@REVISION, e.g. EleutherAI/pythia-160m@step1000")
        return [Checkpoint(model=repo, step=step_in(revision), revision=revision, base_model=None)]
    raise InputError(
        argument, None, "no such checkpoint folder (a model on the hub is written HF_REPO@REVISION, e.g. REPO@main)"
    )


def _is_checkpoint(path: Path) -> bool:
    return any((path / name).is_file() for name in _MODEL_FILES)


def _step_folders(path: Path) -> list[Path]:
    return [p for p in sorted(path.iterdir()) if p.is_dir() and step_in(p.name) is not None and _is_checkpoint(p)]


def _local(path: Path, base_model: str | None) -> Checkpoint:
    path = path.resolve()
    base = None
    if not (path / "config.json").is_file():  # a PEFT adapter
        base = base_model or _adapter_base(path / "adapter_config.json")
    return Checkpoint(model=str(path), step=step_in(path.name), base_model=base)


def _adapter_base(config: Path) -> str:
    try:
        data = json.loads(config.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(str(config), None, f"cannot read the adapter config: {exc}") from None
    base = data.get("base_model_name_or_path") if isinstance(data, dict) else None
    if not isinstance(base, str) or not base:
        raise InputError(str(config), "base_model_name_or_path", "missing: pass `base_model`")
    return base
