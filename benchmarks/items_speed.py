"""Speed of the item analysis: ``ood-store analyze --items 1000`` on a study of 36 million per-sample rows.

    python benchmarks/items_speed.py [--runs 24] [--checkpoints 30] [--tasks 10] [--items 5000]
                                     [--resamples 1000] [--folder DIR] [--keep]

A store is made (not timed) with RUNS runs × CHECKPOINTS checkpoints × TASKS
tasks (task00 the in-domain one) of ITEMS documents each, written straight into
its tables with DuckDB (ingesting 7,200 samples files would time ingest, not
the analysis): an item is answered correctly with probability
``ability(step) - difficulty(item)``. Then ``ood-store analyze --in-domain task00
--items RESAMPLES --format csv`` runs as a whole process (start-up, the samples
query and the 45 pairs of every run included), linear residualizer; the
target is under 60 s on the project's shared 2-core machine. Printed: the
rows, the seconds of building the store, of the command, and of its parts in
process (reading the items; resampling and the statistics).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
from common import OOD_STORE, fresh


def build(db: Path, runs: int, checkpoints: int, tasks: int, items: int) -> None:
    import ood_store

    with ood_store.open(db):
        pass  # the schema, as ood-store makes it
    con = duckdb.connect(str(db))
    con.execute("SELECT setseed(0.25)")
    con.execute(
        """
        INSERT INTO runs (run, attributes, created_at)
        SELECT 'run' || lpad(r::VARCHAR, 2, '0'), '{}', now() FROM range($runs) t(r)
        """,
        {"runs": runs},
    )
    con.execute(
        """
        INSERT INTO evaluations (evaluation_id, content_hash, source_path, run, step, identity_from, format,
                                 samples_files, ingested_at, ood_store_version)
        SELECT r * $checkpoints + c + 1, md5((r * $checkpoints + c)::VARCHAR), '/bench',
               'run' || lpad(r::VARCHAR, 2, '0'), (c + 1) * 1000, 'flags', 'v0.4', [], now(), 'bench'
        FROM range($runs) a(r), range($checkpoints) b(c)
        """,
        {"runs": runs, "checkpoints": checkpoints},
    )
    con.execute(
        """
        CREATE TEMP TABLE outcomes AS
        SELECT e.evaluation_id, 'task' || lpad(t::VARCHAR, 2, '0') AS task, d AS doc_id,
               CASE WHEN random() < 0.3 + 0.4 * (e.step / 1000 - 1) / $checkpoints + 0.03 * sin(e.step * (t + 1))
                                    - ((d * 7919) % 1000) / 2500.0 + 0.2 THEN 1.0 ELSE 0.0 END AS acc
        FROM evaluations AS e, range($tasks) a(t), range($items) b(d)
        """,
        {"tasks": tasks, "items": items, "checkpoints": checkpoints},
    )
    con.execute(
        """
        INSERT INTO samples (evaluation_id, task, doc_id, filter, metrics, doc_hash)
        SELECT evaluation_id, task, doc_id, 'none', MAP {'acc': acc}, md5(task || doc_id::VARCHAR) FROM outcomes
        """
    )
    con.execute(
        """
        INSERT INTO evaluation_scores (evaluation_id, task, num_fewshot, metric, filter, value, is_group)
        SELECT evaluation_id, task, 0, 'acc', 'none', avg(acc), false FROM outcomes GROUP BY evaluation_id, task
        """
    )
    con.execute("CHECKPOINT")
    con.close()


def study_store(description: str, resamples: int, prefix: str) -> tuple[argparse.Namespace, Path, Path, float]:
    """The arguments of a benchmark on this study (RUNS, CHECKPOINTS, TASKS, ITEMS, RESAMPLES, FOLDER, KEEP), its
    folder, and its store, made there unless kept from before (with the seconds that took)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=24)
    parser.add_argument("--checkpoints", type=int, default=30)
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--resamples", type=int, default=resamples)
    parser.add_argument("--folder", type=Path)
    parser.add_argument("--keep", action="store_true", help="Keep a store made before (same folder) instead.")
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix=prefix))
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "items.duckdb"
    start = time.perf_counter()
    if not (args.keep and db.exists()):
        build(fresh(db), args.runs, args.checkpoints, args.tasks, args.items)
    return args, folder, db, time.perf_counter() - start


def main() -> None:
    args, folder, db, built = study_store(__doc__, 1000, "items-speed-")
    rows = args.runs * args.checkpoints * args.tasks * args.items
    command = [OOD_STORE, "--db", str(db), "analyze", "--in-domain", "task00", "--items", str(args.resamples)]
    start = time.perf_counter()
    done = subprocess.run([*command, "--format", "csv", "-o", str(folder / "items.csv")], capture_output=True)
    elapsed = time.perf_counter() - start
    if done.returncode:
        sys.exit(done.stderr.decode())

    import ood_store
    from ood_store._analysis.items import ItemOptions, _run_table, _sums, load_items
    from ood_store._analysis.itemstats import Draws

    options = ItemOptions(in_domain="task00", items=args.resamples)
    with ood_store.open(db, read_only=True) as store:
        start = time.perf_counter()
        in_domain, ood, by_run = load_items(store, options)
        read = time.perf_counter() - start
    start = time.perf_counter()
    draws, names = Draws(options.seed), (in_domain, *ood)
    sums = _sums(by_run, names, options, draws)
    for run, data in by_run.items():
        _run_table(run, data, names, options, draws, sums[run])
    computed = time.perf_counter() - start
    print(
        f"{args.runs} runs × {args.checkpoints} checkpoints × {args.tasks} tasks × {args.items} items "
        f"({rows:,} per-sample rows), {args.resamples} item resamples, linear residualizer"
    )
    print(f"store built in {built:.1f} s (not timed)")
    print(f"ood-store analyze --items {args.resamples}: {elapsed:.1f} s (target: under 60 s)")
    print(f"  in process: reading the items {read:.1f} s, resampling and statistics {computed:.1f} s")


if __name__ == "__main__":
    main()
