"""The work folder's files are versioned and typed: a folder or file of another format, or a record with a
field of the wrong type, is refused in one line naming it (never a TypeError), and nothing is stored.

The folder of format 1 is tests/fixtures/workdir-format-1/work, written by the workdir code of ood-store 0.1.0
itself (its make.py says how). The current format is 2 (the first with a ``format`` field).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import ood_store
from conftest import TOY_RUN, toy_evaluate_args
from ood_store._cli import main
from ood_store._errors import InputError
from ood_store._evaluate import workdir
from ood_store._evaluate.workdir import Attempt, Claim, Done, Failure, Stored, WorkDir

FORMAT_1 = Path(__file__).parent / "fixtures" / "workdir-format-1" / "work"
UNIT = "unit-0123456789ab"  # the fixture's one unit


@pytest.fixture
def old_folder(tmp_path: Path) -> Path:
    target = tmp_path / "work"
    shutil.copytree(FORMAT_1, target)
    return target


def _refusal(folder: Path) -> str:
    return (
        f"Error: {folder}: a work folder written by an earlier ood-store (format 1); this one reads format 2: "
        "collect it with the ood-store that wrote it, or evaluate into another --work-dir"
    )


@pytest.mark.parametrize("command", ["status", "collect"])
def test_a_folder_of_format_1_is_refused_in_one_line_by_status_and_collect(old_folder, runner, db, command):
    result = runner.invoke(main, ["--db", str(db), command, str(old_folder)])
    assert result.exit_code == 1
    assert result.output.splitlines() == [_refusal(old_folder)]
    assert not db.exists()  # collect opened no store


def test_evaluate_into_a_folder_of_format_1_is_refused_before_planning(old_folder, toy_run, tmp_path, runner, db):
    ood_store.open(db).close()  # an empty store
    args = toy_evaluate_args(db, toy_run, tmp_path / "out", "--work-dir", str(old_folder))
    result = runner.invoke(main, args)
    assert result.exit_code == 1
    assert result.output.splitlines() == [_refusal(old_folder)]
    assert not (tmp_path / "out").exists()
    with ood_store.open(db, read_only=True) as store:  # the store holds nothing of the run
        assert store.query("SELECT count(*) FROM runs WHERE run = $run", run=TOY_RUN).rows() == [(0,)]


def test_the_api_raises_the_same_input_error(old_folder):
    with pytest.raises(InputError) as raised:
        WorkDir(old_folder).require()
    assert raised.value.path == str(old_folder.resolve())
    assert "format 1" in str(raised.value) and "\n" not in str(raised.value)


def _new_folder(tmp_path: Path) -> tuple[WorkDir, str]:
    """A work folder of today's format with the fixture's unit (read as format 1, rewritten as 2)."""
    work = WorkDir(tmp_path / "new").create()
    data = json.loads((FORMAT_1 / "units" / f"{UNIT}.json").read_text())
    work.add_units([workdir.Unit(**data)])
    return work, work.start_attempt([UNIT], "local")


def test_every_record_is_written_with_its_format_and_read_back_as_written(tmp_path):
    work, attempt = _new_folder(tmp_path)
    assert json.loads((work.path / "work.json").read_text())["format"] == 2
    assert work.claim(attempt, UNIT) is not None and work.claim(attempt, UNIT) is None  # taken once
    done = Done(UNIT, "/r.json", "a" * 64, "0.4.13", "node-1", 7, attempt, 12.5, 1.0e9)
    failure = Failure(UNIT, "boom", tail=["line 1"], host="node-1", job="42_1", job_state="CANCELLED", stage="job")
    stored = Stored(UNIT, "/s.duckdb", "ingested", 3, 9, 144)
    work.mark_failed(failure)
    work.mark_stored(stored)
    assert work.failed(UNIT) == failure
    work.mark_done(done)  # a completion marker replaces the unit's failure
    assert work.done(UNIT) == done and work.failed(UNIT) is None and work.stored(UNIT) == stored
    assert work.attempt(attempt) == Attempt([UNIT], "local", work.attempt(attempt).started, work.attempt(attempt).host)
    for folder in ("units", "attempts", "done", "stored", f"claims/{attempt}"):
        for file in (work.path / folder).glob("*.json"):
            assert json.loads(file.read_text())["format"] == 2, file
    claim = json.loads((work.path / "claims" / attempt / f"{UNIT}.json").read_text())
    assert Claim(**claim).pid > 0


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"seconds": "12.5"}, "seconds", "Input should be a valid number (a done record)"),
        ({"pid": 4.5}, "pid", "Input should be a valid integer (a done record)"),
        ({"timing": {"load": 1.0}}, "timing", "Unexpected keyword argument (a done record)"),
        ({"sha256": None}, "sha256", "Input should be a valid string (a done record)"),
        ({"format": 3}, "format", "written by another ood-store (format 3); this one reads format 2: "
         "collect it with the ood-store that wrote it, or evaluate into another `work_dir`"),
    ],
)  # fmt: skip
def test_a_marker_of_the_wrong_type_or_format_is_refused_naming_the_file_and_field(
    tmp_path, runner, change, field, message
):
    work, attempt = _new_folder(tmp_path)
    work.mark_done(Done(UNIT, "/r.json", "a" * 64, "0.4.13", "node-1", 7, attempt, 12.5, 1.0e9))
    marker = work.path / "done" / f"{UNIT}.json"
    marker.write_text(json.dumps({**json.loads(marker.read_text()), **change}))
    with pytest.raises(InputError) as raised:
        work.done(UNIT)
    assert str(raised.value) == f"{marker}: {field}: {message}"
    result = runner.invoke(main, ["collect", str(work.path)])
    assert result.exit_code == 1
    assert result.output.splitlines() == [f"Error: {marker}: {field}: {message.replace('`work_dir`', '--work-dir')}"]


def test_a_marker_that_is_not_json_is_refused_naming_the_file(tmp_path):
    work, _ = _new_folder(tmp_path)
    marker = work.path / "failed" / f"{UNIT}.json"
    marker.parent.mkdir()
    marker.write_text('{"unit": "x", "error": ')  # cut short
    with pytest.raises(InputError) as raised:
        work.failed(UNIT)
    assert str(raised.value).startswith(f"{marker}: not JSON (")


def test_status_keeps_every_digit_of_the_seconds_in_csv_json_and_parquet(tmp_path, runner):
    """Issue 38: `status -f csv` rounded seconds to a tenth. The files keep what the marker holds; the printed
    table rounds."""
    import csv
    import io

    import polars as pl

    from ood_store._evaluate.timings import Timings

    work, attempt = _new_folder(tmp_path)
    timings = Timings("from_pretrained", load_s=1.234, prepare_s=0.056, forward_s=9.876, write_s=0.543, documents=7)
    work.mark_done(Done(UNIT, "/r.json", "a" * 64, "0.4.13", "node-1", 7, attempt, 12.3456789, 1.0e9,
                        timings=timings.close(12.3456789).record()))  # fmt: skip
    marker = json.loads((work.path / "done" / f"{UNIT}.json").read_text())
    parts = {part: marker["timings"][part] for part in ("load_s", "prepare_s", "forward_s", "bookkeeping_s", "write_s")}
    assert (
        marker["seconds"] == 12.3456789 and parts["bookkeeping_s"] == 0.637
    )  # 12.3456789 - 11.709 = 0.6366789, to 1 ms
    expected = {"seconds": 12.3456789, **parts}

    printed = runner.invoke(main, ["status", str(work.path), "-f", "csv"])
    assert printed.exit_code == 0, printed.output
    [row] = list(csv.DictReader(io.StringIO(printed.output)))
    assert {key: float(row[key]) for key in expected} == expected
    [row] = json.loads(runner.invoke(main, ["status", str(work.path), "-f", "json"]).output)
    assert {key: row[key] for key in expected} == expected
    out = tmp_path / "status.parquet"
    assert runner.invoke(main, ["status", str(work.path), "-o", str(out)]).exit_code == 0
    assert {key: pl.read_parquet(out)[key][0] for key in expected} == expected
    table = runner.invoke(main, ["status", str(work.path)]).output
    assert " 12.3 " in table and "12.35" not in table and " 9.9 " in table  # a person's table: to a tenth
