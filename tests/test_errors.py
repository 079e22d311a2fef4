"""Library errors name Python parameters; the command line prints the flags that set them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from ood_store._analysis import partial_correlations
from ood_store._cli import main
from ood_store._cli.flags import flags
from ood_store._errors import AnalysisError, InputError, OodStoreError

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ["evaluate", "ingest", "store", "schema", "analysis", "export", "ood_store"]
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+")
MENTION = re.compile(r"`([a-z][a-z0-9_]*)`")
SLURM_COMMANDS = ("sbatch", "squeue", "sacct", "scancel", "scontrol")


def _library_modules():
    for folder in LIBRARY:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "_cli" not in path.relative_to(ROOT).parts:
                yield path


def _raised_strings(path: Path):
    """Every string constant inside a ``raise`` statement (f-string parts included) of the module."""
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Raise) and node.exc is not None:
            for part in ast.walk(node.exc):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    yield part.lineno, part.value


def _message_strings(path: Path):
    """Every string constant of the module but its docstrings, the names of a worker's own command-line
    options (``parser.add_argument("--max-units")``) and the arguments of Slurm's commands that it runs
    (``["sbatch", "--test-only", ...]``): errors, warnings, notes, reasons, messages."""
    tree = ast.parse(path.read_text("utf-8"))
    skipped = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            skipped.add(id(body[0].value))  # a docstring
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            skipped.update(id(arg) for arg in node.args)
        first = node.elts[0] if isinstance(node, ast.List) and node.elts else None
        if isinstance(first, ast.Constant) and first.value in SLURM_COMMANDS:
            skipped.update(id(arg) for arg in node.elts)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            yield node.lineno, node.value


def test_no_library_error_names_a_command_line_flag():
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for path in _library_modules()
        for line, text in _raised_strings(path)
        if FLAG.search(text)
    ]
    assert found == []


def test_no_library_message_names_a_command_line_flag():
    """Nor do warnings, notes, a row's reason or anything else the library writes (docstrings aside)."""
    scanned = [(path, line, text) for path in _library_modules() for line, text in _message_strings(path)]
    assert any("GAM basis of" in text for _, _, text in scanned), "the scan missed the notes: it is broken"
    found = [f"{path.relative_to(ROOT)}:{line}: {text!r}" for path, line, text in scanned if FLAG.search(text)]
    assert found == []


def test_every_parameter_a_library_error_mentions_has_a_flag():
    known = flags(main)
    mentioned = {
        name for path in _library_modules() for _, text in _raised_strings(path) for name in MENTION.findall(text)
    }
    assert mentioned, "the scan found no mentions at all: it is broken"
    assert sorted(mentioned - set(known)) == []


def test_a_python_caller_reads_the_parameter_a_shell_user_the_flag(tmp_path):
    frame = pl.DataFrame({"step": [1, 2], "task": ["a", "b"], "value": [0.1, 0.2]})
    with pytest.raises(OodStoreError) as info:
        partial_correlations(frame, in_domain="a", ood=[","])
    assert str(info.value) == "ood: no names given"
    assert info.value.parameter == "ood"

    store = tmp_path / "s.duckdb"
    CliRunner().invoke(main, ["--db", str(store), "init"])
    result = CliRunner().invoke(main, ["--db", str(store), "analyze", "--in-domain", "a", "--ood", ","])
    assert result.exit_code == 1
    assert result.output == "Error: --ood: no names given\n"


def test_mentions_are_spelled_by_the_renderer():
    error = AnalysisError("several shot counts; choose one with `num_fewshot`", parameter="tasks")
    assert str(error) == "tasks: several shot counts; choose one with `num_fewshot`"
    assert error.render({"tasks": "--tasks", "num_fewshot": "--num-fewshot"}.get) == (
        "--tasks: several shot counts; choose one with --num-fewshot"
    )
    # A name the renderer does not know stays as written.
    assert error.render({}.get) == str(error)


def test_input_errors_put_the_file_first_then_the_parameter_then_the_field():
    assert str(InputError("a.json", "results.acc", "not a number")) == "a.json: results.acc: not a number"
    error = InputError(None, "seed", "expected an integer", parameter="attributes")
    assert str(error) == "attributes: seed: expected an integer"
    assert error.render({"attributes": "--attr"}.get) == "--attr: seed: expected an integer"
