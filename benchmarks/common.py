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


def planted_arguments(description: str, settings, out: Path):
    """The options every planted-study benchmark takes: ``--studies``, ``--resamples``, ``--seed``, ``--only``
    (names of ``settings``), ``--processes`` and ``--out``; the parser, to add its own before parsing."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--studies", type=int, default=400)
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="*", choices=sorted(settings), default=None)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--out", type=Path, default=out)
    return parser


def run_studies(one_study, jobs: list, processes: int):
    """``one_study`` of every job, in ``processes`` processes, as a frame of its rows; and the seconds taken."""
    import time
    from concurrent.futures import ProcessPoolExecutor

    import polars as pl

    start = time.perf_counter()
    with ProcessPoolExecutor(processes) as pool:
        rows = pl.DataFrame(list(pool.map(one_study, jobs, chunksize=4)))
    return rows, time.perf_counter() - start


def run_planted(args, settings, one_study, summarize, design: str, *extra):
    """Every setting of ``args.only`` (default: all of ``settings``), ``args.studies`` studies each, through
    ``one_study`` (its job ``(name, index, *extra, args.resamples, args.seed)``) in ``args.processes`` processes:
    ``summarize``'s table of their rows, and a heading that says the ``design`` and the seconds taken."""
    names = args.only or list(settings)
    jobs = [(name, i, *extra, args.resamples, args.seed) for name in names for i in range(args.studies)]
    rows, seconds = run_studies(one_study, jobs, args.processes)
    heading = f"{args.studies} studies per setting{design}, {args.resamples} item resamples ({seconds:.0f} s)"
    return summarize(rows), heading


def write_table(table, heading: str, out: Path) -> None:
    """Print ``heading`` and the whole ``table`` (3 decimals), and write it to ``out`` as CSV."""
    import polars as pl

    print(heading)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, float_precision=3):
        print(table)
    out.parent.mkdir(parents=True, exist_ok=True)
    table.write_csv(out)


def planted(settings, name: str, index: int, seed: int, runs: int):
    """Planted study ``index`` of setting ``name`` of ``settings`` (:func:`ood_store._analysis.studysim.planted_study`,
    OOD testsets of 1,500 items; a setting's ``items`` are the in-domain testset's, its ``runs`` override ``runs``),
    drawn from ``[seed, index, sum(map(ord, name))]``: the same studies for a name in every benchmark."""
    import numpy as np

    from ood_store._analysis.studysim import planted_study

    setting = dict(settings[name])
    n = setting.pop("items")
    runs = setting.pop("runs", runs)
    rng = np.random.default_rng([seed, index, sum(map(ord, name))])
    return planted_study(rng, runs=runs, items=(n, 1500, 1500), **setting)
