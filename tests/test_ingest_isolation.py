"""No bad file takes others down (issue 17): what discovery meets on disk, and bugs met by one file.

Each case puts one bad thing in a folder beside good lm-eval files and ingests the
folder: the good files are stored (the scores counted from their JSON), the bad
thing is named in one line, the exit status is 1, and no traceback is printed.
The bad things are real: link loops, a FIFO, a folder the process cannot list, a
name that is not UTF-8. The internal errors are planted faults (a reader or the
writer raising for one file), since a known input that makes ood-store raise is
a bug to fix, not a test case to keep.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ood_store
from conftest import V0413, benchmark, pythia_files
from ood_store._cli import main

GOOD = pythia_files("410m")[:3]
reliability = benchmark("reliability")  # its way of running a command without root's power to read any folder
OOD_STORE = str(Path(sys.executable).parent / "ood-store")
LOOP = os.strerror(errno.ELOOP)  # "Too many levels of symbolic links"


def score_count(path: Path) -> int:
    """The scores of a v0.3 results file, counted from its JSON: every key of a task that is not a stderr."""
    return sum(1 for entry in json.loads(path.read_text())["results"].values() for key in entry if "_stderr" not in key)


def good_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    for file in GOOD:
        shutil.copyfile(file, folder / file.name)
    return folder


def assert_good_files_stored(db: Path, folder: Path) -> None:
    """The good files, and nothing else, are in the store, each with every score its JSON holds."""
    with ood_store.open(db, read_only=True) as store:
        stored = store.query(
            "SELECT e.source_path, count(*) FROM evaluation_scores JOIN evaluations e USING (evaluation_id) GROUP BY 1"
        ).rows()
    assert dict(stored) == {str((folder / f.name).resolve()): score_count(f) for f in GOOD}


def rejected_lines(output: str) -> list[str]:
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Rejected: ") and line.endswith(":"))
    return [line.strip() for line in lines[start + 1 :]]


def ingest(runner, db: Path, *args: str):
    result = runner.invoke(main, ["--db", str(db), "ingest", *args])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_link_loops_in_a_searched_folder(runner, tmp_path):
    folder = good_folder(tmp_path)
    (folder / "results_self.json").symlink_to("results_self.json")  # a link to itself
    (folder / "a.json").symlink_to("b.json")  # two links to each other
    (folder / "b.json").symlink_to("a.json")
    (folder / "sub").mkdir()
    (folder / "sub" / "up").symlink_to("..")  # a link to a folder above: not followed
    db = tmp_path / "s.duckdb"
    result = ingest(runner, db, str(folder))
    assert result.exit_code == 1
    assert rejected_lines(result.output) == [
        f"{folder / name}: cannot read: {LOOP}" for name in ("a.json", "b.json", "results_self.json")
    ]
    assert_good_files_stored(db, folder)


def test_a_link_loop_named_on_the_command_line(runner, tmp_path):
    folder = good_folder(tmp_path)
    loop = folder / "loop.json"
    loop.symlink_to("loop.json")
    db = tmp_path / "s.duckdb"
    result = ingest(runner, db, str(loop), *(str(folder / f.name) for f in GOOD))
    assert result.exit_code == 1
    assert rejected_lines(result.output) == [f"{loop}: cannot read: {LOOP}"]
    assert_good_files_stored(db, folder)


def run_cli(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """``ood-store`` as a process, with a time limit: a FIFO that is opened waits for a writer forever."""
    return subprocess.run([OOD_STORE, *args], capture_output=True, text=True, timeout=120, check=False, **kwargs)


def ingest_process(tmp_path: Path, folder: Path, rejected: str, argument: str | None = None, **kwargs) -> Path:
    """Ingest ``folder`` (or ``argument``, a glob) in an ``ood-store`` process: the good files go in,
    ``rejected`` is the one line naming what is not, the exit status is 1, and nothing prints a traceback.
    Returns the store."""
    db = tmp_path / "s.duckdb"
    result = run_cli("--db", str(db), "ingest", "-q", argument or str(folder), **kwargs)
    assert "Traceback" not in result.stderr
    assert result.returncode == 1, result.stderr
    assert rejected_lines(result.stderr) == [rejected]
    assert_good_files_stored(db, folder)
    return db


def test_a_fifo_named_like_a_results_file_is_named_not_read(tmp_path):
    folder = good_folder(tmp_path)
    fifo = folder / "results_2026-01-01T00-00-00.json"
    os.mkfifo(fifo)
    db = ingest_process(tmp_path, folder, f"{fifo}: not a regular file (a FIFO): not read")
    named = run_cli("--db", str(db), "ingest", "-q", str(fifo))  # named on the command line
    assert named.returncode == 1 and rejected_lines(named.stderr) == [f"{fifo}: not a regular file (a FIFO): not read"]


def test_a_fifo_in_place_of_a_samples_file_rejects_its_results_file(tmp_path):
    folder = good_folder(tmp_path)
    evaluation = folder / "v0413"
    shutil.copytree(next(V0413.iterdir()), evaluation)
    samples = next(evaluation.glob("samples_toy_gen_*.jsonl"))
    samples.unlink()
    os.mkfifo(samples)
    ingest_process(tmp_path, folder, f"{samples}: not a regular file (a FIFO): not read")


@contextlib.contextmanager
def locked_folder(locked: Path):
    """A folder of mode 000 holding a results file, and the ``preexec_fn`` that makes it unlistable for a child.

    Run as any user but root, mode 000 is enough. Root reads every folder by its
    capabilities (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH): the ingest then runs in a
    process that has given them up before it started, so that the case is as real
    as for any other user, not skipped.
    """
    locked.mkdir()
    shutil.copyfile(pythia_files("160m")[0], locked / "160m_step0.json")
    locked.chmod(0)
    try:
        try:
            os.listdir(locked)
            privileged = True  # root, or a user with CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH
        except PermissionError:
            privileged = False
        yield reliability.give_up_reading_everything if privileged else None
    finally:
        locked.chmod(0o755)


def test_a_folder_that_cannot_be_listed_is_named(tmp_path):
    """A sub-folder of mode 000: named, exit status 1, the readable files stored."""
    folder = good_folder(tmp_path)
    locked = folder / "locked"
    with locked_folder(locked) as preexec:
        unreadable = f"{locked}: cannot read this folder: {os.strerror(errno.EACCES)}"
        ingest_process(tmp_path, folder, unreadable, preexec_fn=preexec)


@pytest.mark.parametrize("pattern", ["{root}/**/*.json", "{root}/*/*.json"])
def test_a_folder_a_glob_cannot_list_is_named(tmp_path, pattern):
    """glob.glob passes over a folder it cannot list in silence; ingest names it, as for a folder search."""
    root = tmp_path / "runs"
    root.mkdir()
    folder = good_folder(root)  # runs/in: three good files
    locked = root / "locked"
    with locked_folder(locked) as preexec:
        unreadable = f"{locked}: cannot read this folder: {os.strerror(errno.EACCES)}"
        ingest_process(root, folder, unreadable, argument=pattern.format(root=root), preexec_fn=preexec)


@pytest.mark.parametrize("which", ["results", "samples"])
def test_a_path_that_is_not_utf8_is_named(runner, tmp_path, which):
    """A name of Latin-1 bytes (0xff): the store keeps paths as text, so the file is named, not stored."""
    folder = good_folder(tmp_path)
    evaluation = folder / "v0413"
    shutil.copytree(next(V0413.iterdir()), evaluation)
    results = next(evaluation.glob("results_*.json"))
    if which == "results":
        bad = os.fsencode(results).replace(b"results_", b"results\xff_")
        os.rename(results, bad)
    else:
        samples = next(evaluation.glob("samples_toy_gen_*.jsonl"))
        bad = os.fsencode(samples).replace(b"toy_gen", b"toy_g\xffen")
        os.rename(samples, bad)
    db = tmp_path / "s.duckdb"
    result = ingest(runner, db, str(folder))
    assert result.exit_code == 1
    printed = os.fsdecode(bad).encode("utf-8", "backslashreplace").decode()  # as click prints the byte: \udcff
    assert rejected_lines(result.output) == [
        f"{printed}: the path is not UTF-8 text, which the store keeps paths as: rename it"
    ]
    assert_good_files_stored(db, folder)


def ingest_with_a_planted_fault(runner, tmp_path, monkeypatch, module, name, exc, hits):
    """Ingest the good files and a copy, ``results_planted.json``, for which ``module.name`` raises ``exc``
    (``hits`` tells from its first argument); checks that the good files are stored and the exit status 1."""
    folder = good_folder(tmp_path)
    bad = folder / "results_planted.json"
    shutil.copyfile(pythia_files("160m")[0], bad)
    original = getattr(module, name)

    def planted(first, *args):
        if hits(first):
            raise exc
        return original(first, *args)

    monkeypatch.setattr(module, name, planted)
    db = tmp_path / "s.duckdb"
    result = ingest(runner, db, str(folder))
    assert result.exit_code == 1
    assert_good_files_stored(db, folder)
    return db, bad, result


def test_an_internal_error_rejects_its_file_only_and_shows_the_traceback_with_v(runner, tmp_path, monkeypatch):
    """A bug met by one file (planted: the lm-eval reader raises for it) is named, the others go in."""
    from ood_store._ingest import formats

    planted = ZeroDivisionError("planted")
    hits = lambda path: path.endswith("results_planted.json")  # noqa: E731
    db, bad, result = ingest_with_a_planted_fault(
        runner, tmp_path, monkeypatch, formats, "parse_results", planted, hits
    )
    line = f"internal error while reading {bad}: ZeroDivisionError: planted; please report"
    assert rejected_lines(result.output) == [line]
    verbose = runner.invoke(main, ["--db", str(db), "ingest", "-v", "-q", str(bad)])
    assert verbose.exit_code == 1
    lines = verbose.output.splitlines()
    at = lines.index(f"  {line}")
    assert lines[at + 1] == "Traceback (most recent call last):" and lines[-1] == "ZeroDivisionError: planted"


def test_an_internal_error_while_storing_rejects_that_file_only(runner, tmp_path, monkeypatch):
    """A bug met while one file's rows are prepared (planted in the writer): the batch is retried file by file."""
    from ood_store._ingest import write

    hits = lambda records: any(r.path.endswith("results_planted.json") for r in records)  # noqa: E731
    _, bad, result = ingest_with_a_planted_fault(
        runner, tmp_path, monkeypatch, write, "_evaluations_frame", KeyError("planted"), hits
    )
    assert rejected_lines(result.output) == [f"internal error while storing {bad}: KeyError: 'planted'; please report"]


def test_a_broken_line_met_while_a_samples_file_is_planned_again_is_named(runner, tmp_path):
    """Line 4 lists a per-sample metric the first line does not, so the file is planned again (every metric
    its lines list, read by DuckDB); line 4,991, past the reader's first buffer, is cut short. That second
    read's refusal was an uncaught DuckDB error; it is the cut line, named."""
    folder = good_folder(tmp_path)
    evaluation = folder / "v0413"
    shutil.copytree(next(V0413.iterdir()), evaluation)
    samples = next(evaluation.glob("samples_toy_gen_2026*.jsonl"))
    base = [json.loads(line) for line in samples.read_text().splitlines()]
    lines = []
    for i in range(5000):
        line = {**base[i % len(base)], "doc_id": i}
        if i == 3:
            line["metrics"], line["novel"] = ["exact_match", "novel"], 1.0
        lines.append(json.dumps(line))
    lines[4990] = lines[4990][:50]
    samples.write_text("\n".join(lines) + "\n")
    result = ingest(runner, tmp_path / "s.duckdb", str(folder))
    assert result.exit_code == 1
    [line] = rejected_lines(result.output)
    assert line.startswith(f"{samples}: line 4991: ")
    assert_good_files_stored(tmp_path / "s.duckdb", folder)


def test_the_progress_bar_shows_a_name_as_it_is_not_as_markup(runner, tmp_path, monkeypatch):
    """In a terminal the progress bar shows each file's name: rich read ``[x]`` in one as a style tag and
    drew ``results_.json`` (and a ``[/x]`` in a run's name, which evaluate shows, as a closing tag that
    raises). TTY_COMPATIBLE=1 makes rich draw as it does in a terminal."""
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("COLUMNS", "200")  # wide enough for the name, whatever the machine's terminal
    folder = good_folder(tmp_path)
    shutil.copyfile(pythia_files("160m")[0], folder / "results_[x].json")
    result = ingest(runner, tmp_path / "s.duckdb", str(folder))
    assert result.exit_code == 0, result.output
    assert "Ingested 4 files" in result.output
    assert "results_[x].json" in result.output  # drawn by the bar, as the name is
