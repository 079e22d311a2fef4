"""ood-store plot on the saved Pythia analysis: files written with their provenance, one-line errors."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from PIL import Image

import ood_store
from conftest import PYTHIA_ANALYSIS, PYTHIA_IN_DOMAIN
from ood_store._cli import main

RUN_410M = "EleutherAI/pythia-v1.1-410m"


def invoke(runner, db, *args):
    result = runner.invoke(main, ["--db", str(db), "plot", *args])
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def one_line_error(result, *fragments: str) -> str:
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def png_text(path) -> dict[str, str]:
    with Image.open(path) as image:
        image.load()
        assert image.format == "PNG" and image.size[0] > 0
        return dict(image.text)


def test_grid_writes_a_png_of_every_run_with_the_provenance(runner, analysis_db, tmp_path):
    out = tmp_path / "grid.png"
    result = invoke(runner, analysis_db, "grid", "--analysis", PYTHIA_ANALYSIS, "-o", str(out))
    assert result.exit_code == 0, result.output
    assert result.stderr.strip() == f"Wrote heatmaps of 3 runs to {out}."
    text = png_text(out)
    with Image.open(out) as image:
        assert image.size[0] == round(6.75 * 300)
    recorded = json.loads(text["Description"])
    assert recorded["analysis"] == PYTHIA_ANALYSIS and recorded["ood_store_version"] == ood_store.__version__
    assert recorded["store"] == str(analysis_db)
    assert recorded["source"].startswith(f"heatmap grid of analysis {PYTHIA_ANALYSIS} (alpha 0.05, effective")


def test_heatmap_of_one_run_as_pdf(runner, analysis_db, tmp_path):
    out = tmp_path / "heatmap.pdf"
    result = invoke(
        runner, analysis_db, "heatmap", "--analysis", PYTHIA_ANALYSIS, "--run", RUN_410M, "--inference", "naive",
        "--rename", "arc_easy=ARC-e", "--width", "3.5", "-o", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"Wrote the heatmap of run {RUN_410M} to {out}." in result.stderr
    data = out.read_bytes()
    assert data.startswith(b"%PDF") and PYTHIA_ANALYSIS.encode() in data
    assert b"naive inference" in data


def test_curves_take_their_tasks_from_the_analysis(runner, analysis_db, tmp_path):
    out = tmp_path / "curves.svg"
    result = invoke(
        runner,
        analysis_db,
        "curves",
        "--analysis",
        PYTHIA_ANALYSIS,
        "--run",
        RUN_410M,
        "--x-scale",
        "log",
        "-o",
        str(out),
    )
    assert result.exit_code == 0, result.output
    # lambada_openai (in-domain) and the four OOD tasks of the analysis
    assert f"Wrote training curves of 5 tasks of run {RUN_410M} to {out}." in result.stderr
    root = ET.parse(out).getroot()
    description = root.find(".//{http://purl.org/dc/elements/1.1/}description").text
    recorded = json.loads(description)
    assert recorded["source"] == f"training curves of run {RUN_410M}"
    assert recorded["params"]["in_domain"] == PYTHIA_IN_DOMAIN


def test_curves_without_an_analysis_record_what_they_draw(runner, analysis_db, tmp_path):
    out = tmp_path / "curves.png"
    result = invoke(runner, analysis_db, "curves", "--run", RUN_410M, "--tasks", "piqa,sciq", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "Wrote training curves of 2 tasks" in result.stderr
    recorded = json.loads(png_text(out)["Description"])
    assert "analysis" not in recorded
    assert recorded["params"]["tasks"] == ["piqa", "sciq"] and recorded["params"]["run"] == RUN_410M


def test_signs_by_size(runner, analysis_db, tmp_path):
    out = tmp_path / "signs.png"
    result = invoke(runner, analysis_db, "signs", "--analysis", PYTHIA_ANALYSIS, "--by", "size", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert f"Wrote the sign agreement of 3 runs to {out}." in result.stderr
    assert "by size" in json.loads(png_text(out)["Description"])["source"]


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["grid", "--analysis", PYTHIA_ANALYSIS, "-o", "{tmp}/x.jpg"], ["x.jpg", ".pdf, .png, .svg"]),
        (["grid", "--analysis", "nope", "-o", "{tmp}/x.png"], ["no saved analysis named 'nope'"]),
        (["grid", "--analysis", PYTHIA_ANALYSIS, "--run", "nope", "-o", "{tmp}/x.png"], ["'nope'"]),
        (["grid", "--analysis", PYTHIA_ANALYSIS, "--order-by", "color", "-o", "{tmp}/x.png"], ["'color'"]),
        (["heatmap", "--analysis", PYTHIA_ANALYSIS, "-o", "{tmp}/x.png"], ["choose one with --run", RUN_410M]),
        (
            ["heatmap", "--analysis", PYTHIA_ANALYSIS, "--run", RUN_410M, "--tasks", "piqa,mnli", "-o", "{tmp}/x.png"],
            ["'mnli'"],
        ),
        (
            ["heatmap", "--analysis", PYTHIA_ANALYSIS, "--run", RUN_410M, "--rename", "piqa", "-o", "{tmp}/x.png"],
            ["NAME=DISPLAY"],
        ),
        (["curves", "--tasks", "piqa", "-o", "{tmp}/x.png"], ["choose one with --run", RUN_410M]),
        (["curves", "--run", "nope", "--tasks", "piqa", "-o", "{tmp}/x.png"], ["no run 'nope'"]),
        (["curves", "--run", RUN_410M, "--tasks", "mnli", "-o", "{tmp}/x.png"], ["'mnli'", RUN_410M]),
        (["signs", "--analysis", PYTHIA_ANALYSIS, "--by", "color", "-o", "{tmp}/x.png"], ["'color'"]),
        (["signs", "--analysis", PYTHIA_ANALYSIS, "-o", "{tmp}/missing/x.png"], ["missing/x.png", "cannot write"]),
    ],
)
def test_bad_input_is_a_one_line_error(runner, analysis_db, tmp_path, args, fragments):
    result = invoke(runner, analysis_db, *[a.replace("{tmp}", str(tmp_path)) for a in args])
    one_line_error(result, *fragments)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args",
    [
        ["grid", "-o", "x.png"],  # --analysis is required
        ["heatmap", "--analysis", PYTHIA_ANALYSIS],  # -o is required
        ["curves", "--run", RUN_410M, "-o", "x.png"],  # neither --tasks nor --analysis
        ["grid", "--analysis", PYTHIA_ANALYSIS, "--inference", "bayes", "-o", "x.png"],
        ["pie", "-o", "x.png"],
    ],
)
def test_usage_errors_exit_2(runner, analysis_db, args):
    result = invoke(runner, analysis_db, *args)
    assert result.exit_code == 2, result.output
    assert "Error:" in result.output
