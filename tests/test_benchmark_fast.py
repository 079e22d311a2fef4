"""benchmarks/evaluate_fast.py in its tiny form (3 rows per testset, 2 checkpoints), in this process.

No figure of speed is checked (a test is no place for timings). What is checked is that each scorer's two
measurements (one checkpoint, and the run's two) evaluate every generated document of every checkpoint,
that the figures are what their definitions say (the marginal checkpoint: the two processes' difference;
the steady state: the run's second unit, from its completion marker; its storing: between its completion
and stored markers, within the process's time outside the units; the marginal checkpoint's parts add up to
it), and that only the fast scorer spends time preparing. The expected document counts come from the
fixture rows the benchmark repeats and the labels the suite's default neutral scheme drops
(conftest.suite_documents).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import suite_documents

BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "evaluate_fast.py"


def test_the_fast_benchmark_runs_in_its_tiny_form(tmp_path):
    docs, checkpoints = 3, 2
    result = subprocess.run(
        [sys.executable, str(BENCHMARK), "--docs", str(docs), "--checkpoints", str(checkpoints), "--in-process"],
        capture_output=True, text=True, timeout=900, env={**os.environ, "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.splitlines()[-1])
    kept = suite_documents(docs)
    assert summary["documents"] == 10 * docs and summary["checkpoints"] == checkpoints
    assert list(summary["scorers"]) == ["lm-eval", "verbalizer", "fast"]
    for scorer, f in summary["scorers"].items():
        one, many = f["one"], f["many"]
        assert (one["units"], one["documents"], many["units"], many["documents"]) == (1, kept, 2, 2 * kept), scorer
        assert f["documents_per_checkpoint"] == kept
        assert f["marginal_s"] == pytest.approx(many["whole_s"] - one["whole_s"])
        assert f["marginal_forward_s"] == pytest.approx(many["forward_s"] - one["forward_s"])
        expected = 1e6 * (f["marginal_s"] - f["marginal_forward_s"]) / kept
        assert f["outside_forward_us_per_document"] == pytest.approx(expected)
        last = many["last"]
        assert (f["steady_s"], f["steady_forward_s"]) == (last["seconds"], last["forward_s"])  # the second unit
        assert 0 < f["steady_storing_s"] < many["wall_s"] - many["unit_s"]  # its commit: outside the units
        expected = 1e6 * (f["steady_s"] + f["steady_storing_s"] - f["steady_forward_s"]) / kept
        assert f["stored_outside_us_per_document"] == pytest.approx(expected)
        parts = f["steady_s"] + f["outside_units_s"] + f["first_unit_s"] + f["startup_s"]
        assert parts == pytest.approx(f["marginal_s"])  # the marginal checkpoint, split into its parts
        assert last["documents"] == kept and last["load"] == "in_place"  # the run's model kept
        assert (one["last"]["prepare_s"] > 0) == (scorer == "fast"), scorer  # the run's requests, prepared once
        assert last["prepare_s"] == 0.0, scorer
        assert f"{scorer}: {kept} documents per checkpoint" in result.stdout
    assert "targets: marginal cost <= 1/10 of lm-eval's: " in result.stdout
