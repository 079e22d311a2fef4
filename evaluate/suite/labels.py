"""Label maps of the ood_nli suite: every testset cast to one two-way format.

Each function is an lm-eval ``process_docs`` hook (``!function
ood_store.evaluate.suite.labels.<name>`` in the task YAMLs). It keeps the
dataset's own columns, adds ``premise``, ``hypothesis`` and ``answer``
(0 = entailed, answered " Yes"; 1 = not entailed, " No"), and drops rows whose
label has no place in the two-way format (neutral in three-way NLI sets, -1 for
"no gold label").
"""

from __future__ import annotations

from typing import Any

YES, NO = 0, 1

# dataset -> (premise column, hypothesis column, label column, {native label: answer}).
# Labels missing from a map are dropped. String labels are matched lower-cased.
LABEL_MAPS: dict[str, tuple[str, str, str, dict[Any, int]]] = {
    "snli": ("premise", "hypothesis", "label", {0: YES, 2: NO}),  # 1 neutral, -1 no gold label: dropped
    "mnli": ("premise", "hypothesis", "label", {0: YES, 2: NO}),  # 1 neutral: dropped
    "anli": ("premise", "hypothesis", "label", {0: YES, 2: NO}),  # 1 neutral: dropped
    "scitail": ("premise", "hypothesis", "label", {"entails": YES, "entailment": YES, "neutral": NO}),
    "rte": ("sentence1", "sentence2", "label", {0: YES, 1: NO}),  # 1 not_entailment
    "hans": ("premise", "hypothesis", "label", {0: YES, 1: NO, "entailment": YES, "non-entailment": NO}),
    "wnli": ("sentence1", "sentence2", "label", {1: YES, 0: NO}),  # 1 entailment, 0 not_entailment
    "paws": ("sentence1", "sentence2", "label", {1: YES, 0: NO}),  # 1 paraphrase
}


def answer(dataset: str, label: Any) -> int | None:
    """The two-way answer for one native label of ``dataset``, or None when the row is dropped."""
    key = label.strip().lower() if isinstance(label, str) else label
    return LABEL_MAPS[dataset][3].get(key)


def cast(dataset: str, docs):
    """``docs`` (a ``datasets.Dataset``) in the two-way format; see the module docstring."""
    premise, hypothesis, label, _ = LABEL_MAPS[dataset]
    kept = docs.filter(lambda doc: answer(dataset, doc[label]) is not None)
    return kept.map(
        lambda doc: {
            "premise": doc[premise].strip(),
            "hypothesis": doc[hypothesis].strip(),
            "answer": answer(dataset, doc[label]),
        }
    )


def _process_docs(dataset: str):
    def process_docs(docs):
        return cast(dataset, docs)

    process_docs.__name__ = process_docs.__qualname__ = dataset
    process_docs.__doc__ = f"lm-eval process_docs for {dataset}: see LABEL_MAPS[{dataset!r}]."
    return process_docs


# The process_docs hooks the task YAMLs name: labels.snli, labels.mnli, ...
snli, mnli, anli, scitail, rte, hans, wnli, paws = (_process_docs(name) for name in LABEL_MAPS)
