"""The ood_nli testset suite: lm-eval task YAMLs shipped inside ood-store.

Every task casts one NLI-style testset to the same two-way format (see
:mod:`ood_store.evaluate.suite.labels`): the prompt ``{premise} Question:
{hypothesis} Yes or No?`` answered ``" Yes"`` or ``" No"``. The tasks load from
the Hugging Face hub; with a data folder (``--data-dir``) the same tasks read
local JSONL exports instead (``ood-store suite export DIR`` writes them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from ood_store.errors import InputError

FOLDER = Path(__file__).resolve().parent
TAG = "ood_nli"


@dataclass(frozen=True)
class SuiteTask:
    """One task of the suite and where its data comes from."""

    name: str
    dataset_path: str
    dataset_name: str | None
    split: str
    labels: str  # the labels.<function> that casts it

    def data_file(self, data_dir: Path) -> Path:
        """Its JSONL export in a data folder: the split's rows, in the dataset's own schema."""
        return data_dir / f"{self.name}.jsonl"


def tasks() -> list[SuiteTask]:
    """The suite's tasks, read from the YAMLs in this package, in name order."""
    out = []
    for path in sorted(FOLDER.glob("*.yaml")):
        config = yaml.load(path.read_text("utf-8"), Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
        out.append(
            SuiteTask(
                name=config["task"],
                dataset_path=config["dataset_path"],
                dataset_name=config.get("dataset_name"),
                split=config["test_split"],
                labels=config["process_docs"].rsplit(".", 1)[-1],
            )
        )
    return out


def local_includes(data_dir: Path, target: Path, needed: set[str] | None = None) -> Path:
    """Write task YAMLs into ``target`` that are the suite's tasks reading JSONL from ``data_dir``.

    Each includes the shipped YAML and replaces only where the data comes from,
    so prompts, label maps and task names stay the same. ``needed`` names the
    suite tasks that will run; a missing export of one of them is an error.
    """
    if not data_dir.is_dir():
        raise InputError(str(data_dir), None, "no such data folder (`data_dir`)")
    target.mkdir(parents=True, exist_ok=True)
    for task in tasks():
        data = task.data_file(data_dir).resolve()
        if not data.is_file():
            if needed is not None and task.name in needed:
                raise InputError(
                    str(task.data_file(data_dir)),
                    None,
                    "missing: export the suite on a connected machine with "
                    "`ood-store suite export DIR` and copy DIR here",
                )
            continue
        override = {
            "include": str(FOLDER / f"{task.name}.yaml"),
            "dataset_path": "json",
            "dataset_name": None,
            "dataset_kwargs": {"data_files": {task.split: str(data)}},
        }
        (target / f"{task.name}.yaml").write_text(json.dumps(override, indent=2) + "\n", encoding="utf-8")
    return target


class _Loader(yaml.SafeLoader):
    """Reads the suite's YAMLs, keeping ``!function`` references as text."""


_Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
