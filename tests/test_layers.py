"""The package's layers: stage packages import each other without cycles, the facade sits on top,
and ``import ood_store._analysis`` loads neither statsmodels nor pandas.

The graph is read from the source (every ``import`` and ``from ... import``, inside functions and
``TYPE_CHECKING`` blocks too, and every ``sqlfiles.load("ood_store._x", ...)``, which reads another
package's SQL), so a lazy import cannot hide a cycle.
"""

from __future__ import annotations

import ast
import graphlib
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

import ood_store

ROOT = Path(__file__).resolve().parents[1]
# The folders of the installed package, by the name they install as.
FOLDERS = {
    "_evaluate": ROOT / "evaluate",
    "_ingest": ROOT / "ingest",
    "_store": ROOT / "store",
    "_schema": ROOT / "schema",
    "_analysis": ROOT / "analysis",
    "_export": ROOT / "export",
}
# Modules at the package root that every layer may use: errors, names, progress bars, SQL files, processes.
CORE = {"_errors", "_names", "_progress", "_counts", "_filekinds", "_sqlfiles", "_summary", "_processes"}
# The facade (the public API) and what sits above it: they may import any stage, no stage imports them.
TOP = {"api", "_cli", "_examples", "_serve"}  # the viewer is a face, as the command line is


def _layer_of_root_module(name: str) -> str:
    if name in CORE:
        return "core"
    if name in ("_api", "__init__"):
        return "api"
    return name


def modules() -> dict[Path, str]:
    """Every source file of the package and the layer it belongs to."""
    found = {}
    for layer, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            found[path] = layer
    for path in (ROOT / "ood_store").rglob("*.py"):
        parts = path.relative_to(ROOT / "ood_store").parts
        found[path] = _layer_of_root_module(Path(parts[0]).stem if len(parts) == 1 else parts[0])
    for extra in ("finetune", "serve"):  # stage folders added by later issues, when present
        if (ROOT / extra).is_dir():
            for path in (ROOT / extra).rglob("*.py"):
                found[path] = f"_{extra}"
    return found


def _target(dotted: str, names: list[str]) -> list[str]:
    """The layers an import of ``dotted`` (``from dotted import names``) reaches."""
    parts = dotted.split(".")
    if parts[0] != "ood_store":
        return []
    if len(parts) == 1:  # from ood_store import X / import ood_store
        out = []
        for name in names or ["*"]:
            if name == "__version__" or name in CORE:
                out.append("core")  # the root's __init__ itself imports nothing heavy
            elif name in FOLDERS:
                out.append(name)
            else:  # a public name, or `import ood_store`: the facade
                out.append("api")
        return out
    head = parts[1]
    if head in FOLDERS or head in ("_finetune", "_serve"):
        return [head]
    return [_layer_of_root_module(head)]


def edges() -> dict[str, dict[str, list[str]]]:
    """layer -> layer it depends on -> where (file:line), from every import in the package."""
    found: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path, layer in modules().items():
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = _target(node.module, [a.name for a in node.names])
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    targets += _target(alias.name, [])
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("load", "execute")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
                and node.args[0].value.startswith("ood_store.")
            ):
                targets = _target(node.args[0].value, [])
            for target in targets:
                if target != layer:
                    found[layer][target].append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_the_graph_is_read_from_real_imports():
    graph = edges()
    # a few that must be there, or the reader is broken
    assert "_store" in graph["_ingest"]
    assert "_analysis" in graph["_export"]
    assert "_store" in graph["api"] and "_ingest" in graph["api"]


def test_no_import_cycles_between_layers():
    graph = edges()
    sorter = graphlib.TopologicalSorter({layer: set(deps) for layer, deps in graph.items()})
    try:
        sorter.prepare()
    except graphlib.CycleError as exc:
        cycle = exc.args[1]
        where = [f"{a} -> {b} ({', '.join(graph[a][b][:3])})" for a, b in zip(cycle, cycle[1:], strict=False)]
        pytest.fail("import cycle between layers: " + "; ".join(where))


def test_no_stage_imports_the_facade_or_the_command_line():
    graph = edges()
    for layer, deps in graph.items():
        if layer in TOP:
            continue
        for top in TOP & set(deps):
            pytest.fail(f"{layer} imports {top}: {', '.join(deps[top][:3])}")


def test_the_store_layer_and_schema_depend_on_no_stage():
    graph = edges()
    for low in ("_schema", "_store"):
        above = set(graph[low]) - {"core", "_schema"}
        assert not above, {name: graph[low][name][:3] for name in above}


def test_stages_do_not_reach_into_the_database_object():
    """Stages read through ``_store.database.read``/``connection``/``released``, not private attributes."""
    reaching = []
    for path, layer in modules().items():
        if layer in ("_store", "api"):
            continue
        text = path.read_text("utf-8")
        for bad in ("._read(", "._released(", "._con.", "._con)"):
            if bad in text:
                reaching.append(f"{path.relative_to(ROOT)}: {bad}")
    assert reaching == []


@pytest.mark.parametrize("module", ["ood_store._analysis", "ood_store"])
def test_analysis_imports_neither_statsmodels_nor_pandas(module):
    code = (
        "import sys, ood_store\n"
        f"import {module}\n"
        "ood_store.partial_correlations, ood_store.compare, ood_store.between_groups\n"
        "bad = sorted(m for m in ('statsmodels', 'pandas') if m in sys.modules)\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"importing {module} loaded {out}"


def test_import_ood_store_is_light():
    """``import ood_store`` loads no DuckDB, Polars, lm-eval or matplotlib (lm-eval's hooks import the suite)."""
    heavy = ("duckdb", "polars", "lm_eval", "matplotlib")
    code = f"import sys, ood_store; print(','.join(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_every_public_name_resolves_and_has_a_docstring():
    missing = []
    for name in ood_store.__all__:
        value = getattr(ood_store, name)
        if name == "__version__" or isinstance(value, tuple | dict | str):
            continue
        if not (getattr(value, "__doc__", None) or "").strip():
            missing.append(name)
    assert missing == []
    assert sorted(ood_store.__all__) == sorted(set(ood_store.__all__))
    assert set(dir(ood_store)) == set(ood_store.__all__)


def test_public_names_come_from_private_modules_only():
    """Nothing public lives in a module a user could import by a public path."""
    for name in ood_store.__all__:
        value = getattr(ood_store, name)
        module = getattr(value, "__module__", None)
        if module is not None:
            assert module == "ood_store" or any(part.startswith("_") for part in module.split(".")[1:]), (name, module)


def test_every_module_but_the_root_is_private_by_name():
    import pkgutil

    public = [
        info.name
        for info in pkgutil.walk_packages(ood_store.__path__, "ood_store.", onerror=lambda name: None)
        if not any(part.startswith("_") for part in info.name.split(".")[1:])
    ]
    assert public == []
