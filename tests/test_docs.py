"""The documentation is checked: every example on every page runs as written and prints what it shows.

Pages are README.md and every Markdown file under docs/. On each page:

- ``console`` blocks are one shell session, run in order in a fresh folder (with the repository's
  ``tests/`` linked into it, so fixture paths read as they do in a checkout): each ``$ ood-store ...``
  line is run and must print exactly the lines under it;
- ``pycon`` blocks are doctests, run in order in one namespace (``ood_store`` and ``pl`` imported, the
  working directory a fresh folder with ``tests/`` linked);
- ``python`` blocks are run;
- ``toml`` blocks parse; ``sh`` and ``bash`` blocks are commands shown rather than run (a cluster, a
  GPU): every ``--option`` of each ``ood-store`` command in them must be an option of that command.

Besides: relative links point at files that exist, and no page imports a private module.
"""

from __future__ import annotations

import doctest
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import click
import pytest

from ood_store._cli import main

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def blocks(page: Path, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(page.read_text("utf-8")) if lang == language]


def pages_with(language: str) -> list[Path]:
    return [page for page in PAGES if blocks(page, language)]


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


@pytest.fixture
def session_dir(tmp_path, monkeypatch):
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OOD_STORE_DB", raising=False)
    return tmp_path


@pytest.mark.parametrize("page", pages_with("console"), ids=page_id)
def test_console_examples_run_as_written(page, runner, session_dir):
    for command, expected in console_steps(page):
        args = shell_words(command)
        assert args[0] == "ood-store", f"{page_id(page)}: {command}"
        result = runner.invoke(main, args[1:])
        assert "Traceback" not in result.output, f"{page_id(page)}: {command}\n{result.output}"
        assert result.output.splitlines() == expected, f"{page_id(page)}: {command}"


@pytest.mark.parametrize("page", pages_with("pycon"), ids=page_id)
def test_python_sessions_run_as_written(page, session_dir):
    import polars as pl

    import ood_store

    text = "\n".join(blocks(page, "pycon"))
    test = doctest.DocTestParser().get_doctest(text, {"ood_store": ood_store, "pl": pl}, page_id(page), str(page), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0, f"{page_id(page)}: an example failed (see the output)"


@pytest.mark.parametrize("page", pages_with("python"), ids=page_id)
def test_python_blocks_run(page, session_dir):
    for block in blocks(page, "python"):
        exec(compile(block, str(page), "exec"), {"__name__": "__docs__"})


@pytest.mark.parametrize("page", pages_with("toml"), ids=page_id)
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
            command = main.commands[words[0]]
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


def test_ci_runs_the_readme_test_command():
    readme = ROOT / "README.md"
    setup = blocks(readme, "sh")[0]
    test_line = next(line for line in setup.splitlines() if "test" in line)
    command = test_line.split("#")[0].strip()
    assert command == "make test"
    ci = (ROOT / ".ci" / "run").read_text()
    steps = [line for line in ci.splitlines() if line and not line.startswith(("#", "set ", "cd ", "export "))]
    # The README's command last, after the set-up of what tests need, lint, the type check and the docs.
    assert steps[-1] == command
    for step in ("make lint", "make typecheck", "make docs"):
        assert step in steps[:-1]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test: .*\n(\t@.*\n)*\t\$\(BIN\)/python -m pytest", makefile, flags=re.MULTILINE)


def test_main_job_is_the_demo():
    setup = blocks(ROOT / "README.md", "sh")[0]
    assert setup.splitlines()[0].split("#")[0].strip() == "make demo"
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo: .*\n\t\$\(BIN\)/ood-store demo$", makefile, flags=re.MULTILINE)


def test_every_command_is_in_the_readme_and_the_cli_reference():
    readme = (ROOT / "README.md").read_text()
    for name in main.commands:
        assert f"`ood-store {name}" in readme, name
    reference = (ROOT / "docs" / "reference" / "cli.md").read_text()
    # Generated from the commands at build time (mkdocs-click): it lists every command by construction.
    assert ":module: ood_store._cli" in reference and ":command: main" in reference


def test_every_public_name_is_in_the_api_reference():
    import ood_store

    reference = (ROOT / "docs" / "reference" / "api.md").read_text()
    documented = set(re.findall(r"^::: ood_store\.(\w+)", reference, flags=re.MULTILINE))
    assert documented == set(ood_store.__all__) - {"__version__"}


def test_the_site_builds_in_ci_with_warnings_as_errors():
    config = (ROOT / "mkdocs.yml").read_text()
    assert re.search(r"^strict: true$", config, flags=re.MULTILINE)
    makefile = (ROOT / "Makefile").read_text()
    assert "mkdocs build --strict" in makefile
    nav = set(re.findall(r":\s+([\w/.-]+\.md)$", config, flags=re.MULTILINE))
    on_disk = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert nav == on_disk  # every page in the navigation, no page left out of it
