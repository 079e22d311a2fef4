"""The testsets of the ood_nli suite: where each comes from, its splits and their sizes, its display name.

This table is the one definition of the suite. The lm-eval task configs of
every prompt variant are built from it at run time
(:mod:`ood_store._evaluate.suite.configs`), and so are the offline data files
(``suite export`` / ``suite check``) and the display names of tables and figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TAG = "ood_nli"
#: The name that runs the six HANS heuristic × label sub-tasks (not part of the tag).
HANS_HEURISTICS = "ood_nli_hans_heuristics"

#: HANS's heuristics, as its ``heuristic`` column spells them, with their display names.
HEURISTICS = {"lexical_overlap": "lexical overlap", "subsequence": "subsequence", "constituent": "constituent"}


@dataclass(frozen=True)
class Testset:
    """One task of the suite and where its data come from.

    ``rows`` holds the known sizes of the evaluated split and of the few-shot
    (training) split, as the datasets' cards give them, for ``suite check``.
    """

    name: str  # the lm-eval task name of the default prompt variant
    display: str  # how tables and figures print it
    labels: str  # the label map that casts it (ood_store._evaluate.suite.labels.LABEL_MAPS)
    dataset_path: str
    dataset_name: str | None
    split: str  # the evaluated split
    fewshot_split: str  # where in-context examples are drawn from: the dataset's training split
    rows: dict[str, frozenset[int]]  # split -> accepted row counts
    dataset_kwargs: dict[str, Any] = field(default_factory=dict)
    subset: tuple[str, str] | None = None  # HANS sub-tasks: (heuristic, "entailed" | "non_entailed")
    data_name: str | None = None  # the data file's task when it is another task's (the HANS sub-tasks)

    def data_file(self, data_dir: Path) -> Path:
        """The evaluated split's JSONL export in a data folder, in the dataset's own schema."""
        return data_dir / f"{self.data_name or self.name}.jsonl"

    def fewshot_file(self, data_dir: Path) -> Path:
        """The few-shot (training) split's JSONL export in a data folder."""
        return data_dir / f"{self.data_name or self.name}.train.jsonl"

    def source(self) -> str:
        """The hub dataset as one text: ``path``, ``path/config``, and the revision when one is pinned."""
        text = self.dataset_path + (f"/{self.dataset_name}" if self.dataset_name else "")
        revision = self.dataset_kwargs.get("revision")
        return f"{text}@{revision}" if revision else text


def _rows(**splits: int | tuple[int, ...]) -> dict[str, frozenset[int]]:
    return {split: frozenset(n if isinstance(n, tuple) else (n,)) for split, n in splits.items()}


# The canonical HANS: the Parquet conversion of jhu-cogsci/hans (a loading script that datasets 4
# and later no longer run), which keeps every column of the original: premise, hypothesis, label,
# the parses, heuristic, subcase and template.
_HANS_PARQUET = {
    "revision": "refs/convert/parquet",
    "data_files": {
        "train": "plain_text/train/0000.parquet",
        "validation": "plain_text/validation/0000.parquet",
    },
}

_ANLI = [
    Testset(
        f"ood_nli_anli_r{n}", f"ANLI-R{n}", "anli", "facebook/anli", "plain_text", f"test_r{n}", f"train_r{n}",
        _rows(**{f"test_r{n}": test, f"train_r{n}": train}),
    )
    for n, test, train in ((1, 1000, 16946), (2, 1000, 45460), (3, 1200, 100459))
]  # fmt: skip

# name, display, label map, dataset, config, evaluated split: rows, training split ("train"): rows.
# SciTail's training split differs in size between its formats (23,097 rows as TSV, 23,088
# dgem, 23,587 predictor, 23,596 SNLI-style); its test split has 2,126 rows in all of them.
_SCITAIL_TRAIN = (23097, 23088, 23587, 23596)
_TABLE: list[tuple[str, str, str, str, str | None, str, int, int | tuple[int, ...]]] = [
    ("ood_nli_snli", "SNLI", "snli", "stanfordnlp/snli", "plain_text", "test", 10000, 550152),
    ("ood_nli_mnli", "MNLI", "mnli", "nyu-mll/glue", "mnli", "validation_matched", 9815, 392702),
    ("ood_nli_scitail", "SciTail", "scitail", "allenai/scitail", "tsv_format", "test", 2126, _SCITAIL_TRAIN),
    ("ood_nli_rte", "RTE", "rte", "nyu-mll/glue", "rte", "validation", 277, 2490),
    ("ood_nli_hans", "HANS", "hans", "jhu-cogsci/hans", None, "validation", 30000, 30000),
    ("ood_nli_wnli", "WNLI", "wnli", "nyu-mll/glue", "wnli", "validation", 71, 635),
    ("ood_nli_paws", "PAWS", "paws", "google-research-datasets/paws", "labeled_final", "test", 8000, 49401),
]  # fmt: skip
_SETS = {
    name: Testset(
        name, display, labels, path, config, split, "train", _rows(**{split: rows, "train": train}),
        dict(_HANS_PARQUET) if name == "ood_nli_hans" else {},
    )
    for name, display, labels, path, config, split, rows, train in _TABLE
}  # fmt: skip
_MAIN = [*list(_SETS.values())[:5], *_ANLI, *list(_SETS.values())[5:]]

_HANS = _SETS["ood_nli_hans"]
# HANS as it is usually reported: accuracy per heuristic, separately on entailed and
# non-entailed pairs (each 5,000 rows of the 30,000; McCoy et al. 2019, Table 2).
_HANS_SUBSETS = [
    Testset(
        f"{_HANS.name}_{heuristic}_{label}",
        f"HANS {shown} ({'E' if label == 'entailed' else 'N'})",
        "hans",
        _HANS.dataset_path,
        _HANS.dataset_name,
        _HANS.split,
        _HANS.fewshot_split,
        _rows(validation=5000, train=5000),
        dict(_HANS_PARQUET),
        subset=(heuristic, label),
        data_name=_HANS.name,
    )
    for heuristic, shown in HEURISTICS.items()
    for label in ("entailed", "non_entailed")
]

#: Every testset: the suite's tasks (tag ``ood_nli``), then the HANS sub-tasks.
TESTSETS: dict[str, Testset] = {t.name: t for t in (*_MAIN, *_HANS_SUBSETS)}
#: The tasks the tag ``ood_nli`` runs.
SUITE = tuple(t.name for t in _MAIN)
#: Names that stand for several testsets.
GROUPS = {TAG: SUITE, HANS_HEURISTICS: tuple(t.name for t in _HANS_SUBSETS)}


def testsets() -> list[Testset]:
    """The suite's tasks (those of the tag ``ood_nli``), in the order of the table of docs/how-to/suite.md."""
    return [TESTSETS[name] for name in SUITE]


def expand(name: str) -> tuple[str, ...] | None:
    """The testsets a name stands for (``ood_nli``: all ten), or None when it is not the suite's."""
    if name in GROUPS:
        return GROUPS[name]
    return (name,) if name in TESTSETS else None


def display_names() -> dict[str, str]:
    """Display names of the suite's tasks (default prompt variant): ``ood_nli_snli`` -> ``SNLI``."""
    return {t.name: t.display for t in TESTSETS.values()}
