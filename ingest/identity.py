"""Which run, training step and campaign an evaluation belongs to, for every format ``ingest`` reads.

Flags given to ``ood-store ingest`` (``--run``, ``--step``, ``--model``,
``--campaign``) win over every rule below. ``identity_from`` (a column of
``evaluations``, and shown by ``ingest --dry-run``) says which rule gave run and
step: ``revision``, ``path``, ``model``, ``field`` (a field of the file that
holds the step itself), ``recorded`` (ood-store's own record, in an EEE file it
exported), ``flags``, or one of them ``+flags`` when a flag replaced part.

Per format (docs/how-to/elsewhere.md has the same as one table):

* **lm-eval results**: run = the evaluated model (``peft=``/``delta=``, else
  ``pretrained=``, else ``model_name``); step = a ``revision`` naming one
  (``revision``), else a checkpoint folder ending the model's path (``path``),
  else none (``model``); campaign = the folder the file sits in (below).
* **Every Eval Ever**: ood-store's own file: ``ood_store.run``/``ood_store.step``
  (``recorded``, or the rule recorded with them) and ``ood_store.campaign``.
  Otherwise run and step as for lm-eval from what the writer left: EEE's lm-eval
  converter's ``model_args``, EEE's inspect_ai converter's ``model_info.name``
  less its provider, anyone else's ``model_info.id`` (a step only from a
  ``revision`` in ``model_info.additional_details`` or an ``@revision``);
  campaign = ``source_metadata.source_name`` (the leaderboard or harness), never
  a folder of the datastore's layout.
* **inspect_ai log**: run = the model less its provider, as the provider named it
  in the first sample's output; step as for lm-eval (``-M revision=``, a
  checkpoint folder); campaign = the folder the file sits in.
* **W&B history**: run = ``--run``, else the file's name; step = the step column
  (``field``); campaign = the W&B run id of W&B's run folder the file sits in,
  else the run, never the folder it was exported into.

**A step never comes from a model's name.** It is read from a revision
(``revision=step1000``, ``model_info.additional_details.revision``, a hub id's
``@step1000``, ``config.model_revision``; any revision holding ``step1000``,
``step-1000``, ``global_step1000``, ``checkpoint-1000`` or an OLMo-style
``stage1-step1000-tokens5B``), from a folder of the model's path whose *whole
name* is a checkpoint's (``.../opt-mnli/checkpoint-500`` is step 500 of run
``.../opt-mnli``; ``step40``, ``step-40``, ``global_step1200``, ``ckpt_20`` too),
or from a field that holds it. So the Open LLM Leaderboard's
``Goekdeniz-Guelmez/josie-7b-v6.0-step2000`` is a model named so, evaluated at no
step, unless a revision says otherwise; with ``peft=`` the adapter path is the
evaluated path and ``pretrained=`` is the run's base model.

**The campaign** (a batch of evaluations such as ``zero-shot`` or ``five-shot``)
of an lm-eval file or inspect_ai log is the folder the file sits in, looking
past the folders that name the model (lm-eval's ``<model_name_sanitized>/``) or a
checkpoint (``step-N``, ``checkpoint-N``, ``final``) or one unit of ``evaluate``
(``unit-<hash>``), and stopping at the run's own folder (ood-store's layout
``<output_dir>/<run>/step-N/unit-<hash>/``): files there belong to no campaign.
``pythia-160m/zero-shot/160m_step1000.json`` is campaign ``zero-shot``;
``outputs/MedNLI/0-shot/meta-llama__Llama-3.1-8B-Instruct/results_<ts>.json``
is ``0-shot``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ood_store._ingest.jsontext import optional_text
from ood_store._ingest.limits import MAX_STEP_DIGITS
from ood_store._names import is_unit_folder, run_folder_name

# A step inside a revision: step1000, step-1000, global_step1000, checkpoint-1000, ckpt_1000,
# stage1-step1000-tokens5B (anywhere in the revision's name).
_STEP = re.compile(r"(?:^|[-_./])(?:global_step|step|checkpoint|ckpt)[-_]?(\d+)(?=$|[-_.])", re.IGNORECASE)

# A checkpoint folder: its whole name is one of these (a model *named* ...-step2000 is not one).
_CHECKPOINT_FOLDER = re.compile(r"(?:global_step|step|checkpoint|ckpt)[-_]?(\d+)", re.IGNORECASE)

# Folder names of a final model in a layout of checkpoint folders.
_FINAL = {"final", "latest"}

# lm-eval's model_name_sanitized (lm_eval.utils.sanitize_model_name), the folder it writes results into.
_LM_EVAL_UNSAFE = re.compile(r"[\"<>:/|\\?*\[\]]+")

# model_args keys naming what was evaluated, most specific first.
_MODEL_KEYS = ("peft", "delta", "pretrained", "model", "path", "engine")


@dataclass(frozen=True)
class Overrides:
    """Values given on the command line that replace what the files say.

    ``shots`` is the number of few-shot examples of every score whose file does
    not say (inspect_ai logs, W&B histories, EEE results without it); a file's
    own count is kept.
    """

    run: str | None = None
    step: int | None = None
    model: str | None = None
    campaign: str | None = None  # None: by the campaign rule of the file's format
    shots: int | None = None


@dataclass(frozen=True)
class Identity:
    run: str
    step: int | None
    model: str | None  # the path or repo that was evaluated
    revision: str | None
    base_model: str | None
    source: str  # identity_from: 'revision', 'path', 'model', 'field', 'recorded', 'flags', or '...+flags'
    evidence: str = field(default="", compare=False)  # what gave run and step, for `ingest --dry-run`


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
    """The training step a revision names, if any (anywhere in it: ``stage1-step1000-tokens5B``).

    Raises :class:`StepTooLong` when it has more than ``MAX_STEP_DIGITS`` digits.
    """
    return _digits(_STEP.search(name) if name else None)


def checkpoint_step(folder: str | None) -> int | None:
    """The step of a checkpoint folder: only a name that is wholly one (``checkpoint-500``, ``step40``).

    ``josie-7b-v6.0-step2000`` names a model, not a checkpoint: None.
    """
    return _digits(_CHECKPOINT_FOLDER.fullmatch(folder) if folder else None)


def _digits(match: re.Match[str] | None) -> int | None:
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
    args: dict[str, Any],
    config: dict[str, Any],
    top: dict[str, Any],
    overrides: Overrides,
    *,
    where: str = "model_args",
    shown: Mapping[str, str] | None = None,
) -> Identity | None:
    """Run and step for one evaluation from its ``model_args``; None when nothing names the model.

    ``evidence`` names an argument as ``where key=`` (``model_args revision=step1000``), or as
    ``shown[key]`` where given."""
    label = {key: f"{where} {key}=" for key in (*_MODEL_KEYS, "revision")} | dict(shown or {})
    named_by = next((key for key in _MODEL_KEYS if optional_text(args.get(key))), None)
    evaluated = overrides.model or (optional_text(args.get(named_by)) if named_by else None)
    if evaluated is None:
        evaluated, named_by = optional_text(top.get("model_name")), "model_name"
    evaluated = evaluated.rstrip("/") if evaluated else None
    evaluated, at = _split_revision(evaluated)
    revision, revision_from = optional_text(args.get("revision")), label["revision"]
    if revision is None and at is not None:
        revision, revision_from = at, "@ of the model id "
    if revision is None and optional_text(config.get("model_revision")) not in (None, "main"):
        revision, revision_from = optional_text(config.get("model_revision")), "config.model_revision "
    pretrained = optional_text(args.get("pretrained"))
    is_adapter = any(k in args for k in ("peft", "delta")) and overrides.model is None

    run, step, source = evaluated, None, "model"
    named = "`model` " if overrides.model else label.get(named_by or "", "model_name ")
    evidence = f"{named}{evaluated}" if evaluated else ""
    folder_step = checkpoint_step(_basename(evaluated)) if evaluated else None
    if step_in(revision) is not None:
        step, source, evidence = step_in(revision), "revision", f"{revision_from}{revision}"
    elif evaluated and folder_step is not None:
        step, source = folder_step, "path"
        run = _dirname(evaluated) or evaluated
        evidence = f"checkpoint folder {_basename(evaluated)} of {evaluated}"

    base_model = pretrained if (is_adapter or source == "revision") else None
    identity = with_flags(Identity(run or "", step, evaluated, revision, base_model, source, evidence), overrides)
    return identity if identity.run else None


def with_flags(identity: Identity, overrides: Overrides) -> Identity:
    """``identity`` with ``--run``/``--step`` applied (for identities no ``model_args`` gave)."""
    if overrides.run is None and overrides.step is None:
        return identity
    source = "flags" if overrides.run is not None and overrides.step is not None else identity.source + "+flags"
    flags = " ".join(f"`{k}` {v}" for k, v in (("run", overrides.run), ("step", overrides.step)) if v is not None)
    return Identity(
        overrides.run if overrides.run is not None else identity.run,
        overrides.step if overrides.step is not None else identity.step,
        identity.model,
        identity.revision,
        identity.base_model,
        source,
        flags if source == "flags" else f"{identity.evidence}; {flags}",
    )


def _split_revision(model: str | None) -> tuple[str | None, str | None]:
    """``org/name@rev`` as (``org/name``, ``rev``); a model without ``@`` (or with ``@`` in a folder) as it is."""
    if not model or "@" not in model:
        return model, None
    head, _, tail = model.rpartition("@")
    if not head or not tail or "/" in tail:
        return model, None
    return head, tail


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _dirname(path: str) -> str:
    head, _, _ = path.rstrip("/").rpartition("/")
    return head
