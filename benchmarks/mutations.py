"""Broken copies of the repository's real lm-eval files, by class, for ``benchmarks/reliability.py``.

Each class writes one *item*: a folder holding a copy of one real results file
(with its samples files when the source has them), broken in one way, or a
thing on disk that is not a file to read (a FIFO, a link loop, a folder that
cannot be listed). It says what ``ingest`` must do with it:

* ``BAD``: reject it, named in one line (the file, or a file or folder of its
  item), nothing stored;
* ``NOT_STORED``: store nothing (reject it, or skip it as not a results file);
* ``ANY``: store it whole or not at all (the mutation may leave a valid file);
* ``STORE``: store it with the scores of its source, except a score the
  mutation planted (``Item.planted``: where, and the value it must have).

The sources are the repository's real lm-eval files (tests/fixtures/lm-eval-real,
tests/fixtures/lm-eval-0.4.13: Pythia v0.3, lm-eval 0.4 results, and results
with their per-sample files). Each copy gets a key of its own in ``config``
(so that no two copies have the same content) before it is broken. Everything
is seeded: the same generator writes the same bytes.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import REAL, V0413

# Results files without their samples (the evaleval file's samples are its folder source's).
RESULTS_SOURCES = sorted(REAL.rglob("*.json"))
# Results files with their per-sample files beside them.
FOLDER_SOURCES = [
    *sorted(V0413.iterdir()),
    REAL / "v0.4" / "evaleval" / "lm_eval",
]

BAD, NOT_STORED, ANY, STORE = "BAD", "NOT_STORED", "ANY", "STORE"

# Values a mutation writes in place of another (the fuzz test's, and more).
ODD_VALUES: list[Any] = [None, True, "N/A", "", "x", 0, -1, 1.5, 10**30, [], [1, "a"], {}, {"a": 1}, "1e5", -0.0]
# Numeric literals beyond a DOUBLE (the README: a bad value, wherever it is).
TOO_LARGE = ["1e999", "-1e999", "1e400", "1" + "0" * 400, "9" * 4301, "-" + "7" * 5000, "2e308"]
NON_FINITE = {"NaN": None, "Infinity": float("inf"), "-Infinity": float("-inf")}
SURROGATES = ["\\ud800", "\\udfff", "\\udc00", "\\ud83d"]
MARK = "@@MARK@@"  # written where a literal goes, then replaced in the text (no fixture holds it)
PNG = b"\x89PNG\r\n\x1a\n"  # 0x89 cannot start UTF-8


@dataclass
class Item:
    """One broken (or intact) copy, in its own folder, and what ingest must do with it."""

    name: str
    cls: str
    expect: str
    folder: Path
    source: Path  # the fixture results file it copies (for the reference scores)
    samples: dict[str, int] = field(default_factory=dict)  # task -> lines, of the samples files left intact
    planted: tuple[str, str, str, str, float | None] | None = None  # task, metric, filter, column, value
    results_mutated: bool = False  # its results file is broken (else it holds its source's scores)
    broken_samples: tuple[str, int] | None = None  # the broken samples file's task and lines, as broken


@dataclass(frozen=True)
class Kind:
    """A class of breakage: its name, what ingest must do, and the writer of one item."""

    name: str
    expect: str
    write: Callable[[random.Random, Item], None]


# --- helpers on parsed JSON ----------------------------------------------------------------------


def slots(doc: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) of a parsed document, outermost first."""
    out: list[tuple[Any, Any]] = []
    stack = [doc]
    while stack:
        node = stack.pop(0)
        pairs = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in pairs:
            out.append((node, key))
            if isinstance(value, dict | list):
                stack.append(value)
    return out


def score_slots(doc: dict[str, Any], stderr: bool) -> list[tuple[dict, str, str, str, str]]:
    """(entry, key, task, metric, filter) of each numeric score (or stderr of a score) of ``results``.

    By the formats' definitions (tests/fixtures/lm-eval-real/README.md): v0.4 keys
    are ``metric,filter`` (a file is v0.4 when any key has a comma), v0.3 keys
    have no filter (``none``); a stderr is the metric's key with ``_stderr``.
    """
    entries = {t: e for t, e in (doc.get("results") or {}).items() if isinstance(e, dict)}
    v04 = any("," in key for entry in entries.values() for key in entry)
    out = []
    for task, entry in entries.items():
        for key, value in entry.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or (v04 and "," not in key):
                continue
            if key in ("sample_len", "sample_count") or ("_stderr" in key) != stderr:
                continue
            name, _, filt = key.rpartition(",") if v04 else (key, ",", "none")
            metric = name.removesuffix("_stderr")
            score_key = f"{metric},{filt}" if v04 else metric
            if stderr and not isinstance(entry.get(score_key), int | float):
                continue
            out.append((entry, key, task, metric, filt))
    return out


def strings(doc: Any) -> list[tuple[Any, Any]]:
    return [(c, k) for c, k in slots(doc) if isinstance(c[k], str)]


def dicts(doc: Any) -> list[dict]:
    found = [doc] if isinstance(doc, dict) else []
    return found + [c[k] for c, k in slots(doc) if isinstance(c[k], dict) and c[k]]


def with_literal(doc: Any, literal: str) -> bytes:
    """The document as JSON text, ``MARK`` (as a JSON string) replaced by ``literal``."""
    return json.dumps(doc).replace(json.dumps(MARK), literal).encode()


def in_string(doc: Any, text: str) -> bytes:
    """The document as JSON text, ``MARK`` inside a string replaced by ``text`` (raw JSON escapes)."""
    return json.dumps(doc).replace(MARK, text).encode()


# --- results-file classes: each takes the parsed copy and returns the bytes to write ---------------


def truncated(rng: random.Random, doc: dict, item: Item) -> bytes:
    data = json.dumps(doc).encode()
    return data[: rng.randrange(1, data.rindex(b"}"))]


def empty(rng: random.Random, doc: dict, item: Item) -> bytes:
    return rng.choice([b"", b"   \n\t\n", b"\n"])


def binary(rng: random.Random, doc: dict, item: Item) -> bytes:
    return PNG + rng.randbytes(rng.randrange(1, 4000))


def gzipped(rng: random.Random, doc: dict, item: Item) -> bytes:
    return gzip.compress(json.dumps(doc).encode(), mtime=0)


def bom(rng: random.Random, doc: dict, item: Item) -> bytes:
    return b"\xef\xbb\xbf" + json.dumps(doc).encode()


def deleted_key(rng: random.Random, doc: dict, item: Item) -> bytes:
    for _ in range(rng.randint(1, 3)):
        container, key = rng.choice([(c, k) for c, k in slots(doc) if isinstance(c, dict)])
        del container[key]
    return json.dumps(doc).encode()


def wrong_type(rng: random.Random, doc: dict, item: Item) -> bytes:
    for _ in range(rng.randint(1, 3)):
        container, key = rng.choice(slots(doc))
        container[key] = copy.deepcopy(rng.choice(ODD_VALUES))
    return json.dumps(doc).encode()


def duplicate_key(rng: random.Random, doc: dict, item: Item) -> bytes:
    target = rng.choice(dicts(doc))
    key = rng.choice(list(target))
    target[MARK] = copy.deepcopy(rng.choice([*ODD_VALUES, target[key]]))
    return json.dumps(doc).replace(json.dumps(MARK), json.dumps(key)).encode()


def too_large_score(rng: random.Random, doc: dict, item: Item) -> bytes:
    entry, key, *_ = rng.choice(score_slots(doc, stderr=rng.random() < 0.4) or score_slots(doc, stderr=False))
    entry[key] = MARK
    return with_literal(doc, rng.choice(TOO_LARGE))


def too_large_anywhere(rng: random.Random, doc: dict, item: Item) -> bytes:
    container, key = rng.choice(slots(doc))
    container[key] = MARK
    return with_literal(doc, rng.choice(TOO_LARGE))


def non_finite_score(rng: random.Random, doc: dict, item: Item) -> bytes:
    column = "stderr" if rng.random() < 0.4 and score_slots(doc, stderr=True) else "value"
    entry, key, task, metric, filt = rng.choice(score_slots(doc, stderr=column == "stderr"))
    literal = rng.choice(list(NON_FINITE))
    entry[key] = MARK
    item.planted = (task, metric, filt, column, NON_FINITE[literal])
    return with_literal(doc, literal)


def too_deep(rng: random.Random, doc: dict, item: Item) -> bytes:
    container, key = rng.choice(slots(doc))
    container[key] = MARK
    depth = rng.choice([101, 150, 300, 600, 900, 1025, 5000, 50_000])
    nest = "[" * depth + "]" * depth if rng.random() < 0.5 else '{"a":' * depth + "1" + "}" * depth
    return with_literal(doc, nest)


def surrogate(rng: random.Random, doc: dict, item: Item) -> bytes:
    if rng.random() < 0.5:  # in a key: a task's name, or any other
        target = doc["results"] if rng.random() < 0.5 and doc.get("results") else rng.choice(dicts(doc))
        key = rng.choice(list(target))
        target[key + MARK] = target.pop(key)
    else:
        container, key = rng.choice(strings(doc))
        container[key] = container[key] + MARK
    return in_string(doc, rng.choice(SURROGATES))


def long_name(rng: random.Random, doc: dict, item: Item) -> bytes:
    length = rng.choice([1001, 5000, 100_000])
    if rng.random() < 0.5:
        task = rng.choice(list(doc["results"]))
        doc["results"]["t" * length] = doc["results"].pop(task)
    else:
        doc.setdefault("config", {})["model_args"] = f"pretrained=org/{'m' * length},revision=step10"
    return json.dumps(doc).encode()


def step_digits(rng: random.Random, doc: dict, item: Item) -> bytes:
    digits = "".join(rng.choice("123456789") for _ in range(rng.choice([19, 20, 400, 4301, 6000])))
    doc.setdefault("config", {})["model_args"] = f"pretrained=EleutherAI/pythia-160m,revision=step{digits}"
    return json.dumps(doc).encode()


def bad_utf8(rng: random.Random, doc: dict, item: Item) -> bytes:
    container, key = rng.choice(strings(doc))
    container[key] = container[key] + MARK
    raw = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xfe\xfe", b"\x80abc"])
    return json.dumps(doc).encode().replace(MARK.encode(), raw)


def control_characters(rng: random.Random, doc: dict, item: Item) -> bytes:
    if rng.random() < 0.5 and doc.get("results"):
        task = rng.choice(list(doc["results"]))
        doc["results"][task + MARK] = doc["results"].pop(task)
    else:
        container, key = rng.choice(strings(doc))
        container[key] = container[key] + MARK
    return in_string(doc, rng.choice(["\\u0000", "\\u001b[31m", "\\n", "\\r\\n", "\\u0007", "\\u2028"]))


def invalid_json(rng: random.Random, doc: dict, item: Item) -> bytes:
    data = json.dumps(doc).encode()
    at = rng.randrange(len(data))
    return data[:at] + rng.choice([b"\x01", b"\x1f", b"\x00"]) + data[at:]  # unescaped: invalid anywhere


def not_results(rng: random.Random, doc: dict, item: Item) -> bytes:
    doc["Results"] = doc.pop("results")
    return json.dumps(rng.choice([doc, [doc], 42, "results", None, {"results": None}, {"results": []}])).encode()


def many_tasks(rng: random.Random, doc: dict, item: Item) -> bytes:
    entry = next(iter(doc["results"].values()))
    for i in range(rng.choice([2000, 20_000])):
        doc["results"][f"task_{i}"] = copy.deepcopy(entry)
    return json.dumps(doc).encode()


def intact(rng: random.Random, doc: dict, item: Item) -> bytes:
    return json.dumps(doc).encode()


RESULTS_KINDS: list[tuple[str, str, Callable[[random.Random, dict, Item], bytes]]] = [
    ("truncated", BAD, truncated),
    ("empty or blank", BAD, empty),
    ("binary bytes", BAD, binary),
    ("gzip-compressed", BAD, gzipped),
    ("invalid JSON", BAD, invalid_json),
    ("number beyond DOUBLE in a score", BAD, too_large_score),
    ("number beyond DOUBLE anywhere", BAD, too_large_anywhere),
    ("nested too deep", BAD, too_deep),
    ("lone surrogate", BAD, surrogate),
    ("name too long", BAD, long_name),
    ("step of too many digits", BAD, step_digits),
    ("bytes not UTF-8", BAD, bad_utf8),
    ("not a results object", NOT_STORED, not_results),
    ("byte-order mark", ANY, bom),
    ("deleted keys", ANY, deleted_key),
    ("wrong types", ANY, wrong_type),
    ("duplicate key", ANY, duplicate_key),
    ("control characters", ANY, control_characters),
    ("thousands of tasks", ANY, many_tasks),
    ("NaN or Infinity in a score", STORE, non_finite_score),
]


# --- samples-file classes: each breaks the lines of one samples file -------------------------------


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n")


def s_truncated(rng: random.Random, path: Path) -> None:
    data = path.read_bytes().rstrip(b"\n")
    last = data.rfind(b"\n") + 1
    path.write_bytes(data[: rng.randrange(last + 1, len(data))])


def s_broken_line(rng: random.Random, path: Path) -> None:
    lines = _lines(path)
    at = rng.randrange(len(lines))
    lines[at] = lines[at][: rng.randrange(1, len(lines[at]) - 1)]
    _write_lines(path, lines)


def s_duplicate(rng: random.Random, path: Path) -> None:
    lines = _lines(path)
    at = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[at])
    _write_lines(path, lines)


def _edit_line(rng: random.Random, path: Path, edit: Callable[[dict], str | None]) -> None:
    lines = _lines(path)
    at = rng.randrange(len(lines))
    line = json.loads(lines[at])
    text = edit(line)
    lines[at] = text if text is not None else json.dumps(line)
    _write_lines(path, lines)


def s_deleted_key(rng: random.Random, path: Path) -> None:
    def edit(line: dict) -> None:
        del line[rng.choice(list(line))]

    _edit_line(rng, path, edit)


def s_wrong_type(rng: random.Random, path: Path) -> None:
    def edit(line: dict) -> None:
        line[rng.choice(list(line))] = copy.deepcopy(rng.choice(ODD_VALUES))

    _edit_line(rng, path, edit)


def s_surrogate(rng: random.Random, path: Path) -> None:
    def edit(line: dict) -> str:
        container, key = rng.choice(strings(line))
        container[key] = container[key] + MARK
        return json.dumps(line).replace(MARK, rng.choice(SURROGATES))

    _edit_line(rng, path, edit)


def s_binary(rng: random.Random, path: Path) -> None:
    lines = path.read_bytes().splitlines()
    lines.insert(rng.randrange(len(lines) + 1), PNG + rng.randbytes(200).replace(b"\n", b" "))
    path.write_bytes(b"\n".join(lines) + b"\n")


def s_empty(rng: random.Random, path: Path) -> None:
    path.write_bytes(rng.choice([b"", b"\n\n"]))


def s_bom(rng: random.Random, path: Path) -> None:
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())


def s_too_large(rng: random.Random, path: Path) -> None:
    def edit(line: dict) -> str:
        keys = [k for k, v in line.items() if isinstance(v, int | float) and not isinstance(v, bool)]
        line[rng.choice(keys) if keys else "acc"] = MARK
        return with_literal(line, rng.choice(TOO_LARGE)).decode()

    _edit_line(rng, path, edit)


def s_deep(rng: random.Random, path: Path) -> None:
    def edit(line: dict) -> str:
        line[rng.choice(["doc", "target", "arguments", "resps"])] = MARK
        depth = rng.choice([101, 1025, 5000])
        return with_literal(line, "[" * depth + "]" * depth).decode()

    _edit_line(rng, path, edit)


def s_gzip(rng: random.Random, path: Path) -> None:
    path.write_bytes(gzip.compress(path.read_bytes(), mtime=0))


def s_crlf(rng: random.Random, path: Path) -> None:
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))


def s_invalid_json(rng: random.Random, path: Path) -> None:
    lines = _lines(path)
    at = rng.randrange(len(lines))
    cut = rng.randrange(len(lines[at]))
    lines[at] = lines[at][:cut] + "\x01" + lines[at][cut:]
    _write_lines(path, lines)


SAMPLES_KINDS: list[tuple[str, str, Callable[[random.Random, Path], None]]] = [
    ("samples: truncated last line", BAD, s_truncated),
    ("samples: broken line", BAD, s_broken_line),
    ("samples: invalid JSON line", BAD, s_invalid_json),
    ("samples: a document twice", BAD, s_duplicate),
    ("samples: lone surrogate", BAD, s_surrogate),
    ("samples: binary line", BAD, s_binary),
    ("samples: gzip-compressed", BAD, s_gzip),
    ("samples: deleted key", ANY, s_deleted_key),
    ("samples: wrong type", ANY, s_wrong_type),
    ("samples: empty file", ANY, s_empty),
    ("samples: byte-order mark", ANY, s_bom),
    ("samples: number beyond DOUBLE", ANY, s_too_large),
    ("samples: nested deep", ANY, s_deep),
    ("samples: CRLF line ends", ANY, s_crlf),
]


# --- writing items ------------------------------------------------------------------------------


def _marked(source: Path, name: str) -> dict[str, Any]:
    """The parsed source with a key of this item's own in ``config`` (a distinct file per item)."""
    doc = json.loads(source.read_text())
    config = doc.get("config")
    if isinstance(config, dict):
        config["reliability_copy"] = name
    else:
        doc["reliability_copy"] = name
    return doc


def _copy_folder(source: Path, item: Item) -> tuple[Path, list[Path]]:
    """The folder source copied into the item (its results file marked); its results and samples paths."""
    shutil.copytree(source, item.folder)
    results = next(item.folder.glob("results_*.json"))
    results.write_text(json.dumps(_marked(results, item.name)))
    samples = sorted(item.folder.glob("samples_*.jsonl"))
    item.samples = {_task(p): sum(1 for line in _lines(p) if line.strip()) for p in samples}
    return results, samples


def _task(samples: Path) -> str:
    name = samples.name.removesuffix(".jsonl")
    return name[name.find("_") + 1 : name.rfind("_")]


def results_item(rng: random.Random, item: Item, mutate: Callable[[random.Random, dict, Item], bytes]) -> None:
    """A results class: a results-only source, or a source with samples (whose results file is broken)."""
    if rng.random() < 0.15:
        source = rng.choice(FOLDER_SOURCES)
        results, _ = _copy_folder(source, item)
        item.source = next(source.glob("results_*.json"))
    else:
        item.source = rng.choice(RESULTS_SOURCES)
        item.folder.mkdir(parents=True)
        results = item.folder / item.source.name
    results.write_bytes(mutate(rng, _marked(item.source, item.name), item))
    item.results_mutated = mutate is not intact


def samples_item(rng: random.Random, item: Item, mutate: Callable[[random.Random, Path], None]) -> None:
    source = rng.choice(FOLDER_SOURCES)
    item.source = next(source.glob("results_*.json"))
    _, samples = _copy_folder(source, item)
    broken = rng.choice(samples)
    del item.samples[_task(broken)]
    mutate(rng, broken)
    item.broken_samples = (_task(broken), sum(1 for line in broken.read_bytes().splitlines() if line.strip()))


# --- things on disk that are not files to read -----------------------------------------------------


def _good_copy(rng: random.Random, item: Item, folder: Path, name: bytes | None = None) -> None:
    """An intact copy of a results-only source in ``folder``, under its own name or the bytes ``name``."""
    item.source = rng.choice(RESULTS_SOURCES)
    folder.mkdir(parents=True, exist_ok=True)
    path = os.path.join(os.fsencode(folder), name or os.fsencode(item.source.name))
    with open(path, "wb") as file:
        file.write(json.dumps(_marked(item.source, item.name)).encode())


def fifo_results(rng: random.Random, item: Item) -> None:
    item.source = rng.choice(RESULTS_SOURCES)
    item.folder.mkdir(parents=True)
    os.mkfifo(item.folder / "results_2026-01-01T00-00-00.json")


def fifo_samples(rng: random.Random, item: Item) -> None:
    source = rng.choice(FOLDER_SOURCES)
    item.source = next(source.glob("results_*.json"))
    _, samples = _copy_folder(source, item)
    replaced = rng.choice(samples)
    del item.samples[_task(replaced)]
    replaced.unlink()
    os.mkfifo(replaced)


def link_loop(rng: random.Random, item: Item) -> None:
    item.source = rng.choice(RESULTS_SOURCES)
    item.folder.mkdir(parents=True)
    if rng.random() < 0.5:
        (item.folder / "results_self.json").symlink_to("results_self.json")
    else:
        (item.folder / "a.json").symlink_to("b.json")
        (item.folder / "b.json").symlink_to("a.json")


def dangling_link(rng: random.Random, item: Item) -> None:
    item.source = rng.choice(RESULTS_SOURCES)
    item.folder.mkdir(parents=True)
    (item.folder / "results_gone.json").symlink_to("nowhere/results.json")


def folder_link_loop(rng: random.Random, item: Item) -> None:
    _good_copy(rng, item, item.folder)
    (item.folder / "sub").mkdir()
    (item.folder / "sub" / "up").symlink_to("..")
    (item.folder / "sub" / "here").symlink_to(".")


def unreadable_folder(rng: random.Random, item: Item) -> None:
    _good_copy(rng, item, item.folder / "locked")
    (item.folder / "locked").chmod(0)


def name_not_utf8(rng: random.Random, item: Item) -> None:
    _good_copy(rng, item, item.folder, rng.choice([b"results\xff.json", b"r\xe9sultats.json", b"\x80.json"]))


DISK_KINDS: list[tuple[str, str, Callable[[random.Random, Item], None]]] = [
    ("FIFO as a results file", BAD, fifo_results),
    ("FIFO as a samples file", BAD, fifo_samples),
    ("file link loop", BAD, link_loop),
    ("dangling link", BAD, dangling_link),
    ("name not UTF-8", BAD, name_not_utf8),
    ("folder link loop (not followed)", STORE, folder_link_loop),
    ("folder that cannot be listed", BAD, unreadable_folder),
]

GOOD = "good files (intact copies)"


def kinds(*, unreadable_folders: bool) -> list[Kind]:
    """Every class of breakage; ``unreadable_folders`` only where the ingest runs without root's powers."""
    out = [
        Kind(name, expect, lambda rng, item, m=mutate: results_item(rng, item, m))
        for name, expect, mutate in RESULTS_KINDS
    ]
    out += [
        Kind(name, expect, lambda rng, item, m=mutate: samples_item(rng, item, m))
        for name, expect, mutate in SAMPLES_KINDS
    ]
    out += [
        Kind(name, expect, write)
        for name, expect, write in DISK_KINDS
        if unreadable_folders or write is not unreadable_folder
    ]
    return out


GOOD_KIND = Kind(GOOD, STORE, lambda rng, item: results_item(rng, item, intact))


def write_item(rng: random.Random, kind: Kind, folder: Path) -> Item:
    item = Item(folder.name, kind.name, kind.expect, folder, source=Path())
    kind.write(rng, item)
    return item


def unlock(root: Path) -> None:
    """Make the folders that the ``folder that cannot be listed`` class locked listable again (to delete them)."""
    for dirpath, dirnames, _ in os.walk(root):
        for name in dirnames:
            if name == "locked":
                (Path(dirpath) / name).chmod(0o755)
