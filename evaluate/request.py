"""What one call of ``evaluate`` asks for, from everything it may be given: a run file, an attribute file,
attributes, the suite's prompt settings and a study.

``Store.evaluate`` and ``ood-store evaluate`` take the same inputs; this is where they are merged, so
that the command line adds nothing of its own. Precedence, highest first: ``attributes`` given, then
the attribute file's rules for the run, then the run file's attributes; ``pattern``, ``verbalizer``
and ``neutral`` given win over the run file's ``[suite]`` table (or, for a study, over every run's), as
do ``max_length`` and ``truncation`` given over the table's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ood_store._errors import InputError
from ood_store._evaluate.study import Study, load_study
from ood_store._evaluate.suite.variant import PROMPT_LENGTH_KEYS, from_run_file, variant_of
from ood_store._store.attribute_rules import attributes_for, for_run, read_attribute_file
from ood_store._store.runs import parse_attributes, read_run_file


def resolve(
    *,
    run: str | None,
    run_file: str | os.PathLike[str] | None,
    attribute_file: str | os.PathLike[str] | None,
    suite: Mapping[str, Any],
    options: Mapping[str, Any],
) -> tuple[str | None, dict[str, Any]]:
    """The run and the runner's keywords for one evaluation (see the module docstring for precedence).

    ``suite`` holds ``pattern``, ``verbalizer`` and ``neutral`` as given (None: not given); a
    ``variant`` among ``options`` wins over them. Files are read and checked here, before anything
    runs; a run file with a study, or an attribute file that has no rule for the run, is an
    :class:`~ood_store.InputError`.
    """
    out = dict(options)
    rules = read_attribute_file(attribute_file) if attribute_file is not None else []
    study = out.get("study")
    given = {key: value for key, value in suite.items() if value is not None}
    if study is None:
        file_run, file_attributes = read_run_file(Path(run_file)) if run_file is not None else (None, {})
        run = run or file_run
        if run_file is not None and not run:
            raise InputError(str(run_file), "run", "name the run (`run = ...`) or pass it", parameter="run")
        attributes = out.get("attributes")
        if run is not None and (run_file is not None or rules):
            explicit = parse_attributes(attributes) if attributes else {}
            out["attributes"] = {**file_attributes, **for_run(run, rules), **explicit} or None
        table = from_run_file(Path(run_file)) if run_file is not None else {}
        for key in PROMPT_LENGTH_KEYS:  # run options a [suite] table may give: given ones win
            value = table.pop(key, None)
            if value is not None and out.get(key) is None:
                out[key] = value
        if out.get("variant") is None:
            out["variant"] = variant_of(table, given)
        return run, out
    if run_file is not None:
        raise InputError(
            None,
            None,
            "not with a study: a study names its runs, their checkpoints and attributes",
            parameter="run_file",
        )
    if out.get("variant") is None:
        out["variant"] = variant_of(given)  # given here, it replaces every run's [suite]
    if rules:  # the file's attributes of each run win over the study's
        loaded = study if isinstance(study, Study) else load_study(study)
        out["study"] = loaded.with_attributes(lambda name: attributes_for(name, rules))
    return run, out
