"""One call of lm-evaluation-harness: a checkpoint on its tasks, lm-eval's standard files written to a folder."""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from ood_store._errors import OodStoreError, install_hint
from ood_store._evaluate.checkpoints import Checkpoint
from ood_store._evaluate.timings import Timings


def run_lm_eval(
    checkpoint: Checkpoint,
    tasks: Sequence[Any],
    manager: Any,
    folder: Path,
    options: dict[str, Any],
    dtype: str | None,
    suite_record: dict[str, Any] | None = None,
    *,
    lm: Any = None,
    timings: Timings | None = None,
    max_length: int | None = None,
    truncation: str = "left",
    cache_dir: Path | None = None,
) -> Path:
    """Evaluate ``checkpoint`` with lm-eval on ``tasks`` (names, config dicts or task objects).

    lm-eval's results and samples files go to ``folder/<model>/`` (its
    standard layout). ``lm`` is lm-eval's model holding the checkpoint's
    weights (from :class:`~ood_store._evaluate.series.ModelSession`; default:
    lm-eval's ``hf`` model loads it, as ``simple_evaluate(model="hf")`` does).
    ``suite_record`` (the ood_nli suite's prompt variant and task definitions)
    goes into the results file's ``config`` as ``ood_nli``, and so into
    ``evaluations.config``. ``timings`` gets the seconds of the forward passes and
    of writing the files. ``max_length`` and ``truncation`` are the prompt
    length the model sees and which end of a longer prompt is cut (what ``lm``
    was made with; recorded in ``model_args``). ``cache_dir``: where the fast scorer keeps prepared runs (unless
    ``lm`` names its own). Returns the results file.
    """
    from ood_store._evaluate.fast import FastLM
    from ood_store._evaluate.scorer import hf_model, score

    options = {**options, "device": options.get("device") or default_device()}
    if lm is None:
        lm = hf_model("lm-eval", **hf_arguments(checkpoint, options, dtype, max_length, truncation))
    if isinstance(lm, FastLM) and lm.cache_dir is None:
        lm.cache_dir = cache_dir
    scored = score(
        lm, list(tasks), task_manager=manager, model_args=recorded_model_args(checkpoint, dtype, max_length,
        truncation), suite_record=suite_record, **options,
    )  # fmt: skip
    started = time.perf_counter()
    path = scored.write(folder)
    if timings is not None:
        timings.forward_s += scored.forward_seconds
        timings.prepare_s += getattr(scored, "prepare_seconds", 0.0)
        timings.tokens += scored.forward_tokens
        timings.documents += documents_of(scored.results)
        timings.write_s += time.perf_counter() - started
    return path


def documents_of(results: dict[str, Any]) -> int:
    """The documents lm-eval's results say were scored (``n-samples``' effective counts of the tasks)."""
    counts = results.get("n-samples") or {}
    return sum(int(c.get("effective", 0)) for c in counts.values() if isinstance(c, dict))


def hf_arguments(
    checkpoint: Checkpoint,
    options: dict[str, Any],
    dtype: str | None,
    max_length: int | None = None,
    truncation: str = "left",
) -> dict[str, Any]:
    """The arguments ``simple_evaluate(model="hf", ...)`` gives lm-eval's ``HFLM`` for this checkpoint (and the
    verbalizer scorer's ``truncation``, when it is ``right``)."""
    return {
        **recorded_model_args(checkpoint, dtype, max_length, truncation),
        "batch_size": options.get("batch_size"),
        "max_batch_size": options.get("max_batch_size"),
        "device": options.get("device") or default_device(),
    }


def recorded_model_args(
    checkpoint: Checkpoint, dtype: str | None, max_length: int | None = None, truncation: str = "left"
) -> dict[str, Any]:
    """The ``model_args`` a results file records for this checkpoint: lm-eval's (``pretrained=``, ``peft=``,
    ``revision=``, ``dtype=``, ``max_length=``, as ``--model_args`` gives them), and ``truncation=right`` where
    the prompt's first ``max_length`` tokens were kept (the verbalizer scorer's argument)."""
    args = checkpoint.model_args(dtype)
    if max_length is not None:
        args["max_length"] = max_length
    if truncation != "left":
        args["truncation"] = truncation
    return args


def environment_described_once() -> None:
    """Describe the machine once per process, not once per checkpoint.

    lm-eval writes torch's description of the environment into every results
    file (``pretty_env_info``); torch builds it by running a dozen programs
    (``nvidia-smi``, ``pip``, compilers), about a second each time. The
    description does not change while a worker runs, so it is computed once.
    """
    from torch.utils import collect_env

    if not getattr(collect_env.get_pretty_env_info, "ood_store_once", False):
        once = functools.cache(collect_env.get_pretty_env_info)
        once.ood_store_once = True  # type: ignore[attr-defined]
        collect_env.get_pretty_env_info = once


def save(tracker: Any, result: dict[str, Any], folder: Path, write_samples: bool = True) -> Path:
    """Write lm-eval's standard layout (results_<ts>.json, samples_<task>_<ts>.jsonl); return the results file.

    ``write_samples=False``: the samples (for the results file's task hashes) are not written (the fast scorer
    writes its own)."""
    samples = result.pop("samples", None)
    tracker.save_results_aggregated(results=result, samples=samples)
    for task in (samples or {}) if write_samples else {}:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    date_id = getattr(tracker, "date_id", None)
    path = folder / str(tracker.general_config_tracker.model_name_sanitized) / f"results_{date_id}.json"
    if not path.is_file():  # EvaluationTracker logs write errors instead of raising them
        raise OodStoreError(f"{folder}: lm-eval did not write its results file (is the folder writable?)")
    return path


@contextmanager
def output_to(path: Path | None) -> Iterator[None]:
    """Send standard output and error to ``path``: file descriptors 1 and 2 (C code, child processes, Python's
    streams) and ``sys.stdout``/``sys.stderr`` themselves (which an embedding program may have replaced)."""
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    streams = (sys.stdout, sys.stderr)
    for stream in streams:
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with (
            path.open("ab") as log,
            open(log.fileno(), "w", encoding="utf-8", errors="replace", buffering=1, closefd=False) as text,
        ):
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            with redirect_stdout(text), redirect_stderr(text):
                yield
    finally:
        for stream in streams:
            stream.flush()
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


def default_device() -> str:
    """``cuda`` when torch sees a GPU, else ``mps`` on Apple silicon, else ``cpu``."""
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    return "mps" if mps is not None and mps.is_available() else "cpu"


def release_memory() -> None:
    """Give back what the last model held (between checkpoints): Python's garbage, CUDA's cached blocks."""
    import gc

    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def require_eval_extra(what: str) -> None:
    """Stop with one line when torch, transformers or lm-eval's hf model cannot be imported."""
    missing = []
    for module in ("torch", "transformers", "lm_eval.models.huggingface"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module.split(".")[0])
    if missing:
        raise OodStoreError(f"{what} needs {', '.join(missing)}: install the eval extra, {install_hint('eval')}")
