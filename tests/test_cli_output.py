"""Every command that writes its rows to a file with ``-o`` says so, on standard error, as ``export`` and ``plot``
do: ``Wrote 18 rows as csv to FILE.`` (issue 38: only ``query -o`` did; ``analyze``, ``runs``, ``status`` and
``plan`` wrote the file and printed nothing). Standard output stays empty: the rows are in the file."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from conftest import PYTHIA_IN_DOMAIN, PYTHIA_OOD, PYTHIA_SIZES
from ood_store._cli import main
from ood_store._evaluate import workdir
from ood_store._evaluate.workdir import WorkDir

FORMAT_1_UNIT = Path(__file__).parent / "fixtures" / "workdir-format-1" / "work" / "units" / "unit-0123456789ab.json"


def work_folder(root: Path) -> Path:
    """A work folder holding one unit (the format-1 fixture's)."""
    work = WorkDir(root / "work").create()
    work.add_units([workdir.Unit(**json.loads(FORMAT_1_UNIT.read_text()))])
    return work.path


#: (command's arguments, rows it writes, counted from its arguments and the fixtures, not from the command)
COMMANDS = {
    # 3 Pythia runs x the 6 pairs of 4 OOD tasks
    "analyze": (
        ["analyze", "--in-domain", PYTHIA_IN_DOMAIN, "--ood", ",".join(PYTHIA_OOD)],
        len(PYTHIA_SIZES) * 6,
    ),
    "runs": (["runs"], len(PYTHIA_SIZES)),
    "analyses": (["analyses"], 1),  # the one saved analysis of the fixture
    # seeds 2 and 3 x 12 checkpoints: 2 designs
    "plan": (
        [
            "plan",
            "--effect",
            "0.3",
            "--effect",
            "-0.3",
            "--tau",
            "0.2",
            "--ar1",
            "0.6",
            "--seeds",
            "2,3",
            "--checkpoints",
            "12",
            "--replications",
            "10",
        ],
        2,
    ),  # fmt: skip
}


@pytest.mark.parametrize("command", [*COMMANDS, "status"])
@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_a_file_written_with_o_is_said_so(command, suffix, runner, analysis_db, tmp_path):
    if command == "status":
        args, rows = ["status", str(work_folder(tmp_path))], 1
    else:
        args, rows = COMMANDS[command]
        args = ["--db", str(analysis_db), *args]
    out = tmp_path / f"{command}.{suffix}"
    result = runner.invoke(main, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    written = pl.read_csv(out) if suffix == "csv" else pl.read_parquet(out)
    assert written.height == rows
    noun = "row" if rows == 1 else "rows"
    assert result.stdout == ""
    assert result.stderr.splitlines()[0] == f"Wrote {rows} {noun} as {suffix} to {out}."


def test_rows_printed_to_standard_output_say_nothing_more(runner, analysis_db):
    result = runner.invoke(main, ["--db", str(analysis_db), "runs", "-f", "csv"])
    assert result.exit_code == 0, result.output
    assert result.stderr == "" and len(result.stdout.splitlines()) == len(PYTHIA_SIZES) + 1
