"""How to install an optional part is said one way everywhere, and `make demo` installs what the tutorial
uses (issue 38: the command line said `pip install 'ood-store[serve]'`, the how-to `pip install -e
".[serve]"`, and `make demo` installed only eval and finetune while the tutorial runs --bootstrap)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from ood_store._errors import install_hint

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = ("ood_store", "finetune", "evaluate", "ingest", "store", "schema", "analysis", "export", "serve")
# The changelog is left out: it quotes the form that was replaced.
PAGES = sorted(p for p in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")] if p.name != "changelog.md")
CODE = sorted(p for folder in PACKAGE_DIRS for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)
EXTRAS = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
# Any install of extras, in whatever form: pip install ... [names] (a line break inside a page counts as a space).
ANY_EXTRAS = re.compile(r"pip install(?:(?!pip install)[^`\n])*?\[[^\]\n]*\]\"?")
THE_FORM = re.compile(r'pip install -e "\.\[([a-z,]+|\{extras\})\]"')  # {extras}: install_hint's own


def _text(path: Path) -> str:
    return re.sub(r"\s*\n\s*", " ", path.read_text())


@pytest.mark.parametrize("path", PAGES + CODE, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_install_of_extras_is_written_one_way(path):
    for said in ANY_EXTRAS.findall(_text(path)):
        match = THE_FORM.fullmatch(said)
        assert match, f"{path.relative_to(ROOT)}: {said!r} is not written as {install_hint('NAME')!r}"
        assert match[1] == "{extras}" or set(match[1].split(",")) <= EXTRAS, said


def test_the_command_line_s_hints_come_from_one_place():
    """The messages build their hint with install_hint (an f-string), so none spells it out itself."""
    spelled = [p.relative_to(ROOT).as_posix() for p in CODE if "pip install" in p.read_text()]
    assert spelled == ["analysis/bootstrap.py", "ood_store/_cli/serve.py", "ood_store/_errors.py"]
    # bootstrap.py and serve.py say it in a docstring (the --help of serve), checked by the test above
    assert install_hint("eval,slurm") == 'pip install -e ".[eval,slurm]"'


def test_make_demo_installs_what_the_tutorial_uses():
    makefile = (ROOT / "Makefile").read_text()
    [demo] = re.findall(r"^DEMO_EXTRAS := (.+)$", makefile, re.MULTILINE)
    installed = set(demo.split(","))
    recipe = makefile.split("$(VENV)/.installed-eval:", 1)[1].split("\n\n", 1)[0]
    assert '-e ".[$(DEMO_EXTRAS)]"' in recipe and "demo: $(VENV)/.installed-eval" in makefile
    tutorial = (ROOT / "docs" / "tutorial.md").read_text()
    commands = [line[2:] for line in tutorial.splitlines() if line.startswith("$ ood-store")]
    needs = {"eval", "finetune"}  # `make demo` itself: ood-store demo finetunes and evaluates
    needs |= {"bootstrap"} if any("--bootstrap" in c for c in commands) else set()
    needs |= {"serve"}  # the viewer, the tutorial's next step (docs/how-to/viewer.md)
    assert "bootstrap" in needs  # the tutorial's analyze --bootstrap 200
    assert needs <= installed <= EXTRAS
