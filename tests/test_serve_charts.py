"""The viewer's charts without a browser: every Vega-Lite spec is valid against Vega-Lite's own JSON schema
and renders (vl-convert-python, Vega-Lite's compiler and Vega's renderer run in Deno) with the marks the data
calls for; the vendored bundle is the one VERSIONS.json records.

Expected mark counts come from the planted study's design (24 runs, 8 OOD testsets: 28 pairs, 24 checkpoints)
and the hostile store's (4 runs, one without one task).
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import re
from pathlib import Path
from urllib.parse import quote

import pytest

from conftest import FIXTURES, HOSTILE_ANALYSIS, HOSTILE_TASKS, PLANTED_ANALYSIS

pytest.importorskip("starlette", reason="the serve extra is not installed")
vlc = pytest.importorskip("vl_convert", reason="vl-convert-python (the test extra) is not installed")
jsonschema = pytest.importorskip("jsonschema")
from starlette.testclient import TestClient  # noqa: E402

from ood_store._examples import planted  # noqa: E402
from ood_store._serve.app import Settings, create_app  # noqa: E402

pytestmark = pytest.mark.xdist_group("serve")
VENDOR = Path(__file__).resolve().parents[1] / "serve" / "static" / "vendor"
VL_VERSION = "6.4"  # the vendored vega-lite's minor version, which vl-convert also runs
PAIRS = len(planted.OOD) * (len(planted.OOD) - 1) // 2
RUNS = len(planted.FAMILIES) * len(planted.SIZES) * len(planted.SEEDS)


def specs(client: TestClient, path: str) -> dict[str, dict]:
    html = client.get(path)
    assert html.status_code == 200, html.text[-300:]
    found = re.findall(r'<script type="application/json" id="spec-([^"]+)">(.*?)</script>', html.text, re.DOTALL)
    return {name: json.loads(text) for name, text in found}


def marks(spec: dict) -> dict[str, int]:
    """Items drawn per named mark (``<layer name>_marks``), from Vega's scenegraph of the rendered spec."""
    scene = vlc.vegalite_to_scenegraph(spec, vl_version=VL_VERSION)
    counts: dict[str, int] = {}
    stack = [scene]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("marktype") and isinstance(node.get("name"), str):
                counts[node["name"]] = counts.get(node["name"], 0) + len(node.get("items", []))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return counts


@pytest.fixture(scope="module")
def validator():
    with gzip.open(FIXTURES / "vega-lite-v6.4.3.schema.json.gz") as fh:
        schema = json.load(fh)
    return jsonschema.validators.validator_for(schema)(schema)


def assert_valid(validator, spec: dict) -> None:
    """Valid against Vega-Lite's schema (inline data cut to three rows: the schema allows any rows)."""
    light = copy.deepcopy(spec)
    stack = [light]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("data"), dict) and isinstance(node["data"].get("values"), list):
                node["data"]["values"] = node["data"]["values"][:3]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    errors = [f"{e.message[:200]} at {list(e.absolute_path)}" for e in validator.iter_errors(light)]
    assert not errors, errors[:3]


@pytest.fixture(scope="module")
def planted_client(planted_db):
    return TestClient(create_app(Settings(planted_db)), base_url="http://127.0.0.1")


def test_the_vendored_bundle_is_the_one_recorded():
    recorded = json.loads((VENDOR / "VERSIONS.json").read_text())
    files = {p["file"]: p for p in recorded["packages"]}
    assert set(files) == {p.name for p in VENDOR.glob("*.js")}
    for name, package in files.items():
        content = (VENDOR / name).read_bytes()
        assert hashlib.sha256(content).hexdigest() == package["sha256"], name
        assert (VENDOR / package["license_file"]).read_text().startswith("Copyright")
    # The versions the builds announce themselves.
    assert b'version="6.4.0"' in (VENDOR / "vega.min.js").read_bytes()
    assert b'var n="6.4.3"' in (VENDOR / "vega-lite.min.js").read_bytes()
    assert b'"7.3.0"' in (VENDOR / "vega-embed.min.js").read_bytes()
    assert {files[f]["version"] for f in files} == {"6.4.0", "6.4.3", "7.3.0"}
    assert files["vega-lite.min.js"]["version"].startswith(VL_VERSION + ".")
    # Nothing in the pages points elsewhere: every script and stylesheet is the viewer's own.
    base = (Path(__file__).resolve().parents[1] / "serve" / "templates" / "base.html").read_text()
    for source in re.findall(r'(?:src|href)="([^"{]+)"', base):
        assert source.startswith("/"), source


def test_the_schema_check_can_fail(validator):
    """The validation below is not vacuous: a misspelled mark, an unknown channel are errors."""
    good = {"data": {"values": [{"a": 1}]}, "mark": "point", "encoding": {"x": {"field": "a", "type": "quantitative"}}}
    assert not list(validator.iter_errors(good))
    assert list(validator.iter_errors({**good, "mark": "pointz"}))
    assert list(validator.iter_errors({**good, "encoding": {"hue": {"field": "a"}}}))


def test_the_planted_charts_are_valid_and_draw_every_run_pair_and_checkpoint(planted_client, validator):
    run = planted.run_name("opt", "350m", 1)
    grid = specs(planted_client, f"/analyses/{PLANTED_ANALYSIS}")["grid"]
    assert_valid(validator, grid)
    drawn = marks(grid)
    assert drawn["cells_marks"] == RUNS * PAIRS and drawn["numbers_marks"] == RUNS * PAIRS
    assert drawn.get("missing_marks", 0) == 0 and drawn.get("fragile_marks", 0) == 0
    faceted = specs(planted_client, f"/analyses/{PLANTED_ANALYSIS}?rows=family&cols=size")["grid"]
    assert_valid(validator, faceted)
    assert marks(faceted)["cells_marks"] == len(planted.FAMILIES) * len(planted.SIZES) * PAIRS

    pair = specs(planted_client, f"/analyses/{PLANTED_ANALYSIS}/pair/rte/hans?run={quote(run)}")
    for spec in pair.values():
        assert_valid(validator, spec)
    forest = marks(pair["forest"])
    # 24 intervals and the pooled one; a point each; one line at zero.
    assert forest["intervals_marks"] == RUNS and forest["pooled_interval_marks"] == 1
    assert forest["estimates_marks"] == RUNS and forest["pooled_estimate_marks"] == 1 and forest["zero_marks"] == 1
    residuals = marks(pair["residuals"])
    assert sum(n for name, n in residuals.items() if name != "root") >= len(planted.STEPS) * 3  # 2 lines + scatter

    signs = specs(planted_client, f"/analyses/{PLANTED_ANALYSIS}/signs")["signs"]
    assert_valid(validator, signs)
    drawn = marks(signs)
    assert drawn["cells_marks"] == PAIRS
    assert drawn["labels_marks"] + drawn["bold_labels_marks"] == PAIRS
    # As planted: snli-scitail, anli_r1-anli_r2 and anli_r3-wnli consistent, rte-hans model-dependent at least.
    assert drawn["consistent_marks"] >= 3 and drawn["model_dependent_marks"] >= 1

    curves = specs(planted_client, f"/runs/{run}")["curves"]
    assert_valid(validator, curves)
    drawn = marks(curves)
    assert drawn["tasks_marks"] == len(planted.OOD) * len(planted.STEPS)  # a line's items are its vertices
    assert drawn["in_domain_marks"] == len(planted.STEPS)

    step = specs(planted_client, "/compare-step?task=hans&step=2500&by=family")
    for spec in step.values():
        assert_valid(validator, spec)
    drawn = marks(step["step"])
    assert drawn["runs_marks"] == RUNS and drawn["means_marks"] == len(planted.FAMILIES) == drawn["bands_marks"]
    drawn = marks(step["groups"])
    assert drawn["means_marks"] == len(planted.FAMILIES) * len(planted.STEPS) and drawn["step_marks"] == 1

    coverage = specs(planted_client, "/tasks")["coverage"]
    assert_valid(validator, coverage)
    drawn = marks(coverage)
    assert drawn["present_marks"] == RUNS * (1 + len(planted.OOD)) and drawn.get("holes_marks", 0) == 0


def test_charts_of_hostile_names_are_valid_and_draw_them_as_data(hostile_db, validator):
    client = TestClient(create_app(Settings(hostile_db)), base_url="http://127.0.0.1")
    grid = specs(client, "/analyses/" + quote(HOSTILE_ANALYSIS, safe=""))["grid"]
    assert_valid(validator, grid)
    assert marks(grid)["cells_marks"] == 4 * 3
    coverage = specs(client, "/tasks")["coverage"]
    assert marks(coverage)["holes_marks"] == 1  # lab/plain-b has no "plain"
    # Rendered, the names are text in the SVG: escaped by the SVG writer, never elements.
    svg = vlc.vegalite_to_svg(coverage, vl_version=VL_VERSION)
    assert "<script" not in svg and "&lt;/script&gt;&lt;script&gt;" in svg
    assert all(name not in svg for name in HOSTILE_TASKS if "<" in name)
