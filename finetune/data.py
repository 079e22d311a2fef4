"""The training split of a run's in-domain set, cast as the suite casts it, and the few shots drawn from it.

A testset of the ood_nli suite is read from its training split, from the
data folder (``TASK.train.jsonl``, as ``suite export --fewshot`` writes it)
or from the hub, and cast by the suite's own label map and neutral scheme
(:func:`ood_store._evaluate.suite.labels.cast`, the function lm-eval's
``process_docs`` calls for its in-context examples): the rows a run trains on
are the rows the suite evaluates, in the same two-way format. A set of one's
own is ``NAME.train.jsonl`` in the data folder, with ``premise``,
``hypothesis`` and ``label`` (0: entailed, the first verbalizer; 1: not
entailed, the second).

The shots are drawn as llmft draws them (Mosbach et al. 2023, ``ft.py``): the
global NumPy generator seeded with the data seed, then
``np.random.choice(len(train), size=shots, replace=False)`` over the cast
split (neutral rows already dropped), so that a data seed picks the same
examples here as there. :func:`sample` computes it with a
``np.random.RandomState`` of its own, the same Mersenne Twister stream,
without touching the global generator. ``balanced`` draws half the shots
from each answer instead (the first answer gets the odd one), each with
``choice`` over that answer's rows, in one stream.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ood_store._errors import InputError
from ood_store._evaluate.suite import labels
from ood_store._evaluate.suite.testsets import TESTSETS


@dataclass(frozen=True)
class TrainingSplit:
    """A training split in the suite's two-way format: ``premise``, ``hypothesis``, ``answer`` (0 or 1)."""

    name: str  # the run's in_domain
    source: str  # the file, or the hub dataset and split
    rows: list[dict[str, Any]]

    @property
    def answers(self) -> list[int]:
        return [row["answer"] for row in self.rows]


def load_split(in_domain: str, testset: str | None, neutral: str, data_dir: str | None) -> TrainingSplit:
    """The training split of ``in_domain``: the suite's ``testset`` (from ``data_dir`` or the hub) or a set of one's
    own in ``data_dir``. Raises InputError naming the file, or a LabelError, for data that does not fit."""
    if testset is None:
        assert data_dir is not None  # checked with the study
        return _own(in_domain, Path(data_dir) / f"{in_domain}.train.jsonl")
    from ood_store._evaluate.suite.configs import ProcessDocs

    spec = TESTSETS[testset]
    with _quiet_datasets():
        docs, where = _docs(spec, data_dir)
        cast = ProcessDocs(testset, neutral, where, subset=False)(docs)
    rows = [{"premise": d["premise"], "hypothesis": d["hypothesis"], "answer": d["answer"]} for d in cast]
    return TrainingSplit(in_domain, where, rows)


def _docs(spec: Any, data_dir: str | None) -> tuple[Any, str]:
    """The training split of a suite testset as a ``datasets.Dataset``, and where it comes from."""
    from datasets import load_dataset

    if data_dir is not None:
        path = spec.fewshot_file(Path(data_dir))
        if not path.is_file():
            raise InputError(
                str(path), None, "missing: the training split (`ood-store suite export DIR --fewshot` writes it)"
            )
        docs = load_dataset("json", data_files={"train": str(path.resolve())}, split="train")
        where = str(path)
    else:
        kwargs = dict(spec.dataset_kwargs)
        if "data_files" in kwargs:
            kwargs["data_files"] = {spec.fewshot_split: kwargs["data_files"][spec.fewshot_split]}
        docs = load_dataset(spec.dataset_path, spec.dataset_name, split=spec.fewshot_split, **kwargs)
        where = f"{spec.source()}:{spec.fewshot_split}"
    return docs, where


@contextmanager
def _quiet_datasets() -> Iterator[None]:
    """datasets' progress bars (loading, filtering, mapping) off while a split is read; as they were afterwards."""
    import datasets

    shown = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if shown:
            datasets.enable_progress_bars()


def _own(name: str, path: Path) -> TrainingSplit:
    """A set of one's own: JSONL rows with premise, hypothesis and label 0 or 1; errors name the line and field."""
    try:
        lines = path.read_text("utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(
            str(path), None, f"missing: the training split of {name!r} (premise, hypothesis, label 0 or 1 per line)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(path), None, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise InputError(str(path), f"line {number}", f"not JSON: {exc}") from None
        if not isinstance(row, dict):
            raise InputError(str(path), f"line {number}", "expected an object with premise, hypothesis and label")
        for key in ("premise", "hypothesis"):
            if not isinstance(row.get(key), str):
                raise InputError(str(path), f"line {number}.{key}", f"expected text, got {row.get(key)!r}")
        label = row.get("label")
        if label not in (labels.YES, labels.NO) or isinstance(label, bool):
            raise InputError(
                str(path), f"line {number}.label", f"expected 0 (entailed) or 1 (not entailed), got {label!r}"
            )
        rows.append({"premise": row["premise"].strip(), "hypothesis": row["hypothesis"].strip(), "answer": label})
    return TrainingSplit(name, str(path), rows)


def sample(answers: list[int], shots: int, data_seed: int, balanced: bool = False) -> list[int]:
    """The indices of the shots (see the module docstring); ValueError when the split is too small."""
    import numpy as np

    generator = np.random.RandomState(data_seed)
    if not balanced:
        if shots > len(answers):
            raise ValueError(f"{shots} shots, but the training split has {len(answers)} rows")
        return [int(i) for i in generator.choice(len(answers), size=shots, replace=False)]
    out: list[int] = []
    for answer, count in ((labels.YES, shots - shots // 2), (labels.NO, shots // 2)):
        pool = [i for i, a in enumerate(answers) if a == answer]
        if count > len(pool):
            what = "entailed" if answer == labels.YES else "not-entailed"
            raise ValueError(f"{shots} class-balanced shots need {count} {what} rows; the split has {len(pool)}")
        out.extend(pool[int(i)] for i in generator.choice(len(pool), size=count, replace=False))
    return out


def digest(indices: list[int]) -> str:
    """SHA-256 of the indices written as decimal numbers joined by commas, in the order drawn (``3,17,42``)."""
    return hashlib.sha256(",".join(str(i) for i in indices).encode("ascii")).hexdigest()
