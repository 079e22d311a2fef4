"""The fast scorer: a checkpoint's work is its forward passes and vectorized arithmetic, not per-document Python.

lm-eval's ``simple_evaluate`` spends most of a small model's evaluation in
Python: building every request, tokenizing, computing each document's
metrics, building and serializing each sample row. The documents, prompts
and tokens are the same for every checkpoint of a run, so this scorer
(``scorer="fast"``, :class:`FastLM`) does that once per run and keeps it:

**Preparation (once per run, or read from the on-disk cache).** lm-eval
itself runs once, through ``simple_evaluate`` and the verbalizer scorer's
tokenization (:class:`~ood_store._evaluate.scorer.VerbalizerLM`: lm-eval's
``loglikelihood`` and ``_encode_pair``), on a model that answers no request
but records it: every request's context and answer tokens, in lm-eval's
order. The answer it gives each request is the request's own number, so that
lm-eval's sample rows say which requests each document's choices are. Then
lm-eval's own samples writer writes those rows once with placeholders where
the scores go: each line is kept as fixed text around them. The results file
(task configs, versions, n-shot, environment) is lm-eval's too. All of it is
kept in memory for the run's next checkpoints and, with a ``cache_dir``, on
disk under a key of the tokenizer, the task configs (prompt variant, data
files, few-shot settings) and the data files' contents, for every run that
shares them (``evaluate`` keeps it in the work folder's ``prepared/``).

**Per checkpoint.** The distinct contexts (after truncation to
``max_length``, from the left as lm-eval cuts or from the right) are grouped
by length: a batch holds contexts of one length only, so there is no padding
and the language-model head runs at the last position only
(``logits_to_keep=1``); its rows are as many as fit a token budget (the
``batch_size`` rows of the longest context; ``auto``: what fits in memory).
The batches' tensors are built once per run and kept on the device; the
log-softmax, the answers' log-probabilities and the greedy tokens are
written into tensors preallocated on the device, and copied to the host once,
when every batch has run: no host synchronization per batch. Then each
task's accuracy (``acc``, ``acc_norm``) is the arg-max over each document's
choices, in NumPy, as lm-eval's ``process_results`` computes it; the
aggregates (mean and standard error) are computed by lm-eval's own
aggregation functions; the results file is written by lm-eval's tracker, and
each samples file by one write of lines joined from the kept text and the
scores (``str`` of each loglikelihood, as lm-eval's ``sanitize_list`` writes
it).

Each samples file is built column by column by Polars (the kept text and the
scores' strings concatenated per column, no Python per document) and written
by one ``write_csv`` call, unquoted: the same bytes the placeholders' lines
joined by Python gave (``_lines``).

**Into the store: the files, ingested by the one writer (a choice).** Workers
never open the store (:mod:`~ood_store._evaluate.worker`): on Slurm or Ray
many of them run at once on other hosts, and DuckDB takes one writer, so the
collector (:mod:`~ood_store._evaluate.collect`) stores each finished unit,
one commit each, checking the results file against the SHA-256 of the unit's
marker. The fast scorer keeps that split, and the files stay the channel
between a worker and the writer: they are what the marker's hash covers, what
``collect`` reads after a crash, and what every ingest rule (and any table
written at ingest) applies to, so a fast unit's rows go through exactly the
code that stores an lm-eval unit's. Handing the writer Arrow or Parquet rows
instead would save little: the collector's ingest of a checkpoint's files
(DuckDB's typed JSON reader, ``insert_samples_scored.sql``, one statement for
all of a checkpoint's samples files) measured 0.55 s for 55,902 documents
(10 µs a document; 0.85 s, 15 µs, with opening and checkpointing the store)
in ``benchmarks/evaluate_fast.py``'s set-up, next to the 50 µs a document the
whole path may spend outside the forward passes. So no store-only mode either:
without the files the writer would have nothing to check or read again. In
process (a training loop), :meth:`FastScored.write` writes the files only when
asked (``samples=False``: the results file alone).

The files equal those of the verbalizer scorer and of lm-eval's ``hf`` model
(loglikelihoods to within the batch shapes' rounding), but for the recorded
``scorer`` (``"fast"``): tests/test_fast_scorer.py checks it on every shipped
pattern, with and without in-context examples, with left and right
truncation, and that the stored rows are equal.

**A LoRA series scored together (optional).** :func:`score_adapters` scores
several adapters of one base loaded into one PEFT model in the same forward
passes (PEFT's mixed-adapter batches: each batch's rows once per adapter,
``adapter_names``), so that the base weights are read once for all of them;
each adapter's scores equal those of scoring it alone
(tests/test_fast_scorer.py). It is a library function for now: ``evaluate``
scores one checkpoint per unit, and whether the larger passes pay on a GPU is
not measured yet.

What it cannot score exactly is refused before anything runs
(:func:`fast_refusal`, one line naming the task): what the verbalizer scorer
refuses, and multiple-choice tasks whose results need more than the answers'
arg-max (metrics other than ``acc`` and ``acc_norm``, filters, their own
``process_results``, several inputs or targets) and groups (their aggregate);
those are scored with ``scorer="verbalizer"`` or lm-eval's own.

In-process use (as a training loop does; tests/test_fast_scorer.py's
``test_a_training_model_scored_in_process_as_the_module_shows`` runs it)::

    lm = FastLM(model, tokenizer=tokenizer, batch_size=64)
    with suite_tasks(["ood_nli"], variant=variant, data_dir=data) as tasks:
        scored = score(lm, tasks, model_args={"pretrained": "runs/opt/checkpoint-500"})
        scored.accuracy()           # {task: acc}
        scored.write(folder)        # lm-eval's results_<ts>.json and samples_<task>_<ts>.jsonl
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ood_store._errors import OodStoreError
from ood_store._evaluate.scorer import DocumentScore, ScorerRefused, VerbalizerLM, accuracy_of, refusal

#: Bump when what the cache holds changes: older entries are then not read.
CACHE_FORMAT = 1
#: Per-sample metrics this scorer computes (lm-eval's multiple-choice ``acc`` and ``acc_norm``).
METRICS = ("acc", "acc_norm")
#: On a GPU, the most rows of the longest context that ``batch_size="auto"`` tries (halved until they fit).
GPU_MAX_ROWS = 512
_PLACEHOLDER = re.compile(r'"@@ood-store:([a-z_]+)@@"')


def _placeholder(name: str) -> str:
    return f"@@ood-store:{name}@@"


class FastLM(VerbalizerLM):
    """The verbalizer scorer's model, scored by the fast path (see the module).

    Takes every argument of :class:`~ood_store._evaluate.scorer.VerbalizerLM`
    (lm-eval's ``HFLM``'s, and ``truncation``) and ``cache_dir``: a folder where
    prepared runs are kept for other processes and runs (default: none, kept in
    memory only, for the checkpoints this object scores). On a GPU, ``batch_size="auto"``
    tries up to ``max_batch_size`` rows of the longest context (default here
    :data:`GPU_MAX_ROWS`, not lm-eval's 64: the suite's contexts are short, and a
    pass of a few thousand tokens leaves a large GPU mostly idle).
    """

    def __init__(self, pretrained: Any, truncation: str = "left", cache_dir: str | Path | None = None, **kwargs: Any):
        if kwargs.get("max_batch_size") is None and str(kwargs.get("device") or "").startswith("cuda"):
            kwargs["max_batch_size"] = GPU_MAX_ROWS
        super().__init__(pretrained, truncation=truncation, **kwargs)
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self._recording: list[tuple[tuple[int, ...], int]] | None = None
        self._prepared: list[Prepared] = []
        self.prepared_from: str | None = None  # how the last call got its requests: lm-eval, disk or memory

    def _loglikelihood_tokens(
        self,
        requests: list[tuple[tuple[str, str], list[int], list[int]]],
        disable_tqdm: bool = False,
        override_bs: int | None = None,
    ) -> list[tuple[float, bool]]:
        if self._recording is None:
            return super()._loglikelihood_tokens(requests, disable_tqdm, override_bs)
        out = []
        for index, ((_, continuation), context_enc, continuation_enc) in enumerate(requests):
            if len(continuation_enc) != 1:
                raise ScorerRefused(self._not_one_token(index, continuation, len(continuation_enc)))
            out.append((float(len(self._recording)), False))  # the request's number: which choice is which
            self._recording.append((tuple(context_enc), continuation_enc[0]))
        return out


def fast_refusal(task: Any) -> str | None:
    """Why the fast scorer refuses the lm-eval task (or group) object ``task``, or None."""
    why = refusal(task)
    if why:
        return why.replace("the verbalizer scorer", "the fast scorer")
    config = getattr(task, "config", None)
    name = getattr(config, "task", None) or getattr(task, "group_name", None) or type(task).__name__
    if config is None or not hasattr(task, "OUTPUT_TYPE"):
        return (
            f"{name}: the fast scorer scores tasks, not groups (their aggregate): evaluate it with the "
            "verbalizer scorer"
        )
    if task.OUTPUT_TYPE != "multiple_choice":
        why = f"{task.OUTPUT_TYPE} tasks"
    elif callable(getattr(config, "process_results", None)):
        why = "a task with its own process_results"
    elif getattr(task, "multiple_input", False) or getattr(task, "multiple_target", False):
        why = "a task of several inputs or targets"
    elif set(getattr(task, "_metric_fn_list", {})) - set(METRICS):
        others = sorted(set(task._metric_fn_list) - set(METRICS))
        why = f"the metrics {', '.join(others)}"
    elif [getattr(f, "name", None) for f in getattr(task, "_filters", [])] not in ([], ["none"]) \
            or getattr(config, "filter_list", None):  # fmt: skip
        why = "a task with filters"
    else:
        return None
    return f"{name}: the fast scorer scores the accuracy of multiple-choice answers, not {why}: evaluate it with the "\
        "verbalizer scorer"  # fmt: skip


# -- what a run's preparation holds -------------------------------------------------------------------------
@dataclass
class TaskPart:
    """One task's documents: which requests are its choices, its gold answers, and its samples lines' fixed text."""

    name: str
    choices: Any  # int64 (documents, most choices): request numbers, -1 where a document has fewer choices
    gold: Any  # int64 (documents,): lm-eval's gold index, -100 where its target is not a choice
    lengths: Any  # float64 like choices: each choice's length in characters (acc_norm), 1 where none
    doc_ids: Any  # int64 (documents,)
    metrics: list[str]  # per-sample metrics, in lm-eval's order
    slots: list[str]  # what goes between the fragments of a line: resps, filtered_resps, a metric's name
    fragments: list[list[str]]  # len(slots) + 1 columns of fixed text, one entry per document
    hashes: str  # every document's doc_hash + prompt_hash + target_hash, joined (lm-eval's task hash)
    targets: list[Any]  # each document's target, as lm-eval's doc_to_target gives it
    kept_text: Any = field(default=None, repr=False, compare=False)  # the fragments as Polars columns, once made

    def fragment_columns(self) -> dict[str, Any]:
        """The fragments as Polars string columns ``f0``, ``f1``, ... (made once, for every checkpoint)."""
        import polars as pl

        if self.kept_text is None:
            self.kept_text = {f"f{k}": pl.Series(c, dtype=pl.String) for k, c in enumerate(self.fragments)}
        return self.kept_text


@dataclass
class Prepared:
    """A run's requests, tokenized, and everything of lm-eval's files that does not depend on the scores."""

    key: str
    contexts: list[tuple[int, ...]]  # each request's context tokens (before truncation)
    answers: Any  # int64 (requests,): each request's answer token
    parts: list[TaskPart]
    template: dict[str, Any]  # lm-eval's results dict of the preparation (config rebuilt per checkpoint)
    tracker: dict[str, Any]  # the tracker's settings: system_instruction, chat_template, fewshot_as_multiturn
    bootstrap_iters: Any
    log_samples: bool
    tasks: list[Any] = field(default_factory=list)  # the task objects (in memory only: their identity)
    options_key: str = ""  # and the options they were prepared with
    plans: dict[tuple[Any, ...], Plan] = field(default_factory=dict)


@dataclass
class Plan:
    """A run's batches on the device: distinct contexts of one length each, and where each request's score goes."""

    batches: list[tuple[Any, int]]  # (inputs: rows x length on the device, first row)
    gathers: list[tuple[Any, Any, Any]]  # per batch: request numbers, their rows in the batch, their answer tokens
    rows: int
    request_rows: Any  # (requests,) on the device: each request's row
    answers: Any  # (requests,) on the device
    tokens: int  # positions per checkpoint (rows x length, no padding)


# -- the cache key ------------------------------------------------------------------------------------------
def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def tokenizer_digest(tokenizer: Any) -> str:
    """What the tokenizer computes: its serialized model (fast tokenizers) or its saved files, with its class."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        text = backend.to_str()
    else:
        with tempfile.TemporaryDirectory(prefix="ood-store-tok-") as tmp:
            tokenizer.save_pretrained(tmp)
            text = "".join(sorted(f"{p.name}:{hashlib.sha256(p.read_bytes()).hexdigest()}"
                                  for p in Path(tmp).iterdir() if p.name != "tokenizer_config.json"))  # fmt: skip
    special = {k: str(v) for k, v in sorted(getattr(tokenizer, "special_tokens_map", {}).items())}
    return _digest(type(tokenizer).__name__, hashlib.sha256(text.encode()).hexdigest(), special)


def _data_files(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if os.path.isfile(value) else []
    if isinstance(value, Mapping):
        return [f for v in value.values() for f in _data_files(v)]
    if isinstance(value, list | tuple):
        return [f for v in value for f in _data_files(v)]
    return []


def _file_digest(path: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _task_identity(task: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """What defines a task's requests: its config (as lm-eval dumps it), the few-shot count lm-eval will use, the
    contents of its local data files and the hub datasets' fingerprints."""
    config = {k: v for k, v in dict(task.dump_config()).items() if k != "num_fewshot"}
    configured = task.get_config("num_fewshot")
    wanted = options.get("num_fewshot")
    shots = configured if configured == 0 or wanted is None else wanted  # simple_evaluate's rule
    files = _data_files(config.get("dataset_kwargs")) + _data_files(config.get("dataset_path"))
    dataset = getattr(task, "dataset", None)
    fingerprints = {}
    if isinstance(dataset, Mapping):
        fingerprints = {str(s): str(getattr(d, "_fingerprint", "")) for s, d in dataset.items()}
    return {"config": config, "num_fewshot": shots or 0, "files": {f: _file_digest(f) for f in sorted(set(files))},
            "fingerprints": fingerprints}  # fmt: skip


#: simple_evaluate's options that change neither the requests nor the files' scores.
_NEUTRAL = frozenset({"batch_size", "max_batch_size", "device", "verbosity"})


def cache_key(lm: FastLM, tasks: Sequence[Any], options: Mapping[str, Any]) -> str:
    from importlib.metadata import version

    return _digest(
        CACHE_FORMAT, version("lm_eval"), tokenizer_digest(lm.tokenizer), bool(lm.add_bos_token),
        getattr(lm, "prefix_token_id", None), [_task_identity(t, options) for t in tasks],
        {k: v for k, v in options.items() if k not in _NEUTRAL},
    )  # fmt: skip


# -- preparing a run ----------------------------------------------------------------------------------------
def prepare(lm: FastLM, tasks: Sequence[Any], task_manager: Any, options: Mapping[str, Any]) -> Prepared:
    """The run's :class:`Prepared` requests: from memory, from ``lm.cache_dir``, or made by lm-eval once."""
    options_key = _digest({k: v for k, v in options.items() if k not in _NEUTRAL})
    for held in lm._prepared:
        same = len(held.tasks) == len(tasks) and all(a is b for a, b in zip(held.tasks, tasks, strict=True))
        if same and held.options_key == options_key:
            lm.prepared_from = "memory"
            return held
    key = cache_key(lm, tasks, options)
    prepared = next((p for p in lm._prepared if p.key == key), None)  # the same requests, other task objects
    if prepared is not None:
        lm.prepared_from = "memory"
        _configure(tasks, options)
    elif lm.cache_dir is not None and (kept := _read(lm.cache_dir / key)) is not None:
        prepared, lm.prepared_from = kept, "disk"
        _configure(tasks, options)
    else:
        prepared = _record(lm, tasks, task_manager, options, key)
        lm.prepared_from = "lm-eval"
        if lm.cache_dir is not None:
            _write(prepared, lm.cache_dir / key)
    prepared.tasks, prepared.options_key = list(tasks), options_key
    lm._prepared = [p for p in lm._prepared if p.key != key][-3:] + [prepared]
    return prepared


def _configure(tasks: Sequence[Any], options: Mapping[str, Any]) -> None:
    """What ``simple_evaluate`` sets on task objects before it evaluates them (their configs go into the files)."""
    wanted = options.get("num_fewshot")
    for task in tasks:
        configured = task.get_config("num_fewshot")
        if wanted is not None and configured != 0:
            task.set_config(key="num_fewshot", value=wanted)
        elif wanted is None and configured is None:
            task.set_config(key="num_fewshot", value=0)
        task.set_fewshot_seed(seed=options.get("fewshot_random_seed", 1234))


def _record(lm: FastLM, tasks: Sequence[Any], task_manager: Any, options: Mapping[str, Any], key: str) -> Prepared:
    """lm-eval's own evaluation, once, on a model that records the requests (see the module)."""
    import numpy as np
    from lm_eval.loggers import EvaluationTracker

    from ood_store._evaluate.scorer import score as lm_eval_score

    lm._recording = []
    try:
        scored = lm_eval_score(lm, tasks, task_manager=task_manager, **{**options, "log_samples": True})
        recorded = lm._recording
    finally:
        lm._recording = None
    samples = scored.samples or {}
    parts = []
    with tempfile.TemporaryDirectory(prefix="ood-store-fast-") as tmp:
        writer = EvaluationTracker(output_path=tmp)
        writer.date_id = "template"
        writer.general_config_tracker.model_name_sanitized = "template"
        for task in tasks:
            name = task.config.task
            rows = sorted(samples.get(name, []), key=lambda r: r["doc_id"])
            path = Path(tmp) / "template" / f"samples_{name}_template.jsonl"
            parts.append(_task_part(task, name, rows, writer, path))
    general = scored.tracker.general_config_tracker  # type: ignore[union-attr]  # lm-eval's: lm is recording
    template = json.loads(json.dumps(scored.results, default=_lm_eval_default(), ensure_ascii=False))
    return Prepared(
        key=key,
        contexts=[c for c, _ in recorded],
        answers=np.array([a for _, a in recorded], dtype=np.int64),
        parts=parts,
        template=template,
        tracker={k: getattr(general, k, None) for k in ("system_instruction", "chat_template", "fewshot_as_multiturn")},
        bootstrap_iters=options.get("bootstrap_iters", 100000),
        log_samples=bool(options.get("log_samples", True)),
    )


def _lm_eval_default() -> Any:
    from lm_eval.utils import handle_non_serializable

    return handle_non_serializable


def _task_part(task: Any, name: str, rows: list[dict[str, Any]], writer: Any, path: Path) -> TaskPart:
    import numpy as np

    most = max((len(r["filtered_resps"]) for r in rows), default=0)
    choices = np.full((len(rows), most), -1, dtype=np.int64)
    lengths = np.ones((len(rows), most), dtype=np.float64)
    gold = np.empty(len(rows), dtype=np.int64)
    metrics = [m for m in rows[0]["metrics"]] if rows else []
    hashes = []
    for i, row in enumerate(rows):
        numbers = [int(resp[0]) for resp in row["filtered_resps"]]
        choices[i, : len(numbers)] = numbers
        options = task.doc_to_choice(row["doc"])
        lengths[i, : len(options)] = [float(len(o)) for o in options]
        gold[i] = _gold(row["target"], options)
        hashes.append(row["doc_hash"] + row["prompt_hash"] + row["target_hash"])
        row["resps"], row["filtered_resps"] = _placeholder("resps"), _placeholder("filtered_resps")
        for metric in row["metrics"]:
            row[metric] = _placeholder(metric)
    targets = [row["target"] for row in rows]
    writer.save_results_samples(task_name=name, samples=rows)  # lm-eval's own writer, once, with placeholders
    slots: list[str] | None = None
    fragments: list[list[str]] = []
    lines = path.read_text("utf-8").split("\n")[:-1] if rows else []  # not splitlines: U+2028 may be in a doc
    for number, line in enumerate(lines):
        pieces = _PLACEHOLDER.split(line)
        found, texts = pieces[1::2], pieces[0::2]
        if slots is None:
            slots = found
            fragments = [[] for _ in texts]
        if found != slots:
            raise OodStoreError(f"{name}: document {number}'s sample row is not laid out as the first one's")
        for column, text in zip(fragments, texts, strict=True):
            column.append(text)
    return TaskPart(name, choices, gold, lengths, np.array([r["doc_id"] for r in rows], dtype=np.int64), metrics,
                    slots or [], fragments, "".join(hashes), targets)  # fmt: skip


def _gold(target: Any, choices: Sequence[str]) -> int:
    """lm-eval's gold index of a multiple-choice document (``ConfigurableTask.process_results``)."""
    if isinstance(target, int):
        return target if target < len(choices) else -100
    if isinstance(target, str):
        return choices.index(target) if target in choices else -100
    return -100


# -- the on-disk cache --------------------------------------------------------------------------------------
def _write(prepared: Prepared, folder: Path) -> None:
    """Kept under ``folder`` (written beside it and renamed: readers see all of it or nothing)."""
    import numpy as np
    import polars as pl

    if folder.is_dir():
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        requests = pl.DataFrame({"context": [list(c) for c in prepared.contexts], "answer": prepared.answers},
                                schema={"context": pl.List(pl.Int32), "answer": pl.Int64})  # fmt: skip
        requests.write_parquet(tmp / "requests.parquet")
        parts = []
        for i, part in enumerate(prepared.parts):
            np.savez(tmp / f"task-{i}.npz", choices=part.choices, gold=part.gold, lengths=part.lengths,
                     doc_ids=part.doc_ids)  # fmt: skip
            columns = {f"fragment_{k}": column for k, column in enumerate(part.fragments)}
            targets = [json.dumps(t, default=str) for t in part.targets]
            pl.DataFrame({**columns, "target": targets}).write_parquet(tmp / f"task-{i}.parquet")
            parts.append({"name": part.name, "metrics": part.metrics, "slots": part.slots, "hashes": part.hashes})
        meta = {"key": prepared.key, "template": prepared.template, "tracker": prepared.tracker, "parts": parts,
                "bootstrap_iters": prepared.bootstrap_iters, "log_samples": prepared.log_samples}  # fmt: skip
        (tmp / "prepared.json").write_text(json.dumps(meta, ensure_ascii=False), "utf-8")
        try:
            os.rename(tmp, folder)
        except OSError:  # another process kept the same run meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _read(folder: Path) -> Prepared | None:
    """What :func:`_write` kept, or None (not there, or not readable: prepared again)."""
    import numpy as np
    import polars as pl

    try:
        meta = json.loads((folder / "prepared.json").read_text("utf-8"))
        requests = pl.read_parquet(folder / "requests.parquet")
        parts = []
        for i, part in enumerate(meta["parts"]):
            arrays = np.load(folder / f"task-{i}.npz")
            frame = pl.read_parquet(folder / f"task-{i}.parquet")
            fragments = [frame[f"fragment_{k}"].to_list() for k in range(len(part["slots"]) + 1)]
            parts.append(TaskPart(part["name"], arrays["choices"], arrays["gold"], arrays["lengths"],
                                  arrays["doc_ids"], part["metrics"], part["slots"], fragments, part["hashes"],
                                  [json.loads(t) for t in frame["target"].to_list()]))  # fmt: skip
    except (OSError, ValueError, KeyError):
        return None
    return Prepared(
        key=meta["key"], contexts=[tuple(c) for c in requests["context"].to_list()],
        answers=requests["answer"].to_numpy().astype(np.int64), parts=parts, template=meta["template"],
        tracker=meta["tracker"], bootstrap_iters=meta["bootstrap_iters"], log_samples=meta["log_samples"],
    )  # fmt: skip


# -- scoring a checkpoint -----------------------------------------------------------------------------------
def plan(lm: FastLM, prepared: Prepared) -> Plan:
    """The run's batches for this model's ``max_length``, truncation side and batch size, kept on the device."""
    import numpy as np
    import torch

    key = (lm.max_length, lm.truncation_side, str(lm.device), str(lm.batch_size), lm._auto_rows)
    if key in prepared.plans:
        return prepared.plans[key]
    most = lm.max_length  # a property that lm-eval works out again on each call
    left = lm.truncation_side == "left"
    cut = [c[-most:] if left else c[:most] for c in prepared.contexts]
    distinct: dict[tuple[int, ...], int] = {}
    row_of = np.array([distinct.setdefault(c, len(distinct)) for c in cut], dtype=np.int64)
    contexts = list(distinct)
    longest = max((len(c) for c in contexts), default=1)
    budget = lm._rows_for(longest, longest) * longest  # tokens per forward pass
    by_length: dict[int, list[int]] = {}
    for index, context in enumerate(contexts):
        by_length.setdefault(len(context), []).append(index)
    order = [index for length in sorted(by_length, reverse=True) for index in by_length[length]]  # longest first
    position = np.empty(len(contexts), dtype=np.int64)
    position[order] = np.arange(len(order))
    request_rows = position[row_of]  # each request's row, in batch order
    by_row = np.argsort(request_rows, kind="stable")
    starts = np.searchsorted(request_rows[by_row], np.arange(len(order) + 1))
    batches, gathers, start, tokens = [], [], 0, 0
    for length in sorted(by_length, reverse=True):
        members = by_length[length]
        step = max(1, budget // max(1, length))
        for offset in range(0, len(members), step):
            chunk = members[offset : offset + step]
            inputs = torch.tensor([contexts[i] for i in chunk], dtype=torch.long).to(lm.device)
            requests = by_row[starts[start] : starts[start + len(chunk)]]
            numbers, rows, answers = (torch.from_numpy(a).to(lm.device) for a in (
                requests, request_rows[requests] - start, prepared.answers[requests]))  # fmt: skip
            gathers.append((numbers, rows, answers))
            batches.append((inputs, start))
            start += len(chunk)
            tokens += inputs.numel()
    made = Plan(batches, gathers, len(order), torch.from_numpy(request_rows).to(lm.device),
                torch.from_numpy(prepared.answers).to(lm.device), tokens)  # fmt: skip
    prepared.plans[(*key[:-1], lm._auto_rows)] = made  # as the next checkpoint asks (auto: what was found)
    return made


def run_batches(lm: FastLM, made: Plan, adapters: Sequence[str] | None = None) -> tuple[Any, Any]:
    """Every request's loglikelihood (float64) and whether its answer is the greedy token, on the host.

    ``adapters``: names of LoRA adapters loaded into ``lm.model`` (a PEFT model), scored together: each batch's
    rows once per adapter in one forward pass (PEFT's ``adapter_names``), so that the base weights are read once
    for all of them; then both arrays have one row per adapter."""
    import torch

    device = lm.device
    k = len(adapters) if adapters else 1
    loglikelihoods = torch.empty((k, len(made.answers)), dtype=torch.float64, device=device)
    greedy = torch.empty((k, made.rows), dtype=torch.long, device=device)
    for (inputs, first), (requests, rows, answers) in zip(made.batches, made.gathers, strict=True):
        n = inputs.shape[0]
        if adapters:
            names = [name for name in adapters for _ in range(n)]
            batch = inputs.repeat(k, 1)
            logprobs = lm._last_logprobs(batch, batch.shape[1] - 1, adapter_names=names).view(k, n, -1)
        else:
            logprobs = lm._last_logprobs(inputs, inputs.shape[1] - 1).unsqueeze(0)
        greedy[:, first : first + n] = logprobs.argmax(dim=-1)
        loglikelihoods[:, requests] = logprobs[:, rows, answers].to(torch.float64)
    matches = greedy[:, made.request_rows] == made.answers
    if not adapters:
        return loglikelihoods[0].cpu().numpy(), matches[0].cpu().numpy()
    return loglikelihoods.cpu().numpy(), matches.cpu().numpy()


@dataclass
class FastScored:
    """What :func:`score` returns for :class:`FastLM`: lm-eval's results, and the documents' scores as arrays."""

    results: dict[str, Any]
    prepared: Prepared = field(repr=False)
    loglikelihoods: Any = field(repr=False)  # float64 (requests,)
    greedy: Any = field(repr=False)  # bool (requests,)
    per_sample: dict[str, dict[str, Any]] = field(repr=False)  # task -> metric -> float64 (documents,)
    general: dict[str, Any] = field(repr=False)  # the tracker's settings
    scorer: str = "fast"
    seconds: float = 0.0
    forward_seconds: float = 0.0
    forward_tokens: int = 0
    prepare_seconds: float = 0.0  # of which preparing the requests (lm-eval's run, or reading the cache)
    samples: None = None  # no sample dicts: see documents()

    def accuracy(self) -> dict[str, float]:
        """Each task's ``acc`` (filter ``none``), as lm-eval aggregates it."""
        return accuracy_of(self.results)

    def documents(self) -> list[DocumentScore]:
        """Every scored document, task by task in document order."""
        out = []
        for part in self.prepared.parts:
            acc = self.per_sample[part.name].get("acc")
            for i, doc_id in enumerate(part.doc_ids.tolist()):
                numbers = [n for n in part.choices[i].tolist() if n >= 0]
                lls = tuple(float(self.loglikelihoods[n]) for n in numbers)
                out.append(DocumentScore(part.name, doc_id, part.targets[i], lls, None if acc is None else acc[i]))
        return out

    def write(self, folder: str | Path, samples: bool | None = None) -> Path:
        """lm-eval's files in ``folder/<model>/``: the results file by lm-eval's tracker, each samples file in one
        write (``samples=False``, or the run's ``log_samples=False``: none); returns the results file."""
        from lm_eval.loggers import EvaluationTracker

        from ood_store._evaluate.harness import save

        tracker = EvaluationTracker(output_path=str(folder))
        tracker.general_config_tracker.log_experiment_args(
            model_source="CUSTOM", model_args=self.results["config"].get("model_args") or "", **self.general
        )
        tracker.general_config_tracker.model_source = "hf"
        tracker.general_config_tracker.start_time -= self.seconds  # the evaluation's time, as lm-eval records it
        logged = self.prepared.log_samples if samples is None else samples
        stub = {p.name: [{"doc_hash": p.hashes, "prompt_hash": "", "target_hash": ""}] for p in self.prepared.parts}
        path = save(tracker, {**self.results, "samples": stub if logged else None}, Path(folder), write_samples=False)
        if logged:
            for part in self.prepared.parts:
                target = path.parent / f"samples_{part.name}_{tracker.date_id}.jsonl"
                # one write of the lines as they are: no header, no quoting, "\n" after each
                self._lines(part).write_csv(target, include_header=False, quote_style="never")
        return path

    def _lines(self, part: TaskPart) -> Any:
        """The task's samples file's lines (a Polars frame of one column): each line its fixed text around the
        scores (see the module), built column by column (no Python per document); the loglikelihoods as ``repr``
        writes them."""
        import numpy as np
        import polars as pl

        shape = part.choices.shape
        numbers = part.choices.reshape(-1)
        kept = numbers >= 0
        lls = np.full(numbers.shape, "", dtype=object)
        lls[kept] = list(map(repr, self.loglikelihoods[numbers[kept]].tolist()))
        greedy = np.where(self.greedy[np.where(kept, numbers, 0)], "True", "False")
        lls, greedy, kept = lls.reshape(shape), greedy.reshape(shape), kept.reshape(shape)
        frame = pl.DataFrame({**{f"ll{k}": pl.Series(lls[:, k].tolist(), dtype=pl.String) for k in range(shape[1])},
                              **{f"greedy{k}": greedy[:, k] for k in range(shape[1])},
                              **{f"kept{k}": kept[:, k] for k in range(shape[1])}})  # fmt: skip
        # choice k of every document: its pair as lm-eval writes it, null where the document has fewer choices
        pairs = [pl.when(pl.col(f"kept{k}")).then(pl.concat_str(
            pl.lit('["'), pl.col(f"ll{k}"), pl.lit('", "'), pl.col(f"greedy{k}"), pl.lit('"]')))
            for k in range(shape[1])]  # fmt: skip
        exprs = {"filtered_resps": _listed(pairs)}
        if "resps" in part.slots:
            exprs["resps"] = _listed([pl.concat_str(pl.lit("["), pair, pl.lit("]")) for pair in pairs])
        values = frame.select(**exprs) if shape[0] else pl.DataFrame({k: [] for k in exprs}, schema=dict.fromkeys(
            exprs, pl.String))  # fmt: skip
        columns: dict[str, Any] = dict(part.fragment_columns())
        order = [pl.col("f0")]
        for k, slot in enumerate(part.slots, start=1):
            if slot in values.columns:
                columns[f"v{k}"] = values[slot]
            else:  # a per-sample metric: 0 or 1, as repr writes the float
                columns[f"v{k}"] = pl.Series(np.where(self.per_sample[part.name][slot] == 1.0, "1.0", "0.0"),
                                             dtype=pl.String)  # fmt: skip
            order += [pl.col(f"v{k}"), pl.col(f"f{k}")]
        return pl.DataFrame(columns).select(line=pl.concat_str(*order))


def _listed(items: list[Any]) -> Any:
    """``[a, b, ...]`` of a row's non-null ``items`` (Polars string expressions), as lm-eval writes a list."""
    import polars as pl

    return pl.concat_str(pl.lit("["), pl.concat_str(*items, separator=", ", ignore_nulls=True), pl.lit("]"))


def per_sample_metrics(part: TaskPart, loglikelihoods: Any) -> dict[str, Any]:
    """The task's per-document ``acc`` / ``acc_norm`` (float64), as ``ConfigurableTask.process_results`` computes
    them: the first arg-max of the choices' loglikelihoods (divided by their lengths, for ``acc_norm``)."""
    import numpy as np

    kept = part.choices >= 0
    lls = np.full(part.choices.shape, -np.inf)
    lls[kept] = loglikelihoods[part.choices[kept]]
    out = {}
    for metric in part.metrics:
        values = lls if metric == "acc" else np.where(kept, lls / part.lengths, -np.inf)
        out[metric] = (np.argmax(values, axis=1) == part.gold).astype(np.float64)
    return out


def score(
    lm: FastLM,
    tasks: Sequence[Any],
    *,
    task_manager: Any,
    model_args: Mapping[str, Any] | None = None,
    suite_record: Mapping[str, Any] | None = None,
    **options: Any,
) -> FastScored:
    """Score the model of ``lm`` on ``tasks`` by the fast path (see the module); what
    :func:`ood_store._evaluate.scorer.score` does for a :class:`FastLM`."""
    return _score(lm, tasks, None, task_manager, {None: model_args}, suite_record, options)[None]


def score_adapters(
    lm: FastLM,
    tasks: Sequence[Any],
    adapters: Mapping[str, Mapping[str, Any] | None],
    *,
    task_manager: Any,
    suite_record: Mapping[str, Any] | None = None,
    **options: Any,
) -> dict[str, FastScored]:
    """Score several LoRA adapters of one base together (optional: not yet used by ``evaluate``).

    ``lm.model`` is a PEFT model with each adapter of ``adapters`` (name -> the model arguments to record for
    it) loaded under its name (``load_adapter``). Each forward pass runs a batch's rows once per adapter
    (PEFT's mixed-adapter batches, ``adapter_names``), so the base weights are read once for all of them; a
    pass then holds ``len(adapters)`` times the batch's rows. Returns each adapter's :class:`FastScored`, equal
    to scoring it alone (tests/test_fast_scorer.py)."""
    if not adapters:
        raise OodStoreError("score_adapters: no adapters named")
    return _score(lm, tasks, list(adapters), task_manager, dict(adapters), suite_record, options)


def _score(
    lm: FastLM,
    tasks: Sequence[Any],
    adapters: list[str] | None,
    task_manager: Any,
    model_args: Mapping[Any, Mapping[str, Any] | None],
    suite_record: Mapping[str, Any] | None,
    options: dict[str, Any],
) -> dict[Any, FastScored]:
    """:func:`score` (``adapters`` None: one result, under the key None) or :func:`score_adapters`."""
    for task in tasks:
        why = fast_refusal(task)
        if why:
            raise ScorerRefused(why)
    started = time.perf_counter()
    date = time.time()
    prepared = prepare(lm, tasks, task_manager, options)
    prepare_seconds = time.perf_counter() - started
    model = lm.model
    training = bool(getattr(model, "training", False))
    try:
        model.eval()
        made = plan(lm, prepared)
        forward_started = time.perf_counter()
        loglikelihoods, greedy = run_batches(lm, made, adapters)
        forward_seconds = time.perf_counter() - forward_started
    finally:
        if training:
            model.train()
    lm.forward_seconds += forward_seconds
    lm.forward_tokens += made.tokens * (len(adapters) if adapters else 1)
    out = {}
    for index, name in enumerate(adapters or [None]):
        lls, matches = (loglikelihoods, greedy) if adapters is None else (loglikelihoods[index], greedy[index])
        results, per_sample = _results(lm, prepared, tasks, lls, model_args.get(name), suite_record, date)
        seconds = time.perf_counter() - started
        out[name] = FastScored(results, prepared, lls, matches, per_sample, dict(prepared.tracker), "fast", seconds,
                               forward_seconds, made.tokens, prepare_seconds)  # fmt: skip
    return out


def _results(
    lm: FastLM,
    prepared: Prepared,
    tasks: Sequence[Any],
    loglikelihoods: Any,
    model_args: Mapping[str, Any] | None,
    suite_record: Mapping[str, Any] | None,
    date: float,
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """lm-eval's results dict of one model's scores, and each task's per-sample metrics."""
    from lm_eval.evaluator_utils import _compute_task_aggregations

    results = copy.deepcopy(prepared.template)
    per_sample = {}
    by_name = {getattr(t.config, "task", None): t for t in tasks}
    for part in prepared.parts:
        per_sample[part.name] = metrics = per_sample_metrics(part, loglikelihoods)
        raw = {(metric, "none"): values.tolist() for metric, values in metrics.items()}
        aggregated, _ = _compute_task_aggregations(by_name[part.name], raw, prepared.bootstrap_iters)
        entry = results["results"][part.name]
        entry.update({k: v for k, v in aggregated.items() if k in entry})
    args = dict(model_args or {})
    config = results["config"]
    config.update(lm.get_model_info())
    config.update({"model": "hf", "model_args": args or None, "scorer": "fast",
                   "batch_sizes": list(getattr(lm, "batch_sizes", {}).values())})  # fmt: skip
    if suite_record:
        config["ood_nli"] = dict(suite_record)
    results["date"] = date
    return results, per_sample
