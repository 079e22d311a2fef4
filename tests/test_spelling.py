"""One spelling: American, in identifiers, messages, docstrings and pages (issue 21). The British forms that
crept in before are listed; a new one fails here, naming the file and line. Proper names keep their
spelling (a repository's name), and files from elsewhere (fixtures, vendored code, R's outputs) are not ours.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_OURS = ("tests/fixtures/", "serve/static/vendor/", "benchmarks/results/", "tests/reference/")
TEXT = (".py", ".md", ".sql", ".html", ".js", ".toml", ".yml", ".css", "Makefile", ".ci/run")
BRITISH = re.compile(
    r"residualis|colour|verbalis|\banalys(e|ed|ing)\b|recognis|initialis|generalis|normalis|tokenis|summaris"
    r"|optimis|organis|serialis|behaviour|\bcentred\b|\bfavour|\bmodelled\b|\bmodelling\b|\blabelled\b"
    r"|\blabelling\b|visualis|categoris|minimis|maximis",
    re.IGNORECASE,
)
# ilboglions/GeneralisationGeneralises, the paper's repository; ANALYSE, a keyword of DuckDB's SQL (and Postgres')
PROPER_NAMES = ("GeneralisationGeneralises", '"ANALYSE"')


def test_no_british_spelling_in_our_files():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    found = []
    for name in files:
        if name.startswith(NOT_OURS) or not name.endswith(TEXT) or name == "tests/test_spelling.py":
            continue
        for number, line in enumerate((ROOT / name).read_text("utf-8").splitlines(), 1):
            for proper in PROPER_NAMES:
                line = line.replace(proper, "")
            if BRITISH.search(line):
                found.append(f"{name}:{number}: {line.strip()[:100]}")
    assert found == []
