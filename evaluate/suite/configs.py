"""lm-eval task configs of the ood_nli suite, built at run time from one definition for any prompt variant.

:func:`task_config` turns a :class:`~ood_store._evaluate.suite.testsets.Testset`
and a :class:`~ood_store._evaluate.suite.variant.Variant` into the config dict
that ``lm_eval.simple_evaluate`` takes in its ``tasks`` (a multiple-choice task
scored by ``acc``). The data come from the Hugging Face hub, or from a data
folder of ``suite export`` files (``data_dir``): same rows, same label maps.

In-context examples (``num_fewshot`` > 0) are drawn from each testset's
training split (every testset of the suite has one), by lm-eval's sampler with
its fixed ``fewshot_seed``, and go through the same label map and neutral
scheme as the evaluated rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ood_store._errors import InputError
from ood_store._evaluate.suite import labels
from ood_store._evaluate.suite.testsets import TESTSETS, Testset, expand
from ood_store._evaluate.suite.variant import Variant

#: lm-eval task version of the suite's tasks (2: variants, canonical HANS, label checks).
VERSION = 2.0


@dataclass(frozen=True)
class ProcessDocs:
    """lm-eval's ``process_docs`` hook of one testset: the label map, the neutral scheme, HANS's subset.

    Its ``repr`` is what lm-eval writes for it in the results file's task config.
    """

    testset: str
    neutral: str
    where: str  # names the data in error messages: the file, or the hub dataset
    subset: bool = True  # False: all rows, also of a HANS sub-task (its in-context examples)

    def __call__(self, docs: Any) -> Any:
        testset = TESTSETS[self.testset]
        keep = None
        if testset.subset is not None and self.subset:
            heuristic, label = testset.subset
            wanted = labels.YES if label == "entailed" else labels.NO
            keep = _HansSubset(heuristic, wanted, testset.labels)
        return labels.cast(docs, testset.labels, self.neutral, where=self.where, keep=keep)

    def __repr__(self) -> str:
        return (
            f"ood_store._evaluate.suite.labels.cast(labels={TESTSETS[self.testset].labels!r}, "
            f"neutral={self.neutral!r}{_subset_text(TESTSETS[self.testset]) if self.subset else ''})"
        )


@dataclass(frozen=True)
class _HansSubset:
    heuristic: str
    answer: int
    labels: str

    def __call__(self, doc: dict[str, Any]) -> bool:
        if doc.get("heuristic") != self.heuristic:
            return False
        meaning = labels.LABEL_MAPS[self.labels].meaning(_label_of(doc))
        return labels.answer(meaning or "", "drop") == self.answer


def _label_of(doc: dict[str, Any]) -> Any:
    layout = labels.LABEL_MAPS["hans"].layout(list(doc))
    return doc[layout[2]] if layout else None


def _subset_text(testset: Testset) -> str:
    return "" if testset.subset is None else f", heuristic={testset.subset[0]!r}, subset={testset.subset[1]!r}"


def task_config(
    testset: Testset, variant: Variant, *, data_dir: Path | None = None, num_fewshot: int | None = None
) -> dict[str, Any]:
    """The lm-eval config dict of ``testset`` under ``variant``.

    Few-shot examples come from the testset's training split, which is only
    loaded when ``num_fewshot`` > 0 (with ``data_dir``: its ``.train.jsonl``
    file, which must then exist).
    """
    fewshot = bool(num_fewshot)
    if data_dir is None:
        source: dict[str, Any] = {
            "dataset_path": testset.dataset_path,
            "dataset_name": testset.dataset_name,
            "dataset_kwargs": _hub_kwargs(testset, fewshot),
        }
        where = testset.source()
    else:
        files = {testset.split: testset.data_file(data_dir)}
        if fewshot:
            files[testset.fewshot_split] = testset.fewshot_file(data_dir)
        for split, path in files.items():
            if not path.is_file():
                what = "the training splits, with `fewshot`," if split != testset.split else "the suite"
                raise InputError(
                    str(path), None, f"missing: export {what} on a connected machine (`ood-store suite export DIR`) "
                    "and copy DIR here",
                )  # fmt: skip
        source = {
            "dataset_path": "json",
            "dataset_name": None,
            "dataset_kwargs": {"data_files": {split: str(path.resolve()) for split, path in files.items()}},
        }
        where = str(files[testset.split])
    delimiter, choices = variant.delimiter_and_choices()
    config = {
        "task": variant.task_name(testset.name),
        **source,
        "output_type": "multiple_choice",
        "test_split": testset.split,
        "process_docs": ProcessDocs(testset.name, variant.neutral, where),
        "doc_to_text": variant.jinja(),
        "doc_to_target": "answer",
        "doc_to_choice": choices,
        "target_delimiter": delimiter,
        "metric_list": [{"metric": "acc", "aggregation": "mean", "higher_is_better": True}],
        "metadata": {"version": VERSION, "ood_nli": record(testset, variant, fewshot)},
    }
    if fewshot:
        config["fewshot_split"] = testset.fewshot_split
        if testset.subset is not None:  # examples from all of HANS's training split, not one heuristic and label
            config["fewshot_config"] = {"process_docs": ProcessDocs(testset.name, variant.neutral, where, subset=False)}
    return config


def _hub_kwargs(testset: Testset, fewshot: bool) -> dict[str, Any]:
    kwargs = dict(testset.dataset_kwargs)
    if "data_files" in kwargs:  # only the splits that are used (HANS: a Parquet file each)
        used = {testset.split, *([testset.fewshot_split] if fewshot else [])}
        kwargs["data_files"] = {s: f for s, f in kwargs["data_files"].items() if s in used}
    return kwargs


def record(testset: Testset, variant: Variant, fewshot: bool = False) -> dict[str, Any]:
    """What defines one task of a variant: the variant, the testset, its data and label scheme."""
    label_map = labels.LABEL_MAPS[testset.labels]
    scheme = {str(native): labels.answer(meaning, variant.neutral) for native, meaning in label_map.meanings.items()}
    return {
        **variant.record(),
        "testset": testset.name,
        "dataset": testset.source(),
        "split": testset.split,
        "fewshot_split": testset.fewshot_split if fewshot else None,
        # native label -> answer index (0: the first verbalizer, 1: the second; None: dropped)
        "labels": {k: (None if v is None else variant.verbalizers[v]) for k, v in scheme.items()},
        **({"heuristic": testset.subset[0], "subset": testset.subset[1]} if testset.subset else {}),
    }


def suite_configs(
    names: Sequence[str], variant: Variant, *, data_dir: Path | None = None, num_fewshot: int | None = None
) -> dict[str, list[dict[str, Any]]]:
    """For each suite name (``ood_nli``, ``ood_nli_snli``, ...): the config dicts of the tasks it runs."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        members = expand(name)
        if members is None:
            raise InputError(name, None, "not a task of the ood_nli suite")
        out[name] = [task_config(TESTSETS[m], variant, data_dir=data_dir, num_fewshot=num_fewshot) for m in members]
    return out
