"""N processes ingest into a store that does not exist yet, round after round: tried / held / failed.

Each round starts N worker processes' ingests (one real Pythia lm-eval results file each, from
tests/fixtures) into a new store at once; a round holds when no process fails and the store holds
every file exactly once. tests/test_store_birth.py runs 50 rounds of 4 and 8; this runs as many as asked
(before opens and a writer's closes were put under ood-store's own lock, about one round in a few
hundred lost a file a process had reported stored: DuckDB reads a file's headers before its lock).
Run it with another copy beside it for load:

    python benchmarks/concurrent_ingest.py --processes 8 --rounds 50
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import INGEST_WORKER as WORKER  # noqa: E402
from conftest import pythia_files  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    files = pythia_files()[: args.processes]
    expected = sorted(hashlib.sha256(f.read_bytes()).hexdigest() for f in files)
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        workers = [
            subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for _ in files
        ]
        for worker in workers:
            assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
        for round_ in range(args.rounds):
            db = Path(tmp) / f"round{round_}.duckdb"
            for worker, file in zip(workers, files, strict=True):
                assert worker.stdin is not None
                worker.stdin.write(json.dumps({"db": str(db), "files": [str(file)]}) + "\n")
                worker.stdin.flush()
            answers = [json.loads(worker.stdout.readline()) for worker in workers if worker.stdout is not None]
            con = duckdb.connect(str(db), read_only=True)
            stored = sorted(h for (h,) in con.execute("SELECT content_hash FROM evaluations").fetchall())
            con.close()
            wrong = [a for a in answers if a != {"ingested": 1, "rejected": []}]
            if wrong or stored != expected:
                failed.append((round_, wrong, len(expected) - len(set(stored) & set(expected))))
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.close()
            worker.wait(timeout=60)
    print(
        f"{args.processes} processes, {args.rounds} rounds: tried {args.rounds}, held {args.rounds - len(failed)}, "
        f"failed {len(failed)}"
    )
    for round_, wrong, missing in failed:
        print(f"  round {round_}: {missing} file(s) missing from the store; answers {wrong}")


if __name__ == "__main__":
    main()
