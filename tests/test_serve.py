"""ood-store serve, in process (Starlette's test client): every page and its .json twin, values against their
sources, the SQL box against hostile SQL, a busy store, names that are markup, the security defaults.

Expected values come from the stores' input files (the planted study's lm-eval files, read here with json),
from DuckDB queries on the store file that do not go through ood-store, and from the planted truth of
ood_store/_examples/planted.py.
"""

from __future__ import annotations

import doctest
import hashlib
import json
import math
import re
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, urlencode

import numpy as np
import pytest

from conftest import (
    HOSTILE_ANALYSIS,
    HOSTILE_RUNS,
    HOSTILE_TASKS,
    PLANTED_ANALYSIS,
    PYTHIA_ANALYSIS,
    PYTHIA_OOD,
    benchmark,
    sql_rows,
)

starlette = pytest.importorskip("starlette", reason="the serve extra is not installed")
from starlette.testclient import TestClient  # noqa: E402

from ood_store._examples import planted  # noqa: E402
from ood_store._serve.app import Settings, create_app  # noqa: E402
from ood_store._serve.security import CSP  # noqa: E402
from ood_store._serve.sqlbox import Limits  # noqa: E402

pytestmark = pytest.mark.xdist_group("serve")
ROOT = Path(__file__).resolve().parents[1]
BASE = "http://127.0.0.1:8000"


def make_client(db: Path, **settings) -> TestClient:
    return TestClient(create_app(Settings(db, **settings)), base_url=BASE, raise_server_exceptions=True)


@pytest.fixture(scope="module")
def planted_client(planted_db):
    return make_client(planted_db)


@pytest.fixture(scope="module")
def pythia_client(analysis_db):
    return make_client(analysis_db)


@pytest.fixture(scope="module")
def hostile_client(hostile_db):
    return make_client(hostile_db)


# -- reading pages -----------------------------------------------------------------------------------------


class Parsed(HTMLParser):
    """A page's tables (by data-table, cells by data-column), script elements, every tag's attributes, its text."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[dict[str, str]]] = {}
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self._table: str | None = None
        self._row: dict[str, str] | None = None
        self._cell: str | None = None
        self._script: dict[str, str | None] | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag == "table" and attributes.get("data-table"):
            self._table = attributes["data-table"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self._row = {}
        elif tag == "td" and self._row is not None and attributes.get("data-column"):
            self._cell = attributes["data-column"]
            self._row[self._cell] = ""
        elif tag == "script":
            self._script = attributes
            self.scripts.append((attributes, ""))

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            if self._row:
                self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "td":
            self._cell = None
        elif tag == "script":
            self._script = None

    def handle_data(self, data):
        if self._script is not None:
            attributes, text = self.scripts[-1]
            self.scripts[-1] = (attributes, text + data)
            return
        self.text.append(data)
        if self._cell is not None and self._row is not None:
            self._row[self._cell] += data

    def specs(self) -> dict[str, dict]:
        return {a["id"]: json.loads(text) for a, text in self.scripts if a.get("type") == "application/json"}


def twin(path: str) -> str:
    """The .json twin of a page's URL."""
    where, _, query = path.partition("?")
    where = "/index.json" if where == "/" else where + ".json"
    return where + ("?" + query if query else "")


def shown_as(text: str, value) -> bool:
    """Whether a table cell's text shows ``value`` (numbers to 4 significant digits, lists joined, null empty)."""
    if value is None:
        return text == ""
    if isinstance(value, bool):
        return text == ("yes" if value else "no")
    if isinstance(value, int):
        return text == str(value)
    if isinstance(value, float):
        return math.isclose(float(text), value, rel_tol=6e-4, abs_tol=1e-300)
    if isinstance(value, list):
        return text == ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.loads(text) == value
    return text == value


def page_and_twin(client: TestClient, path: str) -> tuple[Parsed, dict]:
    html = client.get(path)
    assert html.status_code == 200, (path, html.text[-500:])
    assert html.headers["content-type"].startswith("text/html")
    data = client.get(twin(path))
    assert data.status_code == 200, (twin(path), data.text[-500:])
    assert data.headers["content-type"] == "application/json"
    return Parsed(html.text), data.json()


def assert_same_rows(parsed: Parsed, data: dict, path: str) -> None:
    assert parsed.tables, f"{path}: no table"
    for name, rows in parsed.tables.items():
        assert name in data, (path, name)
        assert len(rows) == len(data[name]), (path, name)
        for shown, row in zip(rows, data[name], strict=True):
            assert set(shown) == set(row), (path, name, set(shown) ^ set(row))
            for key, text in shown.items():
                assert shown_as(text, row[key]), (path, name, key, text, row[key])


def planted_run(family="opt", size="350m", seed=1) -> str:
    return planted.run_name(family, size, seed)


def run_path(run: str) -> str:
    return "/runs/" + "/".join(quote(part, safe="") for part in run.split("/"))


def analysis_path(*parts: str) -> str:
    return "/analyses/" + "/".join(quote(part, safe="") for part in parts)


PLANTED_PAGES = [
    "/",
    "/runs",
    "/runs?where=family%3Dopt",
    "/runs?spark=mnli",
    run_path(planted_run()),
    run_path(planted_run()) + "?log=1&in_domain=mnli",
    "/tasks",
    "/compare-step",
    "/compare-step?task=hans&step=2500&by=size",
    "/analyses",
    analysis_path(PLANTED_ANALYSIS),
    analysis_path(PLANTED_ANALYSIS) + "?rows=family&cols=size",
    analysis_path(PLANTED_ANALYSIS) + "?rows=family&cols=size&seeds=each",
    analysis_path(PLANTED_ANALYSIS, "signs"),
    analysis_path(PLANTED_ANALYSIS, "signs") + "?by=family",
    analysis_path(PLANTED_ANALYSIS, "pair", "rte", "hans"),
    analysis_path(PLANTED_ANALYSIS, "pair", "hans", "rte") + "?run=" + quote(planted_run("qwen", "1.3b", 2)),
    "/sql?" + urlencode({"sql": "SELECT run, family, size, seed FROM runs ORDER BY run"}),
]


@pytest.mark.parametrize("path", PLANTED_PAGES)
def test_every_page_of_the_planted_study_and_its_json_twin_carry_the_same_rows(planted_client, path):
    parsed, data = page_and_twin(planted_client, path)
    assert_same_rows(parsed, data, path)
    assert data["url"].startswith(BASE)


def pythia_pages(db: Path) -> list[str]:
    runs = [r for (r,) in sql_rows(db, "SELECT run FROM runs ORDER BY run")]
    return [
        "/",
        "/runs",
        run_path(runs[0]),
        "/tasks",
        "/compare-step?task=lambada_openai&by=size",
        analysis_path(PYTHIA_ANALYSIS),
        analysis_path(PYTHIA_ANALYSIS, "signs"),
        analysis_path(PYTHIA_ANALYSIS, "pair", PYTHIA_OOD[0], PYTHIA_OOD[2]) + "?run=" + quote(runs[1]),
    ]


def test_every_page_of_the_pythia_fixtures_and_its_json_twin_carry_the_same_rows(pythia_client, analysis_db):
    for path in pythia_pages(analysis_db):
        parsed, data = page_and_twin(pythia_client, path)
        assert_same_rows(parsed, data, path)
    # The run page's curves are the fixture files' scores: lambada_openai of Pythia-160M at its 27 checkpoints.
    runs = [r for (r,) in sql_rows(analysis_db, "SELECT run FROM runs ORDER BY run")]
    data = pythia_client.get(twin(run_path(runs[0]))).json()
    from conftest import expected_pythia_rows, pythia_files

    expected = expected_pythia_rows(pythia_files())
    seen = 0
    for row in data["rows"]:
        value = expected.get((runs[0], row["step"], "lambada_openai", "acc"))
        if value is not None:
            assert row["lambada_openai"] == pytest.approx(value[0], abs=1e-12)
            seen += 1
    assert seen == 27


# -- values against their sources ------------------------------------------------------------------------------


def test_the_overview_counts_what_the_store_holds(planted_client, planted_db):
    data = planted_client.get("/index.json").json()
    (runs, checkpoints, evaluations, analyses) = sql_rows(
        planted_db,
        "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM checkpoints), (SELECT count(*) FROM evaluations), "
        "(SELECT count(*) FROM analyses)",
    )[0]
    families, sizes, seeds = len(planted.FAMILIES), len(planted.SIZES), len(planted.SEEDS)
    assert data["counts"]["runs"] == runs == families * sizes * seeds
    assert data["counts"]["checkpoints"] == checkpoints == runs * len(planted.STEPS)
    assert data["counts"]["evaluations"] == evaluations
    assert data["counts"]["tasks"] == 1 + len(planted.OOD)
    assert data["counts"]["analyses"] == analyses
    assert [w["count"] for w in data["warnings"]] == [0, 0, 0]  # one evaluation per checkpoint, one campaign
    assert [a["name"] for a in data["analyses"]] == [PLANTED_ANALYSIS]


def test_the_overviews_warnings_count_what_their_queries_list(hostile_client, hostile_db):
    data = hostile_client.get("/index.json").json()
    warnings = {w["warning"]: w for w in data["warnings"]}
    conflicts = warnings["repeated evaluations disagree"]
    # The recheck of lab/plain-a at step 100 gives every task 0.5, which no first evaluation gave.
    (view,) = sql_rows(hostile_db, "SELECT count(*) FROM score_conflicts")[0]
    assert conflicts["count"] == view == len(HOSTILE_TASKS) and conflicts["runs"] == 1
    assert warnings["series mix campaigns"]["count"] == 1
    assert warnings["runs miss tasks"]["count"] == 1 and warnings["runs miss tasks"]["runs"] == 1
    # Each links to the query that lists it, and that query lists what was counted.
    html = Parsed(hostile_client.get("/").text)
    links = [a["href"] for tag, a in html.tags if tag == "a" and a.get("href", "").startswith("/sql?")]
    assert len(links) >= 3
    listed = []
    for link in dict.fromkeys(links):
        rows = hostile_client.get(twin(link)).json()["rows"]
        listed.append(rows)
    conflict_rows, mix_rows, missing_rows = listed[:3]
    assert len(conflict_rows) == len(HOSTILE_TASKS)
    assert {r["run"] for r in mix_rows} == {"lab/plain-a"} and {r["campaign"] for r in mix_rows} == {"first", "recheck"}
    assert missing_rows == [{"run": "lab/plain-b", "missing": 1, "tasks": ["plain"]}]


def test_runs_facets_count_the_runs_and_filter_them(planted_client):
    data = planted_client.get("/runs.json").json()
    assert len(data["rows"]) == 24
    facets = {f["name"]: {v["value"]: v for v in f["values"]} for f in data["facets"]}
    assert {k: v["count"] for k, v in facets["family"].items()} == dict.fromkeys(planted.FAMILIES, 6)
    assert list(facets["size"]) == ["350m", "1.3b"]  # by parameter count, not alphabetically
    assert {k: v["count"] for k, v in facets["seed"].items()} == {"1": 8, "2": 8, "3": 8}
    # A click keeps the runs with that value; the other facets count within them.
    chosen = planted_client.get(twin(facets["family"]["opt"]["href"])).json()
    assert sorted(r["run"] for r in chosen["rows"]) == sorted(
        planted_run("opt", s, k) for s in planted.SIZES for k in planted.SEEDS
    )
    again = {f["name"]: {v["value"]: v for v in f["values"]} for f in chosen["facets"]}
    assert again["family"]["opt"]["selected"] and again["family"]["opt"]["count"] == 6
    assert {k: v["count"] for k, v in again["size"].items()} == {"350m": 3, "1.3b": 3}
    # Two values of one attribute: either; a glob as in --where; clicking a chosen value drops it.
    both = planted_client.get("/runs.json?where=family%3Dopt&where=family%3Dqwen").json()
    assert len(both["rows"]) == 12
    glob = planted_client.get("/runs.json?where=size%3D1.*").json()
    assert {r["size"] for r in glob["rows"]} == {"1.3b"} and len(glob["rows"]) == 12
    dropped = planted_client.get(twin(again["family"]["opt"]["href"])).json()
    assert len(dropped["rows"]) == 24


def planted_files(planted_db: Path, run: str) -> dict[int, dict[str, float]]:
    """step -> task -> acc of one planted run, read from its lm-eval files."""
    out = {}
    for path in (planted_db.parent / "files" / run.replace("/", "__")).glob("step-*/*.json"):
        doc = json.loads(path.read_text())
        step = int(doc["config"]["model_args"].split("revision=step")[1])
        out[step] = {task: entry["acc,none"] for task, entry in doc["results"].items()}
    return out


def test_sparklines_and_a_runs_curves_are_its_files_scores(planted_client, planted_db):
    run = planted_run("llama", "1.3b", 3)
    files = planted_files(planted_db, run)
    spark = planted_client.get("/runs.json?spark=mnli").json()["sparklines"][run]
    assert spark == [[step, files[step]["mnli"]] for step in sorted(files)]
    data = planted_client.get(twin(run_path(run))).json()
    assert [row["step"] for row in data["rows"]] == sorted(files)
    for row in data["rows"]:
        assert {k: v for k, v in row.items() if k not in ("step", "campaign")} == files[row["step"]]
    # The in-domain task of a run without the attribute: that of the saved analysis of it.
    assert data["in_domain"] == planted.IN_DOMAIN
    (curves,) = [s for s in Parsed(planted_client.get(run_path(run)).text).specs().values()]
    assert sum(p["in_domain"] for p in curves["data"]["values"]) == len(planted.STEPS)


def test_compare_step_groups_runs_at_one_step(planted_client, planted_db):
    data = planted_client.get("/compare-step.json?task=hans&step=2500&by=size&metric=acc").json()
    by_size: dict[str, list[float]] = {}
    for family in planted.FAMILIES:
        for size in planted.SIZES:
            for seed in planted.SEEDS:
                by_size.setdefault(size, []).append(
                    planted_files(planted_db, planted_run(family, size, seed))[2500]["hans"]
                )
    groups = {g["group"]: g for g in data["groups"]}
    assert set(groups) == set(planted.SIZES)
    for size, values in by_size.items():
        assert groups[size]["runs"] == 12
        assert groups[size]["mean"] == pytest.approx(np.mean(values), rel=1e-12)
        assert groups[size]["sd"] == pytest.approx(np.std(values, ddof=1), rel=1e-9)
        assert groups[size]["low"] == pytest.approx(np.mean(values) - np.std(values, ddof=1), rel=1e-9)
    assert len(data["rows"]) == 24
    # Defaults: the most common in-domain task of the runs (none here: the first task), the last step every run has.
    default = planted_client.get("/compare-step.json").json()
    assert default["step"] == max(planted.STEPS) and default["by"] == "family"
    missing = planted_client.get("/compare-step.json?task=hans&step=7")
    assert missing.status_code == 404
    assert missing.json()["message"].startswith("task 'hans' has no 'acc' scores at step 7")


def test_the_grid_and_pairs_show_the_planted_truth(planted_client):
    data = planted_client.get(twin(analysis_path(PLANTED_ANALYSIS))).json()
    verdicts = {frozenset((p["task_x"], p["task_y"])): p["verdict"] for p in data["pairs"]}
    assert len(verdicts) == 28
    assert verdicts[frozenset(("rte", "hans"))] == "model-dependent"
    assert verdicts[frozenset(("snli", "scitail"))] == "consistently positive"
    assert verdicts[frozenset(("anli_r3", "wnli"))] == "consistently negative"
    (grid,) = Parsed(planted_client.get(analysis_path(PLANTED_ANALYSIS)).text).specs().values()
    cells = grid["data"]["values"]
    assert len(cells) == 24 * 28
    # Lower triangle in the analysis' order: x from the first 7 OOD tasks, y from the last 7.
    assert {c["x"] for c in cells} == set(planted.OOD[:-1]) and {c["y"] for c in cells} == set(planted.OOD[1:])
    assert all(planted.OOD.index(c["x"]) < planted.OOD.index(c["y"]) for c in cells)
    assert all(c["href"].startswith(analysis_path(PLANTED_ANALYSIS, "pair")) for c in cells)


def test_faceted_grids_pool_each_family_and_size(planted_client, planted_db):
    (grid,) = (
        Parsed(planted_client.get(analysis_path(PLANTED_ANALYSIS) + "?rows=family&cols=size").text).specs().values()
    )
    cells = grid["data"]["values"]
    assert len(cells) == len(planted.FAMILIES) * len(planted.SIZES) * 28
    assert {c["row"] for c in cells} == set(planted.FAMILIES) and {c["col"] for c in cells} == set(planted.SIZES)
    assert all(c["runs"] == 3 for c in cells)
    # rte-hans pooled over opt's three 350m seeds is positive, over qwen's negative: as planted.
    sign = {(c["row"], c["col"]): c["r"] for c in cells if {c["x"], c["y"]} == {"rte", "hans"}}
    assert all(sign[("opt", s)] > 0 and sign[("qwen", s)] < 0 for s in planted.SIZES)
    each = Parsed(planted_client.get(analysis_path(PLANTED_ANALYSIS) + "?rows=family&cols=size&seeds=each").text)
    (grid,) = each.specs().values()
    assert len(grid["data"]["values"]) == 24 * 28


def test_the_pair_page_has_every_run_the_pooled_r_and_the_residuals_behind_one_r(planted_client, planted_db):
    run = planted_run("qwen", "1.3b", 2)
    path = analysis_path(PLANTED_ANALYSIS, "pair", "hans", "rte") + "?run=" + quote(run)
    data = planted_client.get(twin(path)).json()
    assert (data["task_x"], data["task_y"]) == ("rte", "hans")  # as the analysis stores the pair
    assert len(data["rows"]) == 24 and data["verdict"] == "model-dependent"
    (saved,) = sql_rows(
        planted_db,
        "SELECT r FROM partial_correlations WHERE analysis = ? AND run = ? AND task_x = 'rte' AND task_y = 'hans'",
        PLANTED_ANALYSIS, run,
    )[0]  # fmt: skip
    assert data["saved_r"] == saved
    assert data["residual_r"] == pytest.approx(saved, abs=1e-10)
    # The residuals are those of least squares of each series on [1, mnli], from the run's files.
    files = planted_files(planted_db, run)
    steps = sorted(files)
    z = np.array([files[s]["mnli"] for s in steps])
    design = np.column_stack([np.ones_like(z), z])
    for task, column in (("rte", "residual_x"), ("hans", "residual_y")):
        y = np.array([files[s][task] for s in steps])
        expected = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
        assert [r[column] for r in data["residuals"]] == pytest.approx(expected.tolist(), abs=1e-10)
    # Not tested between families beyond seeds: each family's runs differ in size too, and the page says so.
    assert "between" not in data
    assert data["between_note"].endswith("runs of one family must differ in seed")
    (forest, residuals) = Parsed(planted_client.get(path).text).specs().values()
    kinds = [row["kind"] for row in forest["data"]["values"]]
    assert kinds.count("run") == 24 and kinds.count("pooled") == 1
    (pooled,) = data["pooled"]
    forest_pooled = next(row for row in forest["data"]["values"] if row["kind"] == "pooled")
    assert forest_pooled["r"] == pooled["r_pooled"] and forest_pooled["ci_low"] == pooled["ci_low"]


def test_the_pair_page_tests_between_groups_as_compare_does(hostile_client, hostile_db, runner):
    from ood_store._cli import main

    x, y = HOSTILE_TASKS[1], HOSTILE_TASKS[2]
    data = hostile_client.get(twin(analysis_path(HOSTILE_ANALYSIS, "pair", x, y))).json()
    printed = runner.invoke(main, ["--db", str(hostile_db), "compare", "--analysis", HOSTILE_ANALYSIS,
                                   "--between", "family", "--within", "seed", "-f", "json"])  # fmt: skip
    assert printed.exit_code == 0, printed.output
    (expected,) = [r for r in json.loads(printed.output) if {r["task_x"], r["task_y"]} == {x, y}]
    (shown,) = data["between"]
    assert shown == {k: v for k, v in expected.items() if not k.startswith("r:")}
    assert shown["groups"] == 2 and shown["runs"] == 4


def test_sign_agreement_counts_the_runs_signs(planted_client, planted_db):
    data = planted_client.get(twin(analysis_path(PLANTED_ANALYSIS, "signs"))).json()
    counts = {
        frozenset((x, y)): (pos, neg)
        for x, y, pos, neg in sql_rows(
            planted_db,
            "SELECT task_x, task_y, count(*) FILTER (r > 0), count(*) FILTER (r < 0) FROM partial_correlations "
            "WHERE analysis = ? GROUP BY ALL",
            PLANTED_ANALYSIS,
        )
    }
    assert len(data["rows"]) == 28
    for row in data["rows"]:
        assert (row["n_positive"], row["n_negative"]) == counts[frozenset((row["task_x"], row["task_y"]))]
    by = planted_client.get(twin(analysis_path(PLANTED_ANALYSIS, "signs")) + "?by=family").json()
    assert len(by["rows"]) == 4 * 28 and all(r["runs"] == 6 for r in by["rows"])


def test_tasks_coverage_shows_the_holes(planted_client, hostile_client):
    data = planted_client.get("/tasks.json").json()
    assert all(r["runs"] == 24 and r["missing_runs"] == 0 and r["partial_runs"] == 0 for r in data["rows"])
    assert {r["task"] for r in data["rows"]} == {planted.IN_DOMAIN, *planted.OOD}
    hostile = {r["task"]: r for r in hostile_client.get("/tasks.json").json()["rows"]}
    assert hostile["plain"]["missing_runs"] == 1 and hostile["plain"]["missing"] == ["lab/plain-b"]
    assert all(hostile[t]["missing_runs"] == 0 for t in HOSTILE_TASKS if t != "plain")


def test_residualizer_sensitivity_marks_fragile_cells(pythia_client, analysis_db):
    """The cells framed are the (run, pair) rows that `ood-store analyze --sensitivity` calls fragile."""
    from click.testing import CliRunner

    from conftest import PYTHIA_IN_DOMAIN
    from ood_store._cli import main

    out = CliRunner().invoke(main, ["--db", str(analysis_db), "analyze", "--in-domain", PYTHIA_IN_DOMAIN, "--ood",
                                    ",".join(PYTHIA_OOD), "--sensitivity", "-f", "json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    fragile = {(r["run"], frozenset((r["task_x"], r["task_y"]))) for r in json.loads(out.output) if r["fragile"]}
    (grid,) = Parsed(pythia_client.get(analysis_path(PYTHIA_ANALYSIS) + "?sensitivity=1").text).specs().values()
    marked = {(c["href"].split("run=")[1], frozenset((c["x"], c["y"]))) for c in grid["data"]["values"] if c["fragile"]}
    from urllib.parse import unquote_plus

    assert {(unquote_plus(r), p) for r, p in marked} == fragile
    plain = Parsed(pythia_client.get(analysis_path(PYTHIA_ANALYSIS)).text).specs()
    assert all(c["fragile"] is None for c in next(iter(plain.values()))["data"]["values"])


# -- names that are markup --------------------------------------------------------------------------------


def hostile_pages() -> list[str]:
    run = HOSTILE_RUNS[0]
    task = HOSTILE_TASKS[1]
    return [
        "/",
        "/runs",
        "/runs?where=" + quote("family=<i>fam</i>"),
        run_path(run),
        run_path(HOSTILE_RUNS[1]),
        "/tasks",
        "/compare-step?" + urlencode({"task": task, "by": "family"}),
        "/analyses",
        analysis_path(HOSTILE_ANALYSIS),
        analysis_path(HOSTILE_ANALYSIS) + "?rows=family",
        analysis_path(HOSTILE_ANALYSIS, "signs") + "?by=family",
        analysis_path(HOSTILE_ANALYSIS, "pair", HOSTILE_TASKS[1], HOSTILE_TASKS[2]) + "?run=" + quote(run),
        "/sql?" + urlencode({"sql": "SELECT run, family FROM runs"}),
    ]


@pytest.mark.parametrize("path", hostile_pages())
def test_names_holding_markup_are_shown_as_text(hostile_client, path):
    response = hostile_client.get(path)
    assert response.status_code == 200, response.text[-400:]
    html = response.text
    for name in (*HOSTILE_RUNS, *HOSTILE_TASKS, HOSTILE_ANALYSIS, "<i>fam</i>"):
        if "<" in name:
            assert name not in html, name  # never as markup, nor raw inside a script element
    parsed = Parsed(html)
    # The only scripts: the viewer's files and JSON data; no element carries an event handler or a style.
    for attributes, _ in parsed.scripts:
        assert attributes.get("src", "").startswith("/static/") or attributes.get("type") == "application/json"
    for tag, attributes in parsed.tags:
        assert not any(k.startswith("on") or k == "style" for k in attributes), (tag, attributes)
        assert tag not in ("i", "b", "img", "iframe", "object"), tag  # from the names, had they become markup
    # What the names hold comes back as text, as data in the charts' specs, and in the JSON twin.
    names = (*HOSTILE_RUNS, *HOSTILE_TASKS, "<i>fam</i>", "{{fam}}")
    visible = "".join(parsed.text) + json.dumps(list(parsed.specs().values()), ensure_ascii=False)
    assert any(name in visible for name in names), path
    data = json.dumps(hostile_client.get(twin(path)).json(), ensure_ascii=False)
    assert any(json.dumps(name, ensure_ascii=False)[1:-1] in data for name in names), path


def test_hostile_names_reach_the_page_intact(hostile_client):
    """Escaped, not dropped: the run page shows the run's name; the grid's data and the pair's links hold the tasks."""
    run = HOSTILE_RUNS[0]
    parsed = Parsed(hostile_client.get(run_path(run)).text)
    assert run in "".join(parsed.text)
    (curves,) = parsed.specs().values()
    assert set(HOSTILE_TASKS) == {p["series"] for p in curves["data"]["values"]}
    grid = Parsed(hostile_client.get(analysis_path(HOSTILE_ANALYSIS)).text)
    (spec,) = grid.specs().values()
    assert {c["x"] for c in spec["data"]["values"]} | {c["y"] for c in spec["data"]["values"]} == set(
        HOSTILE_TASKS[1:4]
    )
    for cell in spec["data"]["values"][:3]:
        page = hostile_client.get(cell["href"])
        assert page.status_code == 200
        assert f"{cell['x']} and {cell['y']}" in "".join(Parsed(page.text).text)


# -- the SQL box ------------------------------------------------------------------------------------------------

hostile_sql = benchmark("hostile_sql")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    return hostile_sql.make_store(tmp_path_factory.mktemp("pristine"))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_sql_box_refuses_every_hostile_statement(pristine, tmp_path):
    db = tmp_path / "store.duckdb"
    shutil.copyfile(pristine, db)
    secret_dir = tmp_path / "elsewhere"
    secret_dir.mkdir()
    secret = secret_dir / f"{hostile_sql.NAME_MARK}.csv"
    secret.write_text(f"name,value\n{hostile_sql.SECRET},1\n")
    digest = sha256(db)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    client = make_client(db)
    for attempt in hostile_sql.ATTEMPTS:
        sql = attempt.sql.format(secret=secret, secret_dir=secret_dir, out=tmp_path / "out.csv",
                                 outdir=tmp_path / "export", other=tmp_path / "o.db")  # fmt: skip
        for path in ("/sql", "/sql.json"):
            response = client.get(path, params={"sql": sql})
            assert response.status_code == 400, (attempt.name, response.text[-300:])
            body = response.text
            assert hostile_sql.SECRET not in body and "root:" not in body, attempt.name
            if path == "/sql.json":
                error = response.json()["error"]
                assert error and "\n" not in error, attempt.name
            else:
                (message,) = re.findall(r'<p class="message error">([^<]*)</p>', body)
                assert message.strip() and "\n" not in message, attempt.name
    assert sha256(db) == digest
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert not db.with_name(db.name + ".wal").exists()


def test_the_sql_box_caps_rows_stops_long_queries_and_downloads_as_query_writes(pristine, tmp_path, runner):
    from ood_store._cli import main

    db = tmp_path / "store.duckdb"
    shutil.copyfile(pristine, db)
    client = make_client(db, sql=Limits(rows=100, seconds=1.0))
    data = client.get("/sql.json", params={"sql": "SELECT range AS i FROM range(5000)"}).json()
    assert data["truncated"] and [r["i"] for r in data["rows"]] == list(range(100))
    html = client.get("/sql", params={"sql": "SELECT range AS i FROM range(5000)"}).text
    assert "Only the first 100 rows" in html
    started = time.monotonic()
    slow = client.get("/sql.json", params={"sql": "SELECT count(*) FROM range(100000000000) a(x) WHERE hash(x) = 1"})
    assert time.monotonic() - started < 10
    assert slow.status_code == 400 and slow.json()["error"].startswith("stopped after 1 s")
    sql = "SELECT task, count(*) AS n, min(value) AS low, max(value) AS high FROM scores GROUP BY task ORDER BY task"
    for fmt in ("csv", "json", "jsonl", "markdown", "latex", "table"):
        downloaded = client.get("/sql", params={"sql": sql, "format": fmt})
        assert downloaded.status_code == 200 and "attachment" in downloaded.headers["content-disposition"]
        printed = runner.invoke(main, ["--db", str(db), "query", sql, "-f", fmt])
        assert downloaded.text.rstrip("\n") == printed.output.rstrip("\n"), fmt
    parquet = client.get("/sql", params={"sql": sql, "format": "parquet"})
    import io

    import polars as pl

    frame = pl.read_parquet(io.BytesIO(parquet.content))
    expected = sql_rows(db, sql)
    assert frame.rows() == [tuple(r) for r in expected]
    assert client.get("/sql", params={"sql": sql, "format": "xlsx"}).status_code == 400


# -- a busy store, a store that is not held ----------------------------------------------------------------------

HOLD = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
con.execute("BEGIN TRANSACTION")
print("holding", flush=True)
sys.stdin.readline()
"""


def test_a_busy_store_gives_one_line_that_retries(planted_db, tmp_path):
    db = tmp_path / "store.duckdb"
    shutil.copyfile(planted_db, db)
    client = make_client(db, lock_timeout=0.2)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        for path in ("/", "/runs", analysis_path(PLANTED_ANALYSIS), "/sql?sql=SELECT%201"):
            response = client.get(path)
            assert response.status_code == 503, path
            assert response.headers["retry-after"] == "2"
            parsed = Parsed(response.text)
            assert ("meta", {"http-equiv": "refresh", "content": "2"}) in parsed.tags
            (line,) = re.findall(r'<p class="message">([^<]*)</p>', response.text)
            assert "\n" not in line
            assert re.search(rf"The store is busy: .*in use by process {holder.pid}\b", line), line
            assert "Traceback" not in response.text
            answer = client.get(twin(path))
            assert answer.status_code == 503 and answer.json()["error"] == "busy"
    finally:
        holder.communicate("\n", timeout=30)
    assert client.get("/").status_code == 200


def test_pages_never_write_and_never_hold_the_store(planted_db, tmp_path):
    import ood_store

    db = tmp_path / "store.duckdb"
    shutil.copyfile(planted_db, db)
    digest = sha256(db)
    client = make_client(db)
    for path in PLANTED_PAGES[:8]:
        assert client.get(path).status_code == 200
        # Between requests the store is free: this process may open it for writing at once.
        ood_store.open(db, lock_timeout=0).close()
    assert sha256(db) == digest
    # A page computed before a change is computed again after it.
    before = client.get("/index.json").json()["counts"]["analyses"]
    with ood_store.open(db) as store:
        store.save_analysis("another", store.analysis(PLANTED_ANALYSIS))
    assert client.get("/index.json").json()["counts"]["analyses"] == before + 1


# -- security -------------------------------------------------------------------------------------------------


def test_nothing_but_get_and_head_is_answered(planted_client):
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        for path in ("/", "/sql", "/runs", "/static/app.js"):
            response = planted_client.request(method, path)
            assert response.status_code == 405 and response.headers["allow"] == "GET, HEAD"
    assert planted_client.head("/").status_code == 200


def test_every_response_carries_the_content_security_policy(planted_client):
    for path in ("/", "/index.json", "/static/app.js", "/static/vendor/vega.min.js", "/nowhere", "/sql?sql=SELECT%201"):
        response = planted_client.get(path)
        assert response.headers["content-security-policy"] == CSP
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"
    assert "script-src 'self';" in CSP and "unsafe" not in CSP and "default-src 'none'" in CSP


def test_templates_hold_no_inline_script_style_or_handler():
    for template in (ROOT / "serve" / "templates").glob("*.html"):
        text = template.read_text()
        for match in re.finditer(r"<script\b([^>]*)>", text):
            assert "src=" in match[1] or 'type="application/json"' in match[1], (template.name, match[0])
        assert not re.search(r"\son[a-z]+\s*=", text), template.name
        assert not re.search(r"\sstyle\s*=|<style", text), template.name
        assert "|safe" not in text and "autoescape false" not in text, template.name


def test_a_foreign_host_header_is_refused_on_loopback(planted_db):
    foreign = TestClient(create_app(Settings(planted_db)), base_url="http://attacker.example")
    assert foreign.get("/").status_code == 400
    assert TestClient(create_app(Settings(planted_db)), base_url="http://localhost:8000").get("/").status_code == 200
    anywhere = TestClient(create_app(Settings(planted_db, token="x" * 20, hosts=None)), base_url="http://10.1.2.3")
    assert anywhere.get("/?token=" + "x" * 20).status_code == 200


def test_with_a_token_every_request_must_carry_it(planted_db):
    token = "s3cret-token-0123456789"
    client = TestClient(create_app(Settings(planted_db, token=token, hosts=None)), base_url=BASE)
    for path in ("/", "/index.json", "/runs.json", "/sql.json?sql=SELECT%201", "/static/app.js",
                 analysis_path(PLANTED_ANALYSIS) + ".json", "/nowhere"):  # fmt: skip
        refused = client.get(path)
        assert refused.status_code == 401 and "token" in refused.text, path
        assert client.get(path, headers={"Authorization": "Bearer wrong-token-0123456789"}).status_code == 401
        assert client.get(path, params={"token": "wrong"}).status_code == 401
        assert client.get(path, headers={"Authorization": f"Bearer {token}"}).status_code in (200, 404), path
    first = client.get("/", params={"token": token})
    assert first.status_code == 200
    assert "HttpOnly" in first.headers["set-cookie"] and "SameSite=Strict" in first.headers["set-cookie"]
    assert client.get("/runs.json").status_code == 200  # the cookie the first answer set
    # The page's own links carry no token.
    assert token not in first.text


def test_paths_cannot_reach_files_outside_the_store(planted_client, tmp_path):
    secret = Path("/etc/passwd")
    probes = [
        "/static/../../../../etc/passwd",
        "/static/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/static/..%2f..%2f..%2f..%2fetc%2fpasswd",
        "/static/vendor/..%2f..%2f..%2f..%2f..%2fetc/passwd",
        "/runs/..%2f..%2f..%2fetc%2fpasswd",
        "/runs/../../../../etc/passwd.json",
        "/analyses/..%2F..%2F..%2Fetc%2Fpasswd",
        "/analyses/%2Fetc%2Fpasswd/pair/a/b",
        "/status/..%2F..%2Fetc",
        "/status/%2Fetc",
        "/sql?sql=" + quote("SELECT * FROM read_text('/etc/passwd')"),
    ]
    for probe in probes:
        response = planted_client.get(probe)
        assert response.status_code in (400, 404), probe
        if secret.exists():
            assert "root:" not in response.text, probe


def test_status_shows_what_ood_store_status_shows(planted_db, tmp_path, runner):
    from ood_store._cli import main
    from ood_store._evaluate.workdir import Done, Failure, Unit, WorkDir

    work = WorkDir(tmp_path / "my-eval").create()
    units = [
        Unit(f"u{k}", str(planted_db), "lab/run", step, {"model": "m", "step": step}, f"m@{step}", ["t"], ["t"],
             {"tasks": ["t"]}, {}, None, str(tmp_path / "out"), False, None, False)
        for k, step in enumerate((0, 100, 200))
    ]  # fmt: skip
    work.add_units(units)
    work.mark_done(Done(unit="u0", results="x.json", sha256="0", lm_eval_version=None, host="h", pid=1, attempt="a",
                        seconds=3.0, finished=0.0))  # fmt: skip
    work.mark_failed(Failure(unit="u1", error="CUDA out of memory", host="h"))
    client = make_client(planted_db, work_dirs=(work.path,))
    listing = client.get("/status.json").json()
    assert listing["rows"] == [{"name": "my-eval", "work_dir": str(work.path)}]
    data = client.get("/status/my-eval.json").json()
    printed = runner.invoke(main, ["status", str(work.path), "-f", "json"])
    assert data["rows"] == json.loads(printed.output)
    assert data["states"] == {"done": 1, "failed": 1, "pending": 1}
    html = client.get("/status/my-eval")
    assert ("meta", {"http-equiv": "refresh", "content": "5"}) in Parsed(html.text).tags
    assert client.get("/status/other").status_code == 404


# export's forest of a single pair is short enough that matplotlib's constrained layout gives up on it (and says so);
# `ood-store plot forest --tasks X,Y` draws the same figure with the same warning.
@pytest.mark.filterwarnings("ignore:constrained_layout not applied:UserWarning")
def test_paper_figures_are_exports_figures(planted_client, planted_db, runner, tmp_path):
    """The PDF/SVG links give the figure `ood-store plot` draws from the same analysis."""
    from ood_store._cli import main

    svg = planted_client.get(analysis_path(PLANTED_ANALYSIS, "pair", "rte", "hans") + ".svg")
    assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml")
    out = tmp_path / "forest.svg"
    printed = runner.invoke(main, ["--db", str(planted_db), "plot", "forest", "--analysis", PLANTED_ANALYSIS,
                                   "--tasks", "rte,hans", "-o", str(out)])  # fmt: skip
    assert printed.exit_code == 0, printed.output

    def drawing(text: str) -> str:  # the figure, less its metadata (which records when it was made)
        return re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.DOTALL)

    assert drawing(svg.text) == drawing(out.read_text())
    pdf = planted_client.get(analysis_path(PLANTED_ANALYSIS, "signs") + ".pdf")
    assert (
        pdf.status_code == 200 and pdf.content.startswith(b"%PDF") and pdf.headers["content-type"] == "application/pdf"
    )
    curves = planted_client.get(run_path(planted_run()) + ".svg")
    assert curves.status_code == 200 and b"<svg" in curves.content


# -- the command and the residuals --------------------------------------------------------------------------------


def test_serve_refuses_other_hosts_without_a_token_and_names_a_missing_store(runner, planted_db, tmp_path):
    from ood_store._cli import main

    result = runner.invoke(main, ["--db", str(planted_db), "serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "--token" in result.output
    result = runner.invoke(main, ["--db", str(planted_db), "serve", "--host", "0.0.0.0", "--token", "short"])
    assert result.exit_code == 2 and "16 or more" in result.output
    result = runner.invoke(main, ["--db", str(tmp_path / "none.duckdb"), "serve"])
    assert result.exit_code == 1 and result.output.strip().endswith(
        "no store here; create one with `ood-store init` or `ood-store ingest`"
    )
    from ood_store._cli.serve import is_loopback

    hosts = ("127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost", "0.0.0.0", "10.0.0.2", "::", "example.org")
    assert [is_loopback(h) for h in hosts] == [True, True, True, True, True, False, False, False, False]


def test_pair_residuals_examples_and_the_r_of_each_residualizer():
    import polars as pl

    from ood_store._analysis import pair, partial_correlations
    from ood_store._analysis.partial import Options

    assert doctest.testmod(pair).failed == 0
    rng = np.random.default_rng(3)
    z = np.sort(rng.uniform(0.3, 0.8, 40))
    frame = pl.DataFrame({
        "step": np.tile(np.arange(40) * 10, 3), "task": ["id"] * 40 + ["a"] * 40 + ["b"] * 40,
        "value": np.concatenate([z, np.sin(6 * z) + rng.normal(0, 0.1, 40), z**2 + rng.normal(0, 0.1, 40)]),
    })  # fmt: skip
    for options in ({"residualizer": "gam"}, {"residualizer": "gam", "smoothing": "gcv"}, {"method": "spearman"}):
        table = partial_correlations(frame, "id", **options).table
        result = pair.pair_residuals(frame, Options(in_domain="id", **options), "(frame)", "a", "b")
        assert result.r == pytest.approx(table["r"][0], abs=1e-10), options


# -- the Viewer page (docs/how-to/viewer.md) ----------------------------------------------------------------------


def test_the_viewer_pages_command_serves_what_it_says(planted_db, tmp_path):
    """The section's command, run as written (on its own port, with a browser that opens nothing), prints the
    line the page quotes and serves the pages it lists."""
    import os
    import urllib.request

    section = (ROOT / "docs" / "how-to" / "viewer.md").read_text()
    (block,) = re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    (command,) = block.strip().splitlines()
    words = command.split()
    assert words[:3] == ["ood-store", "--db", "planted.duckdb"] and words[3] == "serve"
    shutil.copyfile(planted_db, tmp_path / "planted.duckdb")
    program = str(Path(sys.executable).parent / "ood-store")
    env = {**os.environ, "BROWSER": "true"}  # --open runs `true URL`: nothing opens
    server = subprocess.Popen([program, *words[1:], "--port", "0"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert server.stdout is not None
        line = server.stdout.readline().strip()
        quoted = re.search(r"prints `([^`]+)`", " ".join(section.split()))
        assert quoted is not None
        pattern = re.escape(quoted[1]).replace("8000", r"\d+")
        assert re.fullmatch(pattern, line), (line, quoted[1])
        address = re.search(r"http://\S+/", line)[0]  # type: ignore[index]
        listed = re.findall(r"^\| `(/[^`]*)` \|", section, flags=re.MULTILINE)
        assert listed[:3] == ["/", "/runs", "/runs/RUN"]
        for path in ("", "runs", "runs.json", "tasks", f"analyses/{PLANTED_ANALYSIS}.json"):
            with urllib.request.urlopen(address + path, timeout=60) as response:
                assert response.status == 200
    finally:
        server.terminate()
        server.communicate(timeout=60)
    # One screenshot per main page, those the browser test makes.
    shots = re.findall(r"!\[[^\]]*\]\(\.\./(viewer-[^)]+)\)", section)  # docs/ holds them, beside how-to/
    browser_test = (ROOT / "tests" / "test_serve_browser.py").read_text()
    assert [Path(s).stem for s in shots] == re.findall(r'\("(viewer-[a-z-]+)", ', browser_test)
    assert shots and all((ROOT / "docs" / s).exists() for s in shots)


def test_the_page_benchmark_runs_in_a_tiny_form(tmp_path):
    """benchmarks/serve_pages.py on 4 runs x 6 checkpoints x 5 tasks: every page and its twin timed and reported
    (whether the targets hold on a store this small and a machine this busy is not the point here)."""
    script = ROOT / "benchmarks" / "serve_pages.py"
    args = ["--runs", "4", "--checkpoints", "6", "--tasks", "5", "--ood", "3", "--repeats", "1"]
    done = subprocess.run([sys.executable, str(script), *args, "--workdir", str(tmp_path)], capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("/")]
    assert len(rows) == 26
    for line in rows:
        cold, warm, _, _, uncached, ratio = line.split()[-6:]  # ... cold warm <= 200 uncached ratio
        assert float(cold) > 0 and float(warm) > 0 and float(uncached) > 0 and float(ratio) > 0, line
    assert re.search(r"^\d+ of 26 requests within their target warm", done.stdout, flags=re.MULTILINE)
