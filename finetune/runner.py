"""``finetune``: every run of a study, checked before any trains, trained inline or by evaluate's executors, resumably;
then the study file that ``ood-store evaluate --study`` takes as it is.

1. **Check** (nothing is written until all of it passes): the study file and
   options (:mod:`~ood_store._finetune.config`); each base model's tokenizer
   and the verbalizers (one token each, after every prompt, as lm-eval
   encodes them); each training split and its size against the shots; the
   ``TrainingArguments`` and ``LoraConfig`` of every run; a run folder trained
   before with other settings.
2. **Write** each new run's folder: the resolved run, the shots' indices and
   their digest, the tokenized examples, versions, the project's git commit.
3. **Train** the runs that are not finished: inline (in this process), or
   through evaluate's executors (``local``, ``slurm``, ``ray``), each run a
   unit of a work folder (``OUTPUT_DIR/finetune-work``). A run resumes from its
   last checkpoint, so running the same command again after a kill, a
   Ctrl-C or a time limit continues where it stopped.
4. **The study file** ``OUTPUT_DIR/study.toml``: one ``[[runs]]`` entry per
   finished run with its checkpoints, its attributes and, where the suite is
   evaluated, its ``[runs.suite]`` prompt variant.
"""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

from ood_store._counts import n
from ood_store._errors import InputError, OodStoreError, first_line, install_hint
from ood_store._evaluate import executors
from ood_store._evaluate.workdir import Failure, WorkDir, read_json, write_json
from ood_store._finetune import config as configs
from ood_store._finetune.config import FinetuneStudy, RunConfig
from ood_store._finetune.folder import EXAMPLES, INDICES, RECORD, RunFolder
from ood_store._names import did_you_mean, run_folder_name
from ood_store._progress import progress_bar

DEFAULT_OUTPUT_DIR = Path("finetune-runs")
STUDY_FILE = "study.toml"
WORK_DIR = "finetune-work"
WORKER = "ood_store._finetune.worker"
#: How often the driver looks at the work folder while workers train elsewhere.
POLL_S = 1.0
#: The executor options finetune takes (evaluate's).
EXECUTOR_OPTIONS = tuple(executors.OWNERS)

Status = Literal["trained", "complete", "failed", "pending"]


@dataclass(frozen=True)
class RunOutcome:
    """What happened to one run: trained now, complete before, failed, or pending (interrupted, or not started)."""

    run: str
    folder: Path
    status: Status
    steps: int | None = None
    checkpoints: list[int] = field(default_factory=list)  # the steps saved
    seconds: float = 0.0
    resumed_from: int | None = None
    error: str | None = None


@dataclass
class FinetuneReport:
    runs: list[RunOutcome]
    output_dir: Path
    study_file: Path | None = None
    executor: str = "inline"
    jobs: str | None = None
    collected: list[Any] = field(default_factory=list)  # in-loop evaluations stored (ood_store._evaluate.collect)

    def of(self, status: Status) -> list[RunOutcome]:
        return [r for r in self.runs if r.status == status]

    @property
    def failed(self) -> list[RunOutcome]:
        return self.of("failed")


class FinetuneInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`finetune`; ``report`` says which runs finished and where each other one was saved."""

    def __init__(self, report: FinetuneReport):
        super().__init__("finetuning interrupted")
        self.report = report


@dataclass(frozen=True)
class _Prepared:
    config: RunConfig
    folder: Path
    record: dict[str, Any]
    examples: list[Any]
    steps: int  # the optimizer steps expected (this machine's count)
    new: bool  # its folder is written now


def finetune(
    study: str | os.PathLike[str] | FinetuneStudy | None = None,
    *,
    output_dir: str | os.PathLike[str] | None = None,
    executor: str | None = None,
    store: str | os.PathLike[str] | None = None,
    progress: bool = False,
    **options: Any,
) -> FinetuneReport:
    """Train every run of a finetuning study (resuming unfinished ones) and write the study file for ``evaluate``.

    Parameters
    ----------
    study
        A finetuning study file (TOML or YAML; see
        :mod:`ood_store._finetune.config`), a loaded study, or None to give
        everything as ``options``.
    output_dir
        Where the runs' folders, the work folder and ``study.toml`` go
        (default: the study's ``output_dir``, else ``finetune-runs``).
    executor
        ``inline`` (this process, the default), ``local``, ``slurm`` or
        ``ray``, as for ``evaluate``; the study's ``[executor]`` table otherwise.
    store
        The store the in-loop evaluation's scores go to (``in_loop``; see
        :mod:`ood_store._finetune.inloop`): they are stored when the runs end,
        and ``ood-store collect OUTPUT/lm-eval-results-work`` stores them too.
    progress
        One progress bar over the runs' steps, with an ETA, on standard error when it is a terminal.
    options
        Top-level keys of a study (``base_model``, ``in_domain``, ``pattern``,
        ``shots``, ``data_seeds``, ``training``, ``lora``, ...; they win over the
        file's) and evaluate's executor options (``workers``,
        ``slurm_partition``, ``gpus_per_task``, ...).

    Raises
    ------
    InputError
        For a bad study, option, tokenizer, verbalizer, training split or
        argument, before anything is written or trained.
    FinetuneInterrupted
        On Ctrl-C; its ``report`` says what was saved.
    """
    executor_options = {k: options.pop(k) for k in list(options) if k in EXECUTOR_OPTIONS}
    loaded = study if isinstance(study, FinetuneStudy) else configs.load_finetune_study(study, **options)
    chosen = _executor_settings(loaded, executor, executor_options)
    require_finetune_extra({r.method for r in loaded.runs})
    output = Path(output_dir or loaded.output_dir or DEFAULT_OUTPUT_DIR).resolve()
    if loaded.path is not None and (output / STUDY_FILE).resolve() == loaded.path.resolve():
        raise InputError(
            None, None, f"{output / STUDY_FILE} would be overwritten by the study file for evaluate: give another "
            "output folder", parameter="output_dir",
        )  # fmt: skip
    if loaded.keep_checkpoints == "none" and not loaded.in_loop:
        raise loaded.error(None, "keep_checkpoints", "none keeps no checkpoint to evaluate: evaluate in the loop "
                           "(in_loop) or keep the weights")  # fmt: skip
    if loaded.in_loop and store is None:
        raise InputError(None, None, "the in-loop evaluation needs the store its scores go to", parameter="store")
    prepared = _prepare(loaded, output)
    if loaded.in_loop:
        _check_in_loop(loaded)
    backend = None if chosen.name == "inline" else executors.create(chosen)
    if backend is not None:
        backend.check()
    _write(loaded, output, prepared)
    report = FinetuneReport([], output, executor=chosen.name)
    from ood_store._finetune.worker import TrainingWorkDir

    work = TrainingWorkDir(output / WORK_DIR)
    todo = [p for p in prepared if RunFolder(p.folder).done() is None]
    outcomes: dict[str, RunOutcome] = {}
    if todo:
        work.create()
        for p in todo:
            spec = _in_loop(loaded, output, p, store) if loaded.in_loop else None
            unit = {"run": p.config.run, "folder": str(p.folder), "keep": loaded.keep_checkpoints, "in_loop": spec}
            write_json(work.path / "runs" / f"{_unit(p)}.json", unit)
        driver = _Driver(work, todo, backend, outcomes, report)
        try:
            driver.run(progress)
        except KeyboardInterrupt:
            report.runs = [outcomes.get(p.config.run) or _outcome(p, "pending") for p in prepared]
            if loaded.in_loop:  # what was scored before Ctrl-C
                report.collected = _collect_in_loop(output, store)
            raise FinetuneInterrupted(report) from None
    report.runs = [outcomes.get(p.config.run) or _outcome(p, "complete") for p in prepared]
    report.study_file = write_study_file(loaded, output, report)
    if loaded.in_loop:
        report.collected = _collect_in_loop(output, store)
    return report


def _in_loop(study: FinetuneStudy, output: Path, p: _Prepared, store: str | os.PathLike[str] | None) -> dict[str, Any]:
    from ood_store._evaluate.suite.testsets import expand
    from ood_store._finetune.inloop import spec_of

    assert store is not None
    suite = any(expand(t) is not None for t in study.tasks)
    variant = {k: p.config.variant.record()[k] for k in ("pattern", "verbalizers", "neutral")} if suite else None
    return spec_of(store, output, study.tasks, study.include_paths, study.data_dir, variant, study.evaluate,
                   attributes(p.config, p.record), p.record["length"], p.config.truncation)  # fmt: skip


def _check_in_loop(study: FinetuneStudy) -> None:
    """Every task of the study is one the verbalizer scorer can score exactly (else one line naming it)."""
    from ood_store._evaluate.scorer import refusal, suite_tasks
    from ood_store._evaluate.suite.testsets import expand

    seen: set[str] = set()
    for run in study.runs:
        suite = any(expand(t) is not None for t in study.tasks)
        key = run.variant.key if suite else ""
        if key in seen:
            continue
        seen.add(key)
        with suite_tasks(study.tasks, variant=run.variant if suite else None, data_dir=study.data_dir,
                         include_paths=study.include_paths) as tasks:  # fmt: skip
            for task in tasks.objects:
                why = refusal(task)
                if why:
                    raise study.error(None, "tasks", f"not scored in the loop: {why}")


def _collect_in_loop(output: Path, store: str | os.PathLike[str] | None) -> list[Any]:
    """Store what the in-loop evaluation finished into ``store`` (idempotent: stored units are not stored again)."""
    from ood_store._evaluate.collect import collect

    work = WorkDir(output / "lm-eval-results-work")
    return collect(work, store=None if store is None else Path(store)) if work.exists() else []


def require_finetune_extra(methods: set[str] | None = None) -> None:
    """Stop with one line naming the finetune extra when what it installs cannot be imported."""
    modules = ["torch", "transformers", "accelerate", "lm_eval", "tomli_w"]
    if "lora" in (methods or {"lora"}):
        modules.append("peft")
    missing = []
    for module in modules:
        try:
            __import__(module)
        except ImportError:
            missing.append(module.replace("_", "-"))
    if missing:
        raise OodStoreError(
            f"finetuning needs {', '.join(missing)}: install the finetune extra, {install_hint('finetune')}"
        )


def _executor_settings(study: FinetuneStudy, name: str | None, given: Mapping[str, Any]) -> executors.ExecutorSettings:
    table = dict(study.executor)
    chosen = name or table.pop("name", None)
    if name is not None and name != study.executor.get("name"):
        table = {}  # the study's options are for its own executor
    table.pop("name", None)
    merged = {**table, **{k: v for k, v in given.items() if v is not None}}
    if (chosen or "inline") == "slurm":
        merged.setdefault("units_per_task", 1)  # a run is hours of work: one per array task
    return executors.settings(chosen, **merged)


def _prepare(study: FinetuneStudy, output: Path) -> list[_Prepared]:
    """Every check that needs the models' tokenizers, the data or transformers, for every run; nothing written."""
    from ood_store._finetune import data, examples, trainer

    tokenizers: dict[str, Any] = {}
    lengths: dict[str, int] = {}
    splits: dict[tuple[str, str | None, str], data.TrainingSplit] = {}
    out = []
    for run in study.runs:
        if run.base_model not in tokenizers:
            tokenizers[run.base_model], lengths[run.base_model] = _tokenizer(study, run)
        tokenizer = tokenizers[run.base_model]
        key = (run.in_domain, run.testset, run.variant.neutral)
        if key not in splits:
            try:
                splits[key] = data.load_split(run.in_domain, run.testset, run.variant.neutral, study.data_dir)
            except InputError:
                raise
            except OodStoreError as exc:  # a label the suite's map does not know
                raise study.error(run, "in_domain", exc.message) from None
        split = splits[key]
        try:
            indices = data.sample(split.answers, run.shots, run.data_seed, run.balanced)
        except ValueError as exc:
            raise study.error(run, "balanced" if run.balanced else "shots", f"{exc} ({split.source})") from None
        length = run.max_length or lengths[run.base_model]
        try:
            built, verbalizer_ids = examples.build(split.rows, indices, run.variant, tokenizer, length, run.truncation)
        except examples.VerbalizerError as exc:
            raise study.error(run, "verbalizer", f"{exc} ({run.base_model})") from None
        folder = output / run_folder_name(run.run)
        args = _arguments(study, run, folder)
        if run.method == "lora":
            try:
                trainer.lora_config(run)
            except (TypeError, ValueError) as exc:
                raise _table_error(study, run, "lora", exc, "peft.LoraConfig") from None
        steps = trainer.expected_steps(args, len(built))
        if run.schedule.kind == "manual" and run.schedule.manual and run.schedule.manual[-1] > steps:
            raise study.error(run, "schedule", f"step {run.schedule.manual[-1]} is after the run's last step ({steps})")
        record = {
            "config": run.record(),
            "keep_checkpoints": study.keep_checkpoints,
            "in_loop": study.in_loop,
            "sha256": data.digest(indices),
            "verbalizer_ids": list(verbalizer_ids),
            "length": length,
            "data": {"source": split.source, "rows": len(split.rows)},
            "expected_steps": steps,
        }
        new = not (folder / RECORD).is_file()
        if not new:
            _check_same(study, run, folder)
        out.append(_Prepared(run, folder, {**record, "indices": indices}, built, steps, new))
    return out


def _tokenizer(study: FinetuneStudy, run: RunConfig) -> tuple[Any, int]:
    from transformers import AutoConfig, AutoTokenizer

    from ood_store._finetune.examples import max_length

    try:
        tokenizer = AutoTokenizer.from_pretrained(run.base_model)
        model_config = AutoConfig.from_pretrained(run.base_model)
    except (OSError, ValueError) as exc:
        raise study.error(run, "base_model", f"cannot load {run.base_model!r}: {first_line(exc)}") from None
    return tokenizer, max_length(model_config, tokenizer)


def _arguments(study: FinetuneStudy, run: RunConfig, folder: Path) -> Any:
    import dataclasses

    from transformers import TrainingArguments

    from ood_store._finetune.trainer import training_arguments

    known = {f.name for f in dataclasses.fields(TrainingArguments)}
    for key in run.training:
        if key not in known:
            hint = did_you_mean(key, sorted(known))
            raise _key_error(study, run, "training", key, f"not an argument of transformers.TrainingArguments{hint}")
    try:
        return training_arguments(run, folder)
    except (TypeError, ValueError, ImportError) as exc:
        raise _table_error(study, run, "training", exc, "transformers.TrainingArguments") from None


def _key_error(study: FinetuneStudy, run: RunConfig, table: str, key: str, message: str) -> InputError:
    """An error about ``key`` of the run's ``table`` (``training``, ``lora``): the file's field, or the argument's."""
    error = study.error(run, table, message)
    if error.path is None:
        return InputError(None, key, message, parameter=error.parameter)
    return InputError(error.path, f"{error.field}.{key}", message)


def _table_error(study: FinetuneStudy, run: RunConfig, table: str, exc: Exception, what: str) -> InputError:
    text = first_line(exc)
    if "unexpected keyword argument" in text:
        key = text.rsplit("'", 2)[-2] if text.count("'") >= 2 else "?"
        return _key_error(study, run, table, key, f"not an argument of {what}")
    return study.error(run, table, f"{what} refused it: {text}")


def _check_same(study: FinetuneStudy, run: RunConfig, folder: Path) -> None:
    """A run folder trained with other settings is not resumed with these (one line saying what differs)."""
    before = RunFolder(folder).record()["config"]
    now = run.record()
    for key, value in now.items():
        if key == "attributes" or before.get(key) == value:
            continue
        detail = key
        if isinstance(value, dict) and isinstance(before.get(key), dict):
            changed = sorted(k for k in {*value, *before[key]} if value.get(k) != before[key].get(k))
            detail = f"{key}.{changed[0]}" if changed else key
        raise InputError(
            str(folder), detail, "this run was trained with another value: give another output folder, or remove this "
            "one to train the run again",
        )  # fmt: skip


def _write(study: FinetuneStudy, output: Path, prepared: list[_Prepared]) -> None:
    """Each new run's folder (see :mod:`~ood_store._finetune.trainer`); a run folder is written whole or not at all."""
    import json

    from ood_store._finetune.data import digest

    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(str(output), None, f"cannot make the output folder: {exc.strerror}") from None
    provenance = {"versions": _versions(), "git": _git(study.path.parent if study.path else Path.cwd())}
    for p in prepared:
        if not p.new:
            continue
        tmp = p.folder.with_name(f".{p.folder.name}.tmp")
        if tmp.exists():
            import shutil

            shutil.rmtree(tmp)
        tmp.mkdir()
        indices = p.record.pop("indices")
        write_json(tmp / INDICES, {"indices": indices, "sha256": digest(indices), "rule": _rule(p.config),
                                   "rows": p.record["data"]["rows"], "source": p.record["data"]["source"]})  # fmt: skip
        (tmp / EXAMPLES).write_text("".join(json.dumps(e.record()) + "\n" for e in p.examples), "utf-8")
        write_json(tmp / RECORD, {**p.record, **provenance, "created": time.time()})
        os.replace(tmp, p.folder)


def _rule(run: RunConfig) -> str:
    if run.balanced:
        return "balanced: choice over each answer's rows, entailed first (np.random.RandomState(data_seed))"
    return "llmft: np.random.seed(data_seed); np.random.choice(len(train), size=shots, replace=False)"


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for package in ("ood-store", "torch", "transformers", "peft", "accelerate", "lm_eval", "datasets", "numpy"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = None
    return out


def _git(folder: Path) -> dict[str, Any] | None:
    """The commit of the git repository holding ``folder`` (the study's project), and whether its tracked files
    have changes not committed (``dirty``); None outside a repository."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(status.strip())}


def _unit(p: _Prepared) -> str:
    return run_folder_name(p.config.run)


def _outcome(p: _Prepared, status: Status, **values: Any) -> RunOutcome:
    folder = RunFolder(p.folder)
    done = folder.done()
    if done is not None and status in ("complete", "trained"):
        values = {"steps": done["steps"], "checkpoints": done["checkpoints"], **values}
    elif status == "pending":
        values = {"checkpoints": folder.checkpoints(), "steps": _steps_of(p), **values}
    return RunOutcome(p.config.run, p.folder, status, **values)


def _steps_of(p: _Prepared) -> int:
    schedule = read_json(p.folder / "schedule.json")
    return int(schedule["max_steps"]) if schedule else p.steps


class _Driver:
    """Trains the runs, inline or through an executor, and records each outcome; one progress bar over the steps."""

    def __init__(
        self,
        work: WorkDir,
        runs: list[_Prepared],
        backend: executors.Executor | None,
        outcomes: dict[str, RunOutcome],
        report: FinetuneReport,
    ):
        self.work, self.runs, self.backend, self.outcomes, self.report = work, runs, backend, outcomes, report
        self.done_steps: dict[str, int] = {}
        self.advance: Any = None

    def run(self, progress: bool) -> None:
        attempt = self.work.start_attempt([_unit(p) for p in self.runs], self.report.executor)
        total = sum(_steps_of(p) for p in self.runs)
        label = f"finetuning {n(len(self.runs), 'run')}"
        with progress_bar(progress, total, label) as self.advance:
            jobs = None
            try:
                if self.backend is None:
                    self._inline(attempt)
                else:
                    jobs = self.backend.submit(self.work, attempt, len(self.runs), False, WORKER)
                    self.work.record_jobs(attempt, jobs.description)
                    self.report.jobs = jobs.description
                    self._watch(attempt, jobs)
            except KeyboardInterrupt:
                if jobs is not None:
                    jobs.cancel()
                self._collect(attempt)
                raise
            finally:
                if jobs is not None:
                    jobs.close()

    def _step(self, p: _Prepared, step: int, max_steps: int) -> None:
        before = self.done_steps.get(p.config.run, 0)
        self.done_steps[p.config.run] = step
        self.advance(max(0, step - before), f"{p.config.run}: step {step} of {max_steps}")

    def _inline(self, attempt: str) -> None:
        from ood_store._finetune.worker import run_unit

        for p in self.runs:
            unit = _unit(p)
            hear = functools.partial(self._step, p)
            result = run_unit(self.work, unit, attempt, self.work.claim(attempt, unit), hear)
            self._finish(p, result.ok, result.error)

    def _finish(self, p: _Prepared, ok: bool, error: str | None) -> None:
        if ok:
            marker = self.work.done(_unit(p))
            seconds, resumed_from = (0.0, None) if marker is None else (marker.seconds, marker.resumed_from)
            self.outcomes[p.config.run] = _outcome(p, "trained", seconds=seconds, resumed_from=resumed_from)
        else:
            self.outcomes[p.config.run] = _outcome(p, "failed", error=error or "failed")

    def _watch(self, attempt: str, jobs: executors.Jobs) -> None:
        while True:
            finished = jobs.finished()
            self._collect(attempt)
            if finished or len(self.outcomes) == len(self.runs):
                break
            time.sleep(POLL_S)
        lost = [p for p in self.runs if p.config.run not in self.outcomes]
        why = "; ".join(jobs.errors()) or "every worker stopped without finishing it"
        for p in lost:
            error = f"not finished: {why} (running the same command again resumes it from its last checkpoint)"
            self.work.mark_failed(Failure(unit=_unit(p), error=error, attempt=attempt))
            self._finish(p, False, error)

    def _collect(self, attempt: str) -> None:
        for p in self.runs:
            if p.config.run in self.outcomes:
                continue
            unit = _unit(p)
            now = read_json(self.work.path / "progress" / f"{unit}.json")
            if now is not None:
                self._step(p, int(now["step"]), int(now["max_steps"]))
            if self.work.done(unit) is not None:
                self._finish(p, True, None)
                continue
            failure = self.work.failed(unit)
            if failure is not None and failure.attempt == attempt:
                self._finish(p, False, failure.error)


def write_study_file(study: FinetuneStudy, output: Path, report: FinetuneReport) -> Path | None:
    """``OUTPUT/study.toml`` for ``ood-store evaluate --study``: every finished run with checkpoints, its attributes
    and the prompt it was trained with: (where suite tasks are evaluated) its prompt variant, and its prompt length
    and cut side (``max_length``, ``truncation``; right truncation with the verbalizer scorer, the one that can cut
    that side). None when no run has checkpoints to evaluate."""
    import tomli_w

    from ood_store._evaluate.suite.testsets import expand

    by_name = {r.run: r for r in study.runs}
    suite = any(expand(t) is not None for t in study.tasks)
    entries = []
    for outcome in report.runs:
        folder = RunFolder(outcome.folder)
        done = folder.done()
        if done is None or done.get("kept") == "none":
            continue
        run = by_name[outcome.run]
        record = folder.record()
        entry: dict[str, Any] = {
            "run": run.run,
            "checkpoints": [f"{outcome.folder.name}/checkpoint-{s}" for s in done["checkpoints"]],
            "attributes": attributes(run, record),
        }
        # The prompt as trained: its length and cut side too, so that evaluation cannot see another one.
        length = {"max_length": record["length"], "truncation": run.truncation}
        if run.truncation != "left":  # lm-eval's own scorer cuts prompts from the left only
            entry["scorer"] = "verbalizer"
        if suite:
            variant = run.variant
            entry["suite"] = {"pattern": variant.pattern, "verbalizer": list(variant.verbalizers),
                              "neutral": variant.neutral, **length}  # fmt: skip
        else:
            entry.update(length)
        entries.append(entry)
    if not entries:
        return None
    data: dict[str, Any] = {"tasks": study.tasks}
    if study.include_paths:
        data["include_path"] = study.include_paths
    if study.data_dir is not None:
        data["data_dir"] = study.data_dir
    data["output_dir"] = "lm-eval-results"
    data.update(study.evaluate)
    data["runs"] = entries
    source = f" from {study.path}" if study.path else ""
    header = (
        f"# Written by ood-store finetune{source}: every run's checkpoints, evaluated with the prompt they were\n"
        f"# trained with. Relative paths are read from this file's folder.\n"
        f"#   ood-store evaluate --study {output / STUDY_FILE}\n"
    )
    path = output / STUDY_FILE
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(header + tomli_w.dumps(data, multiline_strings=False), "utf-8")
    os.replace(tmp, path)
    return path


def attributes(run: RunConfig, record: Mapping[str, Any]) -> dict[str, Any]:
    """The run attributes the study file gives a run: the study's, then what defines the run (docs: finetuning)."""
    out = {
        **run.attributes,
        "base_model": run.base_model,
        "in_domain": run.in_domain_task,
        "method": run.method,
        "loss": run.loss,
        "train_shots": run.shots,
        "data_seed": run.data_seed,
        "seed": run.seed,
        "balanced": run.balanced,
        "train_indices_sha256": record["sha256"],
        "max_length": record["length"],
        "truncation": run.truncation,
    }
    return out
