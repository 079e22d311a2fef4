"""``ood-store plot``: figures for papers from a saved analysis or the store's training curves."""

from __future__ import annotations

from pathlib import Path

import click
import polars as pl

from ood_store.analysis import compare
from ood_store.analysis.compare import INFERENCE
from ood_store.cli.options import bundle, order_by_option, rename_options
from ood_store.errors import AnalysisError
from ood_store.export import display, figures
from ood_store.export.provenance import Provenance
from ood_store.names import split_names

_output = click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="The figure file; its extension picks the format: .pdf, .png (300 dpi) or .svg.",
)
_analysis = click.option(
    "--analysis", "analysis_name", required=True, metavar="NAME", help="A saved analysis (`ood-store analyses`)."
)
_tasks = click.option(
    "--tasks", multiple=True, metavar="TASK[,TASK...]", help="Only these OOD tasks, in this order.  [default: all]"
)
_test = bundle(
    click.option(
        "--alpha",
        type=click.FloatRange(0, 1, min_open=True, max_open=True),
        default=0.05,
        show_default=True,
        help="Significance level of the adjusted p-values.",
    ),
    click.option(
        "--inference",
        type=click.Choice(INFERENCE),
        default="effective",
        show_default=True,
        help="effective: p_eff_adj and n_eff (autocorrelation-aware); naive: p_adj and n.",
    ),
)
_no_note = click.option(
    "--no-note", is_flag=True, help="Leave out the note under the figure (say it in the caption instead)."
)


def _source(kind: str, analysis: str, alpha: float, inference: str, by=()) -> str:
    """What a figure shows, for its provenance: the kind, the analysis and the plot's own settings."""
    grouped = f", by {', '.join(by)}" if by else ""
    return f"{kind} of analysis {analysis} (alpha {alpha:g}, {inference} inference{grouped})"


def _width(default: str):
    return click.option(
        "--width",
        type=click.FloatRange(1.0, 30.0),
        metavar="INCHES",
        help=f"Figure width; the height follows.  [default: {default}]",
    )


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
    """


@plot.command()
@_analysis
@click.option("--run", metavar="RUN", help="The run to draw (needed when the analysis has several).")
@_tasks
@_test
@rename_options
@_no_note
@_width("3.25, one column")
@_output
@click.pass_obj
def heatmap(settings, analysis_name, run, tasks, alpha, inference, rename, rename_file, no_note, width, output):
    """One run's partial correlations between OOD tasks: a lower-triangle heatmap, r in each cell.

    Pairs that are not significant (adjusted p >= --alpha) are faded.
    """
    figures.file_format(output)
    names = display.names(rename, rename_file)
    with settings.open(read_only=True) as store:
        table = store.analysis(analysis_name)
        source = _source("heatmap", analysis_name, alpha, inference)
        provenance = Provenance.of_analysis(store, analysis_name, source=source)
    figure = figures.heatmap(
        table, run, names=names, tasks=split_names(tasks or None, "tasks"), alpha=alpha, inference=inference,
        note=not no_note, width=width or figures.COLUMN_WIDTH,
    )  # fmt: skip
    figures.save(figure, output, provenance)
    run = run or table["run"][0]
    click.echo(f"Wrote the heatmap of run {run} to {output}.", err=True)


@plot.command()
@_analysis
@click.option("--run", "runs", multiple=True, metavar="RUN", help="Only these runs (repeatable).  [default: all]")
@_tasks
@_test
@rename_options
@order_by_option
@click.option("--ncols", type=click.IntRange(min=1), help="Panels per row.  [default: up to 4 in one row]")
@_no_note
@_width("6.75, the full page; less for few runs")
@_output
@click.pass_obj
def grid(settings, analysis_name, runs, tasks, alpha, inference, rename, rename_file, order_by, ncols, no_note, width,
         output):  # fmt: skip
    """A heatmap per run side by side with one colour bar: do the partial correlations generalise across runs?"""
    figures.file_format(output)
    names = display.names(rename, rename_file)
    with settings.open(read_only=True) as store:
        table = store.analysis(analysis_name)
        chosen = split_names(runs or None, "runs") or table["run"].unique().to_list()
        ordered = display.run_order(store, chosen, order_by or None)
        source = _source("heatmap grid", analysis_name, alpha, inference)
        provenance = Provenance.of_analysis(store, analysis_name, source=source)
    figure = figures.heatmap_grid(
        table, ordered, names=names, tasks=split_names(tasks or None, "tasks"), alpha=alpha, inference=inference,
        note=not no_note, ncols=ncols, width=width,
    )  # fmt: skip
    figures.save(figure, output, provenance)
    click.echo(f"Wrote heatmaps of {len(ordered)} runs to {output}.", err=True)


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
@click.option("--logx", is_flag=True, help="Steps on a log scale (for log-spaced checkpoints).")
@rename_options
@_width("3.25, one column")
@_output
@click.pass_obj
def curves(settings, run, analysis_name, tasks, in_domain, metric, filter_, num_fewshot, logx, rename, rename_file,
           width, output):  # fmt: skip
    """Training curves of one run: in-domain and OOD scores over the steps, with standard-error bands."""
    figures.file_format(output)
    names = display.names(rename, rename_file)
    with settings.open(read_only=True) as store:
        params = store.analysis_params(analysis_name) if analysis_name else {}
        run = run or _only_run(store)
        chosen = split_names(tasks or None, "tasks") or params.get("tasks") or params.get("ood")
        if not chosen:
            raise click.UsageError("Give the tasks to draw with --tasks, or --analysis NAME.")
        in_domain = in_domain or params.get("in_domain")
        metric = metric or params.get("metric") or "acc"
        filter_ = filter_ or params.get("filter") or "none"
        num_fewshot = num_fewshot if num_fewshot is not None else params.get("num_fewshot")
        figure = figures.training_curves(
            store, run, chosen, in_domain=in_domain, metric=metric, filter=filter_, num_fewshot=num_fewshot,
            names=names, logx=logx, width=width or figures.COLUMN_WIDTH,
        )  # fmt: skip
        source = f"training curves of run {run}"
        if analysis_name:
            provenance = Provenance.of_analysis(store, analysis_name, source=source)
        else:
            drawn = {"run": run, "tasks": list(chosen), "in_domain": in_domain, "metric": metric, "filter": filter_,
                     "num_fewshot": num_fewshot}  # fmt: skip
            provenance = Provenance.of_store(store, source, params=drawn)
    figures.save(figure, output, provenance)
    count = len(dict.fromkeys([*([in_domain] if in_domain else []), *chosen]))
    click.echo(f"Wrote training curves of {count} tasks of run {run} to {output}.", err=True)


def _only_run(store) -> str:
    runs = sorted(store.runs()["run"])
    if len(runs) == 1:
        return runs[0]
    if not runs:
        raise AnalysisError("the store has no runs (see `ood-store ingest`)")
    raise AnalysisError(f"the store has {len(runs)} runs; choose one with --run: {', '.join(runs)}")


@plot.command()
@_analysis
@click.option("--run", "runs", multiple=True, metavar="RUN", help="Only these runs (repeatable).  [default: all]")
@click.option(
    "--by",
    multiple=True,
    metavar="ATTR",
    help="One panel per group of this run attribute (family, size, in_domain, seed, or any --attr key).",
)
@_tasks
@_test
@rename_options
@_no_note
@_width("3.25 for one panel; up to 6.75 for several")
@_output
@click.pass_obj
def signs(settings, analysis_name, runs, by, tasks, alpha, inference, rename, rename_file, no_note, width, output):
    """How many runs agree on the sign of each pair's partial correlation, as a lower-triangle matrix.

    Cells count the runs with r > 0 and r < 0; pairs that `compare` calls
    model-dependent are hatched, consistent ones in bold.
    """
    figures.file_format(output)
    names = display.names(rename, rename_file)
    with settings.open(read_only=True) as store:
        table = store.analysis(analysis_name)
        order = figures.task_order(table)  # the analysis' order, as in its heatmaps (compare sorts pairs)
        chosen = split_names(runs or None, "runs")
        if chosen is not None:
            absent = [r for r in chosen if r not in set(table["run"])]
            if absent:
                raise AnalysisError(f"--run: no run {', '.join(map(repr, absent))} in analysis {analysis_name!r}")
            table = table.filter(pl.col("run").is_in(chosen))
        result = compare(table, by=list(by) or None, attributes=store, alpha=alpha, inference=inference)
        source = _source("sign agreement", analysis_name, alpha, inference, by)
        provenance = Provenance.of_analysis(store, analysis_name, source=source)
    figure = figures.sign_agreement(
        result, names=names, tasks=split_names(tasks or None, "tasks") or order, note=not no_note, width=width
    )
    figures.save(figure, output, provenance)
    run_count = table["run"].n_unique()
    click.echo(f"Wrote the sign agreement of {run_count} runs to {output}.", err=True)


COMMANDS = [plot]
