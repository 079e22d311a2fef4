"""The documentation is checked: every example on every page runs as written and prints what it shows.

Pages are README.md (the front page) and every Markdown file under docs/ (the site). On each page:

- ``console`` blocks are one shell session, run in order in a fresh folder (with the repository's
  ``tests/`` linked into it, so fixture paths read as they do in a checkout): each ``$ ood-store ...``
  line is run and must print exactly the lines under it;
- ``pycon`` blocks are doctests, run in order in one namespace (``ood_store`` and ``pl`` imported), and
  ``python`` blocks are run, both in a copy of the folder the page's console session left (a fresh
  folder with ``tests/`` linked where the page has none);
- ``toml`` blocks parse; ``sh`` and ``bash`` blocks are commands shown rather than run (a cluster, a
  GPU): every ``--option`` of each ``ood-store`` command in them must be an option of that command.

**Sessions that continue another page.** A page whose examples need what another page's examples made
(the tutorial's Pythia store, its saved analysis ``pythia-gam``) says so in its first line::

    <!-- session: continues tutorial.md -->

(the path relative to docs/). Its console session then starts in a copy of the folder the other page's
session left, not in a fresh one. Each page's session runs once per test worker and is copied from
there (the tests that need the tutorial's share a worker: ``xdist_group("tour")``), so the tour runs
once however many pages continue it.

Besides: what the pages show is what the program makes (the tutorial's LaTeX table is the one its
session exported, and fits the page under pdflatex; every figure shown is the one a page's session
plotted), relative links point at files that exist, no page imports a private module, every command
is in the README's table, the developing map names only files that exist, CI builds the site, and the
navigation lists every page.
"""

from __future__ import annotations

import contextlib
import doctest
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import tomllib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from conftest import pdflatex
from ood_store._cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", *DOCS.rglob("*.md")])
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
CONTINUES = re.compile(r"\A<!-- session: continues ([\w/.-]+\.md) -->\n")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)]+)\)")
TOUR = DOCS / "tutorial.md"


def page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def blocks(page: Path, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(page.read_text("utf-8")) if lang == language]


def continues(page: Path) -> Path | None:
    """The page whose session this page's session continues (its first line says so), if any."""
    match = CONTINUES.match(page.read_text("utf-8"))
    return DOCS / match[1] if match else None


def needs_the_tour(page: Path) -> bool:
    return page == TOUR or continues(page) == TOUR


def grouped(pages: list[Path]) -> list:
    """The pages as parameters, those that need the tutorial's session on one worker."""
    return [
        pytest.param(page, id=page_id(page), marks=[pytest.mark.xdist_group("tour")] if needs_the_tour(page) else [])
        for page in pages
    ]


def pages_with(language: str) -> list:
    return grouped([page for page in PAGES if blocks(page, language)])


def shell_words(command: str) -> list[str]:
    """The arguments bash would pass for ``command`` (quotes, escapes and all)."""
    out = subprocess.run(
        ["bash", "-c", f"printf '%s\\0' {command}"], capture_output=True, check=True, env={"PATH": "/usr/bin:/bin"}
    ).stdout
    return out.decode().split("\0")[:-1]


def console_steps(page: Path) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) for every ``$ `` line of the page's console blocks."""
    steps: list[tuple[str, list[str]]] = []
    for block in blocks(page, "console"):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
    return steps


@contextlib.contextmanager
def inside(folder: Path):
    """Work in ``folder``, with no store named by the environment."""
    before, db = Path.cwd(), os.environ.pop("OOD_STORE_DB", None)
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)
        if db is not None:
            os.environ["OOD_STORE_DB"] = db


#: Per test worker: page -> the folder its console session left (or the error it stopped with).
_SESSIONS: dict[Path, Path | AssertionError] = {}
#: Where those folders are: under pytest's temporary folder, which pytest cleans up.
_SESSIONS_DIR: list[Path] = []


@pytest.fixture(scope="session", autouse=True)
def _sessions_dir(tmp_path_factory):
    _SESSIONS_DIR.append(tmp_path_factory.mktemp("docs-sessions"))


def session_of(page: Path) -> Path:
    """The folder ``page``'s console session left: run once per worker (after the session it continues)."""
    if page not in _SESSIONS:
        folder = Path(tempfile.mkdtemp(prefix=f"{page.stem}-", dir=_SESSIONS_DIR[0]))
        try:
            earlier = continues(page)
            if earlier is not None:
                shutil.copytree(session_of(earlier), folder, symlinks=True, dirs_exist_ok=True)
            else:
                (folder / "tests").symlink_to(ROOT / "tests")
            runner = CliRunner()
            with inside(folder):
                for command, expected in console_steps(page):
                    args = shell_words(command)
                    assert args[0] == "ood-store", f"{page_id(page)}: {command}"
                    result = runner.invoke(main, args[1:])
                    assert "Traceback" not in result.output, f"{page_id(page)}: {command}\n{result.output}"
                    assert result.output.splitlines() == expected, f"{page_id(page)}: {command}"
            _SESSIONS[page] = folder
        except AssertionError as error:
            _SESSIONS[page] = error
    outcome = _SESSIONS[page]
    if isinstance(outcome, AssertionError):
        raise outcome
    return outcome


@pytest.fixture
def page_dir(tmp_path, monkeypatch):
    """A fresh folder with ``tests/`` linked: where a page's Python examples run (its session's files copied in)."""

    def enter(page: Path) -> Path:
        source = session_of(page) if console_steps(page) else (session_of(continues(page)) if continues(page) else None)
        if source is None:
            (tmp_path / "tests").symlink_to(ROOT / "tests")
        else:
            shutil.copytree(source, tmp_path, symlinks=True, dirs_exist_ok=True)
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("OOD_STORE_DB", raising=False)
        return tmp_path

    return enter


def test_sessions_that_continue_name_a_page_with_a_session():
    for page in PAGES:
        earlier = continues(page)
        if earlier is not None:
            assert earlier.exists() and console_steps(earlier), f"{page_id(page)} continues {earlier}"
            assert continues(earlier) is None, f"{page_id(page)}: continue the first page, not a continuation"


@pytest.mark.parametrize("page", pages_with("console"))
def test_console_examples_run_as_written(page):
    assert session_of(page).is_dir()


@pytest.mark.parametrize("page", pages_with("pycon"))
def test_python_sessions_run_as_written(page, page_dir):
    import polars as pl

    import ood_store

    page_dir(page)
    text = "\n".join(blocks(page, "pycon"))
    test = doctest.DocTestParser().get_doctest(text, {"ood_store": ood_store, "pl": pl}, page_id(page), str(page), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0, f"{page_id(page)}: an example failed (see the output)"


@pytest.mark.parametrize("page", pages_with("python"))
def test_python_blocks_run(page, page_dir):
    page_dir(page)
    for block in blocks(page, "python"):
        exec(compile(block, str(page), "exec"), {"__name__": "__docs__"})


@pytest.mark.xdist_group("tour")
def test_the_tutorial_shows_the_table_it_exported_and_it_fits_the_page():
    folder = session_of(TOUR)
    assert (folder / "pythia_acc.parquet").exists()
    # The LaTeX the tutorial shows is the table its session exported, less its provenance comments.
    exported = (folder / "pythia-gam.tex").read_text().splitlines()
    assert blocks(TOUR, "latex") == ["\n".join(line for line in exported if not line.startswith("%")) + "\n"]
    # It fits the page it is for: pdflatex finds no overfull box.
    work = Path(tempfile.mkdtemp(prefix="latex-", dir=_SESSIONS_DIR[0]))
    shutil.copyfile(folder / "pythia-gam.tex", work / "pythia-gam.tex")
    page = (
        "\\documentclass[twocolumn]{article}\n"
        "\\usepackage[letterpaper,textwidth=6.75in,textheight=9in,columnsep=0.25in]{geometry}\n"
        "\\usepackage{booktabs}\n\\begin{document}\n\\input{pythia-gam}\n\\end{document}\n"
    )
    log = pdflatex(work, "tutorial-table", page)
    assert "Overfull" not in log and "Float too large" not in log


def plotted_by(name: str) -> list[Path]:
    """The pages whose console sessions write ``name`` (``-o NAME``)."""
    return [page for page in PAGES if any(f"-o {name}" in command for command, _ in console_steps(page))]


#: Every figure the pages show but the viewer's screenshots (tests/test_serve_browser.py checks those).
FIGURES = sorted(
    {Path(image).name for page in PAGES for image in IMAGE.findall(page.read_text("utf-8"))}
    - {p.name for p in DOCS.glob("viewer-*.png")}
    - {p.name for p in DOCS.glob("forest-*-pairs.png")}  # screenshots of planted data (tests/test_figure_layout.py)
)


@pytest.mark.parametrize(
    "figure",
    [
        pytest.param(f, marks=[pytest.mark.xdist_group("tour")] * any(map(needs_the_tour, plotted_by(f))))
        for f in FIGURES
    ],
)
def test_figures_shown_are_the_ones_a_page_plots(figure):
    """Each figure shown is committed under docs/ and is what a page's session plots: the same size, and drawn
    by the matplotlib that drew it (its version is in the PNG), the same pixels (a one-word change of a note is
    an RMS of about 7). Another matplotlib lays text out a pixel apart, so only sizes compare."""
    import numpy as np
    from PIL import Image

    [page] = plotted_by(figure)
    with Image.open(DOCS / figure) as shown, Image.open(session_of(page) / figure) as plotted:
        assert shown.size == plotted.size, figure
        if shown.info.get("Software") == plotted.info.get("Software"):
            difference = np.asarray(shown.convert("RGB"), float) - np.asarray(plotted.convert("RGB"), float)
            assert np.sqrt((difference**2).mean()) <= 1.0, f"{figure} is not what {page_id(page)} plots now"


def test_the_figures_shown_are_those_of_the_tutorial_and_the_plan():
    assert FIGURES == ["plan-power.png", "planted-forest.png", "planted-grid.png", "pythia-gam.png"]
    for page in PAGES:  # each shown from the page where it is, relative to it
        for image in IMAGE.findall(page.read_text("utf-8")):
            assert (page.parent / image).resolve().parent == DOCS, f"{page_id(page)}: {image}"


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "toml")], ids=page_id)
def test_toml_blocks_parse(page):
    for block in blocks(page, "toml"):
        tomllib.loads(block)


def _options_of(command: click.Command) -> set[str]:
    return {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}


def _shows_commands(page: Path) -> bool:
    return any("ood-store " in block for block in [*blocks(page, "sh"), *blocks(page, "bash")])


@pytest.mark.parametrize("page", [p for p in PAGES if _shows_commands(p)], ids=page_id)
def test_shown_commands_use_real_options(page):
    checked = 0
    for block in [*blocks(page, "sh"), *blocks(page, "bash")]:
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if not line.startswith("ood-store "):
                continue
            words = shlex.split(line)[1:]
            known = _options_of(main)
            while words and words[0].startswith("-"):  # the group's own options (--db STORE)
                words = words[2:] if words[0] in ("--db",) else words[1:]
            assert words and words[0] in main.commands, f"{page_id(page)}: no command {words[:1]} in {line!r}"
            command: click.Command = main.commands[words[0]]
            known |= _options_of(command)
            while isinstance(command, click.Group) and len(words) > 1 and words[1] in command.commands:
                words = words[1:]  # a subcommand (runs set, suite export): its options too
                command = command.commands[words[0]]
                known |= _options_of(command)
            for word in words[1:]:
                if word.startswith("--"):
                    assert word.split("=", 1)[0] in known, f"{page_id(page)}: {word} is no option of {line!r}"
            checked += 1
    assert checked, f"{page_id(page)}: its sh/bash blocks show no ood-store command to check"


def test_relative_links_point_at_files():
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text("utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page_id(page)}: {target}")
    assert broken == []


def test_no_page_imports_a_private_module():
    private = re.compile(r"(?:from|import)\s+(ood_store\.[\w.]+)")
    found = [
        f"{page_id(page)}: {name}"
        for page in PAGES
        for name in private.findall(page.read_text("utf-8"))
        if any(part.startswith("_") for part in name.split(".")[1:])
    ]
    assert found == []


def test_the_readme_is_a_front_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 250
    assert len(console_steps(ROOT / "README.md")) >= 3  # a short tour, run as written above


def test_ci_runs_the_readme_test_command():
    readme = ROOT / "README.md"
    setup = blocks(readme, "sh")[0]
    test_line = next(line for line in setup.splitlines() if "test" in line)
    command = test_line.split("#")[0].strip()
    assert command == "make test"
    ci = (ROOT / ".ci" / "run").read_text()
    steps = [line for line in ci.splitlines() if line and not line.startswith(("#", "set ", "cd ", "export "))]
    # The README's command after installing LaTeX, Chromium and strace, lint, the type check and the site, and
    # after starting the test cluster and the lake tests' PostgreSQL, both stopped however CI ends; then the lake
    # tests, in their own environment. The developing page documents each.
    assert steps == ["make latex", "make browser", "make strace", "make lint", "make typecheck", "make docs",
                     "trap 'make cluster-stop || true; make postgres-stop' EXIT", "make cluster", "make postgres",
                     command, "make test-lake"]  # fmt: skip
    developing = (DOCS / "developing.md").read_text()
    targets = ("lint", "typecheck", "docs", "strace", "cluster", "cluster-stop", "postgres", "postgres-stop",
               "test-lake")  # fmt: skip
    assert all(f"`make {target}`" in developing for target in targets)
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test: .*\n(\t@.*\n)*\t\$\(BIN\)/python -m pytest", makefile, flags=re.MULTILINE)


def test_main_job_is_the_demo():
    setup = blocks(ROOT / "README.md", "sh")[0]
    assert setup.splitlines()[0].split("#")[0].strip() == "make demo"
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo: .*\n\t\$\(BIN\)/ood-store demo$", makefile, flags=re.MULTILINE)


def test_every_command_is_in_the_readme_and_the_cli_reference():
    readme = (ROOT / "README.md").read_text()
    reference = (DOCS / "reference" / "cli.md").read_text()
    for name in main.commands:
        assert f"| `ood-store {name}" in readme, name
        assert f"| `ood-store {name}" in reference, name
    # Below its table, generated from the commands at build time (mkdocs-click): every option by construction.
    assert ":module: ood_store._cli" in reference and ":command: main" in reference


def test_every_public_name_is_in_the_api_reference():
    import ood_store

    reference = (DOCS / "reference" / "api.md").read_text()
    documented = set(re.findall(r"^::: ood_store\.(\w+)", reference, flags=re.MULTILINE))
    assert documented == set(ood_store.__all__) - {"__version__"}


def test_the_developing_map_names_every_folder_and_only_files_that_exist():
    """Each line of the map starts with a top-level folder; the modules and folders it names are there."""
    block = (DOCS / "developing.md").read_text().split("```\n", 2)[1]
    entries: dict[str, str] = {}
    for line in block.splitlines():
        if line and not line.startswith(" "):
            folder, text = line.split(maxsplit=1)
            entries[folder] = text
        else:
            entries[folder] += " " + line.strip()
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    top = {path.split("/")[0] + "/" for path in tracked.splitlines() if "/" in path and not path.startswith(".")}
    assert set(entries) == top
    for folder, text in entries.items():
        named = re.findall(r"(?<![\w/.-])([a-z_][\w-]*(?:/[\w-]+)*(?:\.py|\.sql|\.md|\.toml|/))", text)
        assert named or folder == "benchmarks/", folder
        for name in named:
            assert (ROOT / folder / name).exists(), f"{folder} names {name}"


def test_the_site_builds_in_ci_with_warnings_as_errors():
    config = (ROOT / "mkdocs.yml").read_text()
    assert re.search(r"^strict: true$", config, flags=re.MULTILINE)
    assert re.search(r"^validation:\n  anchors: warn$", config, flags=re.MULTILINE)  # a link to a missing heading
    makefile = (ROOT / "Makefile").read_text()
    [build] = [line for line in makefile.splitlines() if "mkdocs build" in line]
    # --quiet would hide the warnings from --strict too (mkdocs counts only what it logs).
    assert "--strict" in build and "--quiet" not in build and "-q" not in build.split()
    nav = set(re.findall(r":\s+([\w/.-]+\.md)$", config, flags=re.MULTILINE))
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert nav == on_disk  # every page in the navigation, no page left out of it
