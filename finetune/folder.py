"""A run's folder, as ``ood-store finetune`` writes it (see :mod:`ood_store._finetune.trainer` for its layout).

Read by the runner, the status and the study file without importing torch or transformers.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from ood_store._errors import OodStoreError
from ood_store._evaluate.workdir import read_json

RECORD = "finetune.json"
INDICES = "train_indices.json"
EXAMPLES = "train_examples.jsonl"
SCHEDULE = "schedule.json"
LOG = "train_log.jsonl"
DONE = "finetune-done.json"
MARKER = "ood-store-checkpoint.json"
PREFIX = "checkpoint-"
#: What a checkpoint holds only to resume from it (the Trainer's names), removed under keep_checkpoints = "weights".
RESUME_STATE = ("optimizer.pt", "optimizer.bin", "scheduler.pt", "scaler.pt", "rng_state*.pth", "training_args.bin")


class RunFolder:
    """A run's folder (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)

    def record(self) -> dict[str, Any]:
        data = read_json(self.path / RECORD)
        if data is None:
            raise OodStoreError(f"{self.path}: no {RECORD} (not a run folder of ood-store finetune)")
        return data

    def checkpoint(self, step: int) -> Path:
        return self.path / f"{PREFIX}{step}"

    def checkpoints(self) -> list[int]:
        """The steps of the complete checkpoints, in order."""
        steps = []
        for folder in self.path.glob(f"{PREFIX}*"):
            step = folder.name.removeprefix(PREFIX)
            if step.isdigit() and (folder / MARKER).is_file():
                steps.append(int(step))
        return sorted(steps)

    def resumable(self) -> int | None:
        """The latest complete checkpoint after step 0 that holds the Trainer's state, or None."""
        for step in reversed(self.checkpoints()):
            folder = self.checkpoint(step)
            if step > 0 and (folder / "trainer_state.json").is_file() and any(folder.glob("optimizer.*")):
                return step
        return None

    def done(self) -> dict[str, Any] | None:
        return read_json(self.path / DONE)

    def remove_incomplete(self) -> None:
        """Checkpoint folders without a marker: a kill stopped their saving."""
        for folder in self.path.glob(f"{PREFIX}*"):
            if folder.is_dir() and not (folder / MARKER).is_file():
                shutil.rmtree(folder)

    def strip(self, step: int) -> None:
        """Remove the resume state of a checkpoint, keeping its weights, tokenizer and trainer_state.json."""
        folder = self.checkpoint(step)
        for pattern in RESUME_STATE:
            for path in folder.glob(pattern):
                path.unlink(missing_ok=True)
