"""Which lm-eval tasks ``evaluate`` runs: names checked, expanded to leaf tasks, one TaskManager; task objects.

lm-eval's ``TaskManager`` indexes task YAMLs when it is built; indexing the
~14,000 built-in ones takes about 5 s. It is built once per process here, and
without the built-in tasks when every name is found in the ood_nli suite or
the user's include folders. A worker builds each task object once, too
(:class:`TaskObjects`), and evaluates every checkpoint with it.
"""

from __future__ import annotations

import difflib
import json
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ood_store.errors import InputError
from ood_store.evaluate import suite
from ood_store.names import split_names


@dataclass
class TaskList:
    """The requested task names, the TaskManager that knows them, and their leaf tasks."""

    names: list[str]
    manager: Any  # lm_eval.tasks.TaskManager
    leaves: dict[str, list[str]] = field(default_factory=dict)  # name -> leaf tasks it runs
    built_in: bool = False  # whether lm-eval's built-in tasks were indexed
    groups: set[str] = field(default_factory=set)  # names that are groups: they run whole (their aggregate needs all)


@contextmanager
def task_list(
    tasks: Sequence[str], include_paths: Sequence[str | Path] = (), data_dir: str | Path | None = None
) -> Iterator[TaskList]:
    """Check the task names and build the TaskManager; yields a :class:`TaskList`.

    The ood_nli suite is always included: from the hub, or from ``data_dir``'s
    JSONL exports. ``include_paths`` are folders of the user's own task YAMLs.
    """
    names = list(split_names(tasks, "tasks") or ())
    if not names:
        raise InputError(None, None, "no task names given", parameter="tasks")
    folders = []
    for folder in include_paths:
        if not Path(folder).is_dir():
            raise InputError(str(folder), None, "no such folder (`include_paths`)")
        folders.append(str(Path(folder).resolve()))
    with tempfile.TemporaryDirectory(prefix="ood-store-suite-") as tmp:
        if data_dir is not None:
            wanted = {t.name for t in suite.tasks()} if suite.TAG in names else set(names)
            suite_folder = suite.local_includes(Path(data_dir), Path(tmp), needed=wanted)
        else:
            suite_folder = suite.FOLDER
        paths = [str(suite_folder), *folders]
        from lm_eval.tasks import TaskManager

        manager = TaskManager(include_path=paths, include_defaults=False)
        built_in = False
        if any(name not in manager.task_index for name in names):
            manager = TaskManager(include_path=paths, include_defaults=True)
            built_in = True
        unknown = [name for name in names if name not in manager.task_index]
        if unknown:
            close = difflib.get_close_matches(unknown[0], manager.all_tasks, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise InputError(
                unknown[0], None, f"unknown task (not built into lm-eval, the ood_nli suite or `include_paths`){hint}"
            )
        from lm_eval.tasks._index import Kind

        groups = {name for name in names if manager.task_index[name].kind == Kind.GROUP}
        yield TaskList(names, manager, {name: leaf_tasks(manager, name) for name in names}, built_in, groups)


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


class TaskObjects:
    """lm-eval task (and group) objects, built once and reused by every evaluation that can share them.

    Building a task reads its dataset and configuration; lm-eval's
    ``simple_evaluate`` accepts the built objects instead of names and builds
    each evaluation's requests afresh from them (and resets the few-shot
    sampler's seed), so a worker evaluating many checkpoints builds its tasks
    once. Task lists (one TaskManager each) are kept open until :meth:`close`.

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

    def task_list(self, source: dict[str, Any]) -> TaskList:
        """The task list (and TaskManager) of ``source`` (``tasks``, ``include_paths``, ``data_dir``), built once."""
        key = json.dumps(source, sort_keys=True)
        if key not in self._lists:
            self._lists[key] = self._stack.enter_context(
                task_list(source["tasks"], source.get("include_paths") or (), source.get("data_dir"))
            )
        return self._lists[key]

    def objects(self, source: dict[str, Any], names: Sequence[str], options: dict[str, Any]) -> list[Any]:
        """The task or group objects for ``names``, as ``simple_evaluate`` takes them in ``tasks``."""
        catalogue = self.task_list(source)
        shared = json.dumps(
            {k: v for k, v in options.items() if k not in _TASK_NEUTRAL_OPTIONS}, sort_keys=True, default=str
        )
        out = []
        for name in names:
            key = (json.dumps(source, sort_keys=True), shared, name)
            if key not in self._objects or not self.enabled:
                loaded = catalogue.manager.load([name])
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
