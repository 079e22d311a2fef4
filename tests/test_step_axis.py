"""The step axis of training curves, item dynamics and the viewer's curves: log where checkpoints are log-spaced.

The schedules come from their own sources: the finetuning schedule's ``steps`` (the demo's 9 checkpoints
over 48 steps, log and even), and the Pythia fixture's file names (``410m_step1000.json``).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import orjson
import polars as pl
import pytest
from click.testing import CliRunner

import ood_store
from conftest import PYTHIA_ANALYSIS
from ood_store._analysis.dynamics import ItemDynamics
from ood_store._cli import main
from ood_store._errors import AnalysisError
from ood_store._examples.planted import _results_file
from ood_store._export import dynamics, figures, steps
from ood_store._finetune.schedule import Schedule
from ood_store._serve import charts, pages
from ood_store._serve.model import Query

RUN_410M = "EleutherAI/pythia-v1.1-410m"
PYTHIA_FILES = Path(__file__).parent / "fixtures" / "lm-eval-real" / "pythia-v1" / "pythia-410m" / "zero-shot"
DEMO_LOG = Schedule("log", checkpoints=9).steps(48)  # the demo's 48 steps and 9 checkpoints, on a log schedule
DEMO_EVEN = Schedule("even", checkpoints=9).steps(48)  # as the demo saves them: every 6 steps


def pythia_steps() -> list[int]:
    return sorted(int(re.search(r"step(\d+)", p.name)[1]) for p in PYTHIA_FILES.glob("*.json"))


def test_the_schedules_are_what_the_rule_is_about():
    assert DEMO_LOG == [0, 1, 2, 3, 5, 9, 16, 28, 48]
    assert DEMO_EVEN == [0, 6, 12, 18, 24, 30, 36, 42, 48]
    assert pythia_steps()[:12] == [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000] and len(pythia_steps()) == 27


@pytest.mark.parametrize(
    ("checkpoints", "expected"),
    [
        (DEMO_LOG, "log"),
        (DEMO_EVEN, "linear"),
        (pythia_steps(), "log"),
        (Schedule("log", checkpoints=24).steps(6000), "log"),
        (list(range(0, 6000, 250)), "linear"),  # the planted study's
        (list(range(1, 1001)), "linear"),  # three decades, but evenly spaced
        ([0, 1, 2, 4], "linear"),  # too few to tell
        ([0, 10, 20, 40, 80], "linear"),  # less than a decade
    ],
)
def test_auto_takes_log_for_log_spaced_checkpoints_only(checkpoints, expected):
    assert steps.step_scale(checkpoints) == expected
    assert steps.step_scale(checkpoints, "linear") == "linear" and steps.step_scale(checkpoints, "log") == "log"


def test_a_bad_x_scale_is_an_error_naming_the_parameter():
    with pytest.raises(AnalysisError, match="must be one of auto, linear, log, not 'logarithmic'") as error:
        steps.step_scale([0, 1], "logarithmic")
    assert error.value.parameter == "x_scale"


def write_run(folder: Path, run: str, at: list[int]) -> Path:
    """lm-eval results files of ``run`` at steps ``at``: in-domain accuracy rising, one OOD task following it."""
    for k, step in enumerate(at):
        path = folder / run / f"step-{step}" / "results_2026-01-01T00-00-00.000000.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        scores = {"mnli": 0.4 + 0.05 * k, "hans": 0.5 + 0.01 * k}
        path.write_bytes(orjson.dumps(_results_file(run, step, scores)))
    return folder / run


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory) -> Path:
    """A store of two toy runs with the demo's shape: ``toy/log`` on the log schedule, ``toy/even`` on the even."""
    root = tmp_path_factory.mktemp("steps")
    db = root / "store.duckdb"
    with ood_store.open(db) as store:
        for run, at in (("toy/log", DEMO_LOG), ("toy/even", DEMO_EVEN)):
            assert store.ingest([write_run(root / "files", run, at)]).ok
    return db


@pytest.mark.parametrize(("run", "scale"), [("toy/log", "symlog"), ("toy/even", "linear")])
def test_curves_of_the_demo_schedules_get_the_step_axis_of_their_spacing(demo_db, run, scale):
    with ood_store.open(demo_db, read_only=True) as store:
        (ax,) = ood_store.curves_of_run(store, run, tasks=["hans"], in_domain="mnli").figure.axes
        assert ax.get_xscale() == scale
        (forced,) = ood_store.curves_of_run(store, run, tasks=["hans"], x_scale="linear").figure.axes
    assert forced.get_xscale() == "linear"
    if scale == "symlog":  # linear up to the first nonzero step, so that step 0 is on the axis
        assert ax.xaxis.get_transform().linthresh == 1.0
        assert ax.get_xlim()[0] <= 0 < 1 < ax.get_xlim()[1]


def drawn_by(runner, db: Path, *args: str):
    """The figure ``ood-store plot ...`` drew, caught on its way to the file."""
    caught = []
    original = figures.PaperFigure.save

    def save(self, path):
        caught.append(self.figure)
        return original(self, path)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(figures.PaperFigure, "save", save)
        result = runner.invoke(main, ["--db", str(db), "plot", *args])
    assert result.exit_code == 0, result.output
    return caught[0].axes[0]


@pytest.mark.parametrize(
    ("options", "scale"), [((), "symlog"), (("--x-scale", "linear"), "linear"), (("--logx",), "symlog")]
)
def test_plot_curves_on_the_pythia_fixture_has_a_log_step_axis_by_default(analysis_db, tmp_path, options, scale):
    out = str(tmp_path / "curves.png")
    ax = drawn_by(CliRunner(), analysis_db, "curves", "--analysis", PYTHIA_ANALYSIS, "--run", RUN_410M, *options,
                  "-o", out)  # fmt: skip
    assert ax.get_xscale() == scale
    if scale == "symlog":  # Pythia's first nonzero step is 1; the decades up to 143k are ticked 1, 10, ... 100k
        assert ax.xaxis.get_transform().linthresh == 1.0
        shown = [t.get_text() for t in ax.get_xticklabels() if ax.get_xlim()[0] <= t.get_position()[0]]
        assert {"0", "1", "10", "100", "1k", "10k", "100k"} <= set(shown)


@pytest.mark.parametrize(("run", "scale"), [("toy/log", "symlog"), ("toy/even", "linear")])
def test_plot_curves_on_the_demo_schedules(demo_db, tmp_path, run, scale):
    ax = drawn_by(CliRunner(), demo_db, "curves", "--run", run, "--tasks", "hans", "-o", str(tmp_path / "c.svg"))
    assert ax.get_xscale() == scale


def test_plot_curves_refuses_another_x_scale_in_one_line(demo_db, tmp_path):
    result = CliRunner().invoke(main, ["--db", str(demo_db), "plot", "curves", "--run", "toy/log", "--tasks",
                                       "hans", "--x-scale", "decades", "-o", str(tmp_path / "c.png")])  # fmt: skip
    assert result.exit_code == 2 and "'decades' is not one of 'auto', 'linear', 'log'" in result.output
    assert "Traceback" not in result.output


def item_dynamics_of(at: list[int]) -> ItemDynamics:
    """Two runs' items, each learned at one of the checkpoints ``at`` (one item a checkpoint)."""
    items = pl.DataFrame(
        {
            "run": ["a"] * len(at) + ["b"] * len(at),
            "task": "hans",
            "item": list(range(2 * len(at))),
            "first_correct_step": at + at,
            "learned_step": at + at[::-1],
            "forgetting_events": [0, 1] * len(at),
        }
    )
    table = pl.DataFrame({"run": ["a", "b"], "task": ["hans", "hans"]})
    return ItemDynamics(table, items, "acc")


@pytest.mark.parametrize(("at", "x_scale", "scale"), [
    (DEMO_LOG, "auto", "symlog"), (DEMO_EVEN, "auto", "linear"), (DEMO_LOG, "linear", "linear"),
    (DEMO_EVEN, "log", "symlog"),
])  # fmt: skip
def test_item_dynamics_figure_gets_the_step_axis_of_the_checkpoints(at, x_scale, scale):
    figure = dynamics.dynamics_figure(item_dynamics_of(at), x_scale=x_scale)
    learned = figure.axes[0]
    assert learned.get_xscale() == scale
    assert max(np.max(line.get_xdata()) for line in learned.get_lines()) == 48


@pytest.mark.parametrize(
    ("run", "query", "log"),
    [
        ("toy/log", [], True),
        ("toy/even", [], False),
        ("toy/log", [("x_scale", "linear")], False),
        ("toy/even", [("x_scale", "log")], True),
        ("toy/even", [("log", "1")], True),  # the older link
    ],
)
def test_the_viewers_curves_take_a_symlog_step_axis_for_log_spaced_checkpoints(demo_db, run, query, log):
    with ood_store.open(demo_db, read_only=True) as store:
        page = pages.run_page(store, Query(query), run)
    (chart,) = page.charts
    scales = [layer["encoding"]["x"].get("scale") for layer in chart.spec["layer"]]
    first = {"toy/log": DEMO_LOG, "toy/even": DEMO_EVEN}[run][1]  # the first nonzero step: 1 or 6
    assert scales == [{"type": "symlog", "constant": float(first)} if log else None] * len(scales)
    active = [link.label for link in page.toggles if link.current]
    assert active == ["log steps" if log else "linear steps"]


def test_the_viewers_symlog_constant_is_the_first_nonzero_step():
    spec = charts.curves([], series=["hans"], in_domain=None, log=True, campaigns=1, linthresh=250.0)
    assert spec["layer"][0]["encoding"]["x"]["scale"] == {"type": "symlog", "constant": 250.0}
