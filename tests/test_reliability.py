"""The fast subset of benchmarks/reliability.py (issue 17): every class of broken file, a few of each, of
every format ingest reads (lm-eval, Every Eval Ever of every version, inspect_ai .json and .eval, W&B CSV and
Parquet), ingested in batches beside intact copies, two SIGKILL-and-rerun trials and four concurrent ingests.

The full run (5,000 files, 20 kill trials) is the benchmark's; here every class is tried at least
twice and nothing may fail: no traceback, no intact file lost, no broken file leaving a row.
"""

from __future__ import annotations

from collections import Counter

from conftest import benchmark

reliability = benchmark("reliability")
mutations = benchmark("mutations")


def test_the_fast_subset_of_the_reliability_script_holds(tmp_path):
    args = ["--files", "160", "--batch", "72", "--kill-trials", "2", "--kill-files", "24", "--concurrent-trials", "1"]
    rows = reliability.rows([*args, "--ingest-only", "--seed", "20261203", "--workdir", str(tmp_path / "run")])
    failed = [row for row in rows if not row[2]]
    assert not failed, failed
    (tmp_path / "probe").mkdir()
    _, unreadable = reliability.reading_restriction(tmp_path / "probe")  # as the run decided it
    kinds = [kind.name for kind in mutations.kinds(unreadable_folders=unreadable)]
    tried = Counter(cls for cls, _, _, _ in rows)
    classes = [reliability.BATCHES, *kinds, mutations.GOOD, reliability.KILLS, reliability.CONCURRENT]
    assert list(tried) == classes  # every class, in the table's order, and nothing else
    assert all(tried[kind] >= 2 for kind in kinds)  # 160 broken files over the classes
    assert any(kind.startswith("EEE: ") for kind in kinds) and any(kind.startswith("W&B ") for kind in kinds)
    assert tried[mutations.GOOD] == 53  # one intact file for every three broken ones
    assert tried[reliability.BATCHES] == 3 and tried[reliability.KILLS] == 2 and tried[reliability.CONCURRENT] == 1
