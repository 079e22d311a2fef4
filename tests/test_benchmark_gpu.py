"""benchmarks/evaluate_gpu.py, the GPU benchmark, in its tiny form on a CPU: the same code path, in seconds.

Measured in the script's own process (--in-process), not a fresh one each: the same code, less start-up.
No figure of speed is checked (a test is no place for timings). What is checked is that the script
evaluates every generated document of every checkpoint, for each of the three scorers, on full checkpoints
and on a LoRA series, and reports it: the expected count comes from the fixture rows it repeats
(tests/fixtures/nli-suite) and the labels that the suite's default neutral scheme drops, per the dataset
cards (conftest.suite_documents). The FLOP
utilization is checked against its definition (2 x parameters x tokens / forward seconds / peak), with a
peak of 1 TFLOP/s given for the CPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import suite_documents

BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "evaluate_gpu.py"


def test_the_gpu_benchmark_runs_in_its_tiny_form_on_a_cpu(tmp_path):
    docs, checkpoints = 3, 2
    result = subprocess.run(
        [sys.executable, str(BENCHMARK), "--model", "tiny", "--device", "cpu", "--dtype", "float32",
         "--docs", str(docs), "--checkpoints", str(checkpoints), "--peak-tflops", "1", "--in-process",
         "--scorers", "lm-eval,verbalizer,fast"],
        capture_output=True, text=True, timeout=900, env={**os.environ, "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.splitlines()[-1])

    kept = suite_documents(docs)
    assert summary["model"] == "tiny" and summary["device"].startswith("CPU") and summary["parameters"] > 0
    assert summary["disk"]["bytes"] > 0 and summary["disk"]["gb_per_s"] > 0
    assert sorted(summary["measurements"]) == ["full-fast", "full-lm-eval", "full-verbalizer", "lora-fast",
                                               "lora-lm-eval", "lora-verbalizer"]  # fmt: skip
    for name, f in summary["measurements"].items():
        assert (f["units"], f["documents"]) == (checkpoints, checkpoints * kept), name
        assert f["gpu_utilisation_mean"] is None and f["gpu_memory_peak_mib"] is None  # no GPU here
        assert 0 < f["forward_s"] < f["wall_s"] and f["documents_per_s"] > 0
        again = "adapter_swap" if name.startswith("lora") else "in_place"
        assert f["loads"] == {"from_pretrained": 1, again: checkpoints - 1}, name  # the run's model kept
        assert f["bytes_read"] > 0 and f["read_gb_per_s"] > 0
        expected = 2 * summary["parameters"] * f["tokens"] / f["forward_s"] / 1e12
        assert f["tokens"] >= f["documents"] and f["mfu"] == pytest.approx(expected, rel=1e-9)
        assert f"{name}: evaluated {checkpoints * kept} documents ({checkpoints} checkpoints)" in result.stdout
        assert f["last_per_forward"] == pytest.approx(f["last_s"] / f["last_forward_s"], rel=1e-9)
        assert f["gpu_utilisation_scoring"] is None and len(f["windows"]) == checkpoints
    # The fast scorer prepared the run's requests once, for the full series; the LoRA series read them (same
    # tokenizer and tasks); the other scorers prepare nothing of their own.
    fast = summary["measurements"]
    assert fast["full-fast"]["prepare_s"] > 0 and fast["lora-fast"]["prepare_s"] < fast["full-fast"]["prepare_s"]
    assert all(fast[name]["prepare_s"] == 0 for name in fast if not name.endswith("fast"))
