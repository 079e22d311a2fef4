"""Scorers of an evaluation: lm-eval's own (the default and the reference) and the verbalizer scorer.

Both run inside lm-eval's ``simple_evaluate`` on a model object that is already
loaded (an ``HFLM``, lm-eval's ``hf`` model, or its subclass
:class:`VerbalizerLM`), so that lm-eval builds the requests, computes every
metric from the loglikelihoods, and its :class:`EvaluationTracker` writes the
results and samples files: what is stored from them cannot tell the scorers
apart, except for the ``scorer`` that the results file's ``config`` records
(``"verbalizer"``; lm-eval's own scorer adds nothing to lm-eval's files).

**The verbalizer scorer** answers lm-eval's ``loglikelihood`` requests of
tasks whose every answer is one token after a shared context: the ood_nli
suite under every shipped prompt variant (`` Yes``/`` No``, `` True``/`` False``),
and any multiple-choice task of that shape. lm-eval's ``hf`` model runs the
model over context and continuation and takes ``log_softmax`` over batch ×
length × vocabulary logits; this scorer

* tokenizes with lm-eval's own code (``TemplateLM.loglikelihood`` and
  ``_encode_pair``: trailing whitespace of the context moved to the
  continuation, the whole text encoded and split, the BOS/EOS token for an
  empty context), caching every encoding so that the checkpoints of one run
  tokenize once;
* keeps the last ``max_length`` tokens of the context (lm-eval's left
  truncation of ``(context + continuation)[-(max_length + 1):][:-1]`` for a
  continuation of one token), or with ``truncation="right"`` its first
  ``max_length`` tokens (as a run finetuned with right truncation saw its
  prompts; lm-eval's own model cannot cut that end), and scores each
  distinct context once, however many answers share it;
* sorts the contexts by length and batches neighbours, padded on the right
  as lm-eval pads them (a causal model's states before the padding do not
  depend on it), and applies the language-model head only where an answer is
  scored: the last position of each context (transformers' ``logits_to_keep``),
  not every position of every row;
* builds lm-eval's prompts with each Jinja template compiled once: lm-eval's
  ``utils.apply_template`` compiles the template again for every document
  (EleutherAI/lm-evaluation-harness#1286), which costs more than a small
  model's forward pass. The rendering is Jinja's, unchanged.

The head's whole row at that position is still needed: a loglikelihood is the
answer's logit minus the log-sum-exp over the vocabulary, and lm-eval's
``is_greedy`` compares the answer with the arg-max over the vocabulary. Both
are computed exactly as lm-eval computes them (``log_softmax`` in the
``softmax_dtype``, arg-max of the log-probabilities).

A task it cannot score exactly is refused (:class:`ScorerRefused`, one line
naming the task), never approximated: generation and rolling loglikelihoods,
and any request whose continuation is not exactly one token for the model's
tokenizer. tests/test_scorer.py checks the scorer against lm-eval's ``hf``
model on every shipped pattern, with and without in-context examples and on
documents longer than the model's context.

**In-process use** (e.g. evaluation inside a training loop): wrap the model
object once and score as often as needed (tests/test_scorer.py's
``test_scoring_leaves_a_training_model_in_training_mode`` does this)::

    lm = VerbalizerLM(model, tokenizer=tokenizer, batch_size=64)
    with suite_tasks(["ood_nli"], variant=variant, data_dir=data) as tasks:
        scored = score(lm, tasks, model_args={"pretrained": "runs/opt/checkpoint-500"})
        scored.accuracy()           # {task: acc}
        scored.documents()          # per document: loglikelihoods, target, acc
        scored.write(folder)        # lm-eval's results_<ts>.json and samples_<task>_<ts>.jsonl
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lm_eval.models.huggingface import HFLM

from ood_store._errors import OodStoreError
from ood_store._evaluate.options import scorer as check_scorer

if TYPE_CHECKING:
    from ood_store._evaluate.fast import FastScored

#: Output types whose requests are loglikelihoods of a continuation (what the verbalizer scorer answers).
SCORABLE_OUTPUT_TYPES = ("multiple_choice", "loglikelihood")
#: With ``batch_size="auto"``, a bucket of short contexts takes up to this many times the rows found for the
#: longest, as long as it holds no more tokens than the longest's batch (the memory that was tried).
_SHORT_BUCKET_GROWTH = 8


class ScorerRefused(OodStoreError):
    """A task that the verbalizer scorer cannot score exactly; the message names it and says why."""


def refusal(task: Any) -> str | None:
    """Why the verbalizer scorer refuses the lm-eval task object ``task`` before any request is built, or None.

    What only the tokenizer can tell (an answer of more than one token) is
    found when the requests are scored.
    """
    output_type = getattr(task, "OUTPUT_TYPE", None)
    if output_type is None or output_type in SCORABLE_OUTPUT_TYPES:
        return None
    name = getattr(getattr(task, "config", None), "task", None) or type(task).__name__
    return f"{name}: the verbalizer scorer scores loglikelihoods of answers, not {output_type} requests: evaluate it "\
        "with the lm-eval scorer"  # fmt: skip


class VerbalizerLM(HFLM):
    """lm-eval's ``hf`` model whose loglikelihoods are computed by the verbalizer method (see the module).

    Takes every argument of ``HFLM``: a loaded ``PreTrainedModel`` (or a
    ``PeftModel``) as ``pretrained`` with its ``tokenizer``, or the names
    lm-eval loads itself. ``batch_size`` is the rows of one forward pass
    (``auto``: the most that fit for the longest context, found once and kept,
    with more rows for shorter contexts as long as they hold no more tokens).
    ``truncation`` says which end of a context longer than ``max_length`` is
    cut: ``left`` (lm-eval's) or ``right``.
    """

    def __init__(self, pretrained: Any, truncation: str = "left", **kwargs: Any):
        from ood_store._evaluate.options import truncation as check_truncation

        self.truncation_side = check_truncation(truncation)  # HFLM's own `truncation` is another thing
        with _quiet_lm_eval():
            super().__init__(pretrained, **kwargs)
        self._encodings: dict[str, list[int]] = {}
        self._requests: list[Any] | None = None
        self._auto_rows: tuple[int, int] | None = None  # (rows, at length) found for batch_size=auto
        self.forward_seconds = 0.0  # time in the model's forward passes (and the softmax of their last position)
        self.forward_tokens = 0  # positions run through the model (rows x padded length)
        self._keeps_logits: bool | None = None

    # -- tokenizing: lm-eval's own code, each text encoded once --------------------------------------------
    def tok_encode(
        self, string: str, add_special_tokens: bool | None = None, left_truncate_len: int | None = None, **kwargs: Any
    ) -> list[int]:
        if add_special_tokens is not None or left_truncate_len or kwargs:
            return super().tok_encode(string, add_special_tokens, left_truncate_len, **kwargs)
        encoded = self._encodings.get(string)
        if encoded is None:
            encoded = self._encodings[string] = super().tok_encode(string)
        return encoded  # shared: never changed in place by lm-eval's loglikelihood or by this class

    def forget_encodings(self) -> None:
        """Drop the cached encodings (only needed when the tokenizer changes)."""
        self._encodings.clear()

    # -- the request types -----------------------------------------------------------------------------
    def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        self._requests = requests  # lm-eval keeps their order: the tasks of the encoded requests below
        try:
            return super().loglikelihood(requests, disable_tqdm=disable_tqdm)
        finally:
            self._requests = None

    def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[float]:
        raise ScorerRefused(_refused_type(requests, "loglikelihood_rolling"))

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        raise ScorerRefused(_refused_type(requests, "generate_until"))

    def _loglikelihood_tokens(
        self,
        requests: list[tuple[tuple[str, str], list[int], list[int]]],
        disable_tqdm: bool = False,
        override_bs: int | None = None,
    ) -> list[tuple[float, bool]]:
        import torch
        from tqdm import tqdm

        # Which distinct context (as the model sees it) each request needs, and its answer token.
        rows: dict[tuple[int, ...], int] = {}
        row_of, answer_of = [], []
        for index, ((_, continuation), context_enc, continuation_enc) in enumerate(requests):
            if len(continuation_enc) != 1:
                raise ScorerRefused(self._not_one_token(index, continuation, len(continuation_enc)))
            cut = context_enc[-self.max_length :] if self.truncation_side == "left" else context_enc[: self.max_length]
            key = tuple(cut)
            row_of.append(rows.setdefault(key, len(rows)))
            answer_of.append(continuation_enc[0])
        contexts = list(rows)
        requests_of_row: list[list[int]] = [[] for _ in contexts]
        for index, row in enumerate(row_of):
            requests_of_row[row].append(index)
        order = sorted(range(len(contexts)), key=lambda row: -len(contexts[row]))  # the longest first

        out: list[tuple[float, bool] | None] = [None] * len(requests)
        bar = tqdm(total=len(requests), disable=disable_tqdm or self.rank != 0, desc="Scoring verbalizers")
        start = 0
        while start < len(order):
            width = len(contexts[order[start]])
            chunk = order[start : start + (override_bs or self._rows_for(width, len(contexts[order[0]])))]
            start += len(chunk)
            members = [i for row in chunk for i in requests_of_row[row]]
            position = {row: k for k, row in enumerate(chunk)}
            padded = [contexts[row] + (0,) * (width - len(contexts[row])) for row in chunk]  # right, as lm-eval pads
            inputs = torch.tensor(padded, dtype=torch.long, device=self.device)
            at = torch.tensor([position[row_of[i]] for i in members], dtype=torch.long, device=self.device)
            token = torch.tensor([answer_of[i] for i in members], dtype=torch.long, device=self.device)
            started = time.perf_counter()
            logprobs = self._last_logprobs(inputs, [len(contexts[row]) - 1 for row in chunk])
            self.forward_tokens += inputs.numel()
            greedy = logprobs.argmax(dim=-1)
            values = logprobs[at, token].tolist()
            matches = (greedy[at] == token).tolist()
            self.forward_seconds += time.perf_counter() - started
            for i, value, match in zip(members, values, matches, strict=True):
                answer = (float(value), bool(match))
                out[i] = answer
                self.cache_hook.add_partial("loglikelihood", requests[i][0], answer)
            bar.update(len(members))
        bar.close()
        return [answer for answer in out if answer is not None]

    def _last_logprobs(self, inputs: Any, last: Sequence[int] | int, **extra: Any) -> Any:
        """Log-probabilities over the vocabulary at position ``last[i]`` of each row ``i`` of ``inputs``.

        Rows are right-padded: a causal model's states before the padding do
        not depend on it. The head is applied at the distinct positions of
        ``last`` only (transformers' ``logits_to_keep``), not at every position.
        ``last`` a number: the last position of every row (rows of one length, no padding; the fast scorer's);
        ``extra``: more arguments of the model's forward pass then (PEFT's ``adapter_names``).
        """
        import torch
        import torch.nn.functional as F

        if self._keeps_logits is None:
            self._keeps_logits = _takes_logits_to_keep(self.model)
        with (
            torch.no_grad(),
            torch.autocast(
                device_type=self.device.type,
                dtype=self.mixed_precision_dtype,
                enabled=self.mixed_precision_dtype is not None,
            ),
        ):
            if isinstance(last, int):  # no key-value cache: nothing is generated after the pass
                last_only = {"logits_to_keep": 1} if self._keeps_logits else {}
                logits = self.model(inputs, use_cache=False, **last_only, **extra).logits[:, -1]
            elif self._keeps_logits:
                kept = sorted(set(last))
                column = {p: k for k, p in enumerate(kept)}
                keep = torch.tensor(kept, dtype=torch.long, device=self.device)
                logits = self.model(inputs, use_cache=False, logits_to_keep=keep).logits
                rows = torch.arange(len(last), device=self.device)
                logits = logits[rows, torch.tensor([column[p] for p in last], device=self.device)]
            else:
                rows = torch.arange(len(last), device=self.device)
                logits = self.model(inputs, use_cache=False).logits[rows, torch.tensor(list(last), device=self.device)]
        return F.log_softmax(logits, dim=-1, dtype=self.softmax_dtype)

    def _rows_for(self, length: int, longest: int) -> int:
        """Rows per forward pass for contexts of up to ``length`` tokens (``longest``: the longest of all)."""
        if self.batch_size != "auto":
            return int(self.batch_size)
        if self._auto_rows is None or self._auto_rows[1] < longest:
            self._auto_rows = (self._detect_rows(longest), longest)
            self.batch_sizes = {0: self._auto_rows[0]}
        rows, at = self._auto_rows
        return max(rows, min(rows * _SHORT_BUCKET_GROWTH, rows * at // max(1, length)))

    def _detect_rows(self, length: int) -> int:
        """The most rows (up to ``max_batch_size``) of ``length`` tokens whose forward pass fits in memory."""
        import torch
        from accelerate import find_executable_batch_size

        @find_executable_batch_size(starting_batch_size=self.max_batch_size)
        def tried(batch_size: int) -> int:
            for _ in range(2):
                inputs = torch.ones((batch_size, length), dtype=torch.long, device=self.device)
                self._last_logprobs(inputs, [length - 1] * batch_size)
            return batch_size

        try:
            rows = tried()
        except RuntimeError as exc:
            if "No executable batch size found" not in str(exc):
                raise
            rows = 1
        from lm_eval.models.utils_hf import clear_torch_cache

        clear_torch_cache()
        return int(rows)

    def _not_one_token(self, index: int, continuation: str, tokens: int) -> str:
        request = self._requests[index] if self._requests is not None and index < len(self._requests) else None
        task = getattr(request, "task_name", None) or "a task"
        doc_id = getattr(request, "doc_id", None)
        where = f" (document {doc_id})" if doc_id is not None else ""
        return (
            f"{task}: the verbalizer scorer scores answers of one token after the prompt; {continuation!r} is "
            f"{tokens} tokens for this model's tokenizer{where}: evaluate it with the lm-eval scorer"
        )


def _refused_type(requests: Sequence[Any], output_type: str) -> str:
    tasks = sorted({str(getattr(r, "task_name", None)) for r in requests if getattr(r, "task_name", None)})
    return (
        f"{', '.join(tasks) or 'a task'}: the verbalizer scorer scores loglikelihoods of answers, not "
        f"{output_type} requests: evaluate it with the lm-eval scorer"
    )


def _takes_logits_to_keep(model: Any) -> bool:
    """Whether the (PEFT-wrapped) model's forward takes transformers' ``logits_to_keep``."""
    import inspect

    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    try:
        return "logits_to_keep" in inspect.signature(inner.forward).parameters
    except (TypeError, ValueError):
        return False


@contextmanager
def compiled_templates() -> Iterator[None]:
    """While the block runs, lm-eval renders each Jinja template (``doc_to_text``, ...) compiled once.

    ``lm_eval.utils.apply_template`` compiles its template with
    ``env.from_string`` for every document (EleutherAI/lm-evaluation-harness#1286);
    here the same environment's compiled template is kept by its text and
    rendered as lm-eval renders it.
    """
    import lm_eval.utils as utils

    real = utils.apply_template
    compiled = functools.lru_cache(maxsize=1024)(utils.env.from_string)

    def apply_template(template: str, doc: dict[str, Any]) -> str:
        return compiled(template).render(**doc)

    utils.apply_template = apply_template
    try:
        yield
    finally:
        utils.apply_template = real


@contextmanager
def _quiet_lm_eval() -> Iterator[None]:
    """lm-eval warns at length when ``HFLM`` is given a model object (as every caller here does on purpose)."""
    logger = logging.getLogger("lm_eval.models.huggingface")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


class TimedHFLM(HFLM):
    """lm-eval's ``hf`` model as it is, counting the seconds of its forward passes (``forward_seconds``).

    On a GPU each pass is synchronized before the clock stops (lm-eval reads
    the logits right after anyway), so that the time is the pass's, not that
    of whatever waits for it next.
    """

    forward_seconds = 0.0
    forward_tokens = 0  # positions run through the model (rows x padded length)

    def _model_call(self, inps: Any, attn_mask: Any = None, labels: Any = None) -> Any:
        self.forward_tokens += inps.numel()
        started = time.perf_counter()
        logits = super()._model_call(inps, attn_mask, labels)
        if self.device.type == "cuda":
            import torch

            torch.cuda.synchronize(self.device)
        self.forward_seconds += time.perf_counter() - started
        return logits


def hf_model(scorer: str, pretrained: Any, **kwargs: Any) -> HFLM:
    """lm-eval's ``hf`` model (``lm-eval``), :class:`VerbalizerLM` (``verbalizer``) or the fast scorer's
    :class:`~ood_store._evaluate.fast.FastLM` (``fast``) with ``HFLM``'s arguments,
    as ``simple_evaluate(model="hf", model_args=...)`` makes it (None-valued arguments left out)."""
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    if check_scorer(scorer) == "verbalizer":
        return VerbalizerLM(pretrained, **kwargs)
    if scorer.strip().lower() == "fast":
        from ood_store._evaluate.fast import FastLM

        return FastLM(pretrained, **kwargs)
    if kwargs.pop("truncation", "left") != "left":
        raise OodStoreError("right truncation needs the verbalizer scorer: lm-eval's own cuts prompts from the left")
    with _quiet_lm_eval():
        return TimedHFLM(pretrained, **kwargs)


# -- tasks ---------------------------------------------------------------------------------------------------
@dataclass
class TaskSet:
    """lm-eval task objects built once, to score model after model with :func:`score`."""

    names: list[str]  # the leaf tasks (or groups) the objects are
    objects: list[Any]
    manager: Any  # lm_eval.tasks.TaskManager
    suite_record: dict[str, Any] | None = None  # the ood_nli suite's prompt variant and task definitions


@contextmanager
def suite_tasks(
    tasks: Sequence[str] = ("ood_nli",),
    *,
    variant: Any = None,
    data_dir: str | Path | None = None,
    include_paths: Sequence[str | Path] = (),
    num_fewshot: int | None = None,
) -> Iterator[TaskSet]:
    """The tasks ``evaluate`` would run for ``tasks`` (the ood_nli suite under ``variant``, read from
    ``data_dir`` or the hub, or tasks of lm-eval and ``include_paths``), built once.

    ``variant`` is a :class:`~ood_store._evaluate.suite.variant.Variant`; ``num_fewshot`` in-context examples
    are drawn from each testset's training split.
    """
    from ood_store._evaluate.tasklist import task_list

    with task_list(tasks, include_paths, data_dir, variant, num_fewshot) as catalogue:
        names = [leaf for name in catalogue.names for leaf in ([name] if name in catalogue.groups else
                                                                catalogue.leaves[name])]  # fmt: skip
        loaded = catalogue.manager.load(catalogue.task_specs(names))
        objects = [loaded["groups"][n] if n in loaded["groups"] else loaded["tasks"][n] for n in names]
        yield TaskSet(names, objects, catalogue.manager, catalogue.suite_record(names))


# -- scoring -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DocumentScore:
    """One document's answer loglikelihoods (in the order of its choices), its target and its accuracy."""

    task: str
    doc_id: int
    target: Any
    loglikelihoods: tuple[float, ...]
    acc: float | None


def accuracy_of(results: Mapping[str, Any]) -> dict[str, float]:
    """Each task's ``acc`` (filter ``none``) in lm-eval's results."""
    return {
        task: float(entry["acc,none"])
        for task, entry in results.get("results", {}).items()
        if isinstance(entry, dict) and isinstance(entry.get("acc,none"), int | float)
    }


@dataclass
class Scored:
    """What :func:`score` returns: lm-eval's results (and samples), and how long the forward passes took."""

    results: dict[str, Any]
    samples: dict[str, list[dict[str, Any]]] | None
    scorer: str
    tracker: Any = field(repr=False)  # the EvaluationTracker that writes the files
    seconds: float = 0.0  # the whole call of lm-eval
    forward_seconds: float = 0.0  # of which in the model's forward passes
    forward_tokens: int = 0  # positions run through the model (rows x padded length)

    def accuracy(self) -> dict[str, float]:
        """Each task's ``acc`` (filter ``none``), as lm-eval aggregated it."""
        return accuracy_of(self.results)

    def documents(self) -> list[DocumentScore]:
        """Every scored document (needs ``log_samples``, the default), task by task in document order."""
        if self.samples is None:
            raise OodStoreError("no per-document scores: score with log_samples=True")
        out = []
        for task, rows in self.samples.items():
            for row in sorted(rows, key=lambda r: r["doc_id"]):
                lls = tuple(float(resp[0][0]) for resp in row["resps"])
                out.append(DocumentScore(task, row["doc_id"], row.get("target"), lls, row.get("acc")))
        return out

    def write(self, folder: str | Path) -> Path:
        """lm-eval's standard files in ``folder/<model>/`` (``results_<ts>.json``, ``samples_<task>_<ts>.jsonl``);
        returns the results file. Writes once (lm-eval's tracker takes the samples out)."""
        from ood_store._evaluate.harness import save

        self.tracker.output_path = str(folder)
        results = dict(self.results)
        if self.samples is not None:
            results["samples"] = self.samples
        return save(self.tracker, results, Path(folder))


def score(
    lm: HFLM,
    tasks: TaskSet | Sequence[Any],
    *,
    task_manager: Any = None,
    model_args: Mapping[str, Any] | None = None,
    suite_record: Mapping[str, Any] | None = None,
    **options: Any,
) -> Scored | FastScored:
    """Score the model of ``lm`` (lm-eval's ``HFLM`` or :class:`VerbalizerLM`) on ``tasks`` with lm-eval (the fast
    scorer's :class:`~ood_store._evaluate.fast.FastLM`: by :func:`ood_store._evaluate.fast.score`).

    ``tasks`` is a :class:`TaskSet` or what ``simple_evaluate`` takes (task
    objects, names or config dicts, with the ``task_manager`` that knows them).
    ``model_args`` are recorded as lm-eval records them for ``--model hf``
    (``{"pretrained": ..., "peft": ...}``): the files name the checkpoint, not
    the object. ``options`` are further keyword arguments of
    ``lm_eval.simple_evaluate`` (``num_fewshot``, ``limit``, ``log_samples``,
    ``batch_size``, ...). The model is put in evaluation mode while it is
    scored and back in the mode it was in afterwards.
    """
    import lm_eval
    from lm_eval.loggers import EvaluationTracker

    from ood_store._evaluate.harness import environment_described_once

    if isinstance(tasks, TaskSet):
        task_manager = task_manager or tasks.manager
        suite_record = suite_record if suite_record is not None else tasks.suite_record
        tasks = tasks.objects
    if task_manager is None:
        raise OodStoreError("score: give the lm-eval TaskManager that knows the tasks (its task_manager argument)")
    from ood_store._evaluate import fast

    if isinstance(lm, fast.FastLM) and lm._recording is None:
        return fast.score(lm, list(tasks), task_manager=task_manager, model_args=model_args,
                          suite_record=suite_record, **options)  # fmt: skip
    scorer = "verbalizer" if isinstance(lm, VerbalizerLM) else "lm-eval"
    templates = compiled_templates() if scorer == "verbalizer" else nullcontext()
    if scorer == "verbalizer":
        for task in tasks:
            why = refusal(task)
            if why:
                raise ScorerRefused(why)
    environment_described_once()
    args = dict(model_args or {})
    tracker = EvaluationTracker(output_path=None)
    model = lm.model
    training = bool(getattr(model, "training", False))
    forward_before, tokens_before = _forward_seconds(lm), int(getattr(lm, "forward_tokens", 0) or 0)
    started = time.perf_counter()
    try:
        model.eval()
        with templates:
            result = lm_eval.simple_evaluate(
                model=lm, model_args=args or None, tasks=list(tasks), task_manager=task_manager,
                evaluation_tracker=tracker, **options,
            )  # fmt: skip
    finally:
        if training:
            model.train()
    seconds = time.perf_counter() - started
    if result is None:  # lm-eval returns None on ranks other than 0
        raise OodStoreError("lm-eval returned no results")
    result = dict(result)
    samples = result.pop("samples", None)
    config = result.setdefault("config", {})
    config["model"] = "hf"  # what `--model hf` records: the files say which checkpoint, not which object
    config["model_args"] = args or None
    if scorer != "lm-eval":
        config["scorer"] = scorer
    if suite_record:
        config["ood_nli"] = dict(suite_record)
    tracker.general_config_tracker.model_source = "hf"
    tokens = int(getattr(lm, "forward_tokens", 0) or 0) - tokens_before
    return Scored(result, samples, scorer, tracker, seconds, _forward_seconds(lm) - forward_before, tokens)


def _forward_seconds(lm: Any) -> float:
    return float(getattr(lm, "forward_seconds", 0.0) or 0.0)
