"""Damaged store files against every command: one line naming the file, or a run that never read the damage.

    python benchmarks/damaged_stores.py [--workdir DIR]

A store of the 27 Pythia-160M files is damaged in copies: emptied (0 bytes), truncated at
several offsets (in the file header, after the headers, at the start of the block that holds
the `evaluations` table, one page short), and with 64 bytes flipped in a database header and
in the blocks that hold `evaluations`, `evaluation_scores`, `runs` and `checkpoints` (each
found with DuckDB's `pragma_storage_info`; a flipped block fails its checksum when read).
Each damaged copy goes through query, runs, tasks, ingest (two more files), analyze, export
--sql, dump, export-eee, init, runs set, and merge (into the damaged store, and from it). A trial
holds when the command exits 0 (it did not read the damaged part: DuckDB checks every block it
reads) or exits 1 with one line that names the damaged file, and no traceback comes out.

Printed: one row per damage and command, then tried / held / failed and how many were refused
as damaged; the exit status is 1 when any failed. `trials(workdir)` returns the rows, for
benchmarks/reliability.py; `damage(...)` makes one damaged copy, for the tests.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import duckdb
from click.testing import CliRunner
from common import PYTHIA, pythia_160m_store
from trial_table import collect, report

from ood_store.cli import main as cli

HEADERS = 3 * 4096  # DuckDB's file header and its two database headers come before the first block
KIND = "damaged store"


def make_store(folder: Path) -> Path:
    """The store to damage: the 27 Pythia-160M files, closed (everything checkpointed into the file)."""
    return pythia_160m_store(folder)


def block_offset(db: Path, table: str) -> int:
    """Where the first block holding ``table``'s data starts in the file ``db``."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        block_size = con.execute("SELECT block_size FROM pragma_database_size()").fetchall()[0][0]
        blocks = con.execute(
            "SELECT min(block_id) FROM pragma_storage_info($table) WHERE block_id >= 0", {"table": table}
        ).fetchall()
    finally:
        con.close()
    return HEADERS + int(blocks[0][0]) * int(block_size)


def damages(db: Path) -> dict[str, Callable[[Path], None]]:
    """Each damage by name: a function that damages a copy of ``db`` in place."""
    size = db.stat().st_size
    found: dict[str, Callable[[Path], None]] = {"zero bytes": lambda path: path.write_bytes(b"")}
    for name, length in (
        ("truncated in the file header", 100),
        ("truncated after the headers", HEADERS),
        ("truncated at the evaluations block", block_offset(db, "evaluations")),
        ("truncated by one page", size - 4096),
    ):
        found[name] = lambda path, length=length: truncate(path, length)
    found["flipped: a database header"] = lambda path: flip(path, 4096 + 100)
    for table in ("evaluations", "evaluation_scores", "runs", "checkpoints"):
        at = block_offset(db, table) + 100  # past the block's checksum
        found[f"flipped: the {table} block"] = lambda path, at=at: flip(path, at)
    return found


def truncate(path: Path, length: int) -> None:
    with path.open("r+b") as file:
        file.truncate(length)


def flip(path: Path, offset: int, length: int = 64) -> None:
    """Invert ``length`` bytes at ``offset``: the block there no longer matches its checksum."""
    with path.open("r+b") as file:
        file.seek(offset)
        data = file.read(length)
        file.seek(offset)
        file.write(bytes(b ^ 0xFF for b in data))


def damage(pristine: Path, name: str, target: Path) -> Path:
    """A copy of ``pristine`` at ``target`` with damage ``name`` (of :func:`damages`)."""
    shutil.copyfile(pristine, target)
    damages(pristine)[name](target)
    return target


#: Each command's arguments after `--db STORE`; {folder} is the trial's own folder, {pristine} the undamaged store.
COMMANDS = {
    "query": ["query", "SELECT count(*), sum(value) FROM scores"],
    "runs": ["runs"],
    "tasks": ["tasks"],
    "ingest": ["ingest", "-q", *(str(p) for p in sorted((PYTHIA / "pythia-410m" / "zero-shot").glob("*.json"))[:2])],
    "analyze": ["analyze", "--in-domain", "lambada_openai", "--ood", "arc_easy,piqa,sciq"],
    "export --sql": ["export", "--sql", "SELECT run, step, task, value FROM scores", "-f", "csv"],
    "dump": ["dump", "{folder}/dump"],
    "export-eee": ["export-eee", "{folder}/eee"],
    "init": ["init"],
    "runs set": ["runs", "set", "EleutherAI/pythia-v1.1-160m", "size=160m"],
    "merge (into it)": ["merge", "{pristine}"],
}
MERGE = "merge (from it)"


def run(command: str, store: Path, folder: Path, pristine: Path) -> tuple[int, str]:
    """(exit status, output) of ``command`` (a key of COMMANDS, or MERGE) on the damaged ``store``."""
    if command == MERGE:
        args = ["--db", str(folder / "into.duckdb"), "merge", str(store)]
    else:
        args = ["--db", str(store), *(arg.format(folder=folder, pristine=pristine) for arg in COMMANDS[command])]
    result = CliRunner().invoke(cli, args)
    output = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        output += f"\nTraceback: {type(result.exception).__name__}: {result.exception}"
    return result.exit_code, output


def held(status: int, output: str, store: Path) -> tuple[bool, str]:
    """Whether a command's ending holds (see the module's docstring), and what it printed."""
    lines = output.strip().splitlines()
    if "Traceback" in output:
        return False, "a traceback: " + (lines[-1] if lines else "")
    if status == 0:
        return True, "ran (read nothing damaged)"
    one_line = len(lines) == 1 and lines[0].startswith("Error: ") and str(store) in lines[0]
    return one_line and status == 1, lines[0] if len(lines) == 1 else f"{len(lines)} lines: {lines[:2]}"


def trials(workdir: Path) -> list[tuple[str, str, bool, str]]:
    """(class, damage / command, held, detail) for every damage and command, in folders under ``workdir``."""
    pristine = make_store(Path(tempfile.mkdtemp(prefix="pristine-", dir=workdir)))
    rows = []
    for number, name in enumerate(damages(pristine)):
        for command in [*COMMANDS, MERGE]:
            folder = Path(tempfile.mkdtemp(prefix=f"{number:02d}-", dir=workdir))
            store = damage(pristine, name, folder / "store.duckdb")
            status, output = run(command, store, folder, pristine)
            ok, detail = held(status, output, store)
            rows.append((KIND, f"{name} / {command}", ok, detail))
    return rows


def main() -> None:
    rows = collect(trials, __doc__.splitlines()[0])
    status = report(rows)
    named = sum("the store file is damaged" in detail for _, _, _, detail in rows)
    ran = sum(detail.startswith("ran") for _, _, _, detail in rows)
    print(f"(refused as damaged: {named}; ran, reading nothing damaged: {ran})")
    sys.exit(status)


if __name__ == "__main__":
    main()
