"""Evaluation in the loop: each saved checkpoint scored on the study's tasks while the run trains, as the paper did.

At step 0 and at every step the schedule saves, the model in memory (the
weights just saved) is scored with the fast scorer of ``evaluate``
(:mod:`ood_store._evaluate.fast`: lm-eval's requests built and tokenized
once for the run, each checkpoint its forward passes and vectorized
arithmetic, lm-eval's files; its tests hold it equal to lm-eval's own ``hf``
model) when every task is of the ood_nli suite, else with the verbalizer
scorer (:mod:`ood_store._evaluate.scorer`), on the tasks the study file names, with the
same documents, label maps, neutral scheme and prompt variant that
``evaluate --study`` would use. What it writes is what an ``evaluate`` worker
writes: a unit of evaluate's work folder (``OUTPUT/lm-eval-results-work``)
per checkpoint, lm-eval's results and samples files in the unit's folder of
``OUTPUT/lm-eval-results``, and the unit's completion marker, so that
``ood-store collect`` stores them as it stores any evaluation (``finetune``
collects them itself when its runs end). With ``keep_checkpoints = "none"``
nothing large stays behind.

The random generators (Python's, NumPy's, torch's) are as they were after the
scoring as before it (lm-eval seeds them), so that training goes on as it
would without it and a resumed run ends as an uninterrupted one.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from ood_store._evaluate.checkpoints import Checkpoint
from ood_store._evaluate.workdir import Done, Unit, WorkDir, this_host

#: What a run's in-loop evaluation is told (written by the runner into the run's spec in the work folder).
SPEC_KEYS = ("store", "work_dir", "output_dir", "tasks", "include_paths", "data_dir", "variant", "options",
             "attributes", "max_length", "truncation")  # fmt: skip


class InLoopEvaluation(TrainerCallback):
    """Scores each checkpoint of one run as it is saved (``on_save``; step 0: :meth:`checkpoint_saved`)."""

    def __init__(self, spec: dict[str, Any], run: str, folder: Path, base_model: str | None, tokenizer: Any):
        self.spec, self.run, self.folder, self.base_model, self.tokenizer = spec, run, folder, base_model, tokenizer
        self.work = WorkDir(spec["work_dir"]).create()  # format 2, as evaluate writes its work folders
        self._stack = ExitStack()
        self._lm: Any = None
        self._tasks: Any = None
        self.scored: list[int] = []  # the steps scored by this process

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        # A resumed run whose last checkpoint was saved but not scored (the process stopped in between): the model
        # now holds that checkpoint's weights.
        if state.global_step > 0 and (self.folder / f"checkpoint-{state.global_step}").is_dir():
            self.checkpoint_saved(model, state.global_step)

    def on_save(self, args, state, control, model=None, **kwargs):
        self.checkpoint_saved(model, state.global_step)

    def on_train_end(self, args, state, control, **kwargs):
        self.close()

    def close(self) -> None:
        self._stack.close()
        self._lm = self._tasks = None

    def checkpoint_saved(self, model: Any, step: int) -> None:
        """Score the model as saved at ``step`` and write it as a finished unit (unless it is one already)."""
        from ood_store._evaluate.fast import FastLM
        from ood_store._evaluate.harness import documents_of, output_to, recorded_model_args
        from ood_store._evaluate.scorer import VerbalizerLM, score, suite_tasks
        from ood_store._evaluate.suite.variant import Variant
        from ood_store._evaluate.timings import Timings

        unit = self.unit(step)
        if self.work.done(unit.id) is not None:
            return
        started = time.monotonic()
        training = bool(model.training)
        final = Path(unit.output)
        tmp = final.parent / f".{final.name}.{this_host()}.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:  # what lm-eval prints (its log, progress bars, git's complaints) goes to lm-eval.log, as evaluate's
            with output_to(tmp / "lm-eval.log"):
                if self._tasks is None:
                    variant = self.spec["variant"]
                    self._tasks = self._stack.enter_context(
                        suite_tasks(
                            self.spec["tasks"],
                            variant=None if variant is None else Variant(**variant),
                            data_dir=self.spec["data_dir"],
                            include_paths=self.spec["include_paths"],
                            num_fewshot=self.spec["options"].get("num_fewshot"),
                        )
                    )
                if self._lm is None:  # lm-eval's hf model over the model object: nothing is loaded or copied
                    batch = self.spec["options"]["batch_size"]
                    kind = FastLM if self.scorer() == "fast" else VerbalizerLM
                    self._lm = kind(model, tokenizer=self.tokenizer, batch_size=batch, **self._prompt_length())
                with _generators_kept():
                    scored = score(
                        self._lm,
                        self._tasks,
                        model_args=recorded_model_args(
                            Checkpoint(**unit.checkpoint), None, unit.max_length, unit.truncation
                        ),
                        **{k: v for k, v in unit.options.items() if k not in ("batch_size", "device")},
                    )
        finally:
            model.train(training)
        writing = time.monotonic()
        results = scored.write(tmp)
        relative = results.relative_to(tmp)
        if final.exists():
            shutil.rmtree(final)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.rename(tmp, final)
        with (final / relative).open("rb") as fh:
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
        timings = Timings(tokens=scored.forward_tokens, forward_s=scored.forward_seconds,
                          prepare_s=getattr(scored, "prepare_seconds", 0.0), write_s=time.monotonic() - writing,
                          documents=documents_of(scored.results))  # fmt: skip
        seconds = time.monotonic() - started
        self.work.add_units([unit])
        self.work.mark_done(
            Done(unit=unit.id, results=str(final / relative), sha256=digest, lm_eval_version=_version(),
                 host=this_host(), pid=os.getpid(), attempt="in-loop", scorer=self.scorer(),
                 seconds=round(seconds, 3), finished=time.time(), timings=timings.close(seconds).record())
        )  # fmt: skip
        self.scored.append(step)

    def unit(self, step: int) -> Unit:
        """The unit of evaluate's work folder that the checkpoint of ``step`` is, as evaluate plans one."""
        from ood_store._evaluate.plan import RunRequest, _unit
        from ood_store._evaluate.suite.variant import Variant
        from ood_store._evaluate.tasklist import task_list_of

        variant = self.spec["variant"]
        options = self.spec["options"]
        request = RunRequest(
            run=self.run,
            checkpoints=[],
            tasks=list(self.spec["tasks"]),
            include_paths=list(self.spec["include_paths"]),
            data_dir=self.spec["data_dir"],
            variant=None if variant is None else Variant(**variant),
            base_model=self.base_model,
            batch_size=options["batch_size"],
            num_fewshot=options.get("num_fewshot"),
            limit=options.get("limit"),
            samples=options.get("samples", True),
            attributes=self.spec["attributes"],
            lm_eval_kwargs=dict(options.get("lm_eval") or {}),
            scorer=self.scorer(),
            **self._prompt_length(),
        )
        source = request.task_source()
        if not hasattr(self, "_leaves"):
            with task_list_of(source) as catalogue:
                self._names, self._leaves = list(catalogue.names), dict(catalogue.leaves)
        folder = self.folder / f"checkpoint-{step}"
        checkpoint = Checkpoint(model=str(folder), step=step, base_model=self.base_model)
        # evaluate's own unit (plan's): the same id, folder and options as evaluate would give the checkpoint
        return _unit(request, checkpoint, self._names, self._leaves, source, Path(self.spec["store"]),
                     Path(self.spec["output_dir"]), None, False)  # fmt: skip

    def scorer(self) -> str:
        """``fast`` when every task is of the ood_nli suite (multiple-choice accuracy, which it scores exactly),
        else ``verbalizer`` (any task whose answers are one token)."""
        from ood_store._evaluate.suite import testsets

        return "fast" if all(testsets.expand(name) is not None for name in self.spec["tasks"]) else "verbalizer"

    def _prompt_length(self) -> dict[str, Any]:
        """The prompt length the run was trained with and which end of a longer prompt it cut (its evaluation's)."""
        return {"max_length": self.spec.get("max_length"), "truncation": self.spec.get("truncation") or "left"}


def spec_of(
    store: str | os.PathLike[str],
    output: Path,
    tasks: list[str],
    include_paths: list[str],
    data_dir: str | None,
    variant: Any,
    evaluate: dict[str, Any],
    attributes: dict[str, Any],
    max_length: int | None = None,
    truncation: str = "left",
) -> dict[str, Any]:
    """A run's in-loop evaluation: into ``store``, in evaluate's layout beside the study file (``output``), with
    prompts cut as in training (``max_length`` tokens, from the ``truncation`` side)."""
    options = {"batch_size": evaluate.get("batch_size", "auto"), **{k: v for k, v in evaluate.items()
                                                                    if k != "batch_size"}}  # fmt: skip
    return {
        "store": str(Path(store).resolve()),
        "work_dir": str(output / "lm-eval-results-work"),
        "output_dir": str(output / "lm-eval-results"),
        "tasks": tasks,
        "include_paths": include_paths,
        "data_dir": data_dir,
        "variant": variant,
        "options": options,
        "attributes": attributes,
        "max_length": max_length,
        "truncation": truncation,
    }


@contextmanager
def _generators_kept() -> Iterator[None]:
    """Python's, NumPy's and torch's random states as they were before the block (lm-eval seeds them)."""
    import numpy as np
    import torch

    python, numpy_state, cpu = random.getstate(), np.random.get_state(), torch.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        yield
    finally:
        random.setstate(python)
        np.random.set_state(numpy_state)
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


def _version() -> str | None:
    try:
        return version("lm_eval")
    except PackageNotFoundError:
        return None
