"""The README is checked: its tour runs as written and prints what it shows, every
command is documented, and CI runs the README's test command."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from conftest import pdflatex
from ood_store._cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.DOTALL)


def shell_words(command: str) -> list[str]:
    """The arguments bash would pass for ``command`` (quotes, escapes and all)."""
    out = subprocess.run(
        ["bash", "-c", f"printf '%s\\0' {command}"], capture_output=True, check=True, env={"PATH": "/usr/bin:/bin"}
    ).stdout
    return out.decode().split("\0")[:-1]


def console_steps() -> list[tuple[str, list[str]]]:
    """(command, expected output lines) for every `$ ` line of the console blocks."""
    steps = []
    for block in blocks("console"):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
    return steps


@pytest.fixture
def tour_dir(tmp_path, monkeypatch):
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OOD_STORE_DB", raising=False)
    return tmp_path


def test_the_tour_runs_as_written(runner, tour_dir):
    steps = console_steps()
    assert len(steps) >= 8
    for command, expected in steps:
        args = shell_words(command)
        assert args[0] == "ood-store", command
        result = runner.invoke(main, args[1:])
        assert "Traceback" not in result.output, command
        assert result.output.splitlines() == expected, command
    assert (tour_dir / "pythia_acc.parquet").exists()
    # The LaTeX the README shows is the table the tour exported, less its provenance comments.
    exported = (tour_dir / "pythia-gam.tex").read_text().splitlines()
    assert blocks("latex") == ["\n".join(line for line in exported if not line.startswith("%")) + "\n"]
    # The figures the README shows are the ones the tour plotted, committed under docs/: the same size, and
    # drawn by the matplotlib that drew them (its version is in the PNG), the same pixels (a one-word change
    # of a note is an RMS of about 7). Another matplotlib lays text out a pixel apart, so only sizes compare.
    # (The viewer's screenshots are the browser test's: tests/test_serve_browser.py checks those.)
    images = [i for i in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README) if not i.startswith("docs/viewer-")]
    assert images == ["docs/pythia-gam.png", "docs/planted-grid.png", "docs/planted-forest.png", "docs/plan-power.png"]
    import numpy as np
    from PIL import Image

    for image in images:
        with Image.open(ROOT / image) as shown, Image.open(tour_dir / Path(image).name) as plotted:
            assert shown.size == plotted.size, image
            if shown.info.get("Software") == plotted.info.get("Software"):
                difference = np.asarray(shown.convert("RGB"), float) - np.asarray(plotted.convert("RGB"), float)
                assert np.sqrt((difference**2).mean()) <= 1.0, f"{image} is not what the tour plots now"
    # The tables the README shows fit the page they are for: pdflatex finds no overfull box.
    page = (
        "\\documentclass[twocolumn]{article}\n"
        "\\usepackage[letterpaper,textwidth=6.75in,textheight=9in,columnsep=0.25in]{geometry}\n"
        "\\usepackage{booktabs}\n\\begin{document}\n\\input{pythia-gam}\n\\end{document}\n"
    )
    log = pdflatex(tour_dir, "readme-table", page)
    assert "Overfull" not in log and "Float too large" not in log
    for block in blocks("python"):
        exec(compile(block, "README.md", "exec"), {})


def test_every_command_is_documented():
    for name in main.commands:
        assert f"| `ood-store {name}" in README, name


def test_ci_runs_the_readme_test_command():
    setup = blocks("sh")[0]
    test_line = next(line for line in setup.splitlines() if "test" in line)
    command = test_line.split("#")[0].strip()
    assert command == "make test"
    ci = (ROOT / ".ci" / "run").read_text()
    steps = [line for line in ci.splitlines() if line and not line.startswith(("#", "set ", "cd ", "export "))]
    # The README's command last, after installing LaTeX and Chromium, lint, the type check and the site, and after
    # starting the test cluster, which is stopped however CI ends; the README documents each.
    assert steps == ["make latex", "make browser", "make lint", "make typecheck", "make docs",
                     "trap 'make cluster-stop' EXIT", "make cluster", command]  # fmt: skip
    readme = (ROOT / "README.md").read_text()
    assert all(f"`make {target}`" in readme for target in ("lint", "typecheck", "cluster", "cluster-stop"))
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test: .*\n(\t@.*\n)*\t\$\(BIN\)/python -m pytest", makefile, flags=re.MULTILINE)


def test_main_job_is_the_demo():
    setup = blocks("sh")[0]
    assert setup.splitlines()[0].split("#")[0].strip() == "make demo"
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo: .*\n\t\$\(BIN\)/ood-store demo$", makefile, flags=re.MULTILINE)


def test_the_developing_map_names_every_folder_and_only_files_that_exist():
    """Each line of the map starts with a top-level folder; the modules and folders it names are there."""
    section = README.split("## Developing", 1)[1]
    block = section.split("```\n", 2)[1]
    entries: dict[str, str] = {}
    for line in block.splitlines():
        if line and not line.startswith(" "):
            folder, text = line.split(maxsplit=1)
            entries[folder] = text
        else:
            entries[folder] += " " + line.strip()
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    top = {path.split("/")[0] + "/" for path in tracked.splitlines() if "/" in path and not path.startswith(".")}
    assert set(entries) == top - {"docs/"}  # docs/ holds the README's images only
    for folder, text in entries.items():
        named = re.findall(r"(?<![\w/.])([a-z_]+(?:/[a-z_]+)*(?:\.py|\.sql|/))", text)
        assert named or folder == "benchmarks/", folder
        for name in named:
            assert (ROOT / folder / name).exists(), f"{folder} names {name}"
