"""Tables for papers (export/tables.py): content checked against the saved rows, read with SQL.

Expected numbers are the rows of the ``partial_correlations`` table, rounded
here with Python's own formatting; significance levels and the Holm
adjustment are recomputed here (statsmodels for Holm).
"""

from __future__ import annotations

import doctest
import json
import re

import duckdb
import numpy as np
import polars as pl
import pytest
from markdown_it import MarkdownIt
from statsmodels.stats.multitest import multipletests

import ood_store
from conftest import PYTHIA_ANALYSIS, PYTHIA_SIZES, pdf_text, pdflatex
from ood_store._analysis import compare
from ood_store._errors import AnalysisError, InputError, OodStoreError
from ood_store._export import display, tables

RUNS = [f"EleutherAI/pythia-v1.1-{size}" for size in PYTHIA_SIZES]  # 160m, 410m, 1.4b: the order by size


def saved_rows(db) -> list[dict]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        cursor = con.execute(
            "SELECT run, task_x, task_y, n, r, ci_low, ci_high, p_adj, n_eff, p_eff_adj FROM partial_correlations "
            "WHERE analysis = ? ORDER BY run, task_x, task_y",
            [PYTHIA_ANALYSIS],
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        con.close()


def saved_params(db) -> dict:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return json.loads(con.execute("SELECT params FROM analyses WHERE name = ?", [PYTHIA_ANALYSIS]).fetchone()[0])
    finally:
        con.close()


def p_text(p: float) -> str:
    """p to 3 decimals; below 0.001 as <0.001."""
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def stars(p: float) -> str:
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def expected_long(rows: list[dict], digits: int = 2) -> list[tuple]:
    """(run, x, y, n_eff, r, stars, ci, p) per row, runs by size, rounded by hand."""
    ordered = sorted(rows, key=lambda row: (RUNS.index(row["run"]), row["task_x"], row["task_y"]))
    return [
        (
            row["run"], row["task_x"], row["task_y"], f"{row['n_eff']:.{digits}f}", f"{row['r']:.{digits}f}",
            stars(row["p_eff_adj"]), f"[{row['ci_low']:.{digits}f}, {row['ci_high']:.{digits}f}]",
            p_text(row["p_eff_adj"]),
        )
        for row in ordered
    ]  # fmt: skip


@pytest.fixture(scope="module")
def store(analysis_db):
    with ood_store.open(analysis_db, read_only=True) as opened:
        yield opened


# -- LaTeX ----------------------------------------------------------------------
def latex_body(text: str) -> list[list[str]]:
    """The cells of the rows between \\midrule and \\bottomrule, LaTeX minus signs made ASCII."""
    body = text.split("\\midrule\n", 1)[1].split("\\bottomrule", 1)[0]
    rows = []
    for line in body.splitlines():
        if line == r"\addlinespace":
            continue
        assert line.endswith(r" \\"), line
        rows.append([cell.strip().replace("$-$", "-").replace("$<$", "<") for cell in line[:-3].split(" & ")])
    return rows


def split_stars(cell: str) -> tuple[str, str]:
    match = re.fullmatch(r"(.*?)(?:\\rlap\{\$\^\{(\*+)\}\$\})?", cell)
    return match[1], match[2] or ""


def test_latex_numbers_are_the_saved_rows_rounded(store, analysis_db):
    text = tables.from_analysis(store, PYTHIA_ANALYSIS).to_latex()
    expected = expected_long(saved_rows(analysis_db))
    rows = latex_body(text)
    assert len(rows) == len(expected) == 18
    run = None
    for cells, want in zip(rows, expected, strict=True):
        run = cells[0].replace(r"\_", "_") or run  # the run prints once per block
        r, marks = split_stars(cells[4])
        got = (run, cells[1].replace(r"\_", "_"), cells[2].replace(r"\_", "_"), cells[3], r, marks, cells[5],
               cells[6])  # fmt: skip
        assert got == want
    assert sum(1 for cells in rows if cells[0]) == 3  # one block per run
    assert text.count(r"\addlinespace") == 2


def test_latex_is_booktabs_with_caption_label_and_provenance(store, analysis_db):
    text = tables.from_analysis(store, PYTHIA_ANALYSIS, caption="My caption", label="tab:mine").to_latex()
    for rule in (r"\toprule", r"\midrule", r"\bottomrule"):
        assert text.count(rule) == 1
    spec = re.search(r"\\begin\{tabular\}\{(.*)\}\n", text)[1]
    assert "|" not in spec and r"\hline" not in text  # no vertical rules, no \hline
    assert re.sub(r"@\{\\hspace\{[^}]*\}\}", "", spec) == "lllrrrr"  # text left, numbers right
    assert r"\caption{My caption Stars: $^{*}$ $p_{\mathrm{eff,adj}}$ $<$ 0.05, $^{**}$ $<$ 0.01" in text
    assert r"\label{tab:mine}" in text
    comments = dict(line[2:].split(": ", 1) for line in text.splitlines() if line.startswith("% ") and ": " in line)
    assert comments["analysis"] == PYTHIA_ANALYSIS
    assert comments["ood_store_version"] == ood_store.__version__
    assert comments["store"] == str(analysis_db.resolve())
    assert json.loads(comments["params"]) == saved_params(analysis_db)


def test_latex_bold_and_naive_inference(store, analysis_db):
    text = tables.from_analysis(store, PYTHIA_ANALYSIS, mark="bold", inference="naive").to_latex()
    rows = latex_body(text)
    expected = sorted(saved_rows(analysis_db), key=lambda row: (RUNS.index(row["run"]), row["task_x"], row["task_y"]))
    for cells, row in zip(rows, expected, strict=True):
        r = f"{row['r']:.2f}"
        assert cells[4] == (rf"\textbf{{{r}}}" if row["p_adj"] < 0.05 else r)
        assert cells[3] == str(row["n"])  # naive: n, not n_eff
        assert cells[6] == p_text(row["p_adj"])
    assert any(r"\textbf" in cells[4] for cells in rows)  # the Pythia rows have some p_adj < 0.05


def test_wide_latex_is_runs_by_pairs(store, analysis_db):
    text = tables.from_analysis(store, PYTHIA_ANALYSIS, wide=True, digits=3).to_latex()
    header = text.split("\\toprule\n", 1)[1].split(" \\\\", 1)[0].split(" & ")
    rows = latex_body(text)
    by_key = {(row["run"], row["task_x"], row["task_y"]): row for row in saved_rows(analysis_db)}
    pairs = sorted({(x, y) for _, x, y in by_key})
    assert header == ["Run", *(f"{x}--{y}".replace("_", r"\_") for x, y in pairs)]
    assert [cells[0].replace(r"\_", "_") for cells in rows] == RUNS
    for cells, run in zip(rows, RUNS, strict=True):
        for cell, (x, y) in zip(cells[1:], pairs, strict=True):
            row = by_key[(run, x, y)]
            assert split_stars(cell) == (f"{row['r']:.3f}", stars(row["p_eff_adj"]))


def compile_latex(folder, name: str, text: str) -> str:
    """Compile ``text`` with pdflatex, with no overfull box, and return the text of the PDF (pdftotext -layout)."""
    log = pdflatex(folder, name, text)
    assert "Overfull" not in log, log
    return pdf_text(folder, name)


def test_latex_compiles_and_prints_the_numbers(store, analysis_db, tmp_path):
    names = {run: f"Pythia-{run.rsplit('-', 1)[1]}" for run in RUNS}
    table = tables.from_analysis(store, PYTHIA_ANALYSIS, names=names)
    text = compile_latex(tmp_path, "long", table.to_latex(standalone=True))
    lines = [line.split() for line in text.splitlines()]
    # Every row's r and interval appear on the page (− printed as a real minus sign).
    page = " ".join(" ".join(line) for line in lines).replace("−", "-")
    for row in expected_long(saved_rows(analysis_db)):
        assert f"{row[4]}" in page and row[6] in page
    assert "Pythia-160m" in page and "Table 1:" in page


def test_latex_fragment_compiles_in_a_document(store, tmp_path):
    names = {"arc_easy": "ARC & easy_1%", "sciq": "SciQ #2 {x}"}  # characters LaTeX treats specially
    names |= {run: run.rsplit("-", 1)[1] for run in RUNS}
    fragment = tables.from_analysis(store, PYTHIA_ANALYSIS, transpose=True, mark="bold", names=names).to_latex()
    (tmp_path / "table.tex").write_text(fragment)
    document = "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n\\input{table}\n\\end{document}\n"
    page = compile_latex(tmp_path, "wide", document)
    assert "ARC & easy 1%–SciQ #2 {x}" in page  # pdftotext reads the underscore as a space


# -- Markdown ---------------------------------------------------------------------
def markdown_rows(text: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the first table, as a Markdown renderer (markdown-it) reads them."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    rows, current, header = [], None, None
    for token in tokens:
        if token.type == "tr_open":
            current = []
        elif token.type == "inline" and current is not None:
            current.append("".join(child.content for child in token.children if child.type == "text"))
        elif token.type == "tr_close":
            if header is None:
                header = current
            else:
                rows.append(current)
            current = None
    return header, rows


def test_markdown_renders_to_the_same_rows(store, analysis_db):
    text = tables.from_analysis(store, PYTHIA_ANALYSIS).to_markdown()
    header, rows = markdown_rows(text)
    assert header == ["Run", "Testset X", "Testset Y", "n_eff", "r", "95% CI", "p_eff_adj"]
    run = None
    got = []
    for cells in rows:
        run = cells[0] or run
        r, marks = re.fullmatch(r"(-?[\d.]+)(\**)", cells[4]).groups()
        got.append((run, cells[1], cells[2], cells[3], r, marks, cells[5], cells[6]))
    assert got == expected_long(saved_rows(analysis_db))
    assert text.startswith("<!--\n") and f"analysis: {PYTHIA_ANALYSIS}" in text.split("-->")[0]
    assert "\nTable: Partial correlations between OOD testsets with in-domain lambada_openai" in text


def test_markdown_display_names_from_a_file(store, tmp_path):
    names = tmp_path / "names.yaml"
    names.write_text("arc_easy: ARC-e\nwinogrande: WinoGrande\nEleutherAI/pythia-v1.1-410m: Pythia 410M\n")
    text = tables.from_analysis(store, PYTHIA_ANALYSIS, wide=True, names=display.names(file=names)).to_markdown()
    header, rows = markdown_rows(text)
    assert header == ["Run", "ARC-e–piqa", "ARC-e–sciq", "ARC-e–WinoGrande", "piqa–sciq", "piqa–WinoGrande",
                      "sciq–WinoGrande"]  # fmt: skip
    assert [cells[0] for cells in rows] == [RUNS[0], "Pythia 410M", RUNS[2]]


# -- data formats ------------------------------------------------------------------
def test_parquet_round_trips_with_provenance(store, analysis_db, tmp_path):
    path = tmp_path / "table.parquet"
    assert tables.from_analysis(store, PYTHIA_ANALYSIS).write(path) == "parquet"
    frame = pl.read_parquet(path)
    assert frame.columns == ["run", "task_x", "task_y", "n_eff", "r", "ci_low", "ci_high", "p_eff_adj"]
    got = {(row["run"], row["task_x"], row["task_y"]): row for row in frame.to_dicts()}
    for row in saved_rows(analysis_db):  # full precision: equal, not close
        assert {k: got[(row["run"], row["task_x"], row["task_y"])][k] for k in ("r", "ci_low", "n_eff")} == {
            k: row[k] for k in ("r", "ci_low", "n_eff")
        }
    assert frame["run"].unique(maintain_order=True).to_list() == RUNS
    provenance = json.loads(pl.read_parquet_metadata(path)[tables.PARQUET_KEY])
    assert provenance["analysis"] == PYTHIA_ANALYSIS and provenance["params"] == saved_params(analysis_db)


def test_csv_and_json_carry_rows_and_provenance(store, analysis_db, tmp_path):
    table = tables.from_analysis(store, PYTHIA_ANALYSIS, digits=3)
    table.write(tmp_path / "t.csv")
    table.write(tmp_path / "t.json")
    csv = pl.read_csv(tmp_path / "t.csv", comment_prefix="#")
    document = json.loads((tmp_path / "t.json").read_text())
    expected = sorted(saved_rows(analysis_db), key=lambda row: (RUNS.index(row["run"]), row["task_x"], row["task_y"]))
    assert csv["r"].to_list() == [round(row["r"], 3) for row in expected]
    assert [row["r"] for row in document["rows"]] == [round(row["r"], 3) for row in expected]
    assert document["provenance"]["analysis"] == PYTHIA_ANALYSIS
    assert document["provenance"]["ood_store_version"] == ood_store.__version__
    header = (tmp_path / "t.csv").read_text().splitlines()[:3]
    assert header[0] == "# Made by ood-store; provenance:" and header[2] == "# source: analysis pythia-linear"


# -- comparisons and queries ---------------------------------------------------------
def test_compare_table_marks_pooled_r_by_holm_adjusted_p(store):
    """The stars are the pooled p as compare adjusted it: Holm over every pair's Q and pooled p (statsmodels here);
    the interval is the adjusted one the verdict reads."""
    result = compare(store.analysis(PYTHIA_ANALYSIS)).table
    family = np.concatenate([result["q_p"].to_numpy(), result["p_pooled"].to_numpy()])
    holm = multipletests(family, method="holm")[1][result.height :]
    table = tables.from_analysis(store, PYTHIA_ANALYSIS, compared=True, wide=True)
    header, rows = markdown_rows(table.to_markdown())
    assert header[:9] == ["Testset X", "Testset Y", "Runs", "Sign agreement", "Pooled r", "Adj. CI", "I²", "Verdict",
                          RUNS[0]]  # fmt: skip
    assert header[8:] == RUNS
    for cells, row, p in zip(rows, result.iter_rows(named=True), holm, strict=True):
        assert cells[4] == f"{row['r_pooled']:.2f}" + stars(p)
        assert cells[5] == f"[{row['ci_low_adj']:.2f}, {row['ci_high_adj']:.2f}]"
        assert cells[7] == row["verdict"]
        assert cells[8:] == [f"{row[f'r:{run}']:.2f}" for run in RUNS]
    assert "Holm-adjusted over every pair, with the heterogeneity tests" in table.to_markdown()


def test_compare_by_size_orders_groups_as_numbers(store):
    table = tables.from_analysis(store, PYTHIA_ANALYSIS, compared=True, by=["size"])
    assert table.frame["size"].unique(maintain_order=True).to_list() == ["160m", "410m", "1.4b"]


def test_query_table_rounds_and_renames(store, analysis_db):
    sql = "SELECT run, count(*) AS pairs, avg(r) AS mean_r FROM partial_correlations GROUP BY run ORDER BY run"
    table = tables.from_query(store, sql, names={"mean_r": "Mean r"}, digits=3)
    header, rows = markdown_rows(table.to_markdown())
    assert header == ["run", "pairs", "Mean r"]
    by_run: dict[str, list[float]] = {}
    for row in saved_rows(analysis_db):
        by_run.setdefault(row["run"], []).append(row["r"])
    assert rows == [[run, "6", f"{sum(rs) / len(rs):.3f}"] for run, rs in sorted(by_run.items())]
    assert f"sql: {sql}" in table.to_latex()


def test_order_by_an_attribute_no_run_has_is_an_error(store):
    with pytest.raises(AnalysisError, match="^order_by: no run has attribute 'shots'$"):
        tables.from_analysis(store, PYTHIA_ANALYSIS, order_by=["shots"])


def test_bad_rename_inputs(tmp_path):
    with pytest.raises(AnalysisError, match="expected NAME=DISPLAY"):
        display.names(["mnli"])
    bad = tmp_path / "names.toml"
    bad.write_text("mnli = [1, 2]\n")
    with pytest.raises(InputError, match=r"names.toml: mnli: the display name must be text"):
        display.names(file=bad)
    bad.write_text("= broken")
    with pytest.raises(InputError, match=r"names.toml: not a valid mapping file"):
        display.names(file=bad)
    bad.write_bytes(b"\xff\xfemnli = 'MNLI'\n")
    with pytest.raises(InputError, match=r"names.toml: not UTF-8 text \(byte 0\)"):
        display.names(file=bad)
    assert display.names(["mnli=MNLI"], None, shipped=False) == {"mnli": "MNLI"}


def test_not_a_partial_correlation_table():
    with pytest.raises(AnalysisError, match="no column"):
        tables.partial_table(pl.DataFrame({"run": ["a"]}))


def test_unknown_extension():
    with pytest.raises(OodStoreError, match=r"table.docx: cannot tell the format"):
        tables.format_of("table.docx")


def test_docstring_examples_run():
    for module in (tables, display):
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0 and result.attempted > 0, module.__name__
