"""A toy finetuning run, built from code: a tiny causal LM, a tokenizer, toy NLI sets.

Nothing is downloaded. The model (a 2-layer GPT-2 with 32-dimensional
embeddings) and the byte-level BPE tokenizer are built from scratch; the NLI
sets follow one made-up rule (a hypothesis that negates the premise's fact is
not entailed) written in several styles. They exist to exercise the
evaluate → store → analyze pipeline in seconds on a CPU, not to say anything
about real models. Needs the ``eval`` extra (torch, transformers, tokenizers).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ood_store._evaluate.suite.variant import Variant

# The two-way NLI format of the ood_nli suite: the prompt, and the answers a
# model chooses between (label 0 = " Yes" = entailed, 1 = " No").
PROMPT = "{premise} Question: {hypothesis} Yes or No?"
ANSWERS = ("Yes", "No")

SUBJECTS = ["the cat", "the dog", "a man", "a woman", "the bird", "a child", "the farmer", "the cook"]
VERBS = [("sat", "sit"), ("ran", "run"), ("slept", "sleep"), ("sang", "sing"), ("ate", "eat"), ("swam", "swim")]
PLACES = ["on the mat", "in the park", "by the river", "at home", "near the lake", "in the garden"]
# Words of the out-of-domain styles, also known to the tokenizer.
OOD_WORDS = ["never", "yesterday", "happily", "quietly", "everyone", "saw", "that", "it", "was", "true"]


@dataclass(frozen=True)
class ToySet:
    """One toy testset: its task name, what is different about it, and its rows."""

    name: str
    style: str
    rows: list[dict[str, Any]]


def _fact(rng: random.Random) -> tuple[str, tuple[str, str], str]:
    return rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(PLACES)


def _row(premise: str, hypothesis: str, entailed: bool) -> dict[str, Any]:
    return {"premise": premise, "hypothesis": hypothesis, "label": 0 if entailed else 1}


def _in_domain(rng: random.Random) -> dict[str, Any]:
    subject, (past, base), place = _fact(rng)
    entailed = rng.random() < 0.5
    hypothesis = f"{subject} {past}" if entailed else f"{subject} did not {base}"
    return _row(f"{subject} {past} {place}.", hypothesis + ".", entailed)


def _never(rng: random.Random) -> dict[str, Any]:
    """Negation by another word: the in-domain cue ('not') is absent."""
    subject, (past, base), place = _fact(rng)
    entailed = rng.random() < 0.5
    hypothesis = f"{subject} {past} {place}" if entailed else f"{subject} never {past}"
    return _row(f"{subject} {past} {place}.", hypothesis + ".", entailed)


def _long(rng: random.Random) -> dict[str, Any]:
    """Longer premises with a second, distracting fact."""
    row = _in_domain(rng)
    other, (past, _), place = _fact(rng)
    row["premise"] = f"yesterday {other} {past} quietly {place}, and {row['premise']}"
    return row


def _reported(rng: random.Random) -> dict[str, Any]:
    """The fact is reported ('everyone saw that ...'), hypotheses are unchanged."""
    row = _in_domain(rng)
    row["premise"] = f"everyone saw that {row['premise']}"
    return row


IN_DOMAIN = "toy_nli"
_STYLES: dict[str, tuple[str, Callable[[random.Random], dict[str, Any]]]] = {
    IN_DOMAIN: ("in-domain: negation written 'did not'", _in_domain),
    "toy_ood_never": ("negation written 'never'", _never),
    "toy_ood_long": ("longer premises with a distracting fact", _long),
    "toy_ood_reported": ("reported facts ('everyone saw that ...')", _reported),
}


def toy_sets(n: int = 48, seed: int = 0) -> list[ToySet]:
    """The in-domain test set and the out-of-domain sets, ``n`` rows each."""
    sets = []
    for index, (name, (style, make)) in enumerate(_STYLES.items()):
        rng = random.Random(seed * 1000 + index)
        sets.append(ToySet(name, style, [make(rng) for _ in range(n)]))
    return sets


def training_rows(n: int = 512, seed: int = 1) -> list[dict[str, Any]]:
    """In-domain rows to finetune on (a different seed from the test rows)."""
    rng = random.Random(seed + 10_000)
    return [_in_domain(rng) for _ in range(n)]


def prompt(row: dict[str, Any]) -> str:
    return PROMPT.format(premise=row["premise"], hypothesis=row["hypothesis"])


def toy_texts() -> list[str]:
    """Text in the toy vocabulary and prompt format, to train the tokenizer on."""
    rng = random.Random(0)
    words = [w for s in SUBJECTS + PLACES for w in s.split()] + [w for pair in VERBS for w in pair]
    words += OOD_WORDS + ["did", "not", "and", "Question:", "Yes", "No", "or", "Yes or No?", ".", ","]
    texts = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(400)]
    return texts + [prompt(row) + f" {ANSWERS[row['label']]}" for s in toy_sets(8, seed=99) for row in s.rows]


def build_tokenizer(texts: Sequence[str] | None = None, vocab_size: int = 400):
    """A byte-level BPE tokenizer (a PreTrainedTokenizerFast) trained on ``texts`` (default: :func:`toy_texts`)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    texts = toy_texts() if texts is None else texts
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=["<unk>", "<|endoftext|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        eos_token="<|endoftext|>",
        bos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
    )


def build_model(tokenizer, seed: int = 0, n_positions: int = 128):
    """A randomly initialized 2-layer GPT-2 with 32-dimensional embeddings (about 40k parameters)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=n_positions,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return GPT2LMHeadModel(config)


def save_checkpoint(model, tokenizer, path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def finetune(
    model,
    tokenizer,
    rows: Sequence[dict[str, Any]],
    out: Path,
    *,
    steps: int = 40,
    save_every: int = 10,
    batch_size: int = 16,
    lr: float = 3e-3,
    seed: int = 0,
) -> list[Path]:
    """Train on the answer token of each prompt; save ``out/checkpoint-N`` every ``save_every`` steps.

    Returns the checkpoint folders, ``checkpoint-0`` (the untrained model) first.
    """
    import torch

    torch.manual_seed(seed)
    rng = random.Random(seed)
    answer_ids = [tokenizer(" " + a)["input_ids"] for a in ANSWERS]
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.loss_type = "ForCausalLM"  # the plain next-token loss, said outright (transformers warns otherwise)
    paths = [save_checkpoint(model, tokenizer, out / "checkpoint-0")]
    model.train()
    for step in range(1, steps + 1):
        batch = rng.sample(list(rows), batch_size)
        texts = [tokenizer(prompt(r))["input_ids"] + answer_ids[r["label"]] for r in batch]
        width = max(len(t) for t in texts)
        ids = torch.full((batch_size, width), tokenizer.pad_token_id)
        labels = torch.full((batch_size, width), -100)
        for i, (text, row) in enumerate(zip(texts, batch, strict=True)):
            ids[i, : len(text)] = torch.tensor(text)
            n = len(answer_ids[row["label"]])
            labels[i, len(text) - n : len(text)] = torch.tensor(text[-n:])
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % save_every == 0 or step == steps:
            paths.append(save_checkpoint(model, tokenizer, out / f"checkpoint-{step}"))
    model.eval()
    return paths


#: What every toy task measures: accuracy, as the mean over documents.
ACCURACY = {"metric": "acc", "aggregation": "mean", "higher_is_better": True}


def local_task_yaml(name: str, data: Path, *, tag: str | None = None, **fields: Any) -> str:
    """The YAML of an lm-eval task ``name`` over the JSONL file ``data`` (its only split, ``test``).

    ``fields`` (``output_type``, ``doc_to_text``, ``metric_list``, ...) follow the data source, in order.
    """
    import yaml

    config: dict[str, Any] = {"task": name, **({"tag": tag} if tag else {})}
    config |= {"dataset_path": "json", "dataset_kwargs": {"data_files": {"test": str(data)}}, "test_split": "test"}
    return yaml.safe_dump(config | fields, sort_keys=False, allow_unicode=True, width=1000)


def write_tasks(folder: Path, sets: Sequence[ToySet], variant: Variant | None = None) -> list[str]:
    """Each set as ``<name>.jsonl`` plus an lm-eval task ``<name>.yaml`` (tag ``toy_demo``); returns the names.

    The prompt is the ood_nli suite's ``variant`` (default: its own, ``PROMPT`` with " Yes" / " No"), written as
    the suite writes it for lm-eval, so that a model finetuned on that variant is evaluated in its prompt.
    """
    from ood_store._evaluate.suite.variant import Variant

    variant = variant or Variant()
    delimiter, choices = variant.delimiter_and_choices()
    folder.mkdir(parents=True, exist_ok=True)
    for toy in sets:
        data = folder / f"{toy.name}.jsonl"
        data.write_text("".join(json.dumps(row) + "\n" for row in toy.rows), encoding="utf-8")
        yaml = local_task_yaml(
            toy.name,
            data.resolve(),
            tag="toy_demo",
            output_type="multiple_choice",
            doc_to_text=variant.jinja(),
            doc_to_choice=choices,
            target_delimiter=delimiter,
            doc_to_target="label",
            metric_list=[ACCURACY],
            metadata={"version": 1.0, "description": toy.style},
        )
        (folder / f"{toy.name}.yaml").write_text(yaml, encoding="utf-8")
    return [toy.name for toy in sets]
