"""The finetuning benchmarks in their tiny form on a CPU: the same code paths, in seconds.

No figure of speed is checked (a test is no place for timings). What is checked: benchmarks/finetune.py
trains with both the hand-written script and ``ood-store finetune`` and both save the steps of the
schedule (computed here by hand); benchmarks/finetune_gpu.py finetunes and counts the tokens of the
examples it trained on (the steps times the batch times the examples' mean length, read here from the
run's examples file it reports on).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import benchmark

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
pytestmark = pytest.mark.xdist_group("benchmarks")


def run(name: str, *args: str, tmp_path, capsys, monkeypatch) -> dict:
    """The script's main() in this process (its timed runs are fresh processes of their own); its JSON line.

    Loaded from its file under another module name: ``finetune`` is also the stage folder at the root.
    """
    benchmark("common")  # puts benchmarks/ on the import path (finetune_gpu imports evaluate_gpu)
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(sys, "argv", [f"{name}.py", *args])
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    module.main()
    return json.loads(capsys.readouterr().out.splitlines()[-1])


def test_the_overhead_benchmark_runs_both_with_the_same_saves(tmp_path, capsys, monkeypatch):
    figures = run("finetune", "--steps", "4", "--shots", "16", "--checkpoints", "3", "--repeats", "1",
                  tmp_path=tmp_path, capsys=capsys, monkeypatch=monkeypatch)  # fmt: skip
    # log, 3 checkpoints over 4 steps: 0, then 4 ** (i / 1) for i = 0, 1: 1 and 4.
    assert figures["checkpoints"] == [0, 1, 4]
    assert figures["script_s"] > 0 and figures["ood_store_s"] > 0
    assert figures["ratio"] == pytest.approx(figures["ood_store_s"] / figures["script_s"])


def test_the_gpu_benchmark_runs_in_its_tiny_form_on_a_cpu(tmp_path, capsys, monkeypatch):
    figures = run("finetune_gpu", "--model", "tiny", "--device", "cpu", "--methods", "lora", "--steps", "3",
                  "--shots", "8", "--batch", "4", "--rows", "32", tmp_path=tmp_path, capsys=capsys,
                  monkeypatch=monkeypatch)  # fmt: skip
    lora = figures["lora"]
    assert (lora["steps"], lora["checkpoints"]) == (3, [0, 1, 2, 3])  # log of 5 over 3 steps: every step
    assert lora["gpu_utilisation_mean"] is None  # no GPU here
    assert lora["tokens_per_s"] == pytest.approx(lora["tokens"] / lora["train_runtime_s"])
    assert lora["tokens"] > 3 * 4 * 5  # more than 5 tokens per example
