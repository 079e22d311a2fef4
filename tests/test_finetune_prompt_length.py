"""Evaluation sees the prompt a run was trained on: its length (``max_length``) and which end was cut (``truncation``).

A study of two full finetuning runs of the toy GPT-2 on the suite's fixture rows (tests/fixtures/nli-suite), the
minimal pattern, prompts cut to 8 tokens (every prompt of the fixtures is longer): one run cuts its prompts on
the right (keeps their first 8 tokens, as the paper's pipeline does with ``max_length = 128``), one on the left
(lm-eval's side). ``finetune`` writes both into the study file's ``[suite]`` tables; ``evaluate --study`` then
scores each checkpoint on exactly the token ids it was trained on. The expected loglikelihoods come from outside
the scorers: the training examples' own input ids (``ood_store._finetune.examples.build``, which
tests/test_finetune_examples.py holds equal to lm-eval's requests) run through transformers by hand.
"""

from __future__ import annotations

import json
import tomllib

import duckdb
import pytest
import tomli_w

from conftest import FIXTURES
from conftest import stored_loglikelihoods as loglikelihoods
from ood_store._cli import main

SUITE = FIXTURES / "nli-suite"
LENGTH = 8
#: The study (as a table: written with tomli_w): two full runs, one per side cut, in-loop scoring at steps 0 and 2.
STUDY = {
    "in_domain": "snli", "pattern": "minimal", "neutral": "no", "tasks": ["ood_nli_snli", "ood_nli_rte"],
    "shots": [3], "method": "full", "max_length": LENGTH, "schedule": {"kind": "manual", "steps": [2]},
    "training": {"max_steps": 2, "per_device_train_batch_size": 2, "learning_rate": 3e-3, "warmup_steps": 0},
    "evaluate": {"batch_size": 8},
    "runs": [{"name": "toy-right", "truncation": "right"}, {"name": "toy-left", "truncation": "left"}],
}  # fmt: skip
TASK = "ood_nli_{}__minimal__neutral-no"
FIELDS = {"snli": ("premise", "hypothesis"), "rte": ("sentence1", "sentence2")}  # the datasets' own field names

pytestmark = pytest.mark.xdist_group("finetune-prompt-length")


def by_hand(checkpoint, testset: str, truncation: str) -> list[list[float]]:
    """Each document's (Yes, No) loglikelihoods: the training example's input ids (cut as ``truncation`` says) run
    through the checkpoint with transformers, log-softmax at the last position."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ood_store._evaluate.suite.variant import Variant
    from ood_store._finetune.examples import build

    premise, hypothesis = FIELDS[testset]
    rows = [json.loads(line) for line in (SUITE / f"ood_nli_{testset}.jsonl").read_text("utf-8").splitlines()]
    rows = [{"premise": row[premise], "hypothesis": row[hypothesis], "answer": 0}  # the answer picks the target
            for row in rows if row["label"] != -1]  # SNLI's rows without a gold label are not documents  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    model = AutoModelForCausalLM.from_pretrained(checkpoint).eval()
    examples, (yes, no) = build(rows, list(range(len(rows))), Variant.of("minimal", neutral="no"), tokenizer, LENGTH,
                                truncation)  # fmt: skip
    out = []
    with torch.no_grad():
        for example in examples:
            full = tokenizer(example.context)["input_ids"]
            assert len(full) > LENGTH and len(example.input_ids) == LENGTH  # the prompt was cut
            logits = model(torch.tensor([example.input_ids])).logits[0, -1]
            logprobs = torch.log_softmax(logits.double(), dim=-1)
            out.append([float(logprobs[yes]), float(logprobs[no])])
    return out


@pytest.fixture(scope="module")
def trained(finetune_inputs, tmp_path_factory):
    """The study trained with in-loop evaluation into one store, then evaluated afterwards into another."""
    from click.testing import CliRunner

    runner = CliRunner()
    root = tmp_path_factory.mktemp("prompt-length")
    path = root / "study.toml"
    path.write_text(tomli_w.dumps({"base_model": str(finetune_inputs["base"]), "data_dir": str(SUITE), **STUDY}))
    out, in_loop, post_hoc = root / "runs", root / "in-loop.duckdb", root / "post-hoc.duckdb"
    result = runner.invoke(main, ["--db", str(in_loop), "finetune", str(path), "--output-dir", str(out), "--in-loop",
                                  "-q"])  # fmt: skip
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["--db", str(post_hoc), "evaluate", "--study", str(out / "study.toml"), "-q"])
    assert result.exit_code == 0, result.output
    return {"root": root, "out": out, "in_loop": in_loop, "post_hoc": post_hoc}


def test_the_study_file_carries_the_prompt_length_and_the_side_cut(trained):
    study = tomllib.loads((trained["out"] / "study.toml").read_text("utf-8"))
    runs = {entry["run"]: entry for entry in study["runs"]}
    assert runs["toy-right"]["suite"] == {"pattern": "{premise} {hypothesis} ?", "verbalizer": [" Yes", " No"],
                                          "neutral": "no", "max_length": LENGTH, "truncation": "right"}  # fmt: skip
    assert runs["toy-left"]["suite"]["max_length"] == LENGTH and runs["toy-left"]["suite"]["truncation"] == "left"
    # lm-eval's own scorer cuts only the left: the right-cut run is scored by the verbalizer scorer
    assert runs["toy-right"]["scorer"] == "verbalizer" and "scorer" not in runs["toy-left"]


@pytest.mark.parametrize("run,truncation", [("toy-right", "right"), ("toy-left", "left")])
def test_evaluation_scores_the_prompt_as_trained(trained, run, truncation):
    stored = loglikelihoods(trained["post_hoc"])
    checkpoint = trained["out"] / run / "checkpoint-2"
    for testset in ("snli", "rte"):
        expected = by_hand(checkpoint, testset, truncation)
        got = [stored[(run, 2, TASK.format(testset), doc)] for doc in range(len(expected))]
        assert got == [pytest.approx(e, abs=1e-5) for e in expected], testset
    # The side cut matters for these prompts: the other side's ids give other loglikelihoods.
    other = by_hand(checkpoint, "snli", "left" if truncation == "right" else "right")
    assert any(abs(a - b) > 1e-3 for doc, pair in enumerate(other)
               for a, b in zip(pair, stored[(run, 2, TASK.format("snli"), doc)], strict=True))  # fmt: skip


def test_in_loop_scores_equal_those_afterwards(trained):
    a, b = loglikelihoods(trained["in_loop"]), loglikelihoods(trained["post_hoc"])
    assert a.keys() == b.keys() and {(run, step) for run, step, _, _ in a} == {
        (r, s) for r in ("toy-right", "toy-left") for s in (0, 2)
    }
    for key in a:
        assert a[key] == pytest.approx(b[key], abs=1e-5), key
    # Both record what the model was given, as lm-eval records --model_args
    results = sorted((trained["out"] / "lm-eval-results").glob("toy-right/step-2/unit-*/*/results_*.json"))
    assert len(results) == 2  # in the loop (the fast scorer), and afterwards (the verbalizer scorer)
    configs = [json.loads(path.read_text())["config"] for path in results]
    assert sorted(config["scorer"] for config in configs) == ["fast", "verbalizer"]
    for config in configs:
        assert config["model_args"]["max_length"] == LENGTH and config["model_args"]["truncation"] == "right"


def test_right_truncation_with_lm_evals_scorer_is_refused_in_one_line(trained, runner, tmp_path):
    db = tmp_path / "store.duckdb"
    checkpoint = trained["out"] / "toy-right" / "checkpoint-2"
    result = runner.invoke(main, ["--db", str(db), "evaluate", str(checkpoint), "--run", "x", "--tasks",
                                  TASK.format("rte").split("__")[0], "--data-dir", str(SUITE), "--truncation",
                                  "right", "--max-length", "8", "-q"])  # fmt: skip
    assert result.exit_code != 0
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert "truncation" in result.output and "needs the verbalizer scorer" in result.output
    assert "Traceback" not in result.output
    # A study whose run was cut on the right, evaluated with lm-eval's scorer: refused naming the file and run.
    study = trained["out"] / "study.toml"
    result = runner.invoke(main, ["--db", str(db), "evaluate", "--study", str(study), "--scorer", "lm-eval", "-q"])
    assert result.exit_code != 0
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert f"{study}: run toy-right: right truncation" in result.output
    if db.exists():  # opened by the command, nothing stored
        con = duckdb.connect(str(db), read_only=True)
        try:
            assert con.execute("SELECT count(*) FROM evaluations").fetchone() == (0,)
        finally:
            con.close()
