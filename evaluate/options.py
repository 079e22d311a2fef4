"""The keywords of :func:`ood_store.evaluate.runner.evaluate` besides ``run`` and ``tasks``, as one typed dict.

``Store.evaluate(checkpoints, run=..., tasks=..., **options)`` is typed with it
(``Unpack[EvaluateOptions]``), so that the keywords are spelled out once, in
the runner's signature, and checked against it by the tests. Importing this
module loads nothing of lm-eval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from ood_store.evaluate.suite.variant import Variant


class EvaluateOptions(TypedDict, total=False):
    """See :func:`ood_store.evaluate.runner.evaluate` for each keyword and its default."""

    output_dir: str | Path
    include_paths: Sequence[str | Path]
    data_dir: str | Path | None
    variant: Variant | None
    base_model: str | None
    batch_size: int | str
    device: str | None
    dtype: str | None
    num_fewshot: int | None
    limit: int | float | None
    samples: bool
    force: bool
    attributes: Mapping[str, Any] | list[str] | None
    progress: bool
    log_to_file: bool
    lm_eval_kwargs: Mapping[str, Any] | None
