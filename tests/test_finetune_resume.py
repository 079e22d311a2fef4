"""A run killed with SIGKILL in the middle resumes from its last checkpoint and ends with the weights of a run that was
never interrupted (full finetuning and LoRA, under ``full_determinism``); Ctrl-C says what is saved.

The kill is real: ``ood-store finetune`` in a process of its own, with a Trainer callback that sends its
process SIGKILL after a given step of a given run (between two scheduled saves), so that the kill lands
at the same place on any machine. The uninterrupted run is the same study in another folder; the final
weights are read with safetensors.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ood_store._cli import main

STUDY = """
base_model = "{base}"
in_domain = "toy_nli"
data_dir = "{data}"
tasks = ["toy_nli"]
include_path = ["{tasks}"]
shots = [24]
schedule = {{ kind = "manual", steps = [4, 8] }}
name = "toy-{{method}}"
[training]
max_steps = 12
per_device_train_batch_size = 8
learning_rate = 3e-3
warmup_steps = 2
full_determinism = true
[[runs]]
method = "full"
[[runs]]
method = "lora"
"""

# ood-store finetune, whose Trainer sends its own process SIGKILL at the end of step KILL_STEP of run KILL_RUN.
KILLER = """
import os, signal, sys
from pathlib import Path
from transformers import TrainerCallback
import ood_store._finetune.trainer as trainer
from ood_store._cli import main

class Kill(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if Path(args.output_dir).name == os.environ["KILL_RUN"] and state.global_step == int(os.environ["KILL_STEP"]):
            os.kill(os.getpid(), signal.SIGKILL)

train = trainer.train
trainer.train = lambda folder, progress=None, keep=None, callbacks=(), in_loop=None: train(
    folder, progress, keep, [*callbacks, Kill()], in_loop
)
sys.exit(main(sys.argv[1:], prog_name="ood-store"))
"""

pytestmark = pytest.mark.xdist_group("finetune-resume")


def weights(folder: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    [file] = [f for f in folder.glob("*.safetensors")]
    return load_file(file)


def steps(folder: Path) -> list[int]:
    return sorted(int(p.name.removeprefix("checkpoint-")) for p in folder.glob("checkpoint-*"))


def killed(path: Path, out: Path, run: str, step: int) -> None:
    env = {**os.environ, "KILL_RUN": run, "KILL_STEP": str(step)}
    done = subprocess.run(
        [sys.executable, "-c", KILLER, "finetune", str(path), "--output-dir", str(out), "-q"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]


def test_a_killed_run_resumes_and_ends_with_the_weights_of_an_uninterrupted_one(tmp_path, finetune_inputs, runner):
    from ood_store._finetune.folder import MARKER

    path = tmp_path / "study.toml"
    inputs = {"base": finetune_inputs["base"], "data": finetune_inputs["data"], "tasks": finetune_inputs["tasks"]}
    path.write_text(STUDY.format(**inputs), "utf-8")
    whole, out = tmp_path / "whole", tmp_path / "killed"
    assert runner.invoke(main, ["finetune", str(path), "--output-dir", str(whole), "-q"]).exit_code == 0

    killed(path, out, "toy-full", 6)  # between the saves at steps 4 and 8
    full = out / "toy-full"
    assert steps(full) == [0, 4]
    assert not (full / "finetune-done.json").exists() and not list((out / "toy-lora").glob("checkpoint-*"))
    # A save the kill interrupted: a checkpoint folder without its marker, which must not be resumed from.
    (full / "checkpoint-8").mkdir()
    (full / "checkpoint-8" / "model.safetensors").write_bytes(b"half")

    killed(path, out, "toy-lora", 10)  # the full run resumes and ends; the LoRA run is killed after its save at 8
    assert (full / "finetune-done.json").exists()
    assert steps(out / "toy-lora") == [0, 4, 8]

    result = runner.invoke(main, ["finetune", str(path), "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    assert "Finetuned 1 run (1 resumed) into" in result.output and "Already finished: 1 run" in result.output
    for run in ("toy-full", "toy-lora"):
        assert steps(out / run) == [0, 4, 8, 12]
        for step in (0, 4, 8, 12):
            assert (out / run / f"checkpoint-{step}" / MARKER).is_file()
            a, b = weights(whole / run / f"checkpoint-{step}"), weights(out / run / f"checkpoint-{step}")
            assert a.keys() == b.keys()
            assert max(float(np.abs(a[k] - b[k]).max()) for k in a) <= 1e-6, (run, step)
    work = json.loads(next((out / "finetune-work" / "done").glob("toy-lora.json")).read_text())
    assert work["resumed_from"] == 8  # the LoRA run went on from its checkpoint 8


def test_ctrl_c_says_what_is_saved_and_that_the_same_command_resumes(tmp_path, finetune_inputs, runner, monkeypatch):
    from transformers import TrainerCallback

    import ood_store._finetune.trainer as trainer

    class Interrupt(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 6:
                raise KeyboardInterrupt

    train = trainer.train

    def interrupting(folder, progress=None, keep=None, callbacks=(), in_loop=None):
        return train(folder, progress, keep, [*callbacks, Interrupt()], in_loop)

    monkeypatch.setattr(trainer, "train", interrupting)
    path = tmp_path / "study.toml"
    path.write_text(STUDY.format(base=finetune_inputs["base"], data=finetune_inputs["data"],
                                 tasks=finetune_inputs["tasks"]), "utf-8")  # fmt: skip
    out = tmp_path / "runs"
    result = runner.invoke(main, ["finetune", str(path), "--output-dir", str(out)])
    assert result.exit_code == 130
    assert result.output.splitlines() == [
        f"Interrupted: 0 of 2 runs finished, in {out}.",
        "  toy-full: saved up to checkpoint-4 (step 4 of 12)",
        "  toy-lora: nothing saved yet",
        "Run the same command again to resume: finished runs are kept, the others continue from their last checkpoint.",
    ]
