"""Which lm-eval tasks ``evaluate`` runs: names checked, expanded to leaf tasks, one TaskManager.

lm-eval's ``TaskManager`` indexes task YAMLs when it is built; indexing the
~14,000 built-in ones takes about 5 s. It is built once per process here, and
without the built-in tasks when every name is found in the ood_nli suite or
the user's include folders.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ood_store.errors import InputError
from ood_store.evaluate import suite
from ood_store.names import did_you_mean, split_names


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
            hint = did_you_mean(unknown[0], manager.all_tasks)
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
