"""The one place where the Python API's parameter names meet the command line's flags.

Library errors name parameters (``ood: no names given``, ``choose one with
`num_fewshot```); :func:`spelled` prints them as the flags that set them
(``--ood: ...``, ``--num-fewshot``), read off the commands' own options.
"""

from __future__ import annotations

from functools import cache

import click

from ood_store._errors import OodStoreError, mentions, spell_mentions

# Python parameter names whose option is spelled otherwise than the option's own name says.
_FLAG_OF = {"attributes": "--attr", "name": "--save", "checkpoints": "CHECKPOINT", "samples": "--no-samples"}


def spelled(message: OodStoreError | str) -> str:
    """An error (or a text holding `parameter` mentions) as a command-line user should read it."""
    ctx = click.get_current_context(silent=True)
    mapping: dict[str, str] = {}
    if ctx is not None:
        # The running command's own options name what its errors mention, without importing every command.
        mapping = {**_options(ctx.command), **_FLAG_OF}
        text = message.render(lambda name: None) if isinstance(message, OodStoreError) else message
        parameter = message.parameter if isinstance(message, OodStoreError) else None
        if any(name not in mapping for name in [*mentions(text), *([parameter] if parameter else [])]):
            mapping = flags(ctx.find_root().command)
    if isinstance(message, OodStoreError):
        return message.render(mapping.get)
    return spell_mentions(message, mapping.get)


def _options(command: click.Command) -> dict[str, str]:
    found: dict[str, str] = {}
    for param in command.params:
        if isinstance(param, click.Option) and param.name:
            long = [opt for opt in param.opts if opt.startswith("--")]
            found.setdefault(param.name.rstrip("_"), (long or param.opts)[0])
    return found


@cache
def flags(root: click.Command) -> dict[str, str]:
    """Each parameter name of the Python API to the option that sets it, from every command's options."""
    found: dict[str, str] = {}

    def walk(command: click.Command) -> None:
        for name, flag in _options(command).items():
            found.setdefault(name, flag)
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    walk(root)
    return {**found, **_FLAG_OF}
