"""The verbalizer scorer against lm-eval's own ``hf`` model: the same loglikelihoods, accuracies and files.

The reference is lm-eval itself: ``lm_eval.simple_evaluate(model="hf", ...)``
loading the checkpoint by its path, on the same task configs. The model is a
tiny GPT-2 built from code (ood_store._examples.toy) whose context (40 tokens)
is shorter than many of the suite's prompts, so lm-eval's left truncation is
exercised; the data are the suite's fixture rows (tests/fixtures/nli-suite),
and the few-shot examples come from their training files.

Tolerances: both compute in float32 on the CPU; they differ only in the
batch shapes the matrix products see (padding and batch composition), which
changes sums in the last bits: a loglikelihood of magnitude ~10 to within
1e-5. Accuracy and lm-eval's ``is_greedy`` must be equal.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

import pytest

import ood_store
from conftest import FIXTURES, suite_checkpoint

SUITE_DATA = FIXTURES / "nli-suite"
CONTEXT = 40  # the toy model's positions: shorter than many prompts


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    """A tiny GPT-2 and a tokenizer trained on the suite's rows and every shipped pattern and verbalizer."""
    return suite_checkpoint(tmp_path_factory.mktemp("m"), CONTEXT)


def variants():
    from ood_store._evaluate.suite.variant import PATTERNS, Variant

    return [Variant.of(name) for name in PATTERNS] + [Variant.of("minimal", neutral="no")]


def evaluate_both(checkpoint: Path, shots: int):
    """lm-eval's ``hf`` model (loading the checkpoint itself) and the verbalizer scorer on every variant."""
    import lm_eval

    from ood_store._evaluate.scorer import VerbalizerLM, score, suite_tasks

    options = {"num_fewshot": shots, "batch_size": 4, "device": "cpu"}
    with ExitStack() as stack:
        sets = [stack.enter_context(suite_tasks(["ood_nli"], variant=v, data_dir=SUITE_DATA, num_fewshot=shots))
                for v in variants()]  # fmt: skip
        reference = lm_eval.simple_evaluate(
            model="hf", model_args={"pretrained": str(checkpoint)}, tasks=[o for s in sets for o in s.objects],
            task_manager=sets[0].manager, **options,
        )  # fmt: skip
    with ExitStack() as stack:
        sets = [stack.enter_context(suite_tasks(["ood_nli"], variant=v, data_dir=SUITE_DATA, num_fewshot=shots))
                for v in variants()]  # fmt: skip
        lm = VerbalizerLM(str(checkpoint), batch_size=4, device="cpu")
        scored = score(lm, [o for s in sets for o in s.objects], task_manager=sets[0].manager, **options)
    return reference, scored, lm


def per_request(samples: dict) -> dict[tuple[str, int, int], tuple[float, bool, float]]:
    """(task, document, choice) -> (loglikelihood, is_greedy, the document's acc), from lm-eval's sample rows."""
    out = {}
    for task, rows in samples.items():
        for row in rows:
            for choice, resp in enumerate(row["resps"]):
                (loglikelihood, greedy), *_ = resp
                out[(task, row["doc_id"], choice)] = (float(loglikelihood), bool(greedy), row["acc"])
    return out


@pytest.mark.parametrize("shots", [0, 2], ids=["zero-shot", "two-shot"])
def test_the_verbalizer_scorer_equals_lm_eval_on_every_shipped_pattern(checkpoint, shots):
    reference, scored, lm = evaluate_both(checkpoint, shots)
    expected, got = per_request(reference["samples"]), per_request(scored.samples)
    tasks = {task for task, _, _ in expected}
    assert len(tasks) == 10 * len(variants())  # every testset under every variant
    assert got.keys() == expected.keys()
    for key, (loglikelihood, greedy, acc) in expected.items():
        assert got[key][0] == pytest.approx(loglikelihood, abs=1e-5), key
        assert got[key][1:] == (greedy, acc), key
    accuracy = {task: entry["acc,none"] for task, entry in reference["results"].items()}
    assert scored.accuracy() == accuracy
    # Documents longer than the model's context were scored (and truncated alike).
    contexts = [row["arguments"][0][0] for rows in scored.samples.values() for row in rows]
    assert sum(len(lm.tokenizer(text)["input_ids"]) > CONTEXT for text in contexts) > (10 if shots else 2)
    # What the scorer's files record, and what it does not: which scorer, the same configs as lm-eval's.
    assert scored.results["config"]["scorer"] == "verbalizer"
    assert scored.results["configs"] == json.loads(json.dumps(reference["configs"], default=str))


def test_documents_are_the_samples_loglikelihoods_in_choice_order(checkpoint):
    from ood_store._evaluate.scorer import VerbalizerLM, score, suite_tasks
    from ood_store._evaluate.suite.variant import Variant

    with suite_tasks(["ood_nli_rte"], variant=Variant.of("gpt-3"), data_dir=SUITE_DATA) as tasks:
        scored = score(VerbalizerLM(str(checkpoint), batch_size="auto", device="cpu"), tasks)
    rows = [json.loads(line) for line in (SUITE_DATA / "ood_nli_rte.jsonl").read_text("utf-8").splitlines()]
    documents = scored.documents()
    assert [d.doc_id for d in documents] == list(range(len(rows)))
    for document in documents:
        sample = next(s for s in scored.samples["ood_nli_rte__gpt-3"] if s["doc_id"] == document.doc_id)
        assert document.loglikelihoods == tuple(r[0][0] for r in sample["resps"])
        label = rows[document.doc_id]["label"]  # RTE: 0 (entailed) answers with the first verbalizer
        assert document.target == label
        assert document.acc == float(max(range(2), key=lambda i: document.loglikelihoods[i]) == label)


def test_a_task_it_cannot_score_exactly_is_refused_in_one_line(checkpoint, tmp_path):
    from ood_store._evaluate.scorer import ScorerRefused, VerbalizerLM, score, suite_tasks
    from ood_store._evaluate.suite.variant import Variant
    from ood_store._examples import toy

    lm = VerbalizerLM(str(checkpoint), batch_size=4, device="cpu")
    answers = Variant.of("minimal", verbalizer=" Certainly,Nevertheless")
    assert len(lm.tokenizer(" Nevertheless")["input_ids"]) > 1  # not one token for this tokenizer
    with (
        suite_tasks(["ood_nli_rte"], variant=answers, data_dir=SUITE_DATA) as tasks,
        pytest.raises(ScorerRefused) as refused,
    ):
        score(lm, tasks)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("ood_nli_rte__minimal__v-Certainly-Nevertheless: the verbalizer scorer scores answers")
    assert "evaluate it with the lm-eval scorer" in message

    data = tmp_path / "gen.jsonl"
    data.write_text('{"q": "a", "a": "b"}\n')
    yaml = toy.local_task_yaml(
        "toy_gen", data, output_type="generate_until", doc_to_text="{{q}}", doc_to_target="a", metric_list=[]
    )
    (tmp_path / "gen.yaml").write_text(yaml)
    with suite_tasks(["toy_gen"], include_paths=[tmp_path]) as tasks, pytest.raises(ScorerRefused) as refused:
        score(lm, tasks)
    assert str(refused.value) == (
        "toy_gen: the verbalizer scorer scores loglikelihoods of answers, not generate_until requests: "
        "evaluate it with the lm-eval scorer"
    )


def test_scoring_leaves_a_training_model_in_training_mode(checkpoint, tmp_path):
    """The in-process use the scorer module's documentation shows: a model object being trained, scored twice."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ood_store._evaluate.scorer import VerbalizerLM, score, suite_tasks
    from ood_store._evaluate.suite.variant import Variant

    model = AutoModelForCausalLM.from_pretrained(checkpoint)
    lm = VerbalizerLM(model, tokenizer=AutoTokenizer.from_pretrained(checkpoint), batch_size=8)
    model.train()
    pretrained = str(tmp_path / "run" / "checkpoint-500")
    with suite_tasks(["ood_nli_wnli"], variant=Variant.of("minimal"), data_dir=SUITE_DATA) as tasks:
        first = score(lm, tasks, model_args={"pretrained": pretrained})
        assert model.training
        second = score(lm, tasks, limit=1)
    assert model.training
    rows = (SUITE_DATA / "ood_nli_wnli.jsonl").read_text("utf-8").splitlines()
    assert [d.doc_id for d in first.documents()] == list(range(len(rows)))
    assert first.accuracy()["ood_nli_wnli__minimal"] == sum(d.acc for d in first.documents()) / len(rows)
    assert second.results["n-samples"]["ood_nli_wnli__minimal"]["effective"] == 1
    results = first.write(tmp_path / "out")
    written = json.loads(results.read_text())
    assert results.parent.parent == tmp_path / "out" and results.name.startswith("results_")
    assert written["config"]["model_args"] == {"pretrained": pretrained}
    assert written["config"]["scorer"] == "verbalizer"
    samples = list(results.parent.glob("samples_ood_nli_wnli__minimal_*.jsonl"))
    assert len(samples) == 1 and len(samples[0].read_text().splitlines()) == len(rows)


def test_its_files_ingest_to_the_same_store_rows_as_lm_evals_but_for_the_scorer(checkpoint, tmp_path, runner):
    """`ood-store evaluate --scorer verbalizer` and the default (lm-eval's hf model), two in-context examples,
    into two stores: the same rows, loglikelihoods to 1e-5, and the scorer recorded in the evaluation's config."""
    from conftest import evaluation_rows, sql_rows
    from ood_store._cli import main

    def evaluate(db: Path, *extra: str) -> None:
        args = ["--db", str(db), "evaluate", str(checkpoint), "--run", "toy", "--tasks", "ood_nli",
                "--data-dir", str(SUITE_DATA), "--pattern", "gpt-3", "--num-fewshot", "2", "--batch-size", "4",
                "--output-dir", str(db.with_suffix("")), "-q", *extra]  # fmt: skip
        result = runner.invoke(main, args)
        assert result.exit_code == 0, result.output

    evaluate(tmp_path / "lm-eval.duckdb")
    evaluate(tmp_path / "verbalizer.duckdb", "--scorer", "verbalizer")
    expected, got = evaluation_rows(tmp_path / "lm-eval.duckdb"), evaluation_rows(tmp_path / "verbalizer.duckdb")
    assert len(expected["scores"]) == 10 and len(expected["samples"]) > 20  # every testset, its kept rows
    assert {k: v for k, v in got.items() if k != "samples"} == {k: v for k, v in expected.items() if k != "samples"}
    for row, other in zip(got["samples"], expected["samples"], strict=True):  # sorted alike: same keys first
        assert row[:6] == other[:6] and row[7:] == other[7:]  # all but the loglikelihoods, exactly
        assert decoded(row[6]) == pytest.approx(decoded(other[6]), abs=1e-5)
    reference, verbalizer = (
        json.loads(sql_rows(tmp_path / db, "SELECT config FROM evaluations")[0][0])
        for db in ("lm-eval.duckdb", "verbalizer.duckdb")
    )
    assert verbalizer.pop("scorer") == "verbalizer" and "scorer" not in reference
    assert verbalizer == reference


def decoded(value):
    return json.loads(value) if isinstance(value, str) else value


def test_a_run_whose_answers_are_not_one_token_fails_in_one_line_and_the_others_go_on(checkpoint, tmp_path, runner):
    from transformers import AutoTokenizer

    from ood_store._cli import main

    tokens = len(AutoTokenizer.from_pretrained(checkpoint)(" Certainly")["input_ids"])  # the first answer, entailed
    assert tokens > 1
    study = tmp_path / "study.toml"
    study.write_text(
        f'tasks = ["ood_nli_rte"]\ndata_dir = "{SUITE_DATA}"\nbatch_size = 4\nscorer = "verbalizer"\n'
        'output_dir = "lm-eval-results"\n'  # beside the study (the default is the current folder's)
        f'[[runs]]\nrun = "odd-answers"\ncheckpoints = "{checkpoint}"\n'
        '[runs.suite]\npattern = "minimal"\nverbalizer = " Certainly,Nevertheless"\n'
        f'[[runs]]\nrun = "yes-no"\ncheckpoints = "{checkpoint}"\n'
    )
    db = tmp_path / "store.duckdb"
    result = runner.invoke(main, ["--db", str(db), "evaluate", "--study", str(study), "-q"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[:2] == [
        "Failed: 1 checkpoint:",
        "  odd-answers final: ood_nli_rte__minimal__v-Certainly-Nevertheless: the verbalizer scorer scores answers "
        f"of one token after the prompt; ' Certainly' is {tokens} tokens for this model's tokenizer (document 0): "
        "evaluate it with the lm-eval scorer",
    ]
    with ood_store.open(db, read_only=True) as store:
        assert store.query("SELECT run, task FROM scores").rows() == [("yes-no", "ood_nli_rte")]
