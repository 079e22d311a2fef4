"""Options shared by several commands (``analyze``, ``compare``, ``export``, ``plot``), as decorators."""

from __future__ import annotations

from pathlib import Path

import click


def choice(flag: str, choices: tuple[str, ...], default: str, help: str, **kwargs):  # noqa: A002 - click's name
    """An option whose value is one of ``choices``, its default shown in ``--help``."""
    return click.option(flag, type=click.Choice(choices), default=default, show_default=True, help=help, **kwargs)


def folder_option(flag: str, default: str | Path, help: str):  # noqa: A002 - click's name
    """An option naming a folder (made when missing), its default shown in ``--help``."""
    return click.option(
        flag, type=click.Path(file_okay=False, path_type=Path), default=default, show_default=True, help=help
    )


def alpha_option(help: str = "Significance level of the adjusted p-values."):  # noqa: A002 - click's name
    """``--alpha``: the level at which adjusted p-values count as significant."""
    level = click.FloatRange(0, 1, min_open=True, max_open=True)
    return click.option("--alpha", type=level, default=0.05, show_default=True, help=help)


def inference_option(help: str = "effective: n_eff and p_eff_adj (autocorrelation-aware); naive: n and p_adj."):  # noqa: A002
    """``--inference effective|naive``: which sample size and adjusted p a test uses."""
    from ood_store.analysis.compare import INFERENCE

    return choice("--inference", INFERENCE, "effective", help)


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
