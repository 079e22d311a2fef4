"""Training examples tokenized as lm-eval tokenizes the same documents, so that training and evaluation agree.

lm-eval scores a document of the suite as the request (context,
continuation) = (the filled pattern, ``target_delimiter`` + the answer's
choice), i.e. the verbalizer with its leading whitespace
(:meth:`~ood_store._evaluate.suite.variant.Variant.delimiter_and_choices`).
Its ``hf`` model encodes the pair with ``_encode_pair`` (trailing whitespace of
the context moved to the continuation; the whole text encoded and split after
the context's tokens; special tokens as the tokenizer adds them) and feeds
``(context + continuation)[-(max_length + 1):][:-1]``, whose last position's
logits score the continuation. A training example here is that: its input is
the context's tokens (cut to ``max_length`` as lm-eval cuts them, from the
left, unless the study says ``right``), and its target is the continuation's
one token.

The pair is encoded by lm-eval's own methods (``HFLM._encode_pair`` and
``tok_encode``) bound to the run's tokenizer without loading a model, not by a
copy of them; ``tests/test_finetune_examples.py`` checks the result against the
requests lm-eval builds and scores for the same documents, every shipped
pattern and one of one's own. A verbalizer whose continuation is not exactly
one token, or not the same token in every example, is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ood_store._evaluate.suite.variant import Variant


@dataclass(frozen=True)
class Example:
    """One training example: the shot's index in the training split, its prompt, input ids and target token."""

    index: int
    context: str
    input_ids: list[int]
    target: int  # the continuation's token id (the verbalizer's)
    answer: int  # 0: the first verbalizer (entailed), 1: the second

    def record(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "context": self.context,
            "input_ids": self.input_ids,
            "target": self.target,
            "answer": self.answer,
        }


class VerbalizerError(ValueError):
    """A verbalizer that is not one token, the same in every example, for the tokenizer: ``message`` says which."""


def encoder(tokenizer: Any) -> Any:
    """lm-eval's ``HFLM`` for ``tokenizer``, made without its ``__init__`` (no model is loaded): what its
    ``_encode_pair`` and ``tok_encode`` read is set as its ``__init__`` sets it for a causal model whose
    ``model_args`` give no ``add_bos_token`` or ``prefix_token_id`` (as ``evaluate`` gives none)."""
    from lm_eval.models.huggingface import HFLM

    lm = object.__new__(HFLM)
    lm.tokenizer = tokenizer
    lm.backend = "causal"
    lm.add_bos_token = None
    lm.custom_prefix_token_id = None
    return lm


def max_length(config: Any, tokenizer: Any) -> int:
    """The length lm-eval's ``hf`` model cuts requests to for this model (its ``max_length`` property)."""
    from lm_eval.models.huggingface import HFLM
    from lm_eval.models.utils import resolve_max_length

    return resolve_max_length(config, tokenizer, default=HFLM._DEFAULT_MAX_LENGTH)


def build(
    rows: list[dict[str, Any]],
    indices: list[int],
    variant: Variant,
    tokenizer: Any,
    length: int,
    truncation: str = "left",
) -> tuple[list[Example], tuple[int, int]]:
    """The examples of the shots ``indices`` of ``rows`` (``premise``, ``hypothesis``, ``answer``), and the token ids
    of the two verbalizers.

    Both verbalizers are encoded after every example's prompt; raises
    :class:`VerbalizerError` when one is not exactly one token there, not the
    same token after every prompt, or the same token as the other.
    """
    lm = encoder(tokenizer)
    delimiter, choices = variant.delimiter_and_choices()
    seen: list[set[tuple[int, ...]]] = [set(), set()]
    out = []
    for index in indices:
        row = rows[index]
        context = variant.fill(row["premise"], row["hypothesis"])
        pairs = [lm._encode_pair(context, delimiter + choice) for choice in choices]
        for answer, (_, continuation) in enumerate(pairs):
            seen[answer].add(tuple(continuation))
            _check(seen[answer], variant.verbalizers[answer], tokenizer)
        context_ids = pairs[row["answer"]][0]
        ids = context_ids[-length:] if truncation == "left" else context_ids[:length]
        out.append(Example(index, context, list(ids), pairs[row["answer"]][1][0], row["answer"]))
    tokens = tuple(next(iter(found))[0] for found in seen) if out else (-1, -1)
    if out and tokens[0] == tokens[1]:
        raise VerbalizerError(f"{variant.verbalizers[0]!r} and {variant.verbalizers[1]!r} are the same token")
    return out, (tokens[0], tokens[1])


def _check(found: set[tuple[int, ...]], verbalizer: str, tokenizer: Any) -> None:
    for tokens in found:
        if len(tokens) != 1:
            pieces = ", ".join(repr(p) for p in tokenizer.convert_ids_to_tokens(list(tokens)))
            raise VerbalizerError(
                f"{verbalizer!r} is {len(tokens)} tokens ({pieces}) after the pattern for this tokenizer: "
                "choose verbalizers that are one token each"
            )
    if len(found) > 1:
        raise VerbalizerError(f"{verbalizer!r} is a different token after different prompts for this tokenizer")
