"""benchmarks/evaluate_series.py in its tiny form: every comparison measured, in this process, in seconds.

No figure of speed is checked (a test is no place for timings). What is checked is that each measurement
evaluates every generated document of every checkpoint, loads its models the way it says (read from the
completion markers), and that the report states each comparison. The expected document counts come from
the fixture rows the benchmark repeats (tests/fixtures/nli-suite) and the labels the suite's default
neutral scheme drops, per the dataset cards (conftest.suite_documents).
"""

from __future__ import annotations

import pytest

from conftest import benchmark
from conftest import suite_documents as kept

pytestmark = pytest.mark.xdist_group("series")


def test_the_series_benchmark_measures_its_three_comparisons_in_its_tiny_form(tmp_path):
    bench = benchmark("evaluate_series")
    checkpoints, docs, suite_docs = 2, 1, 2
    data = {"data-small": docs, "data-suite": suite_docs}
    params = bench.build(tmp_path, bench.opt_shape(32, 1), 1024, checkpoints, data)
    assert params > 1024 * 32  # the embeddings alone
    figures = {name: bench.measure(tmp_path, name, tmp_path / "measured" / name) for name in bench.MEASUREMENTS}

    for what in ("lora", "full"):
        fresh, kept_model = figures[f"{what}-fresh"], figures[f"{what}-series"]
        verbalizer = figures[f"{what}-series-verbalizer"]
        for f in (fresh, kept_model, verbalizer):
            assert (f["units"], f["documents"]) == (checkpoints, checkpoints * kept(docs))
            assert f["forward_s"] > 0 and f["load_s"] < f["unit_s"] <= f["wall_s"]
            assert len(f["load_s_each"]) == len(f["scoring_s_each"]) == checkpoints
        assert fresh["loads"] == {"from_pretrained": checkpoints} and fresh["prefetched"] == 0
        again = "adapter_swap" if what == "lora" else "in_place"
        for f in (kept_model, verbalizer):
            assert f["loads"] == {"from_pretrained": 1, again: checkpoints - 1}
            assert f["prefetched"] == checkpoints - 1  # each later checkpoint was read while one was scored
    for scorer in ("lm-eval", "verbalizer"):
        f = figures[f"suite-{scorer}"]
        assert (f["units"], f["documents"]) == (bench.SUITE_CHECKPOINTS, bench.SUITE_CHECKPOINTS * kept(suite_docs))
        assert f["tokens"] >= f["documents"]  # each document's context ran through the model, one position or more

    lines = bench.report(figures)
    assert lines[0] == f"(a) LoRA series, {checkpoints} checkpoints:"
    assert lines[5] == f"(b) full checkpoints, {checkpoints} checkpoints:"
    assert lines[10] == (
        f"(c) the ood_nli suite, {kept(suite_docs)} documents per checkpoint, {bench.SUITE_CHECKPOINTS} checkpoints "
        "of one run:"
    )
    assert lines[4].startswith("  wall time ") and "(target < 10%); verbalizer scorer: " in lines[4]
    assert lines[-1].startswith("  verbalizer / lm-eval: ") and lines[-1].endswith("target >= 3x)")
