"""A run's checkpoints on one loaded model: LoRA adapters swapped on one base, full checkpoints loaded in place.

A worker keeps the model of the run it evaluates (:class:`ModelSession`)
from one unit to the next, instead of loading every checkpoint from scratch:

* **LoRA series.** The first adapter of a run is loaded as lm-eval loads it
  (``HFLM(pretrained=BASE, peft=ADAPTER)``: the base with ``from_pretrained``,
  then PEFT's ``PeftModel.from_pretrained``). Each later adapter of the same
  base replaces the adapter's weights in place (PEFT's
  ``set_peft_model_state_dict``) when its ``adapter_config.json`` matches the
  loaded one but for where it was saved from, else it is loaded beside it and
  the old one deleted (PEFT's ``load_adapter``, ``set_adapter``,
  ``delete_adapter``). The base is read once per worker and run.
* **Full checkpoints.** The next checkpoint's safetensors tensors are copied
  into the loaded model when the checkpoint is the same model: its
  ``config.json`` equal but for ``_name_or_path`` and ``transformers_version``,
  the same tokenizer files, the same tensor names and shapes (tied weights
  excepted), no quantization. Anything else is loaded afresh.
* **Prefetch.** While a checkpoint is scored, a thread reads the next one's
  tensors (:meth:`ModelSession.prefetch`), so that loading it is a copy.
* **Batch size once.** With ``batch_size=auto`` the batch size lm-eval (or the
  verbalizer scorer) finds for the first checkpoint is kept for the run's
  others: same architecture, same tasks.

What lm-eval records about the model (``config.model_args``, the model
information of ``HFLM.get_model_info``) is the checkpoint's, as if it had been
loaded afresh: tests/test_series.py checks that the scores equal those of
loading each checkpoint afresh.

A run is one model: an adapter of another base than the run's first adapter,
or a checkpoint of another architecture than the run's first full checkpoint,
fails its unit with one line naming both (:func:`check_series`).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ood_store._errors import OodStoreError, first_line
from ood_store._evaluate.checkpoints import Checkpoint

#: config.json keys that say where a checkpoint was saved from, not what it computes.
_CONFIG_PROVENANCE = frozenset({"_name_or_path", "transformers_version"})
#: adapter_config.json keys that say where an adapter was saved from, not what it computes.
_ADAPTER_PROVENANCE = frozenset({"base_model_name_or_path", "revision", "inference_mode"})
#: Files of a checkpoint folder that AutoTokenizer reads (the loaded tokenizer must be the next one's too).
_TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "vocab.json",
    "merges.txt", "vocab.txt", "tokenizer.model", "spiece.model", "sentencepiece.bpe.model", "chat_template.jinja",
    "chat_template.json",
)  # fmt: skip

#: How a unit's model was made ready: loaded from scratch, tensors copied in, or an adapter swapped on the base.
LOADS = ("from_pretrained", "in_place", "adapter_swap")


# -- what a run is ---------------------------------------------------------------------------------------------
def read_config(folder: str | Path, name: str = "config.json") -> dict[str, Any] | None:
    """A local checkpoint's ``config.json`` (or ``name``), or None where there is none (a hub model)."""
    path = Path(folder) / name
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def architecture(folder: str | Path) -> str | None:
    """The model class a local full checkpoint names (``architectures``, else ``model_type``), or None."""
    config = read_config(folder)
    if config is None:
        return None
    names = config.get("architectures")
    if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
        return "/".join(names)
    kind = config.get("model_type")
    return kind if isinstance(kind, str) else None


def series_of(checkpoints: Iterable[Checkpoint]) -> dict[str, Any]:
    """What every checkpoint of a run must share (given in step order): the first adapter's base model, the
    first full checkpoint's architecture, and which checkpoints those are."""
    out: dict[str, Any] = {}
    for checkpoint in checkpoints:
        if checkpoint.is_adapter and "base_model" not in out:
            out |= {"base_model": checkpoint.base_model, "base_of": checkpoint.label}
        if not checkpoint.is_adapter and "architecture" not in out and not checkpoint.revision:
            found = architecture(checkpoint.model)
            if found is not None:
                out |= {"architecture": found, "architecture_of": checkpoint.label}
    return out


class NotOfRun(OodStoreError):
    """A checkpoint that is not of its run's model, or an adapter whose base model does not exist."""


def check_series(checkpoint: Checkpoint, series: Mapping[str, Any] | None) -> None:
    """Stop with one line when ``checkpoint`` is not of its run's model (see :func:`series_of`)."""
    if not series:
        return
    if checkpoint.is_adapter and series.get("base_model") not in (None, checkpoint.base_model):
        raise NotOfRun(
            f"{checkpoint.label}: an adapter of {checkpoint.base_model}, but this run's adapters are of "
            f"{series['base_model']} ({series.get('base_of')}): one run is one base model"
        )
    if not checkpoint.is_adapter and not checkpoint.revision and series.get("architecture"):
        found = architecture(checkpoint.model)
        if found is not None and found != series["architecture"]:
            raise NotOfRun(
                f"{checkpoint.label}: a checkpoint of {found}, but this run's checkpoints are of "
                f"{series['architecture']} ({series.get('architecture_of')}): one run is one model"
            )


# -- reading checkpoints ---------------------------------------------------------------------------------------
def weight_files(folder: str | Path) -> list[Path] | None:
    """A local checkpoint's safetensors files (one, or the shards its index names), or None (none, or .bin)."""
    folder = Path(folder)
    single = folder / "model.safetensors"
    if single.is_file():
        return [single]
    index = read_config(folder, "model.safetensors.index.json")
    if index is None or not isinstance(index.get("weight_map"), dict):
        return None
    shards = sorted({folder / str(name) for name in index["weight_map"].values()})
    return shards if shards and all(p.is_file() for p in shards) else None


def adapter_weight_file(folder: str | Path) -> Path | None:
    path = Path(folder) / "adapter_model.safetensors"
    return path if path.is_file() else None


def read_tensors(files: Iterable[Path], materialize: bool = False) -> dict[str, Any]:
    """Every tensor of these safetensors files, on the CPU.

    safetensors maps the file into memory: its bytes are read when a tensor
    is first used. ``materialize`` reads them now, into memory of their own
    (pinned where CUDA is, for fast copies to the GPU): what a background
    read ahead must do, or the copy into the model would read the disk anyway.
    """
    import torch
    from safetensors.torch import load_file

    pin = materialize and torch.cuda.is_available()
    tensors: dict[str, Any] = {}
    for path in files:
        for name, tensor in load_file(str(path), device="cpu").items():
            if materialize:
                tensor = torch.empty_like(tensor, pin_memory=pin).copy_(tensor)
            tensors[name] = tensor
    return tensors


def _tokenizer_digest(folder: str | Path) -> str:
    digest = hashlib.sha256()
    for name in _TOKENIZER_FILES:
        path = Path(folder) / name
        if path.is_file():
            digest.update(name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _without(config: Mapping[str, Any] | None, keys: frozenset[str]) -> dict[str, Any] | None:
    return None if config is None else {k: v for k, v in config.items() if k not in keys}


class Prefetch:
    """The tensors of one checkpoint (or adapter), read by a background thread."""

    def __init__(self, key: str, files: list[Path]):
        self.key = key
        self.tensors: dict[str, Any] | None = None
        self.error: BaseException | None = None
        self.seconds = 0.0
        self._thread = threading.Thread(target=self._read, args=(files,), name="ood-store-prefetch", daemon=True)
        self._thread.start()

    def _read(self, files: list[Path]) -> None:
        started = time.perf_counter()
        try:
            self.tensors = read_tensors(files, materialize=True)
        except Exception as exc:  # read again (and failing, reported) when the checkpoint is loaded
            self.error = exc
        self.seconds = time.perf_counter() - started

    def take(self) -> dict[str, Any] | None:
        self._thread.join()
        return self.tensors


# -- the session -----------------------------------------------------------------------------------------------
@dataclass
class Loaded:
    """The model a session holds, and what it was loaded from."""

    lm: Any  # lm_eval.models.huggingface.HFLM (or the verbalizer scorer's subclass)
    key: tuple[Any, ...]  # the run and the settings the model was built with
    checkpoint: Checkpoint
    config: dict[str, Any] | None = None  # full checkpoint: its config.json without provenance
    tokenizer: str | None = None  # full checkpoint: digest of its tokenizer files
    adapter_config: dict[str, Any] | None = None  # adapter: its adapter_config.json without provenance
    adapter_name: str = "default"
    adapters: int = 0  # adapters loaded beside the first (to name the next one)


@dataclass
class LoadReport:
    """How a unit's model was made ready and how long it took (seconds waiting for the prefetch included)."""

    how: str  # one of LOADS
    seconds: float
    prefetched: bool = False
    notes: list[str] = field(default_factory=list)  # why a checkpoint was loaded afresh within a run


class ModelSession:
    """The model one worker holds for the run it evaluates; see the module documentation.

    Every checkpoint goes through :meth:`load`. ``enabled=False`` loads every
    checkpoint afresh and reads nothing ahead (as before sessions existed);
    the default is :attr:`reuse`.
    """

    #: Whether sessions keep models by default (benchmarks/evaluate_series.py turns it off for its baseline).
    reuse = True

    def __init__(self, enabled: bool | None = None):
        self.enabled = self.reuse if enabled is None else enabled
        self.held: Loaded | None = None
        self._prefetch: Prefetch | None = None
        self.loads: list[LoadReport] = []
        self._batch_sizes: dict[tuple[Any, ...], Any] = {}  # what batch_size=auto found, by run and settings

    # -- prefetch ---------------------------------------------------------------------------------------------
    def prefetch(self, checkpoint: Checkpoint | None) -> None:
        """Start reading ``checkpoint``'s tensors in the background (None, a hub model or one already read: no-op)."""
        if not self.enabled or checkpoint is None or checkpoint.revision:
            return
        if self._prefetch is not None and self._prefetch.key == checkpoint.model:
            return
        files = [adapter_weight_file(checkpoint.model)] if checkpoint.is_adapter else weight_files(checkpoint.model)
        if not files or any(f is None for f in files):
            return
        self._prefetch = Prefetch(checkpoint.model, [f for f in files if f is not None])

    def _prefetched(self, checkpoint: Checkpoint) -> dict[str, Any] | None:
        fetch, self._prefetch = self._prefetch, None
        if fetch is None or fetch.key != checkpoint.model:
            if fetch is not None:
                fetch.take()  # do not leave a thread reading into memory nobody wants
            return None
        return fetch.take()

    # -- loading ----------------------------------------------------------------------------------------------
    def load(self, checkpoint: Checkpoint, key: tuple[Any, ...], build: Any) -> tuple[Any, LoadReport]:
        """lm-eval's model holding ``checkpoint``'s weights, and how it got them.

        ``key`` names the run and the settings the model is built with; a
        model held under another key is let go first. ``build()`` loads the
        checkpoint afresh (lm-eval's own loading).
        """
        started = time.perf_counter()
        held = self.held if self.held is not None and self.held.key == key and self.enabled else None
        if held is None:
            self.release()
        notes: list[str] = []
        tensors = self._prefetched(checkpoint)
        prefetched = tensors is not None
        if held is not None:
            try:
                how = self._reuse(held, checkpoint, tensors, notes)
            except BaseException:
                self.release()  # what the held model holds now is not known
                raise
            if how is not None:
                report = LoadReport(how, time.perf_counter() - started, prefetched and how != "from_pretrained", notes)
                self.loads.append(report)
                return held.lm, report
            self.release()
        lm = build()
        if self.enabled and key in self._batch_sizes:
            _set_batch_size(lm, self._batch_sizes[key])
        self.held = _describe(lm, key, checkpoint)
        report = LoadReport("from_pretrained", time.perf_counter() - started, False, notes)
        self.loads.append(report)
        return lm, report

    def _reuse(self, held: Loaded, checkpoint: Checkpoint, tensors: dict[str, Any] | None, notes: list[str]):
        if checkpoint.is_adapter and held.checkpoint.is_adapter:
            if (checkpoint.base_model, checkpoint.revision) != (held.checkpoint.base_model, held.checkpoint.revision):
                return None
            _swap_adapter(held, checkpoint, tensors)
            _as_loaded(held, checkpoint)
            return "adapter_swap"
        if checkpoint.is_adapter or held.checkpoint.is_adapter or checkpoint.revision or held.checkpoint.revision:
            return None
        why = _not_in_place(held, checkpoint)
        if why is None:
            if tensors is None:
                files = weight_files(checkpoint.model)
                tensors = read_tensors(files) if files else None
            why = "no safetensors weights" if tensors is None else _copy_in_place(held.lm.model, tensors)
        if why is not None:
            notes.append(f"{checkpoint.label}: loaded afresh ({why})")
            return None
        held.config = _without(read_config(checkpoint.model), _CONFIG_PROVENANCE)
        _as_loaded(held, checkpoint)
        return "in_place"

    def keep_batch_size(self) -> None:
        """After an evaluation with ``batch_size=auto``: keep the batch size found for the rest of the run.

        lm-eval's ``hf`` model looks for it again in every evaluation (a few
        forward passes of the longest request at decreasing sizes), the
        verbalizer scorer once per model object; the run's other checkpoints
        have the same architecture and tasks, so it is found once per run and
        worker, even when a checkpoint of the run is loaded afresh.
        """
        if self.held is None or not self.enabled:
            return
        found = _found_batch_size(self.held.lm)
        if found is not None:
            self._batch_sizes[self.held.key] = found
            _set_batch_size(self.held.lm, found)

    def release(self) -> None:
        """Let go of the held model (between runs, and at the end)."""
        self.held = None
        from ood_store._evaluate.harness import release_memory

        release_memory()

    def close(self) -> None:
        if self._prefetch is not None:
            self._prefetch.take()
            self._prefetch = None
        self.release()

    def __enter__(self) -> ModelSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _describe(lm: Any, key: tuple[Any, ...], checkpoint: Checkpoint) -> Loaded:
    loaded = Loaded(lm, key, checkpoint)
    if checkpoint.is_adapter:
        loaded.adapter_config = _without(read_config(checkpoint.model, "adapter_config.json"), _ADAPTER_PROVENANCE)
    elif not checkpoint.revision:
        loaded.config = _without(read_config(checkpoint.model), _CONFIG_PROVENANCE)
        loaded.tokenizer = _tokenizer_digest(checkpoint.model)
    return loaded


def _not_in_place(held: Loaded, checkpoint: Checkpoint) -> str | None:
    """Why ``checkpoint`` cannot be copied into the held full model, or None."""
    config = _without(read_config(checkpoint.model), _CONFIG_PROVENANCE)
    if config is None or held.config is None:
        return "no config.json"
    if config.get("quantization_config") or held.config.get("quantization_config"):
        return "a quantized model"
    if config != held.config:
        changed = sorted(k for k in set(config) | set(held.config) if config.get(k) != held.config.get(k))
        return f"its config.json differs from the loaded checkpoint's in {', '.join(changed[:3])}"
    if _tokenizer_digest(checkpoint.model) != held.tokenizer:
        return "its tokenizer differs from the loaded checkpoint's"
    return None


def _copy_in_place(model: Any, tensors: Mapping[str, Any]) -> str | None:
    """Copy ``tensors`` into ``model``'s parameters and buffers; None, or why not (then nothing is changed)."""
    import torch

    state = model.state_dict()
    unexpected = sorted(set(tensors) - set(state))
    if unexpected:
        return f"a tensor the model does not have: {unexpected[0]}"
    loaded = {state[name].data_ptr() for name in tensors}
    untied = sorted(n for n in set(state) - set(tensors) if state[n].data_ptr() not in loaded)
    if untied:
        return f"no tensor for {untied[0]}"
    first: dict[int, str] = {}
    for name, tensor in tensors.items():
        if tuple(tensor.shape) != tuple(state[name].shape):
            return f"{name} has shape {tuple(tensor.shape)}, not {tuple(state[name].shape)}"
        tied = first.setdefault(state[name].data_ptr(), name)
        if tied != name and not torch.equal(tensors[tied], tensor):  # which one a fresh load keeps is its business
            return f"{name} and {tied} are one tensor in the model but differ in the checkpoint"
    with torch.no_grad():
        for name, tensor in tensors.items():
            state[name].copy_(tensor)
    return None


def _swap_adapter(held: Loaded, checkpoint: Checkpoint, tensors: dict[str, Any] | None) -> None:
    """Give the held PEFT model ``checkpoint``'s adapter weights."""
    from peft.utils import load_peft_weights, set_peft_model_state_dict

    model = held.lm.model
    config = _without(read_config(checkpoint.model, "adapter_config.json"), _ADAPTER_PROVENANCE)
    if config is not None and config == held.adapter_config and not checkpoint.revision:
        weights = tensors if tensors is not None else load_peft_weights(checkpoint.model, device="cpu")
        result = set_peft_model_state_dict(model, weights, adapter_name=held.adapter_name)
        unexpected = list(getattr(result, "unexpected_keys", []) or [])
        missing = [k for k in getattr(result, "missing_keys", []) or [] if f".{held.adapter_name}." in k]
        if not unexpected and not missing:
            model.eval()
            return
    # Another adapter configuration (rank, targets, ...): loaded beside the old one, which is then deleted.
    held.adapters += 1
    name = f"checkpoint{held.adapters}"
    try:
        model.load_adapter(checkpoint.model, adapter_name=name, **({"revision": checkpoint.revision} if
                                                                     checkpoint.revision else {}))  # fmt: skip
    except Exception as exc:
        raise OodStoreError(f"{checkpoint.label}: cannot load the adapter: {first_line(exc)}") from None
    model.set_adapter(name)
    model.delete_adapter(held.adapter_name)
    model.eval()
    held.adapter_name = name
    held.adapter_config = config


def _as_loaded(held: Loaded, checkpoint: Checkpoint) -> None:
    """What lm-eval reports about the model now names ``checkpoint`` (as a fresh load would)."""
    lm = held.lm
    held.checkpoint = checkpoint
    if checkpoint.is_adapter:
        lm.peft = checkpoint.model
    else:
        lm.pretrained = checkpoint.model
        base = lm.model.get_base_model() if hasattr(lm.model, "get_base_model") else lm.model
        base.config._name_or_path = checkpoint.model
    lm.revision = str(checkpoint.revision or "main")


def _found_batch_size(lm: Any) -> Any:
    """What ``batch_size=auto`` found in ``lm`` (None: a number was given, or nothing was found yet)."""
    if hasattr(lm, "_auto_rows"):  # the verbalizer scorer: (rows, at length)
        return lm._auto_rows
    if getattr(lm, "batch_schedule", 1) == 1 and getattr(lm, "batch_size_per_gpu", None) in ("auto", None):
        found = getattr(lm, "batch_sizes", None) or {}
        return int(max(found.values())) if found else None
    return getattr(lm, "_ood_store_found", None)


def _set_batch_size(lm: Any, found: Any) -> None:
    if hasattr(lm, "_auto_rows"):
        lm._auto_rows = found
        lm.batch_sizes = {0: found[0]}
    elif getattr(lm, "batch_schedule", 1) == 1 and getattr(lm, "batch_size_per_gpu", None) == "auto":
        lm.batch_size_per_gpu = int(found)  # lm-eval then looks no more; batch_sizes still says what was found
        lm.batch_sizes = {0: int(found)}
        lm._ood_store_found = int(found)


def unit_model(session: ModelSession, unit: Any, checkpoint: Checkpoint, tasks: list[Any], timings: Any) -> Any:
    """lm-eval's model for one unit (a :class:`~ood_store._evaluate.workdir.Unit`), through ``session``.

    Checks first what fails the unit in one line: a checkpoint that is not of
    its run's model, an adapter whose base model does not exist, a task the
    verbalizer scorer refuses. ``timings`` gets how the model was loaded and how long it took.
    """
    from ood_store._evaluate.fast import fast_refusal
    from ood_store._evaluate.harness import hf_arguments
    from ood_store._evaluate.scorer import ScorerRefused, hf_model, refusal

    check_series(checkpoint, unit.series)
    if unit.scorer in ("verbalizer", "fast"):
        for task in tasks:
            why = (refusal if unit.scorer == "verbalizer" else fast_refusal)(task)
            if why:
                raise ScorerRefused(why)
    base = checkpoint.base_model
    if base is not None and _looks_local(base) and not Path(base).expanduser().is_dir():
        raise NotOfRun(
            f"{checkpoint.label}: its base model {base} does not exist (adapter_config.json's "
            "base_model_name_or_path; `base_model` names another)"
        )
    arguments = hf_arguments(checkpoint, unit.options, unit.dtype, unit.max_length, unit.truncation)
    settings = {k: v for k, v in arguments.items() if k not in ("pretrained", "peft", "revision")}  # with max_length
    key = (unit.run, unit.scorer, json.dumps(settings, sort_keys=True, default=str))

    def build() -> Any:
        try:
            return hf_model(unit.scorer, **arguments)
        except OSError as exc:
            if base is None:
                raise
            raise OodStoreError(f"{checkpoint.label}: cannot load its base model {base}: {first_line(exc)}") from None

    lm, report = session.load(checkpoint, key, build)
    timings.load, timings.load_s, timings.prefetched = report.how, report.seconds, report.prefetched
    timings.note = "; ".join(report.notes) or None
    return lm


def _looks_local(name: str) -> bool:
    """Whether a model name is a path (absolute, ``./``, ``~``, or more than ``org/name``) rather than a hub id."""
    return name.startswith(("/", ".", "~")) or name.count("/") > 1 or "\\" in name
