"""Lists of names given as repeated or comma-separated values (tasks, runs, ...)."""

from __future__ import annotations

from collections.abc import Sequence

from ood_store.errors import OodStoreError


def split_names(values: Sequence[str] | str | None, parameter: str) -> tuple[str, ...] | None:
    """Repeated and comma-separated names, in order, without duplicates; None when not given.

    Raises :class:`~ood_store.errors.OodStoreError` about ``parameter`` when
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
    ood_store.errors.OodStoreError: tasks: no names given
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
