"""``ood-store suite export DIR``: the suite's testsets as local JSONL, for air-gapped machines.

Run it where the Hugging Face hub is reachable; copy DIR to the cluster and
evaluate there with ``data_dir=DIR``. Each file holds one split in the
dataset's own schema (the hub's columns and label encodings), so the suite's
label maps apply unchanged: ``<task>.jsonl`` the evaluated split and, with
``fewshot``, ``<task>.train.jsonl`` the training split that in-context
examples are drawn from. :func:`ood_store._evaluate.suite.check.check` reads
exactly this format.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ood_store._errors import InputError, OodStoreError, first_line
from ood_store._evaluate.suite.testsets import TESTSETS, Testset, testsets


@dataclass(frozen=True)
class Exported:
    task: str
    split: str
    path: Path
    rows: int


def export(
    target: Path,
    names: Sequence[str] | None = None,
    *,
    fewshot: bool = False,
    on_done: Callable[[Exported], None] | None = None,
) -> list[Exported]:
    """Download each suite task's split and write it to ``target/<task>.jsonl``.

    Parameters
    ----------
    target
        The folder to write; created if missing.
    names
        Suite task names to export (default: all ten).
    fewshot
        Also write each training split to ``target/<task>.train.jsonl``, for
        evaluating with in-context examples offline.
    on_done
        Called after each file is written (for progress output).
    """
    chosen = _choose(names)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OodStoreError(f"{target}: cannot create the export folder: {exc.strerror or exc}") from None
    written = []
    for task in chosen:
        splits = [(task.split, task.data_file(target))]
        if fewshot:
            splits.append((task.fewshot_split, task.fewshot_file(target)))
        for split, path in splits:
            done = _write(task, split, path)
            written.append(done)
            if on_done is not None:
                on_done(done)
    return written


def _write(task: Testset, split: str, path: Path) -> Exported:
    import datasets

    try:
        data = datasets.load_dataset(task.dataset_path, task.dataset_name, split=split, **task.dataset_kwargs)
    except Exception as exc:  # network, hub or dataset errors: name the dataset, no traceback
        raise OodStoreError(f"{task.name}: cannot load {task.source()} split {split}: {first_line(exc)}") from None
    partial = path.with_name(path.name + ".partial")
    shown = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # writing takes seconds; its bar would cut into the lines printed per file
    try:
        data.to_json(str(partial), lines=True, force_ascii=False)
        partial.replace(path)  # a file is there whole or not at all
    except OSError as exc:
        raise OodStoreError(f"{path}: cannot write: {exc.strerror or exc}") from None
    finally:
        if shown:
            datasets.enable_progress_bars()
    return Exported(task.name, split, path, len(data))


def _choose(names: Sequence[str] | None) -> list[Testset]:
    known = {task.name: task for task in testsets()}
    if not names:
        return list(known.values())
    unknown = [n for n in names if n not in known]
    if unknown:
        also = " (the HANS sub-tasks read ood_nli_hans.jsonl)" if unknown[0] in TESTSETS else ""
        raise InputError(unknown[0], None, f"not a task of the suite (its tasks: {', '.join(known)}){also}")
    return [known[n] for n in names]
