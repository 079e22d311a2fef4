"""Lists of names given as repeated or comma-separated values (tasks, runs, ...)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence

from ood_store._errors import OodStoreError


def split_names(values: Sequence[str] | str | None, parameter: str) -> tuple[str, ...] | None:
    """Repeated and comma-separated names, in order, without duplicates; None when not given.

    Raises :class:`~ood_store._errors.OodStoreError` about ``parameter`` when
    values are given but hold no name.

    Examples
    --------
    >>> split_names(["arc_easy,piqa", "sciq", "piqa"], "tasks")
    ('arc_easy', 'piqa', 'sciq')
    >>> split_names(None, "tasks") is None
    True
    >>> split_names([" , "], "tasks")
    Traceback (most recent call last):
    ...
    ood_store._errors.OodStoreError: tasks: no names given
    """
    if values is None:
        return None
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values:
        for name in str(value).split(","):
            name = name.strip()
            if name and name not in out:
                out.append(name)
    if not out:
        raise OodStoreError("no names given", parameter=parameter)
    return tuple(out)


def did_you_mean(name: str, choices: Iterable[str], n: int = 3) -> str:
    """``"; did you mean a, b?"`` with up to ``n`` of ``choices`` close to ``name`` (difflib), or ``""``.

    The hint that ``evaluate`` and ``analyze`` add to an unknown task.

    Examples
    --------
    >>> did_you_mean("lambada", ["lambada_openai", "piqa", "lambada_standard"])
    '; did you mean lambada_openai, lambada_standard?'
    >>> did_you_mean("xyz", ["piqa"])
    ''
    >>> did_you_mean("piqa", ["piqa"])  # never the name itself
    ''
    """
    close = difflib.get_close_matches(name, [choice for choice in choices if choice != name], n=n)
    return f"; did you mean {', '.join(close)}?" if close else ""


def some_of(names: Sequence[str], shown: int = 3) -> str:
    """The first ``shown`` of ``names``, and how many more, as a message lists them.

    >>> some_of(["a", "b"])
    'a, b'
    >>> some_of(["a", "b", "c", "d", "e"])
    'a, b, c and 2 more'
    """
    listed = ", ".join(names[:shown])
    return listed + (f" and {len(names) - shown:,} more" if len(names) > shown else "")


def run_folder_name(run: str) -> str:
    """A run as one folder name, as ``evaluate`` lays out lm-eval's files (``OUTPUT_DIR/<run>/step-N/``).

    >>> run_folder_name("EleutherAI/pythia-160m")
    'EleutherAI__pythia-160m'
    """
    return re.sub(r"[^\w.=+-]", "_", run.strip().replace("/", "__")) or "_"


#: The folder of one unit of ``evaluate`` (``OUTPUT_DIR/<run>/step-N/unit-<hash>/``): a hash of what it evaluated.
_UNIT_FOLDER = re.compile(r"unit-[0-9a-f]{10}")


def unit_folder_name(digest: str) -> str:
    """The folder of the unit whose identity hashes to ``digest`` (its first 10 hex digits).

    >>> unit_folder_name("3fa2b1c0de77")
    'unit-3fa2b1c0de'
    """
    return f"unit-{digest[:10]}"


def is_unit_folder(name: str) -> bool:
    """Whether ``name`` is a unit's folder of ``evaluate``'s layout (part of the layout, not a campaign)."""
    return _UNIT_FOLDER.fullmatch(name) is not None
