"""Which lm-eval tasks ``evaluate`` runs: names checked, expanded to leaf tasks, one TaskManager.

lm-eval's ``TaskManager`` indexes task YAMLs when it is built; indexing the
~14,000 built-in ones takes about 5 s. It is built once per process here, and
without the built-in tasks when every name is one of the ood_nli suite or is
found in the user's include folders. The suite's tasks are not YAMLs: they are
config dicts built for the run's prompt variant
(:mod:`ood_store._evaluate.suite.configs`), handed to lm-eval as they are. A
worker builds each task object once, too (:class:`TaskObjects`), and
evaluates every checkpoint with it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ood_store._errors import InputError
from ood_store._evaluate.suite import testsets
from ood_store._evaluate.suite.configs import suite_configs
from ood_store._evaluate.suite.variant import Variant
from ood_store._names import did_you_mean, split_names


@dataclass
class TaskList:
    """The requested task names, the TaskManager that knows them, and their leaf tasks."""

    names: list[str]
    manager: Any  # lm_eval.tasks.TaskManager
    leaves: dict[str, list[str]] = field(default_factory=dict)  # name -> leaf tasks it runs
    built_in: bool = False  # whether lm-eval's built-in tasks were indexed
    groups: set[str] = field(default_factory=set)  # names that are groups: they run whole (their aggregate needs all)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)  # suite task -> its lm-eval config dict
    variant: Variant | None = None  # the suite's prompt variant, when suite tasks run

    def task_specs(self, names: Sequence[str]) -> list[str | dict[str, Any]]:
        """What ``simple_evaluate`` takes for these leaf tasks: a name, or a suite task's config dict."""
        return [self.configs.get(name, name) for name in names]

    def suite_record(self, names: Sequence[str]) -> dict[str, Any] | None:
        """The prompt variant and what defines each of these suite tasks, for the results file (None: none run)."""
        tasks = {name: self.configs[name]["metadata"]["ood_nli"] for name in names if name in self.configs}
        if not tasks or self.variant is None:
            return None
        return {"variant": self.variant.record(), "tasks": tasks}


@contextmanager
def task_list(
    tasks: Sequence[str],
    include_paths: Sequence[str | Path] = (),
    data_dir: str | Path | None = None,
    variant: Variant | None = None,
    num_fewshot: int | None = None,
) -> Iterator[TaskList]:
    """Check the task names and build the TaskManager; yields a :class:`TaskList`.

    Names of the ood_nli suite (``ood_nli``, ``ood_nli_snli``, ...) run under
    ``variant`` (default: the suite's own prompt), from the hub or from
    ``data_dir``'s exports. ``include_paths`` are folders of the user's own task YAMLs.
    """
    names = list(split_names(tasks, "tasks") or ())
    if not names:
        raise InputError(None, None, "no task names given", parameter="tasks")
    folders = []
    for folder in include_paths:
        if not Path(folder).is_dir():
            raise InputError(str(folder), None, "no such folder (`include_paths`)")
        folders.append(str(Path(folder).resolve()))
    if data_dir is not None and not Path(data_dir).is_dir():
        raise InputError(str(data_dir), None, "no such data folder (`data_dir`)")
    suite_names = [name for name in names if testsets.expand(name) is not None]
    if variant is not None and not suite_names:
        raise InputError(
            None, None, "a prompt variant (`pattern`, `verbalizer`, `neutral`) applies to the ood_nli suite, "
            "and no task of it is among the tasks", parameter="tasks",
        )  # fmt: skip
    variant = (variant or Variant()) if suite_names else None
    built = suite_configs(
        suite_names,
        variant or Variant(),
        data_dir=None if data_dir is None else Path(data_dir),
        num_fewshot=num_fewshot,
    )
    leaves = {name: [config["task"] for config in built[name]] for name in suite_names}
    configs = {config["task"]: config for name in suite_names for config in built[name]}
    others = [name for name in names if name not in leaves]
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=folders or None, include_defaults=False)
    built_in = False
    if any(name not in manager.task_index for name in others):
        manager = TaskManager(include_path=folders or None, include_defaults=True)
        built_in = True
    unknown = [name for name in others if name not in manager.task_index]
    if unknown:
        hint = did_you_mean(unknown[0], [*manager.all_tasks, *testsets.TESTSETS, *testsets.GROUPS])
        raise InputError(
            unknown[0], None, f"unknown task (not built into lm-eval, the ood_nli suite or `include_paths`){hint}"
        )
    from lm_eval.tasks._index import Kind

    groups = {name for name in others if manager.task_index[name].kind == Kind.GROUP}
    leaves |= {name: leaf_tasks(manager, name) for name in others}
    yield TaskList(names, manager, {name: leaves[name] for name in names}, built_in, groups, configs, variant)


def leaf_tasks(manager: Any, name: str, _seen: frozenset[str] = frozenset()) -> list[str]:
    """The individual tasks that ``name`` (a task, tag or group) runs, from the TaskManager's index."""
    from lm_eval.tasks._index import Kind

    entry = manager.task_index.get(name)
    if entry is None or name in _seen:
        return [name]
    seen = _seen | {name}
    if entry.kind == Kind.TAG:
        members: list[Any] = sorted(entry.tags)
    elif entry.kind == Kind.GROUP:
        members = list((entry.cfg or {}).get("task") or [])
    else:
        return [name]
    out: list[str] = []
    for member in members:
        if isinstance(member, dict):  # an inline task or subgroup
            member = member.get("task") if isinstance(member.get("task"), str) else member.get("group")
        if isinstance(member, str):
            out.extend(t for t in leaf_tasks(manager, member, seen) if t not in out)
    return out


# Options of lm_eval.simple_evaluate that leave task objects as they were built; simple_evaluate
# changes tasks for the others (num_fewshot, gen_kwargs, predict_only, ...), so task objects are
# shared only between evaluations that agree on them.
_TASK_NEUTRAL_OPTIONS = frozenset(
    {
        "batch_size", "max_batch_size", "device", "limit", "samples", "log_samples", "bootstrap_iters",
        "write_out", "use_cache", "cache_requests", "rewrite_requests_cache", "delete_requests_cache",
        "random_seed", "numpy_random_seed", "torch_random_seed", "fewshot_random_seed", "verbosity",
        "evaluation_tracker", "check_integrity",
    }
)  # fmt: skip


@contextmanager
def task_list_of(source: Mapping[str, Any]) -> Iterator[TaskList]:
    """:func:`task_list` of a task source: its arguments as plain JSON, as
    :meth:`~ood_store._evaluate.plan.RunRequest.task_source` writes them."""
    variant = source.get("variant")
    with task_list(
        source["tasks"],
        source.get("include_paths") or (),
        source.get("data_dir"),
        None if variant is None else Variant(**variant),
        source.get("num_fewshot"),
    ) as catalogue:
        yield catalogue


class TaskObjects:
    """lm-eval task (and group) objects, built once and reused by every evaluation that can share them.

    Building a task reads its dataset and configuration; lm-eval's
    ``simple_evaluate`` accepts the built objects instead of names (or config
    dicts) and builds each evaluation's requests afresh from them (and resets
    the few-shot sampler's seed), so a worker evaluating many checkpoints
    builds its tasks once. Task lists (one TaskManager each) are kept until
    :meth:`close`.

    Parameters
    ----------
    enabled
        False builds the objects again for every evaluation, as lm-eval does
        when given names (the benchmark's baseline); default: :attr:`reuse`.
    """

    #: Whether task objects are reused by default (benchmarks/evaluate_cluster.py turns it off for its baseline).
    reuse = True

    def __init__(self, enabled: bool | None = None):
        self.enabled = self.reuse if enabled is None else enabled
        self._stack = ExitStack()
        self._lists: dict[str, TaskList] = {}
        self._objects: dict[tuple[str, str, str], Any] = {}
        self.built = 0  # task or group objects built so far

    def task_list(self, source: Mapping[str, Any]) -> TaskList:
        """The task list (and TaskManager) of a task source (see :func:`task_list_of`), built once."""
        key = json.dumps(source, sort_keys=True)
        if key not in self._lists:
            self._lists[key] = self._stack.enter_context(task_list_of(source))
        return self._lists[key]

    def objects(self, source: Mapping[str, Any], names: Sequence[str], options: Mapping[str, Any]) -> list[Any]:
        """The task or group objects for ``names``, as ``simple_evaluate`` takes them in ``tasks``."""
        catalogue = self.task_list(source)
        shared = json.dumps(
            {k: v for k, v in options.items() if k not in _TASK_NEUTRAL_OPTIONS}, sort_keys=True, default=str
        )
        out = []
        for name, spec in zip(names, catalogue.task_specs(names), strict=True):
            key = (json.dumps(source, sort_keys=True), shared, name)
            if key not in self._objects or not self.enabled:
                loaded = catalogue.manager.load([spec])
                self._objects[key] = loaded["groups"][name] if name in loaded["groups"] else loaded["tasks"][name]
                self.built += 1
            out.append(self._objects[key])
        return out

    def close(self) -> None:
        self._objects.clear()
        self._lists.clear()
        self._stack.close()

    def __enter__(self) -> TaskObjects:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
