"""The training example of a document is what lm-eval scores for it: the same prompt, input tokens and target token.

The independent source is lm-eval itself: its ``hf`` model (``HFLM``, on a toy GPT-2 built from code)
evaluates the suite's tasks of each prompt variant on the fixture rows (tests/fixtures/nli-suite,
through evaluate's own task list), and the test records the requests it builds and scores: for each
document and answer, the context, the continuation and their tokens as ``_loglikelihood_tokens``
receives them. The example built by ood-store for the same document must have lm-eval's context as
its prompt, the tokens lm-eval feeds the model as its input (``(context + continuation)[-(max_length +
1):][:-1]``) and the continuation's one token as its target; for every shipped pattern, and for a
pattern and verbalizers of one's own; and cut as lm-eval cuts them when the prompt is longer than
``max_length``.
"""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from ood_store._evaluate.suite.variant import PATTERNS, Variant

TASKS = ["ood_nli_snli", "ood_nli_mnli", "ood_nli_rte", "ood_nli_hans"]
VARIANTS = [
    *[Variant.of(name) for name in PATTERNS],
    Variant.of("minimal", neutral="no"),
    Variant.of("Premise: {premise}\nHypothesis: {hypothesis}\nAnswer:", " True,False"),
]

pytestmark = pytest.mark.xdist_group("finetune-examples")


@pytest.fixture(scope="module")
def toy():
    """A toy GPT-2 and a tokenizer that has one token for each shipped verbalizer (" True" and " False" too)."""
    from ood_store._examples import toy

    extra = [f"{p} {v}" for p in ("True or False?", "answer:", "Answer:") for v in ("True", "False", "Yes", "No")]
    tokenizer = toy.build_tokenizer(toy.toy_texts() + extra * 20, vocab_size=500)
    return toy.build_model(tokenizer), tokenizer


def lm_eval_requests(model, tokenizer, variant: Variant, max_length: int | None = None):
    """(doc, context, continuation, context tokens, continuation tokens) of every request lm-eval scores."""
    import lm_eval
    from lm_eval.models.huggingface import HFLM

    from ood_store._evaluate.tasklist import task_list

    captured: list = []
    docs: list = []
    loglikelihood, tokens = HFLM.loglikelihood, HFLM._loglikelihood_tokens

    def record_docs(self, requests, *args, **kwargs):
        docs.extend(request.doc for request in requests)
        return loglikelihood(self, requests, *args, **kwargs)

    def record_tokens(self, requests, *args, **kwargs):
        captured.extend(requests)
        return tokens(self, requests, *args, **kwargs)

    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=8, max_length=max_length)
    with task_list(TASKS, data_dir=FIXTURES / "nli-suite", variant=variant) as catalogue:
        specs = catalogue.task_specs([leaf for name in TASKS for leaf in catalogue.leaves[name]])
        HFLM.loglikelihood, HFLM._loglikelihood_tokens = record_docs, record_tokens
        try:
            lm_eval.simple_evaluate(model=lm, tasks=specs, task_manager=catalogue.manager, verbosity="ERROR")
        finally:
            HFLM.loglikelihood, HFLM._loglikelihood_tokens = loglikelihood, tokens
    assert len(docs) == len(captured) > 0
    return lm.max_length, [(d, *key, list(c), list(t)) for d, (key, c, t) in zip(docs, captured, strict=True)]


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.key or "ood-nli" for v in VARIANTS])
def test_the_target_token_is_lm_evals_continuation_for_the_same_document(toy, variant):
    from ood_store._finetune import examples

    model, tokenizer = toy
    length, requests = lm_eval_requests(model, tokenizer, variant)
    delimiter, choices = variant.delimiter_and_choices()
    checked = set()
    for doc, context, continuation, context_tokens, continuation_tokens in requests:
        answer = [delimiter + c for c in choices].index(continuation)
        row = {"premise": doc["premise"], "hypothesis": doc["hypothesis"], "answer": answer}
        [example], verbalizers = examples.build([row], [0], variant, tokenizer, length)
        assert example.context == context
        assert example.input_ids == (context_tokens + continuation_tokens)[-(length + 1) :][:-1]
        assert [example.target] == continuation_tokens
        assert verbalizers[answer] == continuation_tokens[0]
        checked.add((context, answer))
    # Every document was seen with both answers: the verbalizers of both are lm-eval's.
    assert len(checked) == len(requests) and len(requests) % 2 == 0


def test_a_long_prompt_is_cut_as_lm_eval_cuts_it(toy):
    from ood_store._finetune import examples

    model, tokenizer = toy
    variant = Variant.of("eval-harness")
    length, requests = lm_eval_requests(model, tokenizer, variant, max_length=8)
    assert length == 8
    delimiter, choices = variant.delimiter_and_choices()
    cut = 0
    for doc, _, continuation, context_tokens, continuation_tokens in requests:
        answer = [delimiter + c for c in choices].index(continuation)
        row = {"premise": doc["premise"], "hypothesis": doc["hypothesis"], "answer": answer}
        [example], _ = examples.build([row], [0], variant, tokenizer, length)
        assert example.input_ids == (context_tokens + continuation_tokens)[-(length + 1) :][:-1]
        cut += len(context_tokens) > length
    assert cut == len(requests)  # every prompt of the fixtures is longer than 8 tokens
    # Cut from the right instead (the paper's truncation side), the prompt's start is kept.
    doc = requests[0][0]
    row = {"premise": doc["premise"], "hypothesis": doc["hypothesis"], "answer": 0}
    [right], _ = examples.build([row], [0], variant, tokenizer, 8, truncation="right")
    assert right.input_ids == requests[0][3][:8]


def test_a_verbalizer_that_is_two_tokens_or_the_other_ones_token_is_refused(toy):
    from ood_store._finetune import examples

    _, tokenizer = toy
    row = {"premise": "the cat sat on the mat.", "hypothesis": "the cat sat.", "answer": 0}
    pieces = tokenizer.convert_ids_to_tokens(tokenizer(" Maybe")["input_ids"])
    assert len(pieces) > 1
    with pytest.raises(examples.VerbalizerError) as caught:
        examples.build([row], [0], Variant.of("minimal", " Yes,Maybe"), tokenizer, 128)
    assert str(caught.value).startswith(f"' Maybe' is {len(pieces)} tokens (")
    # Both verbalizers are checked after every prompt, whichever answer the shot has.
    with pytest.raises(examples.VerbalizerError, match="' Maybe' is"):
        examples.build([{**row, "answer": 0}], [0], Variant.of("minimal", " Maybe,No"), tokenizer, 128)


@pytest.mark.parametrize("loss", ["vocabulary", "verbalizers"])
def test_the_loss_is_the_cross_entropy_at_each_examples_last_position(toy, tmp_path, loss):
    """The batch's loss (examples of different lengths, padded on the right) against each example alone, by hand:
    -log softmax of the last position's logits at the target (over the vocabulary, or over the two verbalizers)."""
    import torch
    from transformers import TrainingArguments

    from ood_store._finetune import examples
    from ood_store._finetune.trainer import Collator, VerbalizerTrainer, last_positions

    model, tokenizer = toy
    model.eval()  # a model built from its config is in training mode: dropout would make both sides random
    rows = [
        {"premise": "the cat sat on the mat.", "hypothesis": "the cat sat.", "answer": 0},
        {"premise": "yesterday a man ran in the park, and the dog slept at home.", "hypothesis": "the dog did not "
         "sleep.", "answer": 1},
        {"premise": "a child sang.", "hypothesis": "a child did not sing.", "answer": 1},
    ]  # fmt: skip
    built, verbalizers = examples.build(rows, [0, 1, 2], Variant.of("ood-nli"), tokenizer, 128)
    assert len({len(e.input_ids) for e in built}) == 3  # three lengths: the batch is padded
    batch = Collator(tokenizer.pad_token_id)([e.record() for e in built])
    assert last_positions(batch["attention_mask"]).tolist() == [len(e.input_ids) - 1 for e in built]
    args = TrainingArguments(output_dir=str(tmp_path), report_to="none", use_cpu=True)
    trainer = VerbalizerTrainer(loss, verbalizers, model=model, args=args)
    with torch.no_grad():
        got = float(trainer.compute_loss(model, dict(batch)))
        expected = []
        for e in built:
            logits = model(input_ids=torch.tensor([e.input_ids])).logits[0, -1].double()
            if loss == "verbalizers":
                logits = logits[list(verbalizers)]
                index = e.answer
            else:
                index = e.target
            expected.append(-torch.log_softmax(logits, dim=-1)[index].item())
    assert got == pytest.approx(sum(expected) / len(expected), abs=1e-5)


def test_the_last_position_is_found_whichever_side_is_padded():
    import torch

    from ood_store._finetune.trainer import last_positions

    mask = torch.tensor([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 1, 0, 0, 0]])
    assert last_positions(mask).tolist() == [2, 4, 4, 1]
