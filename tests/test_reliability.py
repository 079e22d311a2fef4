"""The fast subset of benchmarks/reliability.py (issue 17): every class of broken file, a few of each,
ingested in batches beside intact copies, two SIGKILL-and-rerun trials and four concurrent ingests.

The full run (5,000 files, 20 kill trials) is the benchmark's; here every class is tried at least
twice and nothing may fail: no traceback, no intact file lost, no broken file leaving a row.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "reliability.py"
ROW = re.compile(r"^(?P<cls>.+?)\s+(?P<tried>\d+)\s+(?P<held>\d+)\s+(?P<failed>\d+)$")


def test_the_fast_subset_of_the_reliability_script_holds(tmp_path):
    args = ["--files", "90", "--batch", "45", "--kill-trials", "2", "--kill-files", "24", "--kill-batch", "6"]
    args += ["--concurrent-trials", "1"]  # --kill-batch 6: the killed ingest commits 4 times, a kill may land between
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--ingest-only", "--seed", "20261203", "--workdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    header = next(
        i
        for i, line in enumerate(lines)
        if line.startswith("class ") and line.split()[1:] == ["tried", "held", "failed"]
    )
    rows = {}
    for line in lines[header + 1 :]:
        match = ROW.match(line)
        if match is None:
            break
        rows[match["cls"]] = tuple(int(match[k]) for k in ("tried", "held", "failed"))
    assert len(rows) >= 44  # 41 classes of broken file, intact files, batches, kills, concurrent ingests
    for cls, (tried, held, failed) in rows.items():
        assert tried >= (1 if cls == "4 concurrent ingests" else 2) and held == tried and failed == 0, cls
    assert rows["good files (intact copies)"][0] == 30  # one intact file for every three broken ones
    assert rows["SIGKILL, then ingest again"][0] == 2 and rows["4 concurrent ingests"][0] == 1
    assert {"truncated", "FIFO as a results file", "samples: broken line", "NaN or Infinity in a score"} <= rows.keys()
