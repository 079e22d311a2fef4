"""Errors that ood-store reports to its users as one line, without a traceback.

Anything else that escapes is a bug in ood-store and keeps its traceback.

Library errors speak the Python API's language: an error about an argument
names the parameter (``ood: no names given``), and a hint that points at another
parameter writes its name in backticks (``choose one with `num_fewshot```).
:meth:`OodStoreError.render` spells those names differently; the command line
uses it to print its own flags instead (``--ood: ...``, ``--num-fewshot``), so
that neither a Python caller nor a shell user reads about options they never saw.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from os import PathLike

# A parameter mentioned in a message: a Python identifier in backticks.
_MENTION = re.compile(r"`([a-z][a-z0-9_]*)`")


def install_hint(extras: str) -> str:
    """How a message says to install optional dependencies, as the documentation does: ood-store is installed
    from its checkout, where this runs.

    >>> install_hint("serve")
    'pip install -e ".[serve]"'
    """
    return f'pip install -e ".[{extras}]"'


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (DuckDB's can run to several)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _as_is(name: str) -> str | None:
    return None


def mentions(text: str) -> list[str]:
    """The parameters ``text`` mentions in backticks."""
    return _MENTION.findall(text)


def spell_mentions(text: str, spell: Callable[[str], str | None]) -> str:
    """``text`` with each parameter mentioned in backticks spelled by ``spell`` (None: left as written)."""
    return _MENTION.sub(lambda match: spell(match.group(1)) or match.group(0), text)


class OodStoreError(Exception):
    """An error caused by the user's input or environment, not by ood-store.

    Parameters
    ----------
    message
        One line. Parameters it mentions are written in backticks: `` `metric` ``.
    parameter
        The parameter (of the Python API) the error is about, if any; the
        message is then shown after it: ``"metric: ..."``.

    Examples
    --------
    >>> error = OodStoreError("two shot counts; choose one with `num_fewshot`", parameter="tasks")
    >>> str(error)
    'tasks: two shot counts; choose one with `num_fewshot`'
    >>> error.render({"tasks": "--tasks", "num_fewshot": "--num-fewshot"}.get)
    '--tasks: two shot counts; choose one with --num-fewshot'
    """

    def __init__(self, message: str, *, parameter: str | None = None):
        self.message = message
        self.parameter = parameter
        super().__init__(message)

    def __str__(self) -> str:
        return self.render(_as_is)

    def render(self, spell: Callable[[str], str | None]) -> str:
        """The message with parameter names spelled by ``spell`` (a name it returns None for stays as written)."""

        parameter = None if self.parameter is None else spell(self.parameter) or self.parameter
        where = [part for part in self._where(parameter) if part]
        return ": ".join([*where, spell_mentions(self.message, spell)])

    def _where(self, parameter: str | None) -> list[str | None]:
        """What the message is about, outermost first: here the parameter."""
        return [parameter]


class Note(UserWarning):
    """Something ood-store did for the user that they should know of (a name it read as another).

    Issued with :func:`warnings.warn`; the command line prints it as ``Note: ...`` on standard error.
    """


class StoreError(OodStoreError):
    """The store file cannot be opened or used as asked."""


class StoreLockedError(StoreError):
    """Another process holds the store's write lock."""


class StoreDamagedError(StoreError):
    """The store file is damaged: DuckDB cannot read it, or its checksums fail."""


class SchemaError(StoreError):
    """The store's schema version is not one this ood-store can use."""


class QueryError(OodStoreError):
    """A query was refused or failed."""


class InputError(OodStoreError):
    """A bad input: names the file and the field, or the parameter.

    ``InputError(path, field, message)`` is about a file (``path: field:
    message``); ``InputError(None, None, message, parameter="attributes")`` about
    an argument.
    """

    def __init__(
        self, path: str | PathLike[str] | None, field: str | None, message: str, *, parameter: str | None = None
    ):
        self.path = None if path is None else str(path)
        self.field = field
        super().__init__(message, parameter=parameter)

    def _where(self, parameter: str | None) -> list[str | None]:
        return [self.path, parameter, self.field]


class AnalysisError(OodStoreError):
    """An analysis cannot run as asked (unknown task or run, ambiguous series, bad option)."""
