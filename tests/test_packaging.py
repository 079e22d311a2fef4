"""One installed import package: the top-level folders ship inside ood_store, with their .sql files."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# One worker builds the wheel for the whole module: two builds in one source tree race.
pytestmark = pytest.mark.xdist_group("wheel")


#: What the wheel is built from: the package's folders and the files pyproject.toml names.
SOURCES = ("pyproject.toml", "README.md", "ood_store", "finetune", "evaluate", "ingest", "store", "schema", "analysis",
           "export", "serve")  # fmt: skip


@pytest.fixture(scope="module")
def wheel_build(tmp_path_factory) -> tuple[list[str], str]:
    """The names in the wheel, and what the build printed (verbose: setuptools' warnings included)."""
    # Built from a copy: setuptools writes build/ in the tree it builds, and what an earlier build (or another
    # process) left there can break this one.
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copyfile(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v", str(source), "-w", str(out)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = out.glob("ood_store-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return zf.namelist(), built.stdout + built.stderr


@pytest.fixture(scope="module")
def wheel_names(wheel_build) -> list[str]:
    return wheel_build[0]


def test_the_build_warns_of_nothing_left_out(wheel_build):
    """Every folder of the package is listed in pyproject.toml, data folders included (issue 38: three
    BuildBackendWarning boxes about the viewer's static/, static/vendor/ and templates/ on every install)."""
    names, printed = wheel_build
    assert "running build_py" in printed  # the verbose build's output, where setuptools warns
    assert "absent from the `packages` configuration" not in printed
    assert "BuildBackendWarning" not in printed


def test_everything_installs_under_ood_store(wheel_names):
    tops = {name.split("/")[0] for name in wheel_names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"ood_store"}


def test_top_level_folders_map_into_the_package(wheel_names):
    for folder in ("finetune", "evaluate", "ingest", "store", "schema", "analysis", "export", "serve"):
        sources = sorted(  # sub-packages too (evaluate/executors/, evaluate/suite/): each must be listed
            p.relative_to(ROOT).as_posix()
            for p in (ROOT / folder).rglob("*")
            if p.suffix in (".py", ".sql") and "__pycache__" not in p.parts
        )
        assert sources
        for source in sources:
            assert f"ood_store/_{source}" in wheel_names, source


def test_package_data(wheel_names):
    for name in (
        "ood_store/_examples/pythia-v1.zip",
        "ood_store/_store/list_runs.sql",
        "ood_store/_evaluate/suite/variants.sql",
        "ood_store/py.typed",
        "ood_store/_schema/0001_init.sql",
        "ood_store/_serve/templates/base.html",
        "ood_store/_serve/static/app.js",
        "ood_store/_serve/static/style.css",
        "ood_store/_serve/static/favicon.svg",
        "ood_store/_serve/static/vendor/vega.min.js",
        "ood_store/_serve/static/vendor/VERSIONS.json",
        "ood_store/_serve/static/vendor/LICENSE-vega",
        *(
            f"ood_store/_ingest/eee-eval-{v}.schema.json"
            for v in ("0.1.0", "0.2.0", "0.2.1", "0.2.2", "0.2.3", "0.3.0")
        ),
    ):
        assert name in wheel_names


def test_installed_modules_come_from_the_mapped_folders():
    import importlib

    for folder in ("finetune", "evaluate", "ingest", "store", "schema", "analysis", "export", "serve"):
        module = importlib.import_module(f"ood_store._{folder}")
        assert Path(module.__file__).parent == ROOT / folder


def test_the_suites_label_hooks_import_nothing_else():
    """lm-eval calls ood_store._evaluate.suite.labels while it builds a task: that loads no store, no pipeline."""
    code = (
        "import sys; before = set(sys.modules); import ood_store._evaluate.suite.labels; "
        "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in "
        "('ood_store', 'duckdb', 'polars', 'numpy', 'lm_eval', 'torch')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = ast.literal_eval(out)
    suite = ["ood_store._evaluate", "ood_store._evaluate.suite", "ood_store._evaluate.suite.labels"]
    assert loaded == ["ood_store", "ood_store._errors", *suite]


def test_every_file_the_viewer_serves_is_in_the_wheel(wheel_names):
    served = [p for folder in ("templates", "static") for p in (ROOT / "serve" / folder).rglob("*") if p.is_file()]
    assert len(served) > 10
    for path in served:
        assert f"ood_store/_serve/{path.relative_to(ROOT / 'serve').as_posix()}" in wheel_names, path
