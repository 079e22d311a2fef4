"""``ood-store plot``: figures for papers from a saved analysis or the store's training curves."""

from __future__ import annotations

from pathlib import Path

import click

from ood_store._cli.options import (
    FILE,
    alpha_option,
    bundle,
    choice,
    inference_option,
    item_options,
    order_by_option,
    rename_options,
    verdict_options,
    width_option,
)
from ood_store._cli.output import write_figure
from ood_store._cli.plan import plan_options as _plan_options
from ood_store._export import display, figures

_output = click.option(
    "-o",
    "--output",
    required=True,
    type=FILE,
    metavar="FILE",
    help="The figure file; its extension picks the format: .pdf, .png (300 dpi) or .svg.",
)
_analysis = click.option(
    "--analysis", "analysis_name", required=True, metavar="NAME", help="A saved analysis (`ood-store analyses`)."
)
_tasks = click.option(
    "--tasks", multiple=True, metavar="TASK[,TASK...]", help="Only these OOD tasks, in this order.  [default: all]"
)
_test = bundle(alpha_option(), inference_option())
_verdicts = verdict_options()
_items = item_options()
_no_note = click.option(
    "--no-note", is_flag=True, help="Leave out the note under the figure (say it in the caption instead)."
)


_x_scale = bundle(
    choice(
        "--x-scale",
        ("auto", "linear", "log"),
        "auto",
        "The step axis: log is symmetric log, linear up to the first nonzero step so that step 0 shows; auto "
        "takes log where the checkpoints are log-spaced (a third of them in the first tenth of training).",
    ),
    click.option("--logx", is_flag=True, hidden=True, help="Same as --x-scale log (kept for old scripts)."),
)


_runs = click.option(
    "--run", "runs", multiple=True, metavar="RUN", help="Only these runs (repeatable).  [default: all]"
)


def _figure_file(width: str):
    """``--width`` (``width`` its default, in words) and ``-o FILE``: the figure's size and file."""
    return bundle(width_option(width), _output)


#: The saved analysis, runs and tasks that a figure draws.
_selection = bundle(_analysis, _runs, _tasks)


@click.group()
def plot() -> None:
    """Figures for papers (PDF, PNG or SVG by the extension of -o), sized for a two-column paper.

    Each file records its provenance (ood-store version, analysis and its
    parameters, store) in its metadata.

    \b
    Examples:
      ood-store plot heatmap --analysis pythia-gam --run EleutherAI/pythia-v1.1-410m -o heatmap.pdf
      ood-store plot grid --analysis pythia-gam -o pythia-gam.png
      ood-store plot curves --analysis pythia-gam --run EleutherAI/pythia-v1.1-410m -o curves.pdf
      ood-store plot signs --analysis pythia-gam -o signs.svg
      ood-store plot grid --analysis study --rows family --cols size -o grid.pdf
      ood-store plot forest --analysis study --color-by family -o forest.pdf
      ood-store plot items --task hans --run runs/opt-mnli-s1 -o items.pdf --table items.csv
    """


def _write(figure: figures.PaperFigure, output: Path) -> None:
    write_figure(figure, output)


def _from_analysis(settings, kind: str, output: Path, rename, rename_file, **options) -> None:
    """Draw figure ``kind`` of a saved analysis (``options`` go to :func:`figures.from_analysis`) and write it."""
    figures.file_format(output)
    names = display.names(rename, rename_file)
    with settings.open(read_only=True) as store:
        figure = figures.from_analysis(store, options.pop("analysis_name"), kind, names=names, **options)
    _write(figure, output)


@plot.command()
@_analysis
@click.option("--run", metavar="RUN", help="The run to draw (needed when the analysis has several).")
@_tasks
@_test
@rename_options
@_no_note
@_figure_file("3.25, one column")
@click.pass_obj
def heatmap(settings, analysis_name, run, tasks, alpha, inference, rename, rename_file, no_note, width, output):
    """One run's partial correlations between OOD tasks: a lower-triangle heatmap, r in each cell.

    Pairs that are not significant (adjusted p >= --alpha) are faded.
    """
    _from_analysis(
        settings, "heatmap", output, rename, rename_file, analysis_name=analysis_name, runs=[run] if run else None,
        tasks=tasks or None, alpha=alpha, inference=inference, note=not no_note, width=width,
    )  # fmt: skip


@plot.command()
@_selection
@_test
@rename_options
@order_by_option
@click.option("--ncols", type=click.IntRange(min=1), help="Panels per row.  [default: as many as fit the page]")
@click.option("--rows", metavar="ATTR", help="One row of panels per value of this run attribute (family, size, ...).")
@click.option("--cols", metavar="ATTR", help="One column of panels per value of this run attribute.")
@choice(
    "--seeds",
    figures.SEEDS,
    "pool",
    "With --rows/--cols: the runs that share a panel (the seeds) pooled into one heatmap, or each drawn.",
)
@click.option(
    "--full-titles",
    is_flag=True,
    help="Keep whole display names as titles (by default, less what all share; a run's is its name after the "
    "last /, unless renamed).",
)
@_verdicts
@_no_note
@_figure_file("6.75in, the full page; less for few runs")
@click.pass_obj
def grid(settings, analysis_name, runs, tasks, alpha, inference, rename, rename_file, order_by, ncols, rows, cols,
         seeds, full_titles, adjust_pairs, test, no_note, width, output):  # fmt: skip
    """A heatmap per run with one color bar: do the partial correlations generalize across runs?

    Panels wrap into rows for the page, every row with its task labels; with
    --rows and --cols they are faceted by run attributes instead. Runs
    without a finite r are left out and named in the note.
    """
    _from_analysis(
        settings, "grid", output, rename, rename_file, analysis_name=analysis_name, runs=runs or None,
        tasks=tasks or None, alpha=alpha, inference=inference, order_by=order_by or None, ncols=ncols, rows=rows,
        cols=cols, seeds=seeds, short_titles=not full_titles, note=not no_note, width=width,
        adjust_pairs=adjust_pairs, test=test,
    )  # fmt: skip


@plot.command()
@_selection
@click.option(
    "--color-by",
    metavar="ATTR",
    help="Color each run's points by this run attribute.  [default: family, where runs have one]",
)
@_test
@_verdicts
@_items
@rename_options
@order_by_option
@_no_note
@_figure_file("3.25in, one column")
@click.pass_obj
def forest(settings, analysis_name, runs, tasks, color_by, alpha, inference, adjust_pairs, test, item_inference,
           item_resamples, rename, rename_file, order_by, no_note, width, output):  # fmt: skip
    """Per pair of OOD tasks, each run's r as a point and the pooled r with its interval: a forest plot.

    The pooled r, its interval and the verdict are those of `ood-store
    compare`; points are filled where the run's own adjusted p is below --alpha.
    """
    _from_analysis(
        settings, "forest", output, rename, rename_file, analysis_name=analysis_name, runs=runs or None,
        tasks=tasks or None, color_by=color_by, alpha=alpha, inference=inference, order_by=order_by or None,
        note=not no_note, width=width, adjust_pairs=adjust_pairs, test=test, item_inference=item_inference,
        item_resamples=item_resamples,
    )  # fmt: skip


@plot.command()
@click.option("--run", metavar="RUN", help="The run to draw (needed when the store has several).")
@click.option(
    "--analysis",
    "analysis_name",
    metavar="NAME",
    help="Take the in-domain task, OOD tasks, metric, filter and shots from this saved analysis.",
)
@click.option("--tasks", multiple=True, metavar="TASK[,TASK...]", help="Tasks to draw.  [default: the analysis']")
@click.option("--in-domain", metavar="TASK", help="The in-domain task, drawn in black.  [default: the analysis']")
@click.option("--metric", help="The metric.  [default: the analysis', else acc]")
@click.option("--filter", "filter_", help="lm-eval filter of the metric.  [default: the analysis', else none]")
@click.option("--num-fewshot", type=int, help="Shot count, when tasks were evaluated at several.")
@_x_scale
@rename_options
@_figure_file("3.25, one column")
@click.pass_obj
def curves(settings, run, analysis_name, tasks, in_domain, metric, filter_, num_fewshot, x_scale, logx, rename,
           rename_file, width, output):  # fmt: skip
    """Training curves of one run: in-domain and OOD scores over the steps, with standard-error bands."""
    if not tasks and not analysis_name:
        raise click.UsageError("Give the tasks to draw with --tasks, or --analysis NAME.")
    figures.file_format(output)
    names = display.names(rename, rename_file)
    with settings.open(read_only=True) as store:
        figure = figures.curves_of_run(
            store, run, analysis=analysis_name, tasks=tasks or None, in_domain=in_domain, metric=metric,
            filter=filter_, num_fewshot=num_fewshot, names=names, x_scale="log" if logx else x_scale,
            width=width or figures.COLUMN_WIDTH,
        )  # fmt: skip
    _write(figure, output)


@plot.command()
@_analysis
@_runs
@click.option(
    "--by",
    multiple=True,
    metavar="ATTR",
    help="One panel per group of this run attribute (family, size, in_domain, seed, or any --attr key).",
)
@_tasks
@_test
@_verdicts
@_items
@rename_options
@_no_note
@_figure_file("3.25 for one panel; up to 6.75 for several")
@click.pass_obj
def signs(settings, analysis_name, runs, by, tasks, alpha, inference, adjust_pairs, test, item_inference,
          item_resamples, rename, rename_file, no_note, width, output):  # fmt: skip
    """How many runs agree on the sign of each pair's partial correlation, as a lower-triangle matrix.

    Cells count the runs with r > 0 and r < 0; pairs that `compare` calls
    model-dependent are hatched, consistent ones in bold.
    """
    _from_analysis(
        settings, "signs", output, rename, rename_file, analysis_name=analysis_name, runs=runs or None,
        by=by or None, tasks=tasks or None, alpha=alpha, inference=inference, note=not no_note, width=width,
        adjust_pairs=adjust_pairs, test=test, item_inference=item_inference, item_resamples=item_resamples,
    )  # fmt: skip


@plot.command(name="power")
@_plan_options
@_no_note
@_figure_file("3.25in, one column")
@click.pass_obj
def power(settings, no_note, width, output, **kwargs):
    """The power curves of `ood-store plan` (same options): power against seeds per family, a line per
    checkpoint count, ±2 Monte Carlo standard errors, the target and the cheapest design that reaches it.

    \b
    Example:
      ood-store plot power --effect 0.3 --effect -0.3 --tau 0.2 --ar1 0.6 --checkpoints 12,24,48 -o power.pdf
    """
    from ood_store._cli.plan import power_figure

    power_figure(settings, output, width, no_note, **kwargs)


COMMANDS = [plot]


@plot.command()
@_runs
@click.option(
    "--task", "tasks", multiple=True, required=True, metavar="TASK[,TASK...]", help="Tasks whose items to draw."
)
@click.option("--metric", default="acc", show_default=True, help="The per-item metric (0/1).")
@click.option("--filter", "filter_", default="none", show_default=True, help="lm-eval filter of the metric.")
@click.option("--num-fewshot", type=int, help="Shot count, when tasks were evaluated at several.")
@click.option("--table", type=click.Path(dir_okay=False, path_type=Path), help="Also write the per-item table (CSV).")
@_x_scale
@_figure_file("3.25, one column")
@click.pass_obj
def items(settings, runs, tasks, metric, filter_, num_fewshot, table, x_scale, logx, width, output):
    """Item dynamics: the share of a task's items learned for good by each step, and forgetting events.

    An item is learned at the checkpoint from which it is answered correctly
    at every later one; a forgetting event is a checkpoint where it is wrong
    after being right at the one before. From the stored per-sample rows.
    """
    from ood_store._analysis.dynamics import item_dynamics
    from ood_store._export.dynamics import COLUMN_WIDTH, item_dynamics_figure

    figures.file_format(output)
    with settings.open(read_only=True) as store:
        result = item_dynamics(store, tasks, runs or None, metric=metric, filter=filter_, num_fewshot=num_fewshot)
        figure = item_dynamics_figure(
            store, tasks, metric=metric, width=width or COLUMN_WIDTH, result=result,
            x_scale="log" if logx else x_scale,
        )  # fmt: skip
    if table is not None:
        result.items.write_csv(table)
        click.echo(f"Wrote {result.items.height} items' dynamics to {table}.", err=True)
    _write(figure, output)
