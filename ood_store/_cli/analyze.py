"""``ood-store analyze``, ``compare`` and ``analyses``: partial correlations between OOD testsets."""

from __future__ import annotations

import functools
from dataclasses import fields

import click
import polars as pl

from ood_store._analysis import Options, between_groups, compare
from ood_store._analysis.bootstrap import BOOTSTRAP_KINDS
from ood_store._analysis.inference import ADJUST_METHODS
from ood_store._analysis.items import ItemOptions, compute_items
from ood_store._analysis.meta import TAU2_METHODS
from ood_store._analysis.partial import METHODS, compute
from ood_store._analysis.residuals import GAM_DF, GAM_MIN_DF, RESIDUALIZERS, SMOOTHING
from ood_store._analysis.results import Result
from ood_store._analysis.sensitivity import sensitivity_of
from ood_store._analysis.verdicts import AGREEMENT
from ood_store._cli.options import alpha_option, at_option, choice, inference_option, item_options, verdict_options
from ood_store._cli.output import emit, output_options

# table, markdown and latex show a result's summary() (its main columns, rounded) unless --all-columns;
# csv, json and parquet always carry every column, unrounded.
_TEXT_TABLES = ("table", "markdown", "latex")


def analysis_options(fn):
    """The options that define a partial-correlation analysis, shared by ``analyze`` and ``compare``."""
    options = [
        click.option(
            "--in-domain",
            "in_domain",
            metavar="TASK",
            help="The in-domain task: the control.  [default: the runs' in_domain attribute, if they agree]",
        ),
        click.option(
            "--ood",
            multiple=True,
            metavar="TASK[,TASK...]",
            help="OOD tasks (repeatable or comma-separated); default every other task with the metric.",
        ),
        click.option("--run", "runs", multiple=True, metavar="RUN", help="Only these runs (repeatable); default all."),
        click.option("--metric", default="acc", show_default=True, help="The metric that forms each series."),
        click.option("--filter", "filter_", default="none", show_default=True, help="lm-eval filter of the metric."),
        click.option("--num-fewshot", type=int, help="Shot count, when tasks were evaluated at several."),
        choice(
            "--residualizer",
            RESIDUALIZERS,
            "linear",
            "How the in-domain score is regressed out: OLS line, or a penalized spline (GAM).",
        ),
        choice("--smoothing", SMOOTHING, "reml", "How the GAM's smoothing parameter is chosen: REML or GCV, as mgcv."),
        choice("--method", METHODS, "pearson", "Pearson on the residuals, or Spearman on ranks."),
        choice("--adjust", ADJUST_METHODS, "holm", "Multiple-testing adjustment over the pairs of each run."),
        click.option(
            "--bootstrap",
            type=click.IntRange(min=0),
            default=0,
            show_default=True,
            metavar="N",
            help="Block-bootstrap resamples for boot_ci_low/high (0: none).",
        ),
        click.option(
            "--block-length",
            type=click.IntRange(min=1),
            help="Bootstrap block length in checkpoints.  [default: automatic]",
        ),
        choice("--bootstrap-kind", BOOTSTRAP_KINDS, "circular", "Circular or stationary block bootstrap."),
        click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap."),
        click.option(
            "--gam-df",
            type=click.IntRange(min=GAM_MIN_DF),
            default=GAM_DF,
            show_default=True,
            help="GAM basis dimension, intercept included (mgcv's k).",
        ),
        click.option(
            "--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95, show_default=True
        ),
        click.option(
            "--campaign",
            metavar="NAME",
            help="Only the evaluations of this campaign (see `ood-store runs`).  [default: all, newest per step]",
        ),
        click.option(
            "--where",
            multiple=True,
            metavar="KEY=VALUE",
            help="Only runs with this attribute (family, size, in_domain, seed, any key; VALUE a glob). Repeatable.",
        ),
        click.option(
            "--slice",
            "slices",
            multiple=True,
            metavar="TASK:FIELD",
            help="Split TASK's items by FIELD (target: the label; or any top-level key of their documents, "
            "e.g. hans:heuristic), each part an OOD task TASK[FIELD=VALUE] scored from the stored samples. Repeatable.",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _analysis_kwargs(fn):
    """Collects the analysis options (one per field of :class:`Options`) into one ``options`` argument.

    Without ``--in-domain`` its ``in_domain`` is None: the analysis takes the runs' attribute.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        values = {f.name: kwargs.pop("filter_" if f.name == "filter" else f.name) for f in fields(Options)}
        values["ood"], values["runs"] = tuple(values["ood"]) or None, tuple(values["runs"]) or None
        values["where"] = tuple(values["where"]) or None
        values["slices"] = tuple(values["slices"]) or None
        kwargs["options"] = Options(**values)
        return fn(*args, **kwargs)

    return wrapper


def shown(result: Result, output_format: str, all_columns: bool) -> pl.DataFrame:
    """The rows a command prints of ``result``: its summary's in text tables, every column otherwise."""
    if output_format.lower() not in _TEXT_TABLES:
        return result.table
    return result.summary(all_columns=all_columns).frame


_all_columns = click.option(
    "--all-columns", is_flag=True, help="Show every column in table, markdown and latex output (csv/json always do)."
)


@click.command()
@analysis_options
@click.option("--save", metavar="NAME", help="Save the result in the store under NAME (for export and plots).")
@click.option("--replace", is_flag=True, help="With --save: overwrite an analysis of the same name.")
@click.option(
    "--sensitivity",
    is_flag=True,
    help="Instead of the table: r and adjusted p under the line, the GAM by GCV and by REML, fragile pairs flagged.",
)
@click.option(
    "--items",
    type=click.IntRange(min=1),
    metavar="N",
    help="Resample each testset's items N times (the same items at every checkpoint) from the stored samples: "
    "item-bootstrap intervals, r corrected for item noise, split-half reliabilities.",
)
@click.option(
    "--splits",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    metavar="N",
    help="With --items: random splits of the items behind each split-half reliability.",
)
@alpha_option("With --sensitivity: the level at which adjusted p-values count as significant.")
@inference_option()
@at_option
@_all_columns
@output_options
@_analysis_kwargs
@click.pass_obj
def analyze(
    settings,
    options: Options,
    at: int | None,
    save: str | None,
    replace: bool,
    sensitivity: bool,
    items: int | None,
    splits: int,
    alpha: float,
    inference: str,
    all_columns: bool,
    output_format,
    output,
):
    """Partial correlations between OOD tasks with the in-domain score regressed out, run by run.

    For every run and every pair of OOD tasks (X, Y): X and Y are regressed on
    the in-domain score over the run's checkpoints and their residuals
    correlated. Besides the naive test (p, p_adj) it reports the effective
    sample size of the two autocorrelated residual series (n_eff) and the
    test on it (p_eff, p_eff_adj); the documentation's statistics page says when to trust which.
    --sensitivity reports instead how far each r depends on the residualizer,
    and flags the pairs whose significance does (fragile). --items N works on
    the stored per-sample rows: each testset's items resampled N times, r
    corrected for the item noise of the in-domain score (and of X and Y), and
    each series' split-half reliability; with --bootstrap the checkpoints are
    block-resampled together with the items.

    \b
    Example:
      ood-store analyze --in-domain lambada_openai --ood arc_easy,piqa,sciq --save pythia-lambada
      ood-store analyze --in-domain lambada_openai --ood arc_easy,piqa,sciq --sensitivity
      ood-store analyze --in-domain mnli --ood hans,rte --items 1000
      ood-store analyze --in-domain mnli --ood hans,rte --at 42     # a lake as it was at snapshot 42
    """
    if at is not None and save is not None:
        raise click.UsageError("--at reads the lake as it was: its past cannot be written to; leave out --save.")
    if items is not None:
        if save is not None or sensitivity:
            raise click.UsageError("--items makes its own table: leave out --save and --sensitivity.")
        item_options = ItemOptions(
            **{f.name: getattr(options, f.name) for f in fields(Options)}, items=items, splits=splits
        )
        with settings.open(read_only=True, at=at) as store:
            items_result = compute_items(store, item_options, progress=True)
        emit(shown(items_result, output_format, all_columns), output_format, output)
        return
    if sensitivity:
        if save is not None or options.bootstrap:
            raise click.UsageError("--sensitivity compares point estimates: leave out --save and --bootstrap.")
        with settings.open(read_only=True, at=at) as store:
            report = sensitivity_of(store, options, alpha=alpha, inference=inference, progress=True)
        emit(shown(report, output_format, all_columns), output_format, output)
        return
    with settings.open(read_only=save is None, at=at) as store:
        result = compute(store, options, progress=True)
        if save is not None:
            store.save_analysis(save, result, replace=replace)
    emit(shown(result, output_format, all_columns), output_format, output)
    if save is not None:
        click.echo(f"Saved as analysis {save!r} ({result.table.height} rows) in {settings.db}.", err=True)


@click.command(name="compare")
@analysis_options
@click.option("--analysis", "analysis_name", metavar="NAME", help="Compare a saved analysis instead of computing one.")
@click.option(
    "--by",
    multiple=True,
    metavar="ATTR",
    help="Compare runs within groups of this run attribute (family, size, in_domain, seed, or any --attr key).",
)
@click.option(
    "--agreement",
    type=click.FloatRange(0.5, 1, min_open=True),
    default=AGREEMENT,
    show_default=True,
    help="Share of runs that must share the pooled r's sign for a 'consistently ...' verdict (over items: of "
    "their calibrated estimates).",
)
@click.option(
    "--between",
    metavar="ATTR",
    help="Instead: does r differ between groups of runs of this attribute (e.g. family) beyond --within variation?",
)
@click.option("--within", metavar="ATTR", help="With --between: what tells runs of a group apart (e.g. seed).")
@choice("--tau2-method", TAU2_METHODS, "PM", "With --between: the estimator of the within-group variance tau².")
@verdict_options()
@item_options()
@alpha_option("Significance level of the per-run tests, pooled intervals and heterogeneity tests.")
@inference_option()
@at_option
@_all_columns
@output_options
@_analysis_kwargs
@click.pass_obj
def compare_command(
    settings,
    options: Options,
    at: int | None,
    analysis_name,
    by,
    agreement,
    between,
    within,
    tau2_method,
    adjust_pairs,
    test,
    item_inference,
    item_resamples,
    alpha,
    inference,
    all_columns,
    output_format,
    output,
):
    """Compare partial correlations across runs: per-run r, sign agreement, pooled r, heterogeneity, verdict.

    Takes the same options as `analyze` (or --analysis NAME for a saved
    one). For each pair of OOD tasks it pools the runs' r by a random-effects
    meta-analysis on Fisher z and gives a verdict: consistently positive,
    consistently negative, model-dependent, mixed or no evidence (the documentation:
    "Across runs"). The tests behind the verdicts are adjusted over the pairs
    (--adjust-pairs, Holm by default; ci_low_adj, ci_high_adj and q_p_adj are
    what the verdicts read) and the pooled estimate is tested by Knapp-Hartung
    (--test knha) unless --test z. With --between ATTR --within ATTR it asks
    instead whether r differs between groups of runs (models) beyond the
    variation within them (seeds): a mixed-effects meta-analysis, the groups
    tested against tau² within; one run in a group is a model confounded with
    its seed, and the verdict says so.

    Where the store holds per-sample rows of every task (the same items in
    every run), the verdicts generalize over items as well as runs: the
    in-domain testset's noise is taken out (a vanishing-tetrad test over
    pairs of its items) and the pooled interval counts the covariance that
    the shared items give every run (study-wide item resamples); the basis
    column says which, and a verdict the in-domain testset's noise could
    explain reads "not distinguishable from the control's noise" (the
    documentation: "Verdicts over items and runs"). --between does the same:
    the groups' r* are compared with the covariance the shared items give
    them. --item-inference runs turns it off.

    \b
    Example:
      ood-store compare --in-domain mnli --by family
      ood-store compare --in-domain mnli --between family --within seed
    """
    if analysis_name is not None and options.in_domain is not None:
        raise click.UsageError("Give --analysis NAME or the analysis options (--in-domain ...), not both.")
    if (between is None) != (within is None):
        raise click.UsageError("--between and --within go together.")
    if between is not None and by:
        raise click.UsageError("--between compares groups with each other; it does not combine with --by.")
    with settings.open(read_only=True, at=at) as store:
        analyzed = store.analysis(analysis_name) if analysis_name else compute(store, options, progress=True)
        if between is not None:
            groups = between_groups(
                analyzed,
                between=between,
                within=within,
                attributes=store,
                alpha=alpha,
                inference=inference,
                tau2_method=tau2_method,
                adjust_pairs=adjust_pairs,
                test=test,
                items=store,
                item_inference=item_inference,
                item_resamples=item_resamples,
                progress=True,
            )
            emit(shown(groups, output_format, all_columns), output_format, output)
            return
        result = compare(
            analyzed, by=list(by) or None, attributes=store, alpha=alpha, inference=inference, agreement=agreement,
            adjust_pairs=adjust_pairs, test=test, items=store, item_inference=item_inference,
            item_resamples=item_resamples, progress=True,
        )  # fmt: skip
    emit(shown(result, output_format, all_columns), output_format, output)


@click.command()
@click.option("--drop", metavar="NAME", help="Remove the saved analysis NAME.")
@output_options
@click.pass_obj
def analyses(settings, drop: str | None, output_format: str, output) -> None:
    """List saved analyses (from `analyze --save NAME`) with their parameters."""
    if drop is not None:
        with settings.open() as store:
            store.drop_analysis(drop)
        click.echo(f"Dropped analysis {drop!r}.", err=True)
        return
    with settings.open(read_only=True) as store:
        frame = store.analyses()
    emit(frame, output_format, output)


COMMANDS = [analyze, compare_command, analyses]
