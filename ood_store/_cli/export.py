"""``ood-store export``: a saved analysis, its comparison across runs, or any query as a table for a paper."""

from __future__ import annotations

import click

from ood_store._cli.flags import spelled
from ood_store._cli.options import (
    FILE,
    allow_files_option,
    alpha_option,
    at_option,
    choice,
    inference_option,
    item_options,
    order_by_option,
    rename_options,
    verdict_options,
    width_option,
)
from ood_store._export import display, formats, tables


@click.command()
@click.option("--analysis", "analysis_name", metavar="NAME", help="A saved analysis (`ood-store analyses`).")
@click.option("--sql", metavar="SQL", help="Export the rows of this read-only query instead.")
@click.option(
    "--item-dynamics",
    "dynamics_tasks",
    multiple=True,
    metavar="TASK[,TASK...]",
    help="Export the item dynamics of these tasks instead: per run, items learned for good and forgetting events "
    "(with --items-table, one row per item).",
)
@click.option("--items-table", is_flag=True, help="With --item-dynamics: one row per item.")
@click.option("--run", "dynamics_runs", multiple=True, metavar="RUN", help="With --item-dynamics: only these runs.")
@allow_files_option
@click.option("--compare", "compared", is_flag=True, help="With --analysis: export its comparison across runs.")
@click.option("--by", multiple=True, metavar="ATTR", help="With --compare: compare runs within groups of ATTR.")
@click.option(
    "--wide",
    is_flag=True,
    help="One row per run, one column of r per pair (with --compare: add each run's r).",
)
@click.option(
    "--transpose", is_flag=True, help="A wide table the other way round: one row per pair, one column per run."
)
@click.option(
    "--compact",
    is_flag=True,
    help="Testsets as two-letter codes (a key in the caption), run names less what they share, numbers as .35.",
)
@click.option(
    "-f",
    "--format",
    "output_format",
    type=click.Choice(tables.FORMATS, case_sensitive=False),
    help="Output format.  [default: from the -o extension (.tex .md .csv .json .parquet), else latex]",
)
@click.option("-o", "--output", type=FILE, help="Write to FILE.")
@click.option(
    "--digits",
    type=click.IntRange(0, 12),
    help="Decimals.  [default: 2 in latex and markdown; full precision in csv, json, parquet]",
)
@choice(
    "--mark",
    tables.MARKS,
    "stars",
    "Mark significant r (adjusted p) with stars (* .05, ** .01, *** .001) or bold (p < .05).",
)
@inference_option("Which adjusted p marks significance: effective (p_eff_adj) or naive (p_adj).")
@alpha_option("With --compare: the level of the verdicts and pooled intervals.")
@verdict_options("verdicts of --compare")
@item_options("verdicts of --compare")
@click.option("--caption", help="Table caption.  [default: says what the analysis is and what the marks mean]")
@click.option("--label", help="LaTeX label.  [default: tab:partial-correlations]")
@width_option("page", "LaTeX: the text width the table must fit; export warns when it does not.")
@click.option("--landscape", is_flag=True, help="LaTeX: the table turned sideways on its own page (rotating).")
@click.option("--split", is_flag=True, help="LaTeX: as many tables as it takes to fit the width.")
@click.option("--standalone", is_flag=True, help="LaTeX: a whole document that compiles on its own.")
@rename_options
@order_by_option
@at_option
@click.pass_obj
def export(settings, analysis_name, sql, dynamics_tasks, items_table, dynamics_runs, allow_files, compared, by, wide,
           transpose, compact, output_format, output, digits, mark, inference, alpha, adjust_pairs, test,
           item_inference, item_resamples, caption,
           label, width, landscape, split, standalone, rename, rename_file, order_by, at):  # fmt: skip
    """Export a saved analysis (or its comparison, or any query) as a table for a paper.

    LaTeX tables use booktabs, align their numbers and mark significant r by
    the adjusted p; every file carries its provenance (ood-store version,
    analysis and parameters, store) as a comment or metadata. A LaTeX table
    too wide for the page (--width) is written all the same, with a warning
    that names the options that make it fit (--transpose, --compact,
    --landscape, --digits, --split); one taller than a page is a longtable.

    \b
    Examples:
      ood-store export --analysis pythia-gam -o table.tex
      ood-store export --analysis pythia-gam --wide --transpose --rename arc_easy=ARC-e --format markdown
      ood-store export --analysis pythia-gam --compare -o pooled.csv
      ood-store export --sql "SELECT * FROM scores WHERE task = 'mnli'" -o mnli.parquet
      ood-store export --item-dynamics hans --items-table -o hans-items.csv
      ood-store export --analysis pythia-gam --at 42 -o table.tex   # a lake's table as it was at snapshot 42
    """
    if sum(given is not None and given != () for given in (analysis_name, sql, dynamics_tasks)) != 1:
        raise click.UsageError("Give one of --analysis NAME, --sql SQL or --item-dynamics TASK.")
    if (items_table or dynamics_runs) and not dynamics_tasks:
        raise click.UsageError("--items-table and --run need --item-dynamics.")
    if allow_files and sql is None:
        raise click.UsageError("--allow-files needs --sql.")
    if analysis_name is None and (compared or wide or by or transpose):
        raise click.UsageError("--compare, --by, --wide and --transpose need --analysis.")
    if by and not compared:
        raise click.UsageError("--by needs --compare.")
    output_format = (output_format or (tables.format_of(output) if output else "latex")).lower()
    if formats.is_binary(output_format) and output is None:
        raise click.UsageError(f"--format {output_format} writes a binary file: give it one with -o FILE")
    names = display.names(rename, rename_file)
    layout = {"digits": digits, "names": names, "caption": caption, "label": label, "landscape": landscape,
              "split": split, **({"width": width} if width is not None else {})}  # fmt: skip
    with settings.open(read_only=True, allow_files=allow_files, at=at) as store:
        if dynamics_tasks:
            table = tables.from_item_dynamics(store, dynamics_tasks, dynamics_runs or None, items=items_table, **layout)
        elif sql is not None:
            table = tables.from_query(store, sql, **layout)
        else:
            table = tables.from_analysis(
                store, analysis_name, compared=compared, by=by, wide=wide, transpose=transpose, compact=compact,
                mark=mark, inference=inference, alpha=alpha, order_by=order_by or None,
                **({"adjust_pairs": adjust_pairs, "test": test, "item_inference": item_inference,
                    "item_resamples": item_resamples} if compared else {}), **layout,
            )  # fmt: skip
    if output is None:
        text = table.render(output_format, standalone=standalone)
        click.echo(text, nl=not text.endswith("\n"))
    else:
        table.write(output, output_format, standalone=standalone)
        click.echo(f"Wrote {table.frame.height} rows as {output_format} to {output}.", err=True)
    if output_format == "latex":
        fit = table.fit()
        if not fit.fits:
            click.echo(f"Warning: {spelled(fit.message())}.", err=True)


COMMANDS = [export]
