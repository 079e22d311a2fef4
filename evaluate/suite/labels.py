"""Label maps of the ood_nli suite: every testset, in any of its common column layouts, cast to Yes/No.

Each native label of a dataset has a meaning: entailed, neutral, not entailed
(contradiction, non-entailment, not a paraphrase) or unlabelled (SNLI's and
MNLI's ``-1`` / ``-``: no gold label). The cast adds ``premise``,
``hypothesis`` and ``answer`` (0 = entailed, answered with the first
verbalizer, " Yes"; 1 = not entailed, the second, " No") and keeps the
dataset's own columns (HANS's ``heuristic``, ``subcase``, ``template``).

- Entailed rows answer Yes; not-entailed rows answer No.
- Neutral rows (SNLI, MNLI, ANLI) are dropped under the neutral scheme
  ``drop`` (two-way NLI as entailment vs. contradiction) and answer No under
  ``no`` (entailed vs. not entailed).
- Unlabelled rows are always dropped.
- A label that is not in the map is an error naming the dataset, the column
  and the value: no row is dropped silently.

SciTail's ``neutral`` is its only negative class ("the premise does not
support the hypothesis"), so it means not entailed there, under both schemes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ood_store._errors import OodStoreError

YES, NO = 0, 1
ENTAILED, NEUTRAL, NOT_ENTAILED, UNLABELLED = "entailed", "neutral", "not entailed", "unlabelled"
NEUTRAL_SCHEMES = ("drop", "no")


@dataclass(frozen=True)
class LabelMap:
    """Where a dataset keeps its pair and label, and what each native label means.

    ``layouts`` are (premise, hypothesis, label) column names, one per common
    copy of the dataset, tried in order; string labels match case-insensitively.
    """

    dataset: str  # as error messages name it
    layouts: tuple[tuple[str, str, str], ...]
    meanings: Mapping[Any, str]

    def layout(self, columns: Sequence[str]) -> tuple[str, str, str] | None:
        """The first layout whose three columns are all in ``columns``."""
        return next((layout for layout in self.layouts if set(layout) <= set(columns)), None)

    def meaning(self, label: Any) -> str | None:
        """What a native label means, or None for a label the map does not know."""
        key = label.strip().lower() if isinstance(label, str) else label
        if isinstance(key, bool) or not isinstance(key, str | int):
            return None
        return self.meanings.get(key)

    def expected_layouts(self) -> str:
        return " or ".join("/".join(layout) for layout in self.layouts)


def answer(meaning: str, neutral: str) -> int | None:
    """The answer (YES or NO) for a label's meaning under a neutral scheme; None: the row is dropped."""
    if meaning == ENTAILED:
        return YES
    if meaning == NOT_ENTAILED or (meaning == NEUTRAL and neutral == "no"):
        return NO
    return None


_THREE_WAY = {0: ENTAILED, 1: NEUTRAL, 2: NOT_ENTAILED, "entailment": ENTAILED, "neutral": NEUTRAL}
_THREE_WAY |= {"contradiction": NOT_ENTAILED}
_SNLI_STYLE = (("premise", "hypothesis", "label"), ("sentence1", "sentence2", "gold_label"))

LABEL_MAPS: dict[str, LabelMap] = {
    # SNLI and MNLI on the hub (ClassLabel 0/1/2, -1 for no gold label), or their original JSONL
    # (sentence1/sentence2/gold_label with label names, "-" for no gold label).
    "snli": LabelMap("SNLI", _SNLI_STYLE, {**_THREE_WAY, -1: UNLABELLED, "-": UNLABELLED}),
    "mnli": LabelMap("MNLI", _SNLI_STYLE, {**_THREE_WAY, -1: UNLABELLED, "-": UNLABELLED}),
    # ANLI on the hub (0/1/2), or its original JSONL (context/hypothesis, labels e/n/c).
    "anli": LabelMap(
        "ANLI",
        (("premise", "hypothesis", "label"), ("context", "hypothesis", "label")),
        {**_THREE_WAY, "e": ENTAILED, "n": NEUTRAL, "c": NOT_ENTAILED},
    ),
    # SciTail: tsv_format and dgem_format (premise/hypothesis/label, "entails" or "neutral"),
    # snli_format ("entailment"/"neutral") and predictor_format (sentence1/sentence2/gold_label).
    "scitail": LabelMap(
        "SciTail",
        _SNLI_STYLE,
        {"entails": ENTAILED, "entailment": ENTAILED, "neutral": NOT_ENTAILED},
    ),
    # GLUE RTE (sentence1/sentence2, 0 entailment, 1 not_entailment); SuperGLUE RTE (premise/hypothesis).
    "rte": LabelMap(
        "RTE",
        (("sentence1", "sentence2", "label"), ("premise", "hypothesis", "label")),
        {0: ENTAILED, 1: NOT_ENTAILED, "entailment": ENTAILED, "not_entailment": NOT_ENTAILED},
    ),
    # HANS: jhu-cogsci/hans (premise/hypothesis/label, 0 entailment, 1 non-entailment), tasksource/hans
    # (sentence1/sentence2/labels), the original TSV (sentence1/sentence2/gold_label with label names).
    "hans": LabelMap(
        "HANS",
        (
            ("premise", "hypothesis", "label"),
            ("sentence1", "sentence2", "labels"),
            ("sentence1", "sentence2", "gold_label"),
        ),
        {0: ENTAILED, 1: NOT_ENTAILED, "entailment": ENTAILED, "non-entailment": NOT_ENTAILED},
    ),  # fmt: skip
    # GLUE WNLI: 1 entailment, 0 not_entailment (the reverse of RTE); SetFit/wnli: text1/text2.
    "wnli": LabelMap(
        "WNLI",
        (("sentence1", "sentence2", "label"), ("text1", "text2", "label")),
        {1: ENTAILED, 0: NOT_ENTAILED, "entailment": ENTAILED, "not_entailment": NOT_ENTAILED},
    ),
    # PAWS: 1 paraphrase (read as entailed), 0 not a paraphrase.
    "paws": LabelMap("PAWS", (("sentence1", "sentence2", "label"),), {1: ENTAILED, 0: NOT_ENTAILED}),
}


class LabelError(OodStoreError):
    """A testset's rows do not fit its label map: no known column layout, or a label it does not know."""


def check_columns(labels: str, columns: Sequence[str], where: str) -> tuple[str, str, str]:
    """The layout of a dataset with ``columns``; a LabelError naming ``where`` when none fits."""
    label_map = LABEL_MAPS[labels]
    layout = label_map.layout(columns)
    if layout is None:
        raise LabelError(
            f"{where}: no {label_map.dataset} column layout: expected columns {label_map.expected_layouts()}, "
            f"found {', '.join(columns) or 'none'}"
        )
    return layout


def unknown_label_message(labels: str, column: str, value: Any) -> str:
    label_map = LABEL_MAPS[labels]
    known = ", ".join(repr(k) for k in label_map.meanings)
    return f"unknown {label_map.dataset} label {value!r} in column {column!r} (known labels: {known})"


def cast(
    docs: Any,
    labels: str,
    neutral: str = "drop",
    where: str | None = None,
    keep: Callable[[dict[str, Any]], bool] | None = None,
) -> Any:
    """``docs`` (a ``datasets.Dataset``) cast to the Yes/No format; see the module docstring.

    ``keep`` selects rows by their own columns first (the HANS sub-tasks).
    ``where`` names the data in error messages (default: the dataset).
    """
    if neutral not in NEUTRAL_SCHEMES:
        raise LabelError(f"unknown neutral scheme {neutral!r} (one of: {', '.join(NEUTRAL_SCHEMES)})")
    label_map = LABEL_MAPS[labels]
    where = where or label_map.dataset
    premise, hypothesis, label = check_columns(labels, docs.column_names, where)
    for value in docs.unique(label):
        if label_map.meaning(value) is None:
            raise LabelError(f"{where}: {unknown_label_message(labels, label, value)}")
    answers = {value: answer(label_map.meaning(value) or "", neutral) for value in docs.unique(label)}

    def kept(doc: dict[str, Any]) -> bool:
        for column in (premise, hypothesis):
            if not isinstance(doc[column], str):
                raise LabelError(f"{where}: column {column!r} holds {doc[column]!r}, not text")
        return answers[doc[label]] is not None and (keep is None or keep(doc))

    return docs.filter(kept).map(
        lambda doc: {
            "premise": doc[premise].strip(),
            "hypothesis": doc[hypothesis].strip(),
            "answer": answers[doc[label]],
        }
    )
