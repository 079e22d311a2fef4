"""Every docstring example of the library runs, and prints what it shows.

The examples are collected with :mod:`doctest` from every module of the package (private ones
included: their examples document the code for the next engineer) and run with a few names a
reader would have in a session: ``ood_store``, ``pl`` (Polars), ``np``, ``tmp`` (an empty folder),
``pythia_160m`` (the folder of real lm-eval files of Pythia-160M, 27 checkpoints) and ``pythia``
(a store holding them, family ``pythia``, opened read-only). An example that cannot run in a test is
not an example: no ``+SKIP`` anywhere.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import ood_store
from conftest import pythia_files

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"_evaluate": "evaluate", "_ingest": "ingest", "_store": "store", "_schema": "schema"}
FOLDERS |= {"_analysis": "analysis", "_export": "export"}
for extra in ("finetune", "serve"):
    if (ROOT / extra).is_dir():
        FOLDERS[f"_{extra}"] = extra
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def module_names() -> list[str]:
    names = []
    for package, folder in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            names.append(".".join(("ood_store", package, *parts)))
    for path in sorted((ROOT / "ood_store").rglob("*.py")):
        parts = path.relative_to(ROOT / "ood_store").with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        names.append(".".join(("ood_store", *parts)))
    return names


def with_examples() -> list[str]:
    """The modules whose source holds a ``>>>`` example (importing the rest would only cost time)."""
    out = []
    for name in module_names():
        spec = importlib.util.find_spec(name)
        if spec and spec.origin and ">>>" in Path(spec.origin).read_text("utf-8"):
            out.append(name)
    return out


@pytest.fixture(scope="module")
def pythia_store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("pythia") / "pythia.duckdb"
    with ood_store.open(path) as store:
        store.ingest(pythia_files("160m"), attributes={"family": "pythia"})
    return path


def test_no_example_is_skipped():
    skipped = [name for name in module_names() if "+SKIP" in Path(importlib.util.find_spec(name).origin).read_text()]
    assert skipped == []


@pytest.mark.parametrize("name", with_examples())
def test_docstring_examples_run(name, pythia_store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    with ood_store.open(pythia_store, read_only=True) as pythia:
        namespace = {
            "ood_store": ood_store,
            "pl": pl,
            "np": np,
            "tmp": tmp_path,
            "pythia_160m": pythia_files("160m")[0].parent,
            "pythia": pythia,
        }
        finder = doctest.DocTestFinder(exclude_empty=True)
        runner = doctest.DocTestRunner(optionflags=FLAGS)
        tests = [t for t in finder.find(module, name, extraglobs=namespace) if t.examples]
        # Objects re-exported by a module appear once, in the module that defines them.
        tests = [t for t in tests if t.name.rsplit(".", 1)[0] == name or t.name == name or _defined_here(t, module)]
        assert tests, f"{name} has >>> in its source but doctest found no example"
        for test in tests:
            runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed (see output above)"


def _defined_here(test: doctest.DocTest, module) -> bool:
    return bool(test.filename) and Path(test.filename).resolve() == Path(module.__file__).resolve()
