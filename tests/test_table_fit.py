"""Tables that fit the page (export/table_fit.py, export/latex.py), checked with pdflatex itself.

pdflatex is the independent judge: the width it gives each tabular (``\\wd`` of
a box holding it), the ``Overfull \\hbox`` and ``Float too large`` lines of its
log, and the pages of the PDF. The tables are those of the planted study of
24 runs x 8 testsets (28 pairs) and of the Pythia analysis.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess

import pytest
from markdown_it import MarkdownIt

import ood_store
from conftest import (
    FIXTURES,
    PLANTED_ANALYSIS,
    PLANTED_NAMES,
    PYTHIA_ANALYSIS,
    pdf_text,
    pdflatex,
    sql_rows,
    tool,
)  # fmt: skip
from ood_store._cli import main
from ood_store._export import display, page, table_fit, tables, tex_metrics

NAMES = display.names(file=PLANTED_NAMES)
GITHUB = MarkdownIt("commonmark").enable(["table", "strikethrough"])  # GitHub's flavour, less autolinks
PAGE_PT = 6.75 * 72.27  # \textwidth of the two-column page the tables are made for
COLUMN_PT = 3.25 * 72.27
#: Every table of the planted study that export makes, as from_analysis keywords.
VARIANTS = {
    "long": {},
    "long-compact-naive": {"compact": True, "inference": "naive"},
    "wide": {"wide": True},
    "wide-bold": {"wide": True, "mark": "bold"},
    "transposed": {"transpose": True},
    "wide-compact": {"wide": True, "compact": True},
    "compare": {"compared": True},
    "compare-by-family": {"compared": True, "by": ["family"]},
    "compare-wide": {"compared": True, "wide": True},
    "compare-wide-compact": {"compared": True, "wide": True, "compact": True},
    "compare-column": {"compared": True, "width": "column"},
}


@pytest.fixture(scope="module")
def planted(planted_db):
    with ood_store.open(planted_db, read_only=True) as store:
        yield store


@pytest.fixture(scope="module")
def pythia(analysis_db):
    with ood_store.open(analysis_db, read_only=True) as store:
        yield store


def planted_table(store, **options) -> tables.PaperTable:
    return tables.from_analysis(store, PLANTED_ANALYSIS, names=NAMES, **options)


def overfull(log: str) -> list[float]:
    """How much too wide (pt) each overfull box of a pdflatex log is."""
    return [float(x) for x in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log)]


def tex_widths(folder, tabulars: list[str]) -> list[float]:
    """The width pdflatex gives each tabular, set at \\small in a 10 pt article."""
    boxes = [rf"\setbox0\hbox{{\small {t}}}\typeout{{WIDTH{i}=\the\wd0}}" for i, t in enumerate(tabulars)]
    document = "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n" + "\n".join(boxes)
    log = pdflatex(folder, "widths", document + "\n\\end{document}\n")
    found = dict(re.findall(r"WIDTH(\d+)=([\d.]+)pt", log))
    return [float(found[str(i)]) for i in range(len(tabulars))]


def tabulars(latex: str) -> list[str]:
    return re.findall(r"\\begin\{tabular\}.*?\\end\{tabular\}", latex, flags=re.DOTALL)


# -- measuring ------------------------------------------------------------------------------------------


def test_measured_widths_are_pdflatex_widths_or_at_most_three_percent_more(planted, pythia, tmp_path):
    made = [planted_table(planted, long=False, **options) for options in VARIANTS.values()]
    pythia_names = display.names(file=FIXTURES / "pythia-names.yaml")
    made += [
        tables.from_analysis(pythia, PYTHIA_ANALYSIS, names=pythia_names, **options)
        for options in ({}, {"wide": True}, {"transpose": True}, {"compared": True, "wide": True, "compact": True})
    ]
    sources = [tabulars(table.to_latex())[0] for table in made]
    for table, width in zip(made, tex_widths(tmp_path, sources), strict=True):
        measured = table_fit.tabular_width(table)
        assert width <= measured <= 1.03 * width, (table.options, measured, width)


def test_font_metrics_are_tex_lives(tmp_path):
    tool("tftopl")
    spec = importlib.util.spec_from_file_location("make_metrics", FIXTURES / "tex-metrics" / "make.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    found = make.main()
    assert [found["cmr9"][c] for c in range(33, 127)] == list(tex_metrics.TEXT["cmr9"][1:])
    assert [found["cmbx9"][c] for c in range(33, 127)] == list(tex_metrics.TEXT["cmbx9"][1:])
    assert tex_metrics.TEXT["cmr9"][0] == make.space("cmr9")  # a space is the interword space
    assert tex_metrics.MATH["minus"] == found["cmsy9"][0]


# -- every variant of the 24-run store ----------------------------------------------------------------


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_table_of_24_runs_compiles_without_an_overfull_box_or_says_how_to_fit(planted, tmp_path, variant):
    options = VARIANTS[variant]
    table = planted_table(planted, **options)
    fit = table.fit()
    log = pdflatex(tmp_path, variant, table.to_latex(standalone=True))
    assert "Float too large" not in log
    if fit.fits:
        assert overfull(log) == [], variant
        return
    # pdflatex finds it too wide by what fit() says, and each change fit() offers makes it compile clean.
    assert max(overfull(log)) == pytest.approx(fit.width - fit.room, abs=0.03 * fit.width)
    assert fit.suggestions, fit.message()
    for number, suggestion in enumerate(fit.suggestions):
        fixed = planted_table(planted, **{**options, **dict(suggestion.changes)})
        assert fixed.fit().fits
        log = pdflatex(tmp_path, f"{variant}-{number}", fixed.to_latex(standalone=True))
        assert overfull(log) == [] and "Float too large" not in log, suggestion


def test_long_tables_are_longtables_over_pages_with_the_header_on_each(planted, planted_db, tmp_path):
    table = planted_table(planted)
    text = table.to_latex(standalone=True)
    assert r"\begin{longtable}" in text and r"\begin{table" not in text and r"\usepackage{booktabs,longtable}" in text
    log = pdflatex(tmp_path, "long", text)
    assert overfull(log) == [] and "Float too large" not in log
    pages = int(re.search(r"Output written on long\.pdf \((\d+) pages", log)[1])
    assert pages >= 10  # 672 rows
    printed = pdf_text(tmp_path, "long")
    assert printed.count("Testset X") == pages  # the header repeats on every page
    (count,) = sql_rows(planted_db, "SELECT count(*) FROM partial_correlations WHERE analysis = ?", PLANTED_ANALYSIS)
    assert table.frame.height == count[0] == 672


def test_a_table_wider_than_a_column_spans_the_page_and_a_narrow_one_sits_in_a_column(planted, tmp_path):
    wide = planted_table(planted, compared=True)
    assert COLUMN_PT < table_fit.tabular_width(wide) <= PAGE_PT and r"\begin{table*}[t]" in wide.to_latex()
    narrow = tables.from_query(planted, "SELECT family, count(*) AS runs FROM runs GROUP BY family ORDER BY family")
    assert table_fit.tabular_width(narrow) <= COLUMN_PT and r"\begin{table}[t]" in narrow.to_latex()
    for name, table in (("wide", wide), ("narrow", narrow)):
        assert overfull(pdflatex(tmp_path, name, table.to_latex(standalone=True))) == []
    # Asked to fit one column, the comparison does not: the warning, and pdflatex agrees.
    column = planted_table(planted, compared=True, width="column")
    assert not column.fit().fits and r"\begin{table}[t]" in column.to_latex()
    assert overfull(pdflatex(tmp_path, "column", column.to_latex(standalone=True)))


def test_split_tables_repeat_their_text_columns_and_cover_every_column_once(planted):
    table = planted_table(planted, wide=True, compact=True, split=True)
    plan = table_fit.plan(table)
    assert len(plan.parts) > 1 and all(part[0] == 0 for part in plan.parts)  # the run column in each
    others = [i for part in plan.parts for i in part[1:]]
    assert sorted(others) == list(range(1, len(table.columns))) == sorted(set(others))
    assert all(table_fit.tabular_width(table, part) <= PAGE_PT for part in plan.parts)
    text = table.to_latex()
    labels = re.findall(r"\\label\{([^}]*)\}", text)
    assert labels == [
        "tab:partial-correlations",
        *(f"tab:partial-correlations-{k}" for k in range(2, len(plan.parts) + 1)),
    ]
    assert text.count("(part 1 of") == 1


def test_compact_tables_use_two_letter_codes_with_a_key(planted):
    table = planted_table(planted, wide=True, compact=True)
    codes = display.codes(
        [NAMES[t] for t in ("snli", "scitail", "rte", "hans", "anli_r1", "anli_r2", "anli_r3", "wnli")]
    )
    assert len(set(codes.values())) == 8 and all(len(c) == 2 for c in codes.values())
    key = table.key
    for name, code in codes.items():
        assert f"{code} {name}" in key
    headers = [c.header for c in table.columns[1:]]
    assert len(headers) == 28 and all(re.fullmatch(r"[A-Z0-9]{2}–[A-Z0-9]{2}", h) for h in headers)
    assert "Runs: ood-lab/nli-ft-\u2026" in key
    assert table.frame["run"][0] == "llama-350m-seed1"  # run names less what they all share
    cells = table.cells("markdown")
    assert all(not cell.startswith(("0.", "-0.")) for row in cells for cell in row[1:])  # .35, not 0.35


def test_transposed_tables_have_pairs_as_rows_and_runs_as_columns(planted, planted_db):
    table = planted_table(planted, transpose=True)
    rows = sql_rows(planted_db, "SELECT run, task_x, task_y, r FROM partial_correlations WHERE analysis = ?",
                    PLANTED_ANALYSIS)  # fmt: skip
    expected = {(NAMES[x] + "–" + NAMES[y], run): r for run, x, y, r in rows}
    assert table.frame.height == 28 and table.frame.width == 1 + 24
    for row in table.frame.iter_rows(named=True):
        for run, value in row.items():
            if run != "pair":
                assert value == expected[(row["pair"], run)]
    assert table.frame["pair"][0] == "SNLI–SciTail"  # the analysis' order: snli, scitail, rte, ...


def test_captions_say_what_was_regressed_out_the_residualizer_and_the_test(planted):
    for options in ({}, {"wide": True}, {"compared": True}):
        table = planted_table(planted, **options)
        for text in (table.to_markdown(), table.to_latex()):
            assert "in-domain MNLI regressed out (linear residualizer, Pearson)" in text, options
        compared = "compared" in options
        test = (
            "p of the pooled r: Knapp–Hartung t; Holm-adjusted over every pair, with the heterogeneity tests"
            if compared
            else "effective n of autocorrelated checkpoints"
        )
        assert test in table.to_markdown()


# -- warnings on the command line -----------------------------------------------------------------------


def test_too_wide_a_table_is_written_with_a_warning_naming_the_fix(runner, planted_db, tmp_path):
    out = tmp_path / "wide.tex"
    args = ["--db", str(planted_db), "export", "--analysis", PLANTED_ANALYSIS, "--wide", "--rename-file",
            str(PLANTED_NAMES)]  # fmt: skip
    result = runner.invoke(main, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    warning = result.stderr.strip().splitlines()[-1]
    match = re.fullmatch(
        r"Warning: the table is ([\d,]+) pt wide, ([\d,]+) pt more than the 488 pt it has \(--width\); "
        r"it fits with (.*)\.",
        warning,
    )
    assert match, warning
    width = float(match[1].replace(",", ""))
    log = pdflatex(tmp_path, "wide-doc", _document(out.read_text()))
    assert max(overfull(log)) == pytest.approx(width - PAGE_PT, abs=0.03 * width)  # pdflatex: as wide as said
    flags = re.findall(r"--[a-z]+", match[3])
    assert flags == ["--compact", "--split"], warning
    fixed = runner.invoke(main, [*args, *flags, "-o", str(out)])
    assert fixed.exit_code == 0 and "Warning" not in fixed.stderr, fixed.output
    assert overfull(pdflatex(tmp_path, "fixed-doc", _document(out.read_text()))) == []


def test_transpose_of_a_comparison_is_a_one_line_error(runner, planted_db):
    result = runner.invoke(
        main, ["--db", str(planted_db), "export", "--analysis", PLANTED_ANALYSIS, "--compare", "--transpose"]
    )
    assert result.exit_code == 1 and result.output.strip().splitlines() == [
        "Error: --transpose: a comparison has its runs as columns already (with --wide)"
    ]
    bad = runner.invoke(main, ["--db", str(planted_db), "export", "--analysis", PLANTED_ANALYSIS, "--width", "wide"])
    assert bad.exit_code == 2 and "'wide' is not a width" in bad.output


def _document(table: str) -> str:
    """The two-column page the tables are for (ICML's: 6.75 in by 9 in, columns of 3.25 in)."""
    return (
        "\\documentclass[twocolumn]{article}\n"
        "\\usepackage[letterpaper,textwidth=6.75in,textheight=9in,columnsep=0.25in]{geometry}\n"
        "\\usepackage{booktabs,longtable,rotating}\n\\begin{document}\n" + table + "\\end{document}\n"
    )


# -- Markdown ---------------------------------------------------------------------------------------------


def test_markdown_stars_render_as_stars_on_github_and_in_pandoc(planted):
    table = planted_table(planted, wide=True, compact=True)
    text = table.to_markdown()
    assert "\\*" not in text  # nothing escaped: the file reads as it renders
    starred = [cell for row in table.cells("markdown") for cell in row[1:] if cell.endswith("*")]
    assert starred and all(re.fullmatch(r"-?\.\d\d\*{1,3}", cell) for cell in starred)
    html = GITHUB.render(text)
    assert "<em>" not in html and "<strong>" not in html
    for cell in starred:
        assert f">{cell}</td>" in html
    assert "Stars: * p_eff_adj &lt; 0.05, ** &lt; 0.01, *** &lt; 0.001" in html
    pandoc = subprocess.run([tool("pandoc"), "-f", "markdown", "-t", "html"], input=text, capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    pandoc = " ".join(pandoc.split())  # pandoc wraps its lines
    assert "<em>" not in pandoc and "<strong>" not in pandoc
    for cell in starred:
        assert f">{cell}</td>" in pandoc
    assert "Stars: * p_eff_adj &lt; 0.05, ** &lt; 0.01, *** &lt; 0.001" in pandoc
    bold = planted_table(planted, wide=True, compact=True, mark="bold").to_markdown()
    assert "<strong>" in GITHUB.render(bold)


def test_page_widths_read_as_inches():
    assert page.inches("page") == 6.75 and page.inches("column") == 3.25
    assert page.inches("487.82pt") == pytest.approx(6.75, abs=1e-4) and page.inches("2.54cm") == pytest.approx(1.0)
    with pytest.raises(ood_store._errors.AnalysisError, match="^width: 'huge' is not a width"):
        page.inches("huge")


def test_docstring_examples_run():
    import doctest

    from ood_store._export import captions

    for module in (page, captions):
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0 and result.attempted > 0, module.__name__
