"""ood-store export: formats from the extension, provenance, one-line errors, the store unchanged."""

from __future__ import annotations

import json

import duckdb
import polars as pl
import pytest

from conftest import PYTHIA_ANALYSIS, table_dump
from ood_store._cli import main


def saved_r(db) -> dict[tuple, float]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT run, task_x, task_y, r FROM partial_correlations WHERE analysis = ?", [PYTHIA_ANALYSIS]
        ).fetchall()
    finally:
        con.close()
    return {row[:3]: row[3] for row in rows}


def export(runner, db, *args):
    return runner.invoke(main, ["--db", str(db), "export", *args])


@pytest.mark.parametrize(
    ("name", "check"),
    [
        ("t.tex", lambda text: text.startswith("% Made by ood-store") and "\\toprule" in text),
        ("t.md", lambda text: text.startswith("<!--") and "\n| Run " in text),
        ("t.csv", lambda text: text.startswith("# Made by ood-store") and "\nrun,task_x,task_y," in text),
        ("t.json", lambda text: json.loads(text)["provenance"]["analysis"] == PYTHIA_ANALYSIS),
    ],
)
def test_format_follows_the_extension(runner, analysis_db, tmp_path, name, check):
    result = export(runner, analysis_db, "--analysis", PYTHIA_ANALYSIS, "-o", str(tmp_path / name))
    assert result.exit_code == 0, result.output
    assert check((tmp_path / name).read_text())
    assert f"Wrote 18 rows as {tables_format(name)} to {tmp_path / name}." in result.output


def tables_format(name: str) -> str:
    return {"tex": "latex", "md": "markdown", "csv": "csv", "json": "json"}[name.rsplit(".", 1)[1]]


def test_stdout_is_latex_by_default(runner, analysis_db):
    result = export(runner, analysis_db, "--analysis", PYTHIA_ANALYSIS, "--rename", "arc_easy=ARC-e")
    assert result.exit_code == 0, result.output
    assert "\\begin{tabular}" in result.output and "ARC-e" in result.output and "arc\\_easy" not in result.output


def test_parquet_wide_round_trips(runner, analysis_db, tmp_path):
    path = tmp_path / "wide.parquet"
    result = export(runner, analysis_db, "--analysis", PYTHIA_ANALYSIS, "--wide", "-o", str(path))
    assert result.exit_code == 0, result.output
    frame = pl.read_parquet(path)
    expected = saved_r(analysis_db)
    assert frame.height == 3 and frame.width == 1 + 6
    for row in frame.to_dicts():
        for column, value in row.items():
            if column != "run":
                x, y = column.split("–")
                assert value == expected[(row["run"], x, y)]
    assert frame["run"].to_list() == [f"EleutherAI/pythia-v1.1-{size}" for size in ("160m", "410m", "1.4b")]


def test_compare_and_sql_exports(runner, analysis_db, tmp_path):
    result = export(runner, analysis_db, "--analysis", PYTHIA_ANALYSIS, "--compare", "--format", "csv")
    assert result.exit_code == 0, result.output
    frame = pl.read_csv(result.output.encode(), comment_prefix="#")
    assert frame.height == 6 and "r_pooled" in frame.columns and "# source: compare of analysis" in result.output
    sql = "SELECT count(*) AS pairs FROM partial_correlations"
    result = export(runner, analysis_db, "--sql", sql, "--format", "json")
    document = json.loads(result.output)
    assert document["rows"] == [{"pairs": 18}] and document["provenance"]["sql"] == sql


def test_standalone_latex_is_a_document(runner, analysis_db):
    result = export(runner, analysis_db, "--analysis", PYTHIA_ANALYSIS, "--standalone", "--label", "tab:x")
    assert result.output.startswith("\\documentclass[twocolumn]{article}") and result.output.endswith(
        "\\end{document}\n"
    )
    assert "\\label{tab:x}" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "Give one of --analysis NAME, --sql SQL or --item-dynamics TASK."),
        (["--analysis", "nope"], "Error: no saved analysis named 'nope'"),
        (["--analysis", PYTHIA_ANALYSIS, "-o", "t.docx"], "t.docx: cannot tell the format from the extension"),
        (["--analysis", PYTHIA_ANALYSIS, "--format", "parquet"], "parquet writes a binary file"),
        (["--sql", "SELECT 1", "--wide"], "--compare, --by, --wide and --transpose need --analysis."),
        (["--analysis", PYTHIA_ANALYSIS, "--by", "size"], "--by needs --compare."),
        (["--analysis", PYTHIA_ANALYSIS, "--rename", "mnli"], "--rename: 'mnli': expected NAME=DISPLAY"),
        (["--analysis", PYTHIA_ANALYSIS, "--rename-file", "missing.yaml"], "missing.yaml: cannot read"),
        (["--analysis", PYTHIA_ANALYSIS, "--order-by", "shots"], "--order-by: no run has attribute 'shots'"),
        (["--analysis", PYTHIA_ANALYSIS, "-o", "no/such/folder/t.tex"], "no/such/folder/t.tex: cannot write"),
        (["--sql", "DELETE FROM runs"], "Error:"),
    ],
)
def test_errors_are_one_line_and_leave_the_store_unchanged(runner, analysis_db, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    before = table_dump(analysis_db)
    result = export(runner, analysis_db, *args)
    assert result.exit_code in (1, 2)
    assert message in result.output and "Traceback" not in result.output
    assert table_dump(analysis_db) == before
