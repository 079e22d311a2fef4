"""``ood-store suite export DIR``: the suite's testsets as local JSONL, for air-gapped machines.

Run it where the Hugging Face hub is reachable; copy DIR to the cluster and
evaluate there with ``--data-dir DIR``. Each file holds the evaluated split in
the dataset's own schema, so the suite's label maps apply unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ood_store.errors import InputError, OodStoreError, first_line
from ood_store.evaluate.suite import SuiteTask, tasks


@dataclass(frozen=True)
class Exported:
    task: str
    path: Path
    rows: int


def export(
    target: Path,
    names: Sequence[str] | None = None,
    *,
    on_done: Callable[[Exported], None] | None = None,
) -> list[Exported]:
    """Download each suite task's split and write it to ``target/<task>.jsonl``.

    Parameters
    ----------
    target
        The folder to write; created if missing.
    names
        Suite task names to export (default: all).
    on_done
        Called after each file is written (for progress output).
    """
    chosen = _choose(names)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OodStoreError(f"{target}: cannot create the export folder: {exc.strerror or exc}") from None
    import datasets

    written = []
    for task in chosen:
        try:
            data = datasets.load_dataset(task.dataset_path, task.dataset_name, split=task.split)
        except Exception as exc:  # network, hub or dataset errors: name the dataset, no traceback
            raise OodStoreError(
                f"{task.name}: cannot load {task.dataset_path}"
                f"{'/' + task.dataset_name if task.dataset_name else ''} split {task.split}: {first_line(exc)}"
            ) from None
        path = task.data_file(target)
        partial = path.with_suffix(".jsonl.partial")
        try:
            data.to_json(str(partial), lines=True, force_ascii=False)
            partial.replace(path)  # a file is there whole or not at all
        except OSError as exc:
            raise OodStoreError(f"{path}: cannot write: {exc.strerror or exc}") from None
        done = Exported(task.name, path, len(data))
        written.append(done)
        if on_done is not None:
            on_done(done)
    return written


def _choose(names: Sequence[str] | None) -> list[SuiteTask]:
    known = {task.name: task for task in tasks()}
    if not names:
        return list(known.values())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(unknown[0], None, f"not a task of the suite (its tasks: {', '.join(known)})")
    return [known[n] for n in names]
