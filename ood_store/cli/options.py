"""Options shared by the commands that write tables and figures (``export``, ``plot``), as decorators."""

from __future__ import annotations

from pathlib import Path

import click


def bundle(*options):
    """One decorator that applies ``options`` in the order given."""

    def apply(fn):
        for option in reversed(options):
            fn = option(fn)
        return fn

    return apply


#: ``--rename NAME=DISPLAY`` (repeatable) and ``--rename-file FILE``: see :func:`ood_store.export.display.names`.
rename_options = bundle(
    click.option(
        "--rename",
        multiple=True,
        metavar="NAME=DISPLAY",
        help="Print NAME (a testset, run or column) as DISPLAY, e.g. --rename mnli=MNLI (repeatable).",
    ),
    click.option(
        "--rename-file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="A YAML, JSON or TOML mapping of names to display names.",
    ),
)

#: ``--order-by ATTR`` (repeatable): see :func:`ood_store.export.display.run_order`.
order_by_option = click.option(
    "--order-by",
    multiple=True,
    metavar="ATTR",
    help="Order runs by these run attributes (repeatable).  [default: family, size, seed]",
)
