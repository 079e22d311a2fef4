"""Example lm-eval outputs that ship with ood-store (see README.md beside this file)."""

from __future__ import annotations

import zipfile
from importlib import resources
from pathlib import Path


def extract_pythia(target: Path) -> Path:
    """Unpack the bundled Pythia v1.1 evaluations into ``target``; returns the folder holding them."""
    archive = resources.files(__name__).joinpath("pythia-v1.zip")
    with resources.as_file(archive) as path, zipfile.ZipFile(path) as zf:
        zf.extractall(target)
    return target / "pythia-v1"
