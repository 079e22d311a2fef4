"""Options shared by several commands (``analyze``, ``compare``, ``export``, ``plot``), as decorators."""

from __future__ import annotations

from pathlib import Path

import click

#: The types of arguments and options that name a file or a folder (as ``Path``; whether it exists is checked where
#: it is used, so that the error names it as the library does).
FILE = click.Path(dir_okay=False, path_type=Path)
FOLDER = click.Path(file_okay=False, path_type=Path)


def choice(flag: str, choices: tuple[str, ...], default: str | None, help: str, **kwargs):  # noqa: A002 - click's name
    """An option whose value is one of ``choices``, its default shown in ``--help``."""
    return click.option(flag, type=click.Choice(choices), default=default, show_default=True, help=help, **kwargs)


def folder_option(flag: str, default: str | Path, help: str):  # noqa: A002 - click's name
    """An option naming a folder (made when missing), its default shown in ``--help``."""
    return click.option(flag, type=FOLDER, default=default, show_default=True, help=help)


def alpha_option(help: str = "Significance level of the adjusted p-values."):  # noqa: A002 - click's name
    """``--alpha``: the level at which adjusted p-values count as significant."""
    level = click.FloatRange(0, 1, min_open=True, max_open=True)
    return click.option("--alpha", type=level, default=0.05, show_default=True, help=help)


def inference_option(help: str = "effective: n_eff and p_eff_adj (autocorrelation-aware); naive: n and p_adj."):  # noqa: A002
    """``--inference effective|naive``: which sample size and adjusted p a test uses."""
    from ood_store._analysis.compare import INFERENCE

    return choice("--inference", INFERENCE, "effective", help)


def verdict_options(what: str = "verdicts"):
    """``--adjust-pairs`` and ``--test``: how the tests behind compare's ``what`` are adjusted over pairs and made."""
    from ood_store._analysis.compare import ADJUST_PAIRS, DEFAULT_ADJUST_PAIRS, DEFAULT_TEST
    from ood_store._analysis.meta import TESTS

    return bundle(
        choice(
            "--adjust-pairs",
            ADJUST_PAIRS,
            DEFAULT_ADJUST_PAIRS,
            f"How the tests behind the {what} are adjusted over the pairs (Holm: the chance of any false verdict; "
            "fdr_bh: the share of false ones).",
        ),
        choice(
            "--test",
            TESTS,
            DEFAULT_TEST,
            "The test of pooled estimates and between groups: Knapp-Hartung (t/F, calibrated with few seeds) or z.",
        ),
    )


def item_options(what: str = "verdicts"):
    """``--item-inference``, ``--item-resamples``: whether compare's ``what`` generalize over items as well as runs."""
    from ood_store._analysis.crossed import ITEM_INFERENCE, RESAMPLES

    return bundle(
        choice(
            "--item-inference",
            ITEM_INFERENCE,
            "auto",
            f"What the {what} generalize over: auto (items and runs where the store holds per-sample rows of every "
            "task, else runs only), items (fail without them), runs (runs only).",
        ),
        click.option(
            "--item-resamples",
            type=click.IntRange(2),
            default=RESAMPLES,
            show_default=True,
            help="Study-wide item resamples behind the covariance the shared items give the runs.",
        ),
    )


def bundle(*options):
    """One decorator that applies ``options`` in the order given."""

    def apply(fn):
        for option in reversed(options):
            fn = option(fn)
        return fn

    return apply


#: ``--rename NAME=DISPLAY`` (repeatable) and ``--rename-file FILE``: see :func:`ood_store._export.display.names`.
rename_options = bundle(
    click.option(
        "--rename",
        multiple=True,
        metavar="NAME=DISPLAY",
        help="Print NAME (a testset, run or column) as DISPLAY, e.g. --rename mnli=MNLI (repeatable).",
    ),
    click.option(
        "--rename-file",
        type=FILE,
        help="A YAML, JSON or TOML mapping of names to display names.",
    ),
)

#: ``--order-by ATTR`` (repeatable): see :func:`ood_store._export.display.run_order`.
order_by_option = click.option(
    "--order-by",
    multiple=True,
    metavar="ATTR",
    help="Order runs by these run attributes (repeatable).  [default: family, size, seed]",
)


class Width(click.ParamType):
    """A width: ``page``, ``column``, a TeX length (``6.5in``, ``16cm``, ``455pt``) or inches, as inches."""

    name = "width"

    def convert(self, value, param, ctx):
        from ood_store._errors import OodStoreError
        from ood_store._export.page import inches

        try:
            return inches(value)
        except OodStoreError as exc:
            self.fail(exc.message, param, ctx)


def width_option(default: str, what: str = "Figure width; the height follows."):
    """``--width page|column|LENGTH``: how wide a figure or table is (a bare number is inches)."""
    return click.option(
        "--width",
        type=Width(),
        metavar="page|column|LENGTH",
        help=f"{what} page (6.75in), column (3.25in), a TeX length (16cm, 455pt) or inches.  [default: {default}]",
    )


#: ``--attr-file FILE`` (``ingest``, ``evaluate``, ``runs set``): see :mod:`ood_store._store.attribute_rules`.
attr_file_option = click.option(
    "--attr-file",
    "attribute_file",
    type=FILE,
    metavar="FILE",
    help="Run attributes by run name or glob: a CSV (header run,KEY,...), TOML or YAML file.",
)


#: ``--allow-files DIR`` (``query``, ``export --sql``): see :func:`ood_store.open`'s ``allow_files``.
allow_files_option = click.option(
    "--allow-files",
    "allow_files",
    multiple=True,
    type=click.Path(path_type=Path),  # checked by the library (ood_store.open), in its words
    metavar="DIR",
    help="Let the SQL read files in DIR (read_csv('DIR/x.csv')); by default it reads the store only. Repeatable.",
)


def at_option(fn):
    """``--at SNAPSHOT``: read a lake as it was at that snapshot (``ood-store snapshots``)."""
    return click.option(
        "--at",
        type=click.IntRange(min=0),
        metavar="SNAPSHOT",
        help="Read the lake as it was at this snapshot (`ood-store snapshots` lists them): the table as it was made.",
    )(fn)
