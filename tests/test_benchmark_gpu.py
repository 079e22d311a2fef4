"""benchmarks/evaluate_gpu.py, the GPU benchmark, in its tiny form on a CPU: the same code path, in seconds.

No figure of speed is checked (a test is no place for timings). What is checked is that the script
evaluates every generated document of every checkpoint and reports it: the expected count comes from
the fixture rows it repeats (tests/fixtures/nli-suite) and the labels that the suite's default neutral
scheme drops, per the dataset cards (SNLI's and MNLI's neutral 1 and SNLI's -1 without a gold label,
ANLI's neutral 1).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from itertools import cycle, islice
from pathlib import Path

from conftest import FIXTURES

BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "evaluate_gpu.py"
DROPPED = {"ood_nli_snli": {1, -1}, "ood_nli_mnli": {1}, **{f"ood_nli_anli_r{n}": {1} for n in (1, 2, 3)}}


def test_the_gpu_benchmark_runs_in_its_tiny_form_on_a_cpu(tmp_path):
    docs, checkpoints = 3, 2
    result = subprocess.run(
        [sys.executable, str(BENCHMARK), "--model", "tiny", "--device", "cpu", "--dtype", "float32",
         "--docs", str(docs), "--checkpoints", str(checkpoints)],
        capture_output=True, text=True, timeout=600, env={**os.environ, "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout.splitlines()[-1])

    kept = 0
    for path in sorted((FIXTURES / "nli-suite").glob("ood_nli_*.jsonl")):
        if path.name.endswith(".train.jsonl"):
            continue
        labels = [json.loads(line)["label"] for line in path.read_text("utf-8").splitlines()]
        task = path.name.removesuffix(".jsonl")
        kept += sum(label not in DROPPED.get(task, set()) for label in islice(cycle(labels), docs))
    assert (figures["checkpoints"], figures["documents"]) == (checkpoints, checkpoints * kept)
    assert figures["model"] == "tiny" and figures["device"].startswith("CPU") and figures["parameters"] > 0
    assert figures["gpu_utilisation_mean"] is None and figures["gpu_memory_peak_mib"] is None  # no GPU here
    assert 0 < figures["forward_s"] < figures["wall_s"] and figures["documents_per_s"] > 0
    assert f"evaluated {checkpoints * kept} documents ({checkpoints} checkpoints)" in result.stdout
