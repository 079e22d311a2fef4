"""What several benchmarks share: where the fixtures and the ``ood-store`` command are, and small helpers.

Imported as ``common``: a script run as ``python benchmarks/X.py`` has benchmarks/ first on its import
path, and tests load the scripts through tests/conftest.py's ``benchmark(name)``, which adds it.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
REAL = FIXTURES / "lm-eval-real"
PYTHIA = REAL / "pythia-v1"
#: The 27 zero-shot files of Pythia-160M, the small store of the store trials.
PYTHIA_160M = PYTHIA / "pythia-160m" / "zero-shot"
V0413 = FIXTURES / "lm-eval-0.4.13" / "out"
#: Real files of the other formats ingest reads: Every Eval Ever (every version), inspect_ai logs, W&B histories.
EEE_REAL = FIXTURES / "eee-real"
INSPECT_REAL = FIXTURES / "inspect-real"
WANDB = FIXTURES / "wandb"
#: The ``ood-store`` command of the interpreter running the benchmark.
OOD_STORE = str(Path(sys.executable).parent / "ood-store")


def fresh(db: Path) -> Path:
    """``db`` with no store file and no WAL left from an earlier run."""
    for leftover in (db, db.with_name(db.name + ".wal")):
        leftover.unlink(missing_ok=True)
    return db


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pythia_160m_store(folder: Path, files: int | None = None) -> Path:
    """``folder``/pristine.duckdb holding the first ``files`` (default: all 27) Pythia-160M zero-shot files,
    closed (everything checkpointed into the file)."""
    import ood_store

    chosen = sorted(PYTHIA_160M.glob("*.json"))[:files]
    db = folder / "pristine.duckdb"
    with ood_store.open(db) as store:
        report = store.ingest(chosen)
        assert report.ok and len(report.ingested) == len(chosen), report
    return db
