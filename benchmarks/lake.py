"""A lake against a store file, side by side in one run: ingest, compare, and many writers against one.

    make postgres    # a private PostgreSQL for the catalogs (tests/lake/start.sh), or give --catalog
    .venv-lake/bin/python benchmarks/lake.py [--catalog postgres:...] [--writers 8] [--repeats 3] [--folder DIR]

Runs in the lake extra's environment (``make .venv-lake/.installed``: DuckDB 1.5.5 and DuckLake's
extensions), so that the file store and the lake are read and written by the same DuckDB. The catalog is a
new database in the PostgreSQL that ``OOD_STORE_TEST_LAKE`` names (``build/lake/pg.env``, which this reads when
the variable is unset), or the ``--catalog`` given; each lake's data in a folder under ``--folder``. Every
command is a whole ``ood-store`` process (start-up, extension loading, catalog connection included), timed
``--repeats`` times; the median is printed.

  ingest    the 876-file Pythia-v1-shaped corpus (benchmarks/corpus.py) into a new store file, and into a new lake
  compare   ``ood-store compare --in-domain mnli`` on the planted study of 24 runs × 24 checkpoints × 8 OOD
            testsets (ood_store._examples.planted), stored in a file and in a lake
  writers   the corpus into a new lake by one process; by ``--writers`` processes one after another, each
            ingesting its share (every WRITERS-th file); and by as many at once: every file stored once, every
            process exits 0. On a machine of few cores the processes' start-ups compete for them, so "one after
            another" is the baseline that pays the same start-ups

Printed: seconds per command and the ratios lake / file and many writers / one writer.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import OOD_STORE
from corpus import results_corpus

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from lake_support import conninfo, psql  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def catalog_server(given: str | None) -> str:
    """``postgres:...`` of the server the lakes' catalogs are made in."""
    spec = given or os.environ.get("OOD_STORE_TEST_LAKE")
    env = ROOT / "build" / "lake" / "pg.env"
    if not spec and env.is_file():
        spec = re.search(r"OOD_STORE_TEST_LAKE='([^']*)'", env.read_text()).group(1)  # type: ignore[union-attr]
    if not spec:
        sys.exit("lake.py: no PostgreSQL catalog: run `make postgres` (tests/lake/start.sh) or give --catalog")
    return spec


def new_lake(server: str, folder: Path) -> str:
    """A new lake: a new database on the server (as the lake tests make theirs), its data in ``folder``; its URL."""
    name = f"ood_bench_{secrets.token_hex(4)}"
    psql(server, f"CREATE DATABASE {name}")
    url = "ducklake:postgres:" + conninfo(server, dbname=name)
    run([OOD_STORE, "--db", url, "init", "--data-path", str(folder)])
    return url


def run(command: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"{' '.join(command[:4])} ...: exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    return elapsed


def evaluations(db: str) -> tuple[int, int]:
    """(evaluations stored, distinct content hashes) of a store."""
    out = subprocess.run(
        [OOD_STORE, "--db", db, "query", "SELECT count(*) AS n, count(DISTINCT content_hash) AS d FROM evaluations",
         "-f", "csv"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    n, d = out.strip().splitlines()[-1].split(",")
    return int(n), int(d)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--catalog", help="postgres:dbname=... host=... port=... user=... (a role that may CREATE DATABASE)"
    )
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--folder", type=Path)
    args = parser.parse_args()
    server = catalog_server(args.catalog)
    folder = Path(tempfile.mkdtemp(prefix="ood-store-lake-bench-", dir=args.folder))
    try:
        corpus = folder / "corpus"
        files = results_corpus(corpus)
        print(f"{len(files)} results files; catalogs on PostgreSQL ({server.split(' user=')[0]}); "
              f"median of {args.repeats} runs of each whole process")  # fmt: skip

        # ingest: the corpus into a new file and a new lake
        file_s, lake_s = [], []
        for repeat in range(args.repeats):
            db = folder / f"ingest{repeat}.duckdb"
            file_s.append(run([OOD_STORE, "--db", str(db), "ingest", str(corpus)]))
            lake = new_lake(server, folder / f"ingest{repeat}-data")
            lake_s.append(run([OOD_STORE, "--db", lake, "ingest", str(corpus)]))
            if evaluations(lake) != (len(files), len(files)) or evaluations(str(db)) != (len(files), len(files)):
                sys.exit("lake.py: a store does not hold every file once")
        ingest_file, ingest_lake = statistics.median(file_s), statistics.median(lake_s)
        print(f"ingest {len(files)} files   file {ingest_file:7.1f} s   lake {ingest_lake:7.1f} s   "
              f"lake / file {ingest_lake / ingest_file:5.2f}")  # fmt: skip

        # compare: the planted study of 24 runs, in a file and in a lake
        from ood_store._examples import planted

        planted_files = folder / "planted"
        planted.write_files(planted_files)
        file_db = str(folder / "planted.duckdb")
        run([OOD_STORE, "--db", file_db, "ingest", str(planted_files)])
        lake = new_lake(server, folder / "planted-data")
        run([OOD_STORE, "--db", lake, "ingest", str(planted_files)])
        compare = ["compare", "--in-domain", planted.IN_DOMAIN, "-f", "csv"]
        outputs = {}
        times: dict[str, list[float]] = {"file": [], "lake": []}
        for _ in range(args.repeats):
            for kind, db in (("file", file_db), ("lake", lake)):
                out = folder / f"compare-{kind}.csv"
                times[kind].append(run([OOD_STORE, "--db", db, *compare, "-o", str(out)]))
                outputs[kind] = out.read_bytes()
        if outputs["file"] != outputs["lake"]:
            sys.exit("lake.py: compare on the lake differs from compare on the file")
        compare_file, compare_lake = statistics.median(times["file"]), statistics.median(times["lake"])
        print(f"compare 24 runs       file {compare_file:7.1f} s   lake {compare_lake:7.1f} s   "
              f"lake / file {compare_lake / compare_file:5.2f}   (the same CSV, byte for byte)")  # fmt: skip

        # writers: one process against WRITERS at once, into new lakes
        one_s, turns_s, many_s = [], [], []
        shares = [files[i :: args.writers] for i in range(args.writers)]
        for repeat in range(args.repeats):
            lake = new_lake(server, folder / f"one{repeat}-data")
            one_s.append(run([OOD_STORE, "--db", lake, "ingest", *map(str, files)]))
            lake = new_lake(server, folder / f"turns{repeat}-data")
            turns_s.append(sum(run([OOD_STORE, "--db", lake, "ingest", *map(str, share)]) for share in shares))
            lake = new_lake(server, folder / f"many{repeat}-data")
            start = time.perf_counter()
            procs = [
                subprocess.Popen([OOD_STORE, "--db", lake, "ingest", *map(str, share)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                for share in shares
            ]  # fmt: skip
            failed = [p.communicate()[1] for p in procs if p.wait() != 0]
            many_s.append(time.perf_counter() - start)
            if failed:
                sys.exit(f"lake.py: {len(failed)} writers failed: {failed[0].strip()[-2000:]}")
            if evaluations(lake) != (len(files), len(files)):
                sys.exit(f"lake.py: {args.writers} writers did not store every file once: {evaluations(lake)}")
        one, turns, many = statistics.median(one_s), statistics.median(turns_s), statistics.median(many_s)
        print(f"ingest by writers     one {one:8.1f} s   {args.writers} at once {many:7.1f} s   "
              f"{args.writers} / one {many / one:5.2f}   (every file once, every process exit 0)")  # fmt: skip
        print(f"                      {args.writers} one after another {turns:5.1f} s   "
              f"at once / one after another {many / turns:5.2f}")  # fmt: skip
        print(f"machine: {os.cpu_count()} CPUs")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
