"""Frames registered for a block's statements (store/transaction.py ``registered``): DuckDB 2 reads a Polars
frame through the Arrow stream Polars exports, not through pyarrow.

Expected values are the frame's own (``frame.rows()``, as Polars holds them) and the modules a fresh
Python process has loaded after an ingest (``sys.modules``).
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl

from ood_store._store.transaction import registered

FIXTURE = Path(__file__).parent / "fixtures" / "lm-eval-0.4.13" / "out"


def six_types() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": pl.Series([1, 2, None, 2**31 - 1], dtype=pl.Int32),
            "value": pl.Series([0.5, float("nan"), None, -1e300], dtype=pl.Float64),
            "name": pl.Series(["a", "é ünïcode", None, ""], dtype=pl.String),
            "flag": pl.Series([True, False, None, True], dtype=pl.Boolean),
            "at": pl.Series(
                [dt.datetime(2026, 12, 5, 3, 4, 5, 123456), None, dt.datetime(1970, 1, 1), dt.datetime(2100, 1, 1)],
                dtype=pl.Datetime("us"),
            ),
            "lls": pl.Series([[-1.5, -0.25], [], None, [0.0]], dtype=pl.List(pl.Float64)),
        }
    )


def same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN (rows of floats, lists of floats)."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_a_registered_frame_reads_as_polars_holds_it_in_every_scan_of_a_statement_and_in_the_next():
    frame = six_types()
    expected = frame.rows()
    con = duckdb.connect()
    with registered(con, "frame", frame):
        # three scans of the view in one statement: each needs a stream of its own
        rows = con.execute(
            "SELECT * FROM frame UNION ALL SELECT * FROM frame UNION ALL SELECT f.* FROM frame AS f "
            "JOIN (SELECT count(*) AS n FROM frame) ON n = 4"
        ).fetchall()
        again = con.execute("SELECT * FROM frame").fetchall()
        types = [t for _, t, *_ in con.execute("DESCRIBE frame").fetchall()]
    assert same(rows, expected * 3)
    assert same(again, expected)
    assert types == ["INTEGER", "DOUBLE", "VARCHAR", "BOOLEAN", "TIMESTAMP", "DOUBLE[]"]
    tables = {name for (name,) in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert "frame" not in tables  # unregistered when the block ends


def test_an_ingest_in_a_fresh_process_loads_neither_pyarrow_nor_numpy(tmp_path):
    """About 0.15 s of every command that stores rows was pyarrow's and numpy's import (DuckDB turned each
    registered Polars frame into a pyarrow Table)."""
    script = (
        "import json, sys, ood_store\n"
        f"with ood_store.open({str(tmp_path / 'store.duckdb')!r}) as store:\n"
        f"    report = store.ingest([{str(FIXTURE)!r}])\n"
        "print(json.dumps({'ok': report.ok, 'ingested': len(report.ingested),\n"
        "                  'loaded': sorted(m for m in ('pyarrow', 'numpy') if m in sys.modules)}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    answer = json.loads(done.stdout.splitlines()[-1])
    lines = sum(
        1 for path in FIXTURE.glob("*/samples_*.jsonl") for line in path.read_text().splitlines() if line.strip()
    )
    assert answer["ok"] and answer["ingested"] == len(list(FIXTURE.glob("*/results_*.json")))
    with duckdb.connect(str(tmp_path / "store.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT count(*) FROM samples").fetchone()[0]
        documents = con.execute("SELECT count(*) FROM documents").fetchone()[0]
    assert rows == lines  # the rows went in (one per line: one filter each in this fixture)
    assert documents > 0
    assert answer["loaded"] == []
