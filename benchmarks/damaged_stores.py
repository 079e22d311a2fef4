"""Damaged store files against every command: one line naming the file, or a run that never read the damage.

    python benchmarks/damaged_stores.py [--workdir DIR]

A store of the 27 Pythia-160M files is damaged in copies: emptied (0 bytes), truncated at
several offsets (in the file header, after the headers, at the start of the block that holds
the `evaluations` table, one page short), and with 64 bytes flipped in a database header and
in the blocks that hold `evaluations`, `evaluation_scores`, `runs` and `checkpoints` (each
found with DuckDB's `pragma_storage_info`; a flipped block fails its checksum when read).
Each damaged copy goes through query, runs, tasks, ingest (two more files), analyze, export
--sql, dump, export-eee, init, runs set, and merge (into the damaged store, and from it). A trial
holds when no traceback comes out and the command exits 1 with one line that names the damaged
file, or exits 0 having done what it does on an undamaged copy (each command is run once on one
first): the same output (the trial's folder and times aside), the same files written (by name: a
dump's and an export's contents hold times), and the store it writes (the damaged one, or the one
a merge from it goes into) holding the same rows (times aside), where a table it could not read
before, the damaged one, may stay unreadable. Exiting 0 is possible where the command did not read
the damaged part: DuckDB checks every block it reads.

Printed: one row per damage and command, then tried / held / failed and how many were refused
as damaged; the exit status is 1 when any failed. `trials(workdir)` returns the rows, for
benchmarks/reliability.py; `damage(...)` makes one damaged copy, for the tests.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
from click.testing import CliRunner
from common import PYTHIA, pythia_160m_store
from trial_table import collect, report

from ood_store._cli import main as cli

HEADERS = 3 * 4096  # DuckDB's file header and its two database headers come before the first block
KIND = "damaged store"
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*")


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


def damage(pristine: Path, name: str, target: Path, found: dict[str, Callable[[Path], None]] | None = None) -> Path:
    """A copy of ``pristine`` at ``target`` with damage ``name`` (of ``found``, by default :func:`damages`)."""
    shutil.copyfile(pristine, target)
    (found or damages(pristine))[name](target)
    return target


#: Each command's arguments after `--db STORE`; {folder} is the trial's own folder, {pristine} the undamaged store.
COMMANDS = {
    "query": ["query", "SELECT count(*), sum(value) FROM scores"],
    "runs": ["runs"],
    "tasks": ["tasks"],
    "ingest": ["ingest", "-q", *(str(p) for p in sorted((PYTHIA / "pythia-410m" / "zero-shot").glob("*.json"))[:2])],
    "analyze": ["analyze", "--in-domain", "lambada_openai", "--ood", "arc_easy,piqa,sciq"],
    "export --sql": ["export", "--sql", "SELECT run, step, task, value FROM scores ORDER BY ALL", "-f", "csv"],
    "dump": ["dump", "{folder}/dump"],
    "export-eee": ["export-eee", "{folder}/eee"],
    "init": ["init"],
    "runs set": ["runs", "set", "EleutherAI/pythia-v1.1-160m", "size=160m"],
    "merge (into it)": ["merge", "{pristine}"],
}
MERGE = "merge (from it)"
#: The store each command that writes one writes: the store itself, or (MERGE) the one it merges into.
WRITES = {"ingest": "store", "init": "store", "runs set": "store", "merge (into it)": "store", MERGE: "into"}
#: The folder each command that writes files writes.
FOLDERS = {"dump": "dump", "export-eee": "eee"}


@dataclass(frozen=True)
class Ran:
    """What a command did on a store: its exit status, its output (and the same with the trial's folder
    written {folder} and times {time}, as export's `# created:`, to compare with another trial's), and
    what it wrote: the rows of the store it writes (each table's, or why it could not be read: see
    :func:`tables`), and the names of the files in the folder it writes."""

    status: int
    output: str
    shown: str
    store: dict[str, list[str] | str] | None
    files: list[str] | None


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


def tables(db: Path) -> dict[str, list[str] | str]:
    """Every table's rows of ``db`` without its times (columns of a date or time type), as sorted text; a
    table that cannot be read (a damaged block) as DuckDB's error."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        columns = con.execute(
            "SELECT table_name, list(column_name ORDER BY ordinal_position) FILTER (WHERE data_type NOT LIKE 'TIME%' "
            "AND data_type <> 'DATE') FROM information_schema.columns JOIN information_schema.tables "
            "USING (table_catalog, table_schema, table_name) WHERE table_type = 'BASE TABLE' GROUP BY ALL"
        ).fetchall()
        out: dict[str, list[str] | str] = {}
        for table, names in sorted(columns):
            select = ", ".join(f'"{name}"' for name in names)
            try:
                out[table] = sorted(map(repr, con.execute(f'SELECT {select} FROM "{table}"').fetchall()))
            except duckdb.Error as exc:
                out[table] = f"unreadable: {str(exc).splitlines()[0][:80]}"
        return out
    finally:
        con.close()


def ran(command: str, store: Path, folder: Path, pristine: Path) -> Ran:
    """What ``command`` did on ``store`` (in ``folder``, its own)."""
    status, output = run(command, store, folder, pristine)
    target = {"store": store, "into": folder / "into.duckdb"}.get(WRITES.get(command, ""))
    written = None
    if status == 0 and target is not None:
        try:
            written = tables(target)
        except duckdb.Error as exc:
            written = {"": f"cannot be opened: {str(exc).splitlines()[0][:80]}"}
    files = None
    if command in FOLDERS and (folder / FOLDERS[command]).is_dir():
        files = sorted(str(p.relative_to(folder)) for p in (folder / FOLDERS[command]).rglob("*"))
    return Ran(status, output, TIME.sub("{time}", output.replace(str(folder), "{folder}")), written, files)


def held(done: Ran, store: Path, pristine: Ran, before: dict[str, list[str] | str] | None) -> tuple[bool, str]:
    """Whether a command's ending on a damaged ``store`` holds (see the module's docstring), and what it
    printed; ``pristine`` is what it did on an undamaged copy, ``before`` the damaged store's tables before it."""
    lines = done.output.strip().splitlines()
    if "Traceback" in done.output:
        return False, "a traceback: " + (lines[-1] if lines else "")
    if done.status == 0:
        return _as_on_the_pristine_store(done, pristine, before)
    one_line = len(lines) == 1 and lines[0].startswith("Error: ") and str(store) in lines[0]
    return one_line and done.status == 1, lines[0] if len(lines) == 1 else f"{len(lines)} lines: {lines[:2]}"


def _as_on_the_pristine_store(done: Ran, pristine: Ran, before: dict[str, list[str] | str] | None) -> tuple[bool, str]:
    """A command that exited 0 on a damaged store did what it does on the pristine one: the same output,
    the same files written, and the store it writes the same, except the tables it could not read before
    (damaged; they must still be unreadable, never rows that differ)."""
    if pristine.status != 0:
        return False, f"ran, where it exits {pristine.status} on the pristine store"
    if done.shown != pristine.shown:
        return False, f"ran, printing otherwise than on the pristine store: {done.shown.strip()[:80]!r}"
    if done.files != pristine.files:
        return False, f"ran, writing other files than on the pristine store: {done.files}"
    if done.store is not None and pristine.store is not None:
        damaged = {name for name, rows in (before or {}).items() if isinstance(rows, str)}
        differ = [
            name
            for name in sorted(set(done.store) | set(pristine.store))
            if done.store.get(name) != pristine.store.get(name)
            and not (name in damaged and isinstance(done.store.get(name), str))
        ]
        if differ:
            return False, f"ran, leaving the store otherwise than on the pristine store: {', '.join(differ)}"
    return True, "ran as on the pristine store (read nothing damaged)"


def trials(workdir: Path) -> list[tuple[str, str, bool, str]]:
    """(class, damage / command, held, detail) for every damage and command, in folders under ``workdir``."""
    pristine = make_store(Path(tempfile.mkdtemp(prefix="pristine-", dir=workdir)))
    found = damages(pristine)
    commands = [*COMMANDS, MERGE]
    undamaged = {}  # each command's run on an undamaged copy, to compare a damaged copy's run with
    for command in commands:
        folder = Path(tempfile.mkdtemp(prefix="undamaged-", dir=workdir))
        shutil.copyfile(pristine, folder / "store.duckdb")
        undamaged[command] = ran(command, folder / "store.duckdb", folder, pristine)
    rows = []
    for number, name in enumerate(found):
        for command in commands:
            folder = Path(tempfile.mkdtemp(prefix=f"{number:02d}-", dir=workdir))
            store = damage(pristine, name, folder / "store.duckdb", found)
            before = _readable(store) if WRITES.get(command) == "store" else None
            ok, detail = held(ran(command, store, folder, pristine), store, undamaged[command], before)
            rows.append((KIND, f"{name} / {command}", ok, detail))
    return rows


def _readable(store: Path) -> dict[str, list[str] | str] | None:
    """The damaged store's tables before a command writes it (None where DuckDB cannot open it at all)."""
    try:
        return tables(store)
    except duckdb.Error:
        return None


def main() -> None:
    rows = collect(trials, __doc__.splitlines()[0])
    status = report(rows)
    named = sum("the store file is damaged" in detail for _, _, _, detail in rows)
    same = sum(detail.startswith("ran as on the pristine store") for _, _, _, detail in rows)
    print(f"(refused as damaged: {named}; ran as on the pristine store, reading nothing damaged: {same})")
    sys.exit(status)


if __name__ == "__main__":
    main()
