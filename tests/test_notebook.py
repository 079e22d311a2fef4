"""The tour as a notebook does it, with ``import ood_store`` alone: ingest, ``scores()``, partial
correlations, compare, a table and a figure; and what each object shows of itself (``repr``,
``summary()``, the HTML and Markdown a notebook renders, the PNG of a figure).

Expected values come from the lm-eval files themselves (the number of files, a score read from the
JSON), from pingouin (a partial correlation of the same series) and from hand computations
(rounding to 3 significant digits).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pingouin
import polars as pl
import pytest

import ood_store

PYTHIA = Path(__file__).parent / "fixtures" / "lm-eval-real" / "pythia-v1"
OOD = ["piqa", "arc_easy", "sciq"]


def _files() -> list[Path]:
    return sorted(PYTHIA.glob("pythia-*/zero-shot/*.json"))


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    """The notebook's cells, run once: a store of the 81 Pythia files and an analysis of it."""
    store = ood_store.open(tmp_path_factory.mktemp("notebook") / "study.duckdb")
    report = store.ingest([PYTHIA], attributes={"family": "pythia"})
    result = ood_store.partial_correlations(store, in_domain="lambada_openai", ood=OOD, residualizer="linear")
    yield store, report, result
    store.close()


def test_ingest_reports_in_one_line_and_a_frame_of_files(notebook):
    _, report, _ = notebook
    files = _files()
    assert len(report.ingested) == len(files) == 81
    assert repr(report).startswith("<IngestReport: 81 files ingested (")
    assert "\n" not in repr(report) and len(repr(report)) < 200  # not every outcome, as a dataclass repr was
    frame = report.frame()
    assert frame.height == 81 and set(frame["status"]) == {"ingested"}
    assert sorted(frame["path"]) == sorted(str(f) for f in files)
    summary = report.summary()
    assert summary.frame.height == 20  # all 81 were stored: the first 20 are listed, and a note says so
    assert summary.notes[0] == "... and 61 more files (report.frame() has every one)."
    assert "<table" in report._repr_html_() and report._repr_markdown_().startswith("**IngestReport: 81 files")


def test_scores_are_the_files_values(notebook):
    store, _, _ = notebook
    source = next(
        f
        for f in _files()
        if "pythia-160m" in str(f) and json.loads(f.read_text())["config"]["model_args"].endswith("step0")
    )
    doc = json.loads(source.read_text())
    expected = doc["results"]["piqa"]["acc"]
    run = doc["config"]["model_args"].split("pretrained=", 1)[1].split(",", 1)[0]  # as lm-eval names the model
    frame = store.scores(runs=run, tasks="piqa", metric="acc").filter(pl.col("step") == 0)
    assert frame.height == 1 and frame["value"][0] == pytest.approx(expected, abs=1e-12)


def test_partial_correlations_equal_pingouins_and_present_themselves(notebook):
    store, _, result = notebook
    runs = sorted(set(result.table["run"]))
    assert len(runs) == 3 and result.table.height == 3 * 3  # three runs, three pairs of OOD tasks each
    run = runs[0]
    wide = (
        store.scores(runs=run, tasks=["lambada_openai", *OOD], metric="acc")
        .pivot(on="task", index="step", values="value")
        .drop_nulls()
        .to_pandas()
    )
    reference = pingouin.partial_corr(wide, x="piqa", y="arc_easy", covar="lambada_openai")["r"].iloc[0]
    row = result.table.filter((result.table["run"] == run) & (result.table["task_x"].is_in(["piqa", "arc_easy"]))
                              & (result.table["task_y"].is_in(["piqa", "arc_easy"])))  # fmt: skip
    assert row["r"][0] == pytest.approx(reference, abs=1e-10)
    # summary(): the command line's columns, floats to 3 significant digits (by hand: round to 2 decimals
    # beyond the first significant one)
    summary = result.summary()
    assert {"run", "task_x", "task_y", "r", "ci_low", "ci_high"} <= set(summary.frame.columns)
    assert "acf1_x" not in summary.frame.columns and "acf1_x" in result.summary(all_columns=True).frame.columns
    r = row["r"][0]
    by_hand = round(r, 2 - int(math.floor(math.log10(abs(r)))))
    shown = summary.frame.filter(summary.frame["run"] == run)
    assert by_hand in set(shown["r"].to_list())
    assert repr(result).startswith("<PartialCorrelations") and "\n" not in repr(result)
    html = result._repr_html_()
    assert "<table" in html and "arc_easy" in html


def test_compare_table_and_figure(notebook, tmp_path):
    store, _, result = notebook
    comparison = ood_store.compare(result)
    assert comparison.table.height == 3 and set(comparison.table["runs"]) == {3}
    assert "verdict" in comparison.summary().frame.columns
    assert "<table" in comparison._repr_html_()
    table = ood_store.partial_table(result)
    latex = table.to_latex()
    assert "\\begin{tabular" in latex or "\\begin{table" in latex
    assert "<table" in table._repr_html_() and table._repr_markdown_()
    store.save_analysis("tour", result)
    figure = ood_store.figure_of_analysis(store, "tour", "heatmap", runs=[sorted(set(result.table["run"]))[0]])
    png = figure._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert repr(figure).startswith("<PaperFigure: ")
    path = figure.save(tmp_path / "heatmap.pdf")
    assert path.read_bytes()[:5] == b"%PDF-"


def test_reports_of_dump_and_merge_present_themselves(notebook, tmp_path):
    store, _, _ = notebook
    dumped = store.dump(tmp_path / "dump")
    assert repr(dumped).startswith(f"<DumpReport: {tmp_path / 'dump'} (schema version ")
    scores = dumped.summary().frame.filter(dumped.summary().frame["table"] == "evaluation_scores")
    counted = store.query("SELECT count(*) AS n FROM evaluation_scores")["n"][0]
    assert scores["rows"][0] == counted
    with ood_store.open(tmp_path / "copy.duckdb") as copy:
        loaded = copy.load(tmp_path / "dump")
        assert repr(loaded).startswith(f"<MergeReport: {tmp_path / 'dump'}: 81 evaluations added, 0 present")
        assert "<table" in loaded._repr_html_()
