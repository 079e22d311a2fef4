"""Whole-process timing of `ood-store finetune` of one toy run against a hand-written HF Trainer script doing the same.

    python benchmarks/finetune.py [--steps 200] [--shots 128] [--checkpoints 12] [--method full] [--repeats 3]

Set-up (not timed): the demo's 42k-parameter GPT-2 and its tokenizer, built from code and saved as the
base model; the toy training split (512 rows of premise, hypothesis, label); a finetuning study of one
run (--shots shots of data seed 0, --steps optimizer steps of batch 16, lr 3e-3, no warm-up, a log
schedule of --checkpoints checkpoints from step 0). Offline, CPU.

Timed, each a fresh process writing to a fresh folder:
  script     what one writes by hand with transformers: the shots drawn with llmft's rule, each prompt
             tokenized with its answer (" Yes" / " No") and the labels masked but for the answer (the
             causal-LM loss of transformers), right padding, Trainer with a TrainerCallback saving at the
             same steps and save_model for step 0; no checks, no run folder, no study file;
  ood-store  `ood-store finetune STUDY --output-dir OUT -q`: the study checked, the tokenizer's
             verbalizers, the training split and the Trainer's arguments checked before training, the
             shots and examples written, the run trained with the same Trainer and saves, the study file.
Both save the same checkpoints (checked). Reported: median wall seconds of each, and ood-store / script
(target: 1.10 or less: the schedule, the sampling and the study file must cost almost nothing); then
one JSON line with the figures. Machines here are noisy: read the ratio, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent

SCRIPT = r"""
import json, sys
from pathlib import Path
import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainerCallback, TrainingArguments

base, data, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
shots, steps, saves, method = int(sys.argv[4]), int(sys.argv[5]), {int(s) for s in sys.argv[6].split(",")}, sys.argv[7]
tokenizer = AutoTokenizer.from_pretrained(base)
model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
if method == "lora":
    from peft import LoraConfig, get_peft_model
    torch.manual_seed(0)
    model = get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", r=8))
rows = [json.loads(line) for line in open(data)]
np.random.seed(0)
examples = []
for i in np.random.choice(len(rows), size=shots, replace=False):
    row = rows[i]
    prompt = f"{row['premise']} Question: {row['hypothesis']} Yes or No?"
    ids = tokenizer(prompt)["input_ids"]
    answer = tokenizer(prompt + (" Yes", " No")[row["label"]])["input_ids"][len(ids):]
    examples.append({"input_ids": ids + answer, "labels": [-100] * len(ids) + answer})

def collate(batch):
    width = max(len(e["input_ids"]) for e in batch)
    pad = lambda values, fill: values + [fill] * (width - len(values))
    return {
        "input_ids": torch.tensor([pad(e["input_ids"], tokenizer.pad_token_id) for e in batch]),
        "attention_mask": torch.tensor([pad([1] * len(e["input_ids"]), 0) for e in batch]),
        "labels": torch.tensor([pad(e["labels"], -100) for e in batch]),
    }

class Saves(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step in saves:
            control.should_save = True

args = TrainingArguments(
    output_dir=str(out), max_steps=steps, per_device_train_batch_size=16, learning_rate=3e-3, warmup_steps=0,
    weight_decay=0.0, save_strategy="no", report_to="none", disable_tqdm=True, remove_unused_columns=False, seed=0,
    dataloader_pin_memory=False,
)
trainer = Trainer(model=model, args=args, train_dataset=examples, data_collator=collate, processing_class=tokenizer,
                  callbacks=[Saves()])
trainer.save_model(str(out / "checkpoint-0"))
trainer.train()
"""

STUDY = """
base_model = "{base}"
in_domain = "toy_nli"
data_dir = "{data}"
tasks = ["toy_nli"]
method = "{method}"
shots = {shots}
schedule = {{ kind = "log", checkpoints = {checkpoints} }}
name = "bench"
[training]
max_steps = {steps}
per_device_train_batch_size = 16
learning_rate = 3e-3
warmup_steps = 0
[lora]
r = 8
"""


def build(root: Path, args: argparse.Namespace) -> tuple[Path, list[int]]:
    """The base model, the training split and the study file; returns the study and the steps it saves."""
    from ood_store._examples import toy
    from ood_store._finetune.schedule import Schedule

    tokenizer = toy.build_tokenizer()
    toy.save_checkpoint(toy.build_model(tokenizer), tokenizer, root / "base")
    (root / "data").mkdir()
    rows = "".join(json.dumps(row) + "\n" for row in toy.training_rows())
    (root / "data" / "toy_nli.train.jsonl").write_text(rows, "utf-8")
    study = root / "study.toml"
    study.write_text(
        STUDY.format(base=root / "base", data=root / "data", method=args.method, shots=args.shots,
                     checkpoints=args.checkpoints, steps=args.steps),
        "utf-8",
    )  # fmt: skip
    return study, Schedule("log", checkpoints=args.checkpoints).steps(args.steps)


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{command[:3]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def saved(folder: Path) -> list[int]:
    return sorted(int(p.name.removeprefix("checkpoint-")) for p in folder.glob("checkpoint-*"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--shots", type=int, default=128)
    parser.add_argument("--checkpoints", type=int, default=12, help="of the log schedule, step 0 included")
    parser.add_argument("--method", choices=("full", "lora"), default="full")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TQDM_DISABLE": "1"}
    with tempfile.TemporaryDirectory(prefix="ood-store-bench-finetune-") as tmp:
        root = Path(tmp)
        study, steps = build(root, args)
        split = root / "data" / "toy_nli.train.jsonl"
        times: dict[str, list[float]] = {"script": [], "ood-store": []}
        for repeat in range(args.repeats):
            runs = {
                "script": [sys.executable, "-c", SCRIPT, str(root / "base"), str(split), str(root / f"script-{repeat}"),
                           str(args.shots), str(args.steps), ",".join(map(str, steps)), args.method],
                "ood-store": [str(BIN / "ood-store"), "finetune", str(study), "--output-dir",
                              str(root / f"ood-store-{repeat}"), "-q"],
            }  # fmt: skip
            for name in sorted(runs, reverse=bool(repeat % 2)):  # alternate which goes first
                times[name].append(timed(runs[name], env))
                print(f"  {name:9s} run {repeat + 1}: {times[name][-1]:6.2f} s", file=sys.stderr)
            same = saved(root / f"script-{repeat}") == saved(root / f"ood-store-{repeat}" / "bench") == steps
            if not same:
                raise SystemExit(f"the two did not save the same checkpoints: {steps}")
    median = {name: statistics.median(values) for name, values in times.items()}
    ratio = median["ood-store"] / median["script"]
    print(
        f"one toy run ({args.method}): {args.shots} shots, {args.steps} steps of 16, {len(steps)} checkpoints; CPU; "
        f"median of {args.repeats} fresh processes each"
    )
    for name, value in median.items():
        print(f"  {name:9s} {value:7.2f} s")
    print(f"ood-store / script: {ratio:.2f}x (target 1.10x or less)")
    print(json.dumps({"method": args.method, "steps": args.steps, "shots": args.shots, "checkpoints": steps,
                      "script_s": median["script"], "ood_store_s": median["ood-store"], "ratio": ratio}))  # fmt: skip


if __name__ == "__main__":
    main()
