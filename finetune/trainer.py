"""One run on Hugging Face's ``Trainer``: the verbalizer loss, the checkpoint schedule, progress, resuming.

A run's folder (written by the runner before anything trains)::

    <run>/
      finetune.json            the resolved run: base model, data, prompt, method, loss, schedule, Trainer and LoRA
                               arguments, attributes; library versions and the project's git commit
      train_indices.json       the shots' indices in the cast training split, and their SHA-256
      train_examples.jsonl     each shot as trained on: its prompt, input ids and target token
      schedule.json            the steps the schedule saves, once the Trainer knows how many steps the run has
      train_log.jsonl          what the Trainer logs (loss, learning rate, ...)
      checkpoint-N/            the Trainer's checkpoints (LoRA adapters or full weights, and the tokenizer);
                               ood-store-checkpoint.json marks one as complete
      finetune-done.json       the run finished: its steps, checkpoints and seconds

The loss is computed at the last attended position of each example (found
from the attention mask, whichever side is padded; examples are padded on the
right, so that position ids need no care): cross-entropy over the whole
vocabulary with the verbalizer's token as the target (llmft's), or over the
two verbalizer logits only (``loss = "verbalizers"``). Where the model takes
``logits_to_keep`` with a position per example, only those positions' logits
are computed.

Step 0 (the base model, or the untrained adapter) is saved before the first
step. A killed run resumes from its last complete checkpoint with the
Trainer's own ``resume_from_checkpoint`` (model, optimizer, scheduler, RNG
states, data order), which ends with the weights of an uninterrupted run under
``full_determinism``; a checkpoint a kill left half written has no marker and
is removed. With ``keep_checkpoints = "weights"`` (the default) the optimizer
and RNG states of a checkpoint are removed once a later one is complete (and
from the last when the run ends); ``none`` removes the checkpoints as well
(the in-loop evaluation has scored them).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import os
import shutil
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainerCallback, TrainingArguments
from transformers.trainer_callback import PrinterCallback, ProgressCallback

from ood_store._errors import OodStoreError
from ood_store._evaluate.workdir import read_json, write_json
from ood_store._finetune.config import LORA_DEFAULTS, TRAINING_DEFAULTS, RunConfig
from ood_store._finetune.folder import DONE, EXAMPLES, INDICES, LOG, MARKER, SCHEDULE, RunFolder
from ood_store._finetune.inloop import InLoopEvaluation

#: Called with (step, max_steps) when training starts and after every step.
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class TrainResult:
    run: str
    steps: int  # the run's optimizer steps
    checkpoints: list[int]  # the steps saved
    seconds: float
    resumed_from: int | None  # the step training resumed from, if it did


def training_arguments(run: RunConfig, output_dir: Path) -> Any:
    """The run's ``TrainingArguments``: ood-store's own settings, the method's defaults, then the study's."""
    names = {f.name for f in dataclasses.fields(TrainingArguments)}
    defaults = dict(TRAINING_DEFAULTS[run.method])
    warmup = defaults.pop("warmup")
    # transformers 5 reads a warmup_steps below 1 as a ratio; 4.x has warmup_ratio for it.
    defaults["warmup_ratio" if "warmup_ratio" in names else "warmup_steps"] = warmup
    if "warmup_ratio" in run.training or "warmup_steps" in run.training:
        defaults.pop("warmup_ratio", None)
        defaults.pop("warmup_steps", None)
    if "max_steps" in run.training:
        defaults.pop("num_train_epochs", None)
    defaults["dataloader_pin_memory"] = torch.cuda.is_available()  # pinned memory is for copies to a GPU
    own = {
        "output_dir": str(output_dir),
        "save_strategy": "no",  # the schedule callback says when
        "seed": run.seed,
        "remove_unused_columns": False,
        "disable_tqdm": True,
        "report_to": "none",
    }
    return TrainingArguments(**{**own, **defaults, **run.training})


def lora_config(run: RunConfig) -> Any:
    from peft import LoraConfig

    return LoraConfig(task_type="CAUSAL_LM", **{**LORA_DEFAULTS, **run.lora})


def expected_steps(args: Any, examples: int) -> int:
    """The optimizer steps the Trainer will take for ``examples`` on this machine (as its
    ``set_initial_training_values`` counts them); a worker with other devices may count otherwise."""
    if args.max_steps > 0:
        return int(args.max_steps)
    batch = args.train_batch_size
    batches = examples // batch if args.dataloader_drop_last else math.ceil(examples / batch)
    accumulate = args.gradient_accumulation_steps
    per_epoch = max(batches // accumulate + int(batches % accumulate > 0), 1)
    return math.ceil(args.num_train_epochs * per_epoch)


def train(
    folder: str | os.PathLike[str],
    progress: Progress | None = None,
    keep: str | None = None,
    callbacks: Sequence[Any] = (),
    in_loop: dict[str, Any] | None = None,
) -> TrainResult:
    """Train (or resume, or recognize as finished) the run whose folder the runner wrote.

    ``keep`` overrides the folder's ``keep_checkpoints``; ``callbacks`` are
    further ``TrainerCallback`` s; ``in_loop`` (see
    :func:`ood_store._finetune.inloop.spec_of`) scores every checkpoint as it
    is saved.
    """
    started = time.monotonic()
    run_folder = RunFolder(folder)
    record = run_folder.record()
    run = RunConfig.from_record(record["config"])
    keep = keep or record.get("keep_checkpoints", "weights")
    finished = run_folder.done()
    if finished is not None:
        if progress is not None:
            progress(finished["steps"], finished["steps"])
        return TrainResult(run.run, finished["steps"], finished["checkpoints"], 0.0, None)
    examples = _examples(run_folder, record)
    with _quiet():
        trainer = _trainer(run, run_folder, examples, record, progress, keep, list(callbacks), in_loop)
        evaluation = next((c for c in trainer.callback_handler.callbacks if isinstance(c, InLoopEvaluation)), None)
        run_folder.remove_incomplete()
        if 0 not in run_folder.checkpoints():
            _save(trainer, run_folder, 0)
        if evaluation is not None:  # the model is step 0's until training starts (or loads a later checkpoint)
            evaluation.checkpoint_saved(trainer.model, 0)
        resume = run_folder.resumable()
        try:
            trainer.train(resume_from_checkpoint=str(run_folder.checkpoint(resume)) if resume is not None else None)
        finally:
            if evaluation is not None:
                evaluation.close()
    steps = int(trainer.state.max_steps)
    saved = run_folder.checkpoints()
    if keep != "all":
        for step in saved:
            run_folder.strip(step)
    if keep == "none":
        for step in saved:
            shutil.rmtree(run_folder.checkpoint(step), ignore_errors=True)
    seconds = time.monotonic() - started
    write_json(
        run_folder.path / DONE,
        {"run": run.run, "steps": steps, "checkpoints": saved, "kept": keep, "seconds": round(seconds, 3),
         "finished": time.time()},
    )  # fmt: skip
    return TrainResult(run.run, steps, saved, seconds, resume)


def _examples(folder: RunFolder, record: dict[str, Any]) -> list[dict[str, Any]]:
    from ood_store._finetune.data import digest

    lines = (folder.path / EXAMPLES).read_text("utf-8").splitlines()
    examples = [json.loads(line) for line in lines if line.strip()]
    indices = read_json(folder.path / INDICES) or {}
    if digest([e["index"] for e in examples]) != indices.get("sha256") or indices.get("sha256") != record["sha256"]:
        raise OodStoreError(f"{folder.path}: {EXAMPLES} is not the shots of {INDICES} (changed since it was written)")
    return examples


@contextmanager
def _quiet() -> Iterator[None]:
    """transformers' warnings and progress bars (saving shards) off while a run trains; as they were afterwards."""
    from transformers.utils import logging

    verbosity = logging.get_verbosity()
    bars = logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            # peft corrects this itself for GPT-2's Conv1D layers; transformers' deprecations are peft's to follow
            warnings.filterwarnings("ignore", message=".*fan_in_fan_out is set to False.*")
            warnings.filterwarnings("ignore", category=FutureWarning, module="transformers")
            yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()


def _trainer(
    run: RunConfig,
    folder: RunFolder,
    examples: list[dict[str, Any]],
    record: dict[str, Any],
    progress: Progress | None,
    keep: str,
    callbacks: list,
    in_loop: dict[str, Any] | None,
) -> Any:
    args = training_arguments(run, folder.path)
    tokenizer = AutoTokenizer.from_pretrained(run.base_model)
    if in_loop is not None:
        base = run.base_model if run.method == "lora" else None
        callbacks = [*callbacks, InLoopEvaluation(in_loop, run.run, folder.path, base, tokenizer)]
    if args.full_determinism:
        transformers.enable_full_determinism(run.seed)
    else:
        transformers.set_seed(run.seed)
    dtype: Any = run.dtype or "float32"
    model = AutoModelForCausalLM.from_pretrained(run.base_model, dtype=getattr(torch, dtype, dtype))
    if run.method == "lora":
        from peft import get_peft_model

        model = get_peft_model(model, lora_config(run))
    verbalizers = tuple(record["verbalizer_ids"])

    class Schedule(TrainerCallback):
        steps: set[int] = set()

        def on_train_begin(self, args, state, control, **kwargs):
            self.steps = set(run.schedule.steps(state.max_steps))
            write_json(folder.path / SCHEDULE, {"max_steps": state.max_steps, "steps": sorted(self.steps)})
            if progress is not None:
                progress(state.global_step, state.max_steps)

        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step in self.steps:
                control.should_save = True
            if progress is not None:
                progress(state.global_step, state.max_steps)

        def on_save(self, args, state, control, **kwargs):
            _mark(folder, state.global_step)
            if keep != "all":  # only the latest checkpoint's state is needed to resume
                for step in folder.checkpoints():
                    if step < state.global_step:
                        folder.strip(step)
                        if keep == "none" and step > 0:
                            shutil.rmtree(folder.checkpoint(step), ignore_errors=True)

        def on_log(self, args, state, control, logs=None, **kwargs):
            with (folder.path / LOG).open("a", encoding="utf-8") as fh:
                fh.write(json.dumps({"step": state.global_step, **(logs or {})}) + "\n")

    trainer = VerbalizerTrainer(
        run.loss,
        verbalizers,
        model=model,
        args=args,
        train_dataset=examples,
        data_collator=Collator(_pad_id(tokenizer)),
        processing_class=tokenizer,
        callbacks=[Schedule(), *callbacks],
    )
    for printer in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(printer)
    return trainer


def _pad_id(tokenizer: Any) -> int:
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if candidate is not None:
            return int(candidate)
    return 0  # padded positions are masked and never read


def _save(trainer: Any, folder: RunFolder, step: int) -> None:
    """Save the model as it is now as ``checkpoint-STEP`` (step 0: before training), then its marker."""
    trainer.save_model(str(folder.checkpoint(step)))
    _mark(folder, step)


def _mark(folder: RunFolder, step: int) -> None:
    write_json(folder.checkpoint(step) / MARKER, {"step": step, "saved": time.time()})


class Collator:
    """Pads a batch on the right (attention mask 0 there) and stacks the targets."""

    def __init__(self, pad_id: int):
        self.pad_id = pad_id

    def __call__(self, batch: list[dict[str, Any]]) -> dict[str, Any]:
        width = max(len(e["input_ids"]) for e in batch)
        ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, example in enumerate(batch):
            n = len(example["input_ids"])
            ids[row, :n] = torch.tensor(example["input_ids"], dtype=torch.long)
            mask[row, :n] = 1
        return {
            "input_ids": ids,
            "attention_mask": mask,
            "target": torch.tensor([e["target"] for e in batch], dtype=torch.long),
            "answer": torch.tensor([e["answer"] for e in batch], dtype=torch.long),
        }


def last_positions(mask: torch.Tensor) -> torch.Tensor:
    """The index of each row's last attended position (its last 1), with padding on either side."""
    positions = torch.arange(1, mask.shape[1] + 1, device=mask.device)
    return (mask.long() * positions).argmax(dim=1)


def takes_positions(model: Any) -> bool:
    """Whether the model computes only the logits of given positions (``logits_to_keep`` as a 2-D tensor)."""
    from transformers import modeling_utils

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    accepts = "logits_to_keep" in inspect.signature(base.forward).parameters
    return accepts and hasattr(modeling_utils, "slice_logits_to_keep")


class VerbalizerTrainer(Trainer):
    """``Trainer`` whose loss is the verbalizer's cross-entropy at each example's last position."""

    def __init__(self, loss: str, verbalizers: tuple[int, int], **kwargs: Any):
        super().__init__(**kwargs)
        self.loss_kind, self.verbalizers = loss, list(verbalizers)
        self.keep_positions = takes_positions(self.model)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        target, answer = inputs.pop("target"), inputs.pop("answer")
        mask = inputs["attention_mask"]
        last = last_positions(mask)
        if self.keep_positions:
            outputs = model(input_ids=inputs["input_ids"], attention_mask=mask, logits_to_keep=last[:, None])
            logits = outputs.logits[:, 0]
        else:
            outputs = model(input_ids=inputs["input_ids"], attention_mask=mask)
            logits = outputs.logits[torch.arange(len(last), device=last.device), last]
        if self.loss_kind == "vocabulary":
            loss = torch.nn.functional.cross_entropy(logits.float(), target)
        else:
            loss = torch.nn.functional.cross_entropy(logits[:, self.verbalizers].float(), answer)
        return (loss, outputs) if return_outputs else loss
