"""Evaluation in the loop (mode b) gives the scores of evaluating the saved checkpoints afterwards (mode a).

A study on the suite's fixture rows (tests/fixtures/nli-suite: SNLI's training split, the minimal pattern,
neutral rows answering No), LoRA and full, is finetuned with ``--in-loop`` into one store; then
``evaluate --study`` (lm-eval's own ``hf`` model, the reference) evaluates the checkpoints it kept into
another. Every (run, step, task) has the same accuracy in both, exactly, and every document the same
loglikelihoods, to 1e-5 (float32 sums in another order); the in-loop files say they came from the
verbalizer scorer. With ``--keep-checkpoints none`` the scores are the same and no checkpoint is left.
"""

from __future__ import annotations

import json

import duckdb
import pytest

from conftest import FIXTURES
from conftest import stored_loglikelihoods as loglikelihoods
from ood_store._cli import main

STUDY = """
base_model = "{base}"
in_domain = "snli"
data_dir = "{data}"
pattern = "minimal"
neutral = "no"
tasks = ["ood_nli_snli", "ood_nli_rte", "ood_nli_hans"]
shots = [3]
schedule = {{ kind = "manual", steps = [2] }}
name = "toy-{{method}}"
[training]
max_steps = 4
per_device_train_batch_size = 2
learning_rate = 3e-3
warmup_steps = 0
[evaluate]
batch_size = 8
[[runs]]
method = "full"
[[runs]]
method = "lora"
"""

pytestmark = pytest.mark.xdist_group("finetune-inloop")


def scores(db) -> dict[tuple, float]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT run, step, task, value FROM scores WHERE metric = 'acc'").fetchall()
        return {(run, step, task): value for run, step, task, value in rows}
    finally:
        con.close()


def test_in_loop_scores_equal_post_hoc_scores(tmp_path, finetune_inputs, runner):
    path = tmp_path / "study.toml"
    path.write_text(STUDY.format(base=finetune_inputs["base"], data=FIXTURES / "nli-suite"), "utf-8")
    out, in_loop, post_hoc = tmp_path / "runs", tmp_path / "in-loop.duckdb", tmp_path / "post-hoc.duckdb"
    result = runner.invoke(main, ["--db", str(in_loop), "finetune", str(path), "--output-dir", str(out), "--in-loop"])
    assert result.exit_code == 0, result.output
    assert f"Evaluated in the loop: 6 checkpoints stored into {in_loop}" in result.output
    result = runner.invoke(main, ["--db", str(post_hoc), "evaluate", "--study", str(out / "study.toml"), "-q"])
    assert result.exit_code == 0, result.output

    a, b = scores(in_loop), scores(post_hoc)
    tasks = {f"ood_nli_{t}__minimal__neutral-no" for t in ("snli", "rte", "hans")}
    assert {(run, step) for run, step, _ in a} == {(r, s) for r in ("toy-full", "toy-lora") for s in (0, 2, 4)}
    assert {task for _, _, task in a} == tasks
    assert a == b  # accuracy exactly
    la, lb = loglikelihoods(in_loop), loglikelihoods(post_hoc)
    assert la.keys() == lb.keys() and len(la) == 6 * (4 + 3 + 7)  # SNLI's neutral doc kept (answers No)
    for key in la:
        assert la[key] == pytest.approx(lb[key], abs=1e-5), key
    # The in-loop files are lm-eval's, from the fast scorer, in evaluate's layout (beside those of the
    # evaluation afterwards, lm-eval's own); collect stores nothing new.
    results = sorted((out / "lm-eval-results").glob("*/step-*/unit-*/*/results_*.json"))
    scorers = [json.loads(p.read_text())["config"].get("scorer", "lm-eval") for p in results]
    assert sorted(scorers) == ["fast"] * 6 + ["lm-eval"] * 6
    markers = [json.loads(p.read_text()) for p in (out / "lm-eval-results-work" / "done").glob("*.json")]
    in_loop_markers = [m for m in markers if m["attempt"] == "in-loop"]
    assert len(in_loop_markers) == 6 and all(m["scorer"] == "fast" for m in in_loop_markers)
    assert all(m["timings"]["documents"] == 4 + 3 + 7 and m["timings"]["forward_s"] > 0 for m in in_loop_markers)
    again = runner.invoke(main, ["--db", str(in_loop), "collect", str(out / "lm-eval-results-work")])
    assert again.exit_code == 0, again.output
    assert scores(in_loop) == a

    # Nothing large kept: the same scores, no checkpoint left, no study file to evaluate.
    bare, bare_db = tmp_path / "bare", tmp_path / "bare.duckdb"
    result = runner.invoke(main, ["--db", str(bare_db), "finetune", str(path), "--output-dir", str(bare), "--in-loop",
                                  "--keep-checkpoints", "none", "-q"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert not list(bare.glob("*/checkpoint-*")) and not (bare / "study.toml").exists()
    assert scores(bare_db) == a
