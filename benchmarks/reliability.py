"""Reliability of ingest against hostile input (issue 17): mutated real files, SIGKILLs, concurrent writers, SQL.

    python benchmarks/reliability.py [--files 5000] [--kill-trials 20] [--concurrent-trials 5] [--seed 17]

1. **Mutated files.** ``--files`` broken copies of the repository's real lm-eval
   files and of the other formats' (Every Eval Ever files of every schema version,
   inspect_ai ``.json`` and ``.eval`` logs, W&B histories as CSV and Parquet), in
   the classes of ``benchmarks/mutations.py`` (each class the same
   number of times, in a seeded order), each in a folder of its own, mixed with
   intact copies (one for every three broken ones) into batches of ``--batch``
   folders; each batch is ingested by ``ood-store ingest`` as a process, into one
   store. A batch holds when it prints no traceback, exits 1 exactly when it
   rejects a file, names every rejection in one line that belongs to a file of
   the batch, and leaves no score or sample without its evaluation. A file holds
   when it gets what its class says (``BAD``: not stored, and named;
   ``NOT_STORED``: not stored; ``ANY``: stored whole, or else named, or skipped as
   a file in none of the formats (by their rules in ingest/formats.py); ``STORE``:
   stored) and no "internal error"
   names it. Stored means whole: every samples file's lines (a broken samples
   file's too, as many as it has left), and, where its results file is intact or
   the class is ``STORE``, the scores its source file has when ingested alone
   into a fresh store (a planted NaN or Infinity as the rule says). Run as root,
   the ingest gives up the capabilities that let root read any folder, so that
   the class of folders that cannot be listed is real.
2. **Kill trials.** An ingest of ``--kill-files`` intact copies (some with their
   samples files), committing them in batches of a tenth (ood-store's CLI with
   ``Batch.MAX_FILES`` set so, where it is 1,000), is killed with SIGKILL at a
   random moment: every other trial at any moment of a clean ingest's time, the
   others at a moment drawn evenly from the first appearance of its store file to
   its end, so that kills land before the first commit, between two and after
   the last. What the kill left must be whole batches: no row without its
   evaluation, every stored file with all its evaluations, and a whole number of
   batches of files stored (read from a copy of the store and its WAL). Then it
   is run again to the end: the store must then hold the same rows as one clean
   ingest (every table, without ids and times). Each trial says what the kill
   left: no store yet, or how many files and batches the store held and how
   large a WAL.
3. **Concurrent ingests.** Four ``ood-store ingest`` processes, each given three
   quarters of the same files, start together on one new store: each must exit 0
   with no raw lock error, and the store must hold every file once, the same
   rows as one clean ingest.
4. **The store's trials.** ``benchmarks/hostile_sql.py`` and
   ``benchmarks/damaged_stores.py`` (issue 17, items 3 and 4), where present:
   their ``trials(workdir)`` rows (``--ingest-only`` leaves them out).

Prints what failed, then a table, class / tried / held / failed
(benchmarks/trial_table.py); the exit status is 1 when anything failed.
``--files 5000 --kill-trials 20`` is the full run; the test suite runs a small
one (tests/test_reliability.py).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib
import importlib.util
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mutations  # noqa: E402
import trial_table  # noqa: E402
from common import OOD_STORE, fresh  # noqa: E402
from mutations import ANY, BAD, NOT_STORED, STORE, Item  # noqa: E402

ITEM = re.compile(r"[/\\](item\d+)(?:[/\\]|$)")
RAW_LOCK_ERRORS = ("Could not set lock", "Conflicting lock", "IO Error")
# The rows a store holds, without ids and times, each evaluation by its content hash.
CANONICAL = {
    "evaluations": "SELECT * EXCLUDE (evaluation_id, ingested_at) FROM evaluations",
    "evaluation_scores": "SELECT e.content_hash, s.* EXCLUDE (evaluation_id) "
    "FROM evaluation_scores s JOIN evaluations e USING (evaluation_id)",
    "samples": "SELECT e.content_hash, s.* EXCLUDE (evaluation_id) "
    "FROM samples s JOIN evaluations e USING (evaluation_id)",
    "runs": "SELECT * EXCLUDE (created_at) FROM runs",
    "checkpoints": "SELECT * FROM checkpoints",
}
# Rows whose evaluation is not in the store (a file half stored).
ORPHANS = (
    "SELECT (SELECT count(*) FROM evaluation_scores WHERE evaluation_id NOT IN (SELECT evaluation_id FROM evaluations))"
    " + (SELECT count(*) FROM samples WHERE evaluation_id NOT IN (SELECT evaluation_id FROM evaluations))"
)
# Every evaluation with its scores, keyed by step (a W&B history holds many) and (task, shots, metric,
# filter); an evaluation without scores as one row of NULLs (task NULL).
SCORES = (
    "SELECT e.source_path, e.step, s.task, s.num_fewshot, s.metric, s.filter, s.value, s.stderr, s.n_samples, "
    "s.is_group, s.higher_is_better, s.task_version "
    "FROM evaluations e LEFT JOIN evaluation_scores s USING (evaluation_id)"
)
KEY = 5  # step, task, num_fewshot, metric, filter


class Trials:
    """Every trial as a row of benchmarks/trial_table.py, ``(class, trial, held, detail)``, classes in the
    order they are registered (or first met)."""

    def __init__(self) -> None:
        self.rows: list[trial_table.Row] = []
        self.order: dict[str, int] = {}

    def register(self, classes: list[str]) -> None:
        for cls in classes:
            self.order.setdefault(cls, len(self.order))

    def add(self, cls: str, trial: str, failure: str | None = None) -> None:
        self.register([cls])
        self.rows.append((cls, trial, failure is None, failure or "held"))

    def sorted(self) -> list[trial_table.Row]:
        """Every row, its class's in the order the classes were registered."""
        return sorted(self.rows, key=lambda row: self.order[row[0]])


# --- running ood-store --------------------------------------------------------------------------


# prctl(2) options and the capabilities that let root read any folder (linux/prctl.h, linux/capability.h).
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2


def give_up_reading_everything() -> None:
    """In a child before exec: leave CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH out of the bounding set (and
    clear the ambient set), so that the program runs as any user would, unable to list a folder of mode 000."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)


def reading_restriction(workdir: Path) -> tuple[Any, bool]:
    """The preexec function that makes folders of mode 000 unreadable to ood-store, and whether there is one."""
    probe = workdir / "probe"
    probe.mkdir()
    probe.chmod(0)
    try:
        os.listdir(probe)
    except PermissionError:
        return None, True  # not root: mode 000 is enough
    finally:
        probe.chmod(0o755)
        probe.rmdir()
    try:
        subprocess.run(["true"], preexec_fn=give_up_reading_everything, check=True)
    except (subprocess.SubprocessError, OSError):
        return None, False
    return give_up_reading_everything, True


#: ``ood-store`` itself, its ingest committing every {} files instead of every Batch.MAX_FILES (1,000).
SMALL_BATCHES = (
    "from ood_store._ingest import pipeline; pipeline.Batch.MAX_FILES = {}; "
    "from ood_store._cli import main; main(prog_name='ood-store')"
)


def ingest_command(db: Path, *paths: Path, batch_files: int | None = None) -> list[str]:
    """``ood-store ingest -q`` of ``paths`` into ``db``; with ``batch_files``, committing every that many files."""
    program = [OOD_STORE] if batch_files is None else [sys.executable, "-c", SMALL_BATCHES.format(batch_files)]
    return [*program, "--db", str(db), "--lock-timeout", "600", "ingest", "-q", *map(str, paths)]


def ingest(db: Path, *paths: Path, preexec: Any = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        ingest_command(db, *paths),
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=timeout,
        preexec_fn=preexec,
    )


def query(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def canonical(db: Path) -> dict[str, list[str]]:
    """Every table's rows without ids and times, as sorted text (NaN equal to NaN)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {name: sorted(map(repr, con.execute(sql).fetchall())) for name, sql in CANONICAL.items()}
    finally:
        con.close()


# --- 1. mutated files -----------------------------------------------------------------------------


def reference_scores(workdir: Path) -> dict[str, dict[tuple, tuple]]:
    """Every source file's scores, ingested intact into a fresh store: its resolved path -> key -> values."""
    sources = sorted({
        *mutations.RESULTS_SOURCES, *(next(f.glob("results_*.json")) for f in mutations.FOLDER_SOURCES),
        *mutations.EEE_SOURCES, *mutations.INSPECT_JSON_SOURCES, *mutations.INSPECT_EVAL_SOURCES,
        mutations.WANDB_CSV, mutations.WANDB_PARQUET,
    })  # fmt: skip
    db = fresh(workdir / "reference.duckdb")
    result = ingest(db, *sources)
    if result.returncode != 0:
        raise SystemExit(f"the intact sources do not ingest:\n{result.stderr}")
    out: dict[str, dict[tuple, tuple]] = defaultdict(dict)
    for path, *score in query(db, SCORES):
        if score[1] is not None:
            out[path][tuple(score[:KEY])] = tuple(score[KEY:])
    return out


def plan(rng: random.Random, files: int, kinds: list[mutations.Kind]) -> list[mutations.Kind]:
    """``files`` broken items (each class in turn) and one intact item for every three, in a seeded order."""
    chosen = [kinds[i % len(kinds)] for i in range(files)] + [mutations.GOOD_KIND] * max(1, files // 3)
    rng.shuffle(chosen)
    return chosen


BATCHES = "batches: no traceback, exit status, one line each"
KILLS = "SIGKILL, then ingest again"
CONCURRENT = "4 concurrent ingests"


def run_batch(db: Path, folder: Path, items: list[Item], reference, preexec, timeout: float, table: Trials) -> None:
    """Ingest one batch folder and judge it, and each item in it."""
    start = time.monotonic()
    try:
        result = ingest(db, folder, preexec=preexec, timeout=timeout)
    except subprocess.TimeoutExpired:
        table.add(BATCHES, folder.name, f"did not finish in {timeout:g} s")
        for item in items:
            table.add(item.cls, item.name, "its batch did not finish")
        return
    output = result.stdout + result.stderr
    rejections, unattributed = _rejections(result.stderr)
    problems = []
    if "Traceback" in output:
        problems.append("a traceback")
    if result.returncode != (1 if rejections or unattributed else 0):
        problems.append(f"exit status {result.returncode} with {len(rejections)} rejections")
    problems += [f"a rejection not of one of its files: {line!r}" for line in unattributed]
    orphans = query(db, ORPHANS)[0][0]
    if orphans:
        problems.append(f"{orphans} rows without their evaluation")
    seconds = time.monotonic() - start
    table.add(BATCHES, folder.name, "; ".join(problems) or None)

    stored = _stored(db, folder)
    for item in items:
        failure = judge(item, stored.get(item.name), rejections.get(item.name, []), reference)
        if "Traceback" in output and failure is None and item.expect != BAD:
            failure = "its batch printed a traceback"
        table.add(item.cls, f"{item.name} (from {item.source.name})", failure)
    print(f"  {folder.name}: {len(items)} items in {seconds:.1f} s, exit status {result.returncode}", flush=True)


def _rejections(stderr: str) -> tuple[dict[str, list[str]], list[str]]:
    """The rejection lines by item, and the lines that name no item of the batch."""
    lines = stderr.splitlines()
    start = next((i for i, line in enumerate(lines) if re.fullmatch(r"Rejected: [\d,]+ files?:", line)), None)
    by_item: dict[str, list[str]] = defaultdict(list)
    unattributed = []
    for line in lines[start + 1 :] if start is not None else []:
        match = ITEM.search(line)
        if line.startswith("  ") and match:
            by_item[match.group(1)].append(line.strip())
        else:
            unattributed.append(line)
    return by_item, unattributed


def _stored(db: Path, folder: Path) -> dict[str, dict[str, Any]]:
    """What the store holds of each item of a batch: its evaluations' scores and samples rows by task."""
    out: dict[str, dict[str, Any]] = {}
    prefix = str(folder.resolve()) + os.sep
    for path, *score in query(db, SCORES):
        if path.startswith(prefix):
            match = ITEM.search(path[len(prefix) - 1 :])
            if match:
                out.setdefault(match.group(1), {"scores": {}, "samples": {}, "paths": set()})
                out[match.group(1)]["paths"].add(path)
                if score[1] is not None:  # not the NULL row of an evaluation without scores
                    out[match.group(1)]["scores"][tuple(score[:KEY])] = tuple(score[KEY:])
    samples = query(
        db,
        "SELECT e.source_path, s.task, count(*) FROM samples s JOIN evaluations e USING (evaluation_id) GROUP BY ALL",
    )
    for path, task, rows in samples:
        match = ITEM.search(path[len(prefix) - 1 :]) if path.startswith(prefix) else None
        if match and match.group(1) in out:
            out[match.group(1)]["samples"][task] = rows
    return out


def judge(item: Item, stored: dict[str, Any] | None, named: list[str], reference) -> str | None:
    """Why ``item`` did not get what its class says (None: it held)."""
    internal = [line for line in named if line.startswith("internal error")]
    if internal:
        return internal[0]
    if stored is not None and len(stored["paths"]) > 1:  # (a W&B history's evaluations share its path)
        return f"{len(stored['paths'])} evaluations stored"
    if item.expect == BAD:
        if stored is not None:
            return "stored"
        return None if named else "neither stored nor named"
    if item.expect == NOT_STORED:
        return "stored" if stored is not None else None
    if stored is None:
        if item.expect == STORE:
            return "not stored"
        # ANY: not stored is rejected, and named; or skipped, where the file is no results file at all
        return None if named or _not_a_results_file(item) else "neither stored nor named"
    if named:
        return f"stored, and named: {named[0]}"
    if not stored["scores"]:
        return "an evaluation without scores"
    # Stored whole: every samples file's lines, the broken one's too (a samples file the ingest cannot read
    # rejects its results file, so a stored item has read it, and all of it).
    expected_samples = dict(item.samples)
    if item.broken_samples is not None:
        expected_samples[item.broken_samples[0]] = item.broken_samples[1]
    missing = {task: lines for task, lines in expected_samples.items() if stored["samples"].get(task, 0) != lines}
    if missing:
        task = next(iter(missing))
        return f"stored with {stored['samples'].get(task, 0)} of the {missing[task]} samples of {task}"
    if item.results_mutated and item.expect == ANY:
        return None  # a broken results file stored: whatever scores it still holds
    return _same_scores(item, stored["scores"], reference[str(item.source.resolve())])


def _not_a_results_file(item: Item) -> bool:
    """Whether the item's file is in none of the formats ingest reads, which skips it: by the formats'
    rules (ingest/formats.py: a W&B run file, a zip archive or CSV/Parquet that is no log or history, JSON
    without a top-level ``results``, without EEE's ``schema_version``/``model_info``/``evaluation_results``
    and without an ``eval`` naming a ``task``), written again here."""
    files = [p for p in item.folder.iterdir() if p.suffix in (".json", ".eval", ".csv", ".parquet", ".wandb")]
    if len(files) != 1:
        return False
    path = files[0]
    data = path.read_bytes()
    if data.startswith(b":W&B"):
        return True
    if path.suffix == ".eval":
        return False  # always read as an inspect_ai log, and named when it cannot be
    if path.suffix in (".csv", ".parquet"):
        return "_step" not in _columns(path)
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return False  # not JSON: it must be named
    if not isinstance(doc, dict):
        return True
    inspect = isinstance(doc.get("eval"), dict) and "task" in doc["eval"]
    eee = all(key in doc for key in ("schema_version", "model_info", "evaluation_results"))
    return not (inspect or eee or isinstance(doc.get("results"), dict))


def _columns(path: Path) -> list[str]:
    """A history's column names; none where it cannot be read as CSV or Parquet."""
    import polars as pl

    try:
        if path.suffix == ".parquet":
            return list(pl.read_parquet_schema(path))
        return pl.read_csv(path, n_rows=0).columns
    except Exception:  # polars' errors of a file that is no table
        return []


def _same_scores(item: Item, got: dict[tuple, tuple], expected: dict[tuple, tuple]) -> str | None:
    """A STORE item's scores against its source's (a planted value replacing its source's)."""
    expected = dict(expected)
    if item.planted is not None:
        task, metric, filt, column, value, *step = item.planted
        key = next(
            (k for k in expected if (k[1], k[3], k[4]) == (task, metric, filt) and (not step or k[0] == step[0])), None
        )
        if key is None:
            return f"the planted score {task} {metric},{filt} is not a score of the source"
        row = list(expected[key])
        row[0 if column == "value" else 1] = value
        expected[key] = tuple(row)
    if got == expected:
        return None
    wrong = sorted(set(got) ^ set(expected) or {k for k in got if got[k] != expected[k]}, key=repr)
    first = wrong[0]
    return f"{len(wrong)} scores differ from its source's, e.g. {first}: {got.get(first)} != {expected.get(first)}"


def mutated_files(args, workdir: Path, table: Trials) -> None:
    preexec, unreadable = reading_restriction(workdir)
    if not unreadable:
        print("Note: the class of folders that cannot be listed is left out: root here cannot give up reading them.")
    rng = random.Random(args.seed)
    reference = reference_scores(workdir)
    classes = mutations.kinds(unreadable_folders=unreadable)
    table.register([BATCHES, *(kind.name for kind in classes), mutations.GOOD])
    kinds = plan(rng, args.files, classes)
    db = fresh(workdir / "mutated.duckdb")
    print(f"1. {args.files:,} broken files and {len(kinds) - args.files:,} intact ones, in batches of {args.batch}:")
    for start in range(0, len(kinds), args.batch):
        folder = workdir / f"batch{start // args.batch:03d}"
        items = [
            mutations.write_item(rng, kind, folder / f"item{start + i:05d}")
            for i, kind in enumerate(kinds[start : start + args.batch])
        ]
        try:
            run_batch(db, folder, items, reference, preexec, args.timeout, table)
        finally:
            mutations.unlock(folder)
            shutil.rmtree(folder, ignore_errors=True)


# --- 2. kill trials and 3. concurrent ingests --------------------------------------------------------


def corpus(workdir: Path, files: int, seed: int) -> list[Path]:
    """``files`` intact copies (a tenth with their samples files), each in a folder of its own."""
    rng = random.Random(seed)
    root = workdir / "corpus"
    folders = []
    for i in range(files):
        item = mutations.write_item(rng, mutations.GOOD_KIND, root / f"item{i:05d}")
        folders.append(item.folder)
    return folders


#: The killed ingest commits its files in about this many batches (the clean one's too), so that a kill
#: lands before the first commit, between two, or after the last.
KILL_COMMITS = 10


@dataclass(frozen=True)
class Clean:
    """The corpus of the kill and concurrency trials, and its clean ingest (committing every ``batch_files``
    files): the rows it left, how many evaluations each file gave, how long it took, and when its store
    file first appeared (the schema's commit, before any file's: kills from then on land among the commits)."""

    folders: list[Path]
    rows: dict[str, list[str]]
    evaluations: dict[str, int]  # source path -> evaluations
    batch_files: int
    seconds: float
    first_commit: float


def _size(path: Path) -> int:
    """Bytes of ``path``, 0 when it is not there (DuckDB removes its WAL at a checkpoint: no exists() first)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def clean_ingest(args, workdir: Path) -> Clean:
    folders = corpus(workdir, args.kill_files, args.seed + 1)
    batch_files = -(-len(folders) // KILL_COMMITS)
    db = fresh(workdir / "clean.duckdb")
    files = (db, db.with_name(db.name + ".wal"))
    start = time.monotonic()
    command = ingest_command(db, folders[0].parent, batch_files=batch_files)
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first_commit = None  # seconds from the start to the first moment the store's files held any bytes
    while process.poll() is None:
        if first_commit is None and sum(map(_size, files)):
            first_commit = time.monotonic() - start
        time.sleep(0.005)
    seconds = time.monotonic() - start
    if process.returncode != 0:
        raise SystemExit(f"the clean ingest of the trials' corpus failed:\n{process.stderr.read()}")
    evaluations = dict(query(db, "SELECT source_path, count(*) FROM evaluations GROUP BY ALL"))
    return Clean(folders, canonical(db), evaluations, batch_files, seconds, first_commit or 0.0)


def kill_trials(args, workdir: Path, clean: Clean, table: Trials) -> None:
    """SIGKILL an ingest, then run it again: every other trial at any moment, the others while it commits."""
    root = clean.folders[0].parent
    batches = -(-len(clean.folders) // clean.batch_files)
    print(
        f"2. {args.kill_trials} kill trials: a clean ingest of {len(clean.folders)} files in {batches} commits of "
        f"{clean.batch_files} files takes {clean.seconds:.1f} s, its store appearing at {clean.first_commit:.2f} s:",
        flush=True,
    )
    rng = random.Random(args.seed + 2)
    for trial in range(args.kill_trials):
        db = fresh(workdir / "killed.duckdb")
        anytime, among_the_commits = rng.uniform(0.05, 1.0), rng.uniform(clean.first_commit, clean.seconds)
        at = anytime * clean.seconds if trial % 2 else among_the_commits
        process = subprocess.Popen(
            ingest_command(db, root, batch_files=clean.batch_files),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(at)
        finished = process.poll() is not None
        process.send_signal(signal.SIGKILL)
        process.wait()
        left, problems = ("it had finished", []) if finished else _left_by_kill(db, workdir / "kill-copy", clean)
        again = ingest(db, root)
        if again.returncode != 0 or "Traceback" in again.stderr:
            problems.append(f"the rerun exited {again.returncode}: {again.stderr.strip()[-300:]}")
        else:
            problems += _differences(canonical(db), clean.rows)
        verdict = "; ".join(problems) or "whole batches left, and the rerun's store equals the clean one"
        print(f"  trial {trial}: killed at {at:.2f} s ({left}): {verdict}", flush=True)
        table.add(KILLS, f"trial {trial}, killed at {at:.2f} s ({left})", verdict if problems else None)


def _left_by_kill(db: Path, scratch: Path, clean: Clean) -> tuple[str, list[str]]:
    """What a killed ingest left (no store, or how many batches its store holds and the WAL), and what is
    wrong with it: rows without their evaluation, a file stored in part, or files that are not a whole
    number of the batches it commits (the batches are flushed by bytes of samples too, at 1 GiB, which
    these files never reach). Read from a copy, WAL and all, so that the rerun meets the files as the
    kill left them."""
    wal = db.with_name(db.name + ".wal")
    if not db.exists():
        return "no store file yet", []
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    shutil.copyfile(db, scratch / db.name)
    with contextlib.suppress(FileNotFoundError):
        shutil.copyfile(wal, scratch / wal.name)
    wal_bytes = _size(scratch / wal.name)
    try:
        con = duckdb.connect(str(scratch / db.name))
        try:
            tables = {name for (name,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
            if "evaluations" not in tables:
                return "no tables yet", []
            stored = dict(con.execute("SELECT source_path, count(*) FROM evaluations GROUP BY ALL").fetchall())
            orphans = con.execute(ORPHANS).fetchone()[0]
        finally:
            con.close()
    except duckdb.Error as exc:
        return "a store DuckDB cannot open", [f"DuckDB cannot open it: {str(exc).splitlines()[0][:100]}"]
    problems = [f"{orphans} rows without their evaluation"] if orphans else []
    part = sorted(path for path, n in stored.items() if n != clean.evaluations.get(path))
    if part:
        problems.append(f"{len(part)} files stored otherwise than by the clean ingest, e.g. {part[0]}")
    if len(stored) % clean.batch_files and len(stored) != len(clean.folders):
        problems.append(f"{len(stored)} files stored: not whole batches of {clean.batch_files}")
    batches = f"{len(stored) / clean.batch_files:g} x {clean.batch_files}"
    left = f"{len(stored)} files = {batches}, {sum(stored.values())} evaluations"
    return left + (f", a WAL of {wal_bytes / 1e6:.2f} MB" if wal_bytes else ""), problems


def _differences(got: dict[str, list[str]], expected: dict[str, list[str]]) -> list[str]:
    differ = [name for name in expected if got[name] != expected[name]]
    return [f"tables differ from a clean ingest's: {', '.join(differ)}"] if differ else []


CONCURRENT_TIMEOUT = 1800


def concurrent_trials(args, workdir: Path, clean: Clean, table: Trials) -> None:
    folders, expected = clean.folders, clean.rows
    print(
        f"3. {args.concurrent_trials} trials of 4 concurrent ingests, each of 3/4 of {len(folders)} files", flush=True
    )
    for trial in range(args.concurrent_trials):
        db = fresh(workdir / "concurrent.duckdb")
        processes = []
        for k in range(4):
            mine = [f for i, f in enumerate(folders) if (i + trial) % 4 != k]
            command = ingest_command(db, *mine)
            processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        problems = []
        deadline = time.monotonic() + CONCURRENT_TIMEOUT
        for k, process in enumerate(processes):
            try:
                out, err = process.communicate(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for each in processes:
                    each.kill()
                for each in processes:
                    each.communicate()
                problems.append(f"process {k} had not finished after {CONCURRENT_TIMEOUT} s: all four killed")
                break
            if process.returncode != 0 or "Traceback" in out + err or any(e in out + err for e in RAW_LOCK_ERRORS):
                problems.append(f"process {k} exited {process.returncode}: {(out + err).strip()[-300:]}")
        if not problems:
            problems += _differences(canonical(db), expected)
        table.add(CONCURRENT, f"trial {trial}", "; ".join(problems) or None)


# --- 4. hostile SQL -------------------------------------------------------------------------------


#: The store's own trials (issue 17, items 3 and 4): module, what they try, and why one would be missing.
STORE_TRIALS = (
    ("hostile_sql", "hostile SQL attempts", "the SQL sandbox"),
    ("damaged_stores", "commands on damaged store files", "damaged stores"),
)


def store_trials(workdir: Path, table: Trials) -> None:
    """The rows of benchmarks/hostile_sql.py's and damaged_stores.py's ``trials``, where those modules are."""
    for number, (name, what, item) in enumerate(STORE_TRIALS, start=4):
        if importlib.util.find_spec(name) is None:
            print(f"{number}. Not run: benchmarks/{name}.py ({item}, issue 17) is not on this branch.")
            continue
        folder = workdir / name
        folder.mkdir()
        rows = importlib.import_module(name).trials(folder)
        print(f"{number}. {len(rows)} {what} (benchmarks/{name}.py)", flush=True)
        for cls, trial, held, detail in rows:
            table.add(cls, trial, None if held else detail)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000, help="Broken files to ingest (default 5,000).")
    parser.add_argument("--batch", type=int, default=500, help="Folders per ingest (default 500).")
    parser.add_argument("--kill-trials", type=int, default=20, help="SIGKILL trials (default 20).")
    parser.add_argument("--kill-files", type=int, default=500, help="Files of the killed ingest (default 500).")
    parser.add_argument("--concurrent-trials", type=int, default=5, help="Trials of 4 concurrent ingests (default 5).")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--timeout", type=float, default=600, help="Seconds an ingest may take (default 600).")
    parser.add_argument(
        "--ingest-only", action="store_true", help="Leave out the SQL and damaged-store trials (their tests run them)."
    )
    parser.add_argument("--workdir", type=Path, help="Where to write (default: a new temporary folder, removed after).")
    return parser


def rows(argv: list[str] | None = None) -> list[trial_table.Row]:
    """Every trial of a run with these command-line arguments, as the table's rows ``(class, trial, held,
    detail)``, classes in order (what ``main`` prints, and the tests read)."""
    args = parser().parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="ood-store-reliability-"))
    workdir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    table = Trials()
    try:
        mutated_files(args, workdir, table)
        if args.kill_trials or args.concurrent_trials:
            clean = clean_ingest(args, workdir)
            kill_trials(args, workdir, clean, table)
            concurrent_trials(args, workdir, clean, table)
        if not args.ingest_only:
            store_trials(workdir, table)
    finally:
        if args.workdir is None:
            mutations.unlock(workdir)
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"\nseed {args.seed}, {time.monotonic() - start:.0f} s\n")
    return table.sorted()


def main() -> None:
    sys.exit(trial_table.report(rows(), every_row=False))


if __name__ == "__main__":
    main()
