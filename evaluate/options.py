"""The keywords of :func:`ood_store._evaluate.runner.evaluate` as one typed dict, and checks of its per-run options.

``Store.evaluate(checkpoints, run=..., tasks=..., **options)`` and the runner
itself take these keywords as ``**options: Unpack[EvaluateOptions]``, so that
they are spelled out once, here, with their types; the runner's docstring
describes each (the tests check that it describes every one). The checks
(:func:`check`) are the same for keyword arguments and study files: each
returns the value as the runner uses it, or raises
:class:`~ood_store._errors.InputError` naming the parameter. Importing this
module loads nothing of lm-eval.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from ood_store._errors import InputError
from ood_store._evaluate.study import Study
from ood_store._evaluate.suite.variant import Variant


class EvaluateOptions(TypedDict, total=False):
    """See :func:`ood_store._evaluate.runner.evaluate` for each keyword and its default."""

    study: str | os.PathLike[str] | Study | None
    output_dir: str | Path | None
    work_dir: str | Path | None
    include_paths: Sequence[str | Path]
    data_dir: str | Path | None
    variant: Variant | None
    base_model: str | None
    batch_size: int | str | None
    device: str | None
    dtype: str | None
    num_fewshot: int | None
    limit: int | float | None
    samples: bool | None
    scorer: str | None
    max_length: int | None
    truncation: str | None
    force: bool
    attributes: Mapping[str, Any] | list[str] | None
    lm_eval_kwargs: Mapping[str, Any] | None
    executor: str | None
    workers: int | None
    units_per_task: int | None
    slurm_partition: str | None
    gpus_per_task: float | None
    timeout_min: int | None
    max_parallel: int | None
    slurm_params: Mapping[str, Any] | list[str] | None
    ray_address: str | None
    detach: bool
    progress: bool
    log_to_file: bool


def batch_size(value: Any) -> int | str:
    """A positive number, ``auto`` or ``auto:N`` (lm-eval's forms); digits in a string count as a number."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    text = str(value).strip() if isinstance(value, str) else None
    if text is not None:
        if text.isdigit() and int(text) > 0:
            return int(text)
        if text == "auto" or (text.startswith("auto:") and text[5:].isdigit()):
            return text
    raise InputError(None, None, f"expected a positive number, auto or auto:N, got {value!r}", parameter="batch_size")


#: The scorers of ``evaluate`` (:mod:`ood_store._evaluate.scorer`); the first is the default and the reference.
SCORERS = ("lm-eval", "verbalizer", "fast")


def scorer(value: Any) -> str:
    """``lm-eval`` (lm-eval's own ``hf`` model, the default), ``verbalizer`` or ``fast``."""
    text = value.strip().lower() if isinstance(value, str) else None
    if text not in SCORERS:
        raise InputError(None, None, f"expected {', '.join(SCORERS[:-1])} or {SCORERS[-1]}, got {value!r}",
                         parameter="scorer")  # fmt: skip
    return text


#: Which end of a prompt longer than ``max_length`` tokens is cut: lm-eval's (the first is the default) or the end.
TRUNCATIONS = ("left", "right")


def max_length(value: Any) -> int:
    """The most prompt tokens the model sees (lm-eval's ``max_length`` model argument): a whole number, 1 or more."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(None, None, f"expected a whole number of tokens, 1 or more, got {value!r}",
                         parameter="max_length")  # fmt: skip
    return value


def truncation(value: Any) -> str:
    """``left`` (lm-eval's: the prompt's last ``max_length`` tokens are kept) or ``right`` (its first)."""
    text = value.strip().lower() if isinstance(value, str) else None
    if text not in TRUNCATIONS:
        raise InputError(None, None, f"expected {' or '.join(TRUNCATIONS)}, got {value!r}", parameter="truncation")
    return text


def truncation_needs_verbalizer(scorer_: str, truncation_: str) -> str | None:
    """Why ``truncation`` cannot be had with ``scorer``, or None: lm-eval's ``hf`` model only cuts from the left
    (``(context + continuation)[-(max_length + 1):]``); the verbalizer scorer cuts either end."""
    if truncation_ == "right" and scorer_ == "lm-eval":
        return (
            "right truncation (the prompt's first max_length tokens, as the run was trained) needs the verbalizer "
            "scorer: lm-eval's own cuts prompts from the left"
        )
    return None


def limit(value: Any) -> int | float:
    """Documents per task: a whole number, or a fraction below 1."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise InputError(None, None, f"expected a number above 0, got {value!r}", parameter="limit")
    return int(value) if value >= 1 and value == int(value) else value


def num_fewshot(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(None, None, f"expected a whole number, 0 or more, got {value!r}", parameter="num_fewshot")
    return value


def flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InputError(None, None, f"expected true or false, got {value!r}", parameter=name)
    return value


def text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(None, None, f"expected a non-empty string, got {value!r}", parameter=name)
    return value


_CHECKS = {
    "batch_size": batch_size,
    "limit": limit,
    "num_fewshot": num_fewshot,
    "samples": lambda v: flag("samples", v),
    "device": lambda v: text("device", v),
    "dtype": lambda v: text("dtype", v),
    "base_model": lambda v: text("base_model", v),
    "scorer": scorer,
    "max_length": max_length,
    "truncation": truncation,
}


def check(name: str, value: Any) -> Any:
    """``value`` of option ``name`` checked (None stays None); options without a check here pass as given."""
    if value is None:
        return None
    checker = _CHECKS.get(name)
    return value if checker is None else checker(value)
