"""Broken copies of the repository's real results files, by class, for ``benchmarks/reliability.py``.

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
with their per-sample files), and of the other formats ingest reads: the Every
Eval Ever datastore's files of every schema version (tests/fixtures/eee-real),
inspect_ai logs as ``.json`` and ``.eval`` (tests/fixtures/inspect-real) and the
W&B histories as CSV and Parquet (tests/fixtures/wandb). Each copy gets a mark of
its own (a key in lm-eval's ``config``, in EEE's ``model_info.additional_details``,
in an inspect_ai log's ``eval.metadata``; a W&B history's file name, which names
its run) so that no two copies are the same evaluation, before it is broken.
Everything is seeded: the same generator writes the same bytes.
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

from common import EEE_REAL, INSPECT_REAL, REAL, V0413, WANDB

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
# Numeric literals beyond a DOUBLE (docs/explanation/store.md: a bad value, wherever it is).
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
    # task, metric, filter, column, value (and the step, in a history of many)
    planted: tuple[str, str, str, str, float | None] | tuple[str, str, str, str, float | None, int] | None = None
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

# --- the other formats: Every Eval Ever, inspect_ai logs, W&B histories ------------------------------

# Every EEE version ingest reads, as the datastore published it (each class picks among them).
EEE_SOURCES = sorted(EEE_REAL.rglob("*.json"))
INSPECT_JSON_SOURCES = sorted(INSPECT_REAL.glob("*.json"))
INSPECT_EVAL_SOURCES = sorted(INSPECT_REAL.glob("*.eval"))
WANDB_CSV = WANDB / "opt-125m-mnli-s1" / "history.csv"
WANDB_PARQUET = WANDB / "opt-125m-mnli-s2.parquet"
FUTURE_VERSIONS = ["0.4.0", "1.0.0", "0.0.1", "0.2.9", "", "v0.3.0"]


def _eee_doc(source: Path, item: Item) -> dict[str, Any]:
    doc = json.loads(source.read_text())
    doc["model_info"].setdefault("additional_details", {})["reliability_copy"] = item.name
    return doc


def _eee_scores(doc: dict[str, Any]) -> list[tuple[dict, str, str, str, str]]:
    """(score_details, "score", task, metric, filter) of each result, as ingest names a third party's."""
    return [
        (r["score_details"], "score", r["evaluation_name"], r["metric_config"].get("metric_name") or "score", "none")
        for r in doc["evaluation_results"]
    ]


def e_too_large_score(rng: random.Random, doc: dict, item: Item) -> bytes:
    holder, key, *_ = rng.choice(_eee_scores(doc))
    holder[key] = MARK
    return with_literal(doc, rng.choice(TOO_LARGE))


def e_non_finite_score(rng: random.Random, doc: dict, item: Item) -> bytes:
    holder, key, task, metric, filt = rng.choice(_eee_scores(doc))
    literal = rng.choice(list(NON_FINITE))
    holder[key] = MARK
    item.planted = (task, metric, filt, "value", NON_FINITE[literal])
    return with_literal(doc, literal)


def e_long_name(rng: random.Random, doc: dict, item: Item) -> bytes:
    length = rng.choice([1001, 5000, 100_000])
    if rng.random() < 0.5:
        rng.choice(doc["evaluation_results"])["evaluation_name"] = "t" * length
    else:
        doc["model_info"]["id"] = f"org/{'m' * length}"
    return json.dumps(doc).encode()


def e_version(rng: random.Random, doc: dict, item: Item) -> bytes:
    doc["schema_version"] = rng.choice(FUTURE_VERSIONS)
    return json.dumps(doc).encode()


EEE_KINDS: list[tuple[str, str, Callable[[random.Random, dict, Item], bytes]]] = [
    ("EEE: truncated", BAD, truncated),
    ("EEE: invalid JSON", BAD, invalid_json),
    ("EEE: number beyond DOUBLE in a score", BAD, e_too_large_score),
    ("EEE: number beyond DOUBLE anywhere", BAD, too_large_anywhere),
    ("EEE: nested too deep", BAD, too_deep),
    ("EEE: lone surrogate", BAD, surrogate),
    ("EEE: bytes not UTF-8", BAD, bad_utf8),
    ("EEE: name too long", BAD, e_long_name),
    ("EEE: a version ood-store does not read", BAD, e_version),
    ("EEE: deleted keys", ANY, deleted_key),
    ("EEE: wrong types", ANY, wrong_type),
    ("EEE: NaN or Infinity in a score", STORE, e_non_finite_score),
    ("EEE: good files (intact copies, every version)", STORE, intact),
]


def eee_item(rng: random.Random, item: Item, mutate: Callable[[random.Random, dict, Item], bytes]) -> None:
    """An EEE class: a copy of one of the datastore's files (its samples file beside, where it has one)."""
    item.source = rng.choice(EEE_SOURCES)
    item.folder.mkdir(parents=True)
    samples = item.source.with_name(f"{item.source.stem}_samples.jsonl")
    if samples.exists():
        shutil.copyfile(samples, item.folder / samples.name)
    (item.folder / item.source.name).write_bytes(mutate(rng, _eee_doc(item.source, item), item))
    item.results_mutated = mutate is not intact


def _inspect_doc(doc: dict[str, Any], item: Item) -> dict[str, Any]:
    metadata = doc["eval"].get("metadata")
    doc["eval"]["metadata"] = {**(metadata if isinstance(metadata, dict) else {}), "reliability_copy": item.name}
    return doc


def _inspect_scores(doc: dict[str, Any]) -> list[tuple[dict, str, str, str, str]]:
    """(metric, "value", task, metric name, scorer) of each metric a log scores (not its stderr)."""
    task = str(doc["eval"].get("task_display_name") or doc["eval"]["task"]).rsplit("/", 1)[-1]
    return [
        (metric, "value", task, metric["name"], score["name"])
        for score in doc["results"]["scores"]
        for metric in score["metrics"].values()
        if metric["name"] not in ("stderr", "bootstrap_stderr", "std", "stddev")
    ]


def i_too_large_score(rng: random.Random, doc: dict, item: Item) -> bytes:
    holder, key, *_ = rng.choice(_inspect_scores(doc))
    holder[key] = MARK
    return with_literal(doc, rng.choice(TOO_LARGE))


def i_non_finite_score(rng: random.Random, doc: dict, item: Item) -> bytes:
    holder, key, task, metric, filt = rng.choice(_inspect_scores(doc))
    literal = rng.choice(list(NON_FINITE))
    holder[key] = MARK
    item.planted = (task, metric, filt, "value", NON_FINITE[literal])
    return with_literal(doc, literal)


def i_long_name(rng: random.Random, doc: dict, item: Item) -> bytes:
    length = rng.choice([1001, 5000, 100_000])
    for key in ("task", "task_display_name"):  # the task is its display name, where it has one
        if key == "task" or doc["eval"].get(key):
            doc["eval"][key] = f"x/{'t' * length}"
    return json.dumps(doc).encode()


INSPECT_KINDS: list[tuple[str, str, Callable[[random.Random, dict, Item], bytes]]] = [
    ("truncated", BAD, truncated),
    ("number beyond DOUBLE in a score", BAD, i_too_large_score),
    ("name too long", BAD, i_long_name),
    ("lone surrogate", BAD, surrogate),
    ("deleted keys", ANY, deleted_key),
    ("wrong types", ANY, wrong_type),
    ("NaN or Infinity in a score", STORE, i_non_finite_score),
    ("good files (intact copies)", STORE, intact),
]


def inspect_json_item(rng: random.Random, item: Item, mutate: Callable[[random.Random, dict, Item], bytes]) -> None:
    """An inspect_ai JSON log, under a name of its own (not inspect_ai's default: ingest reads by content)."""
    item.source = rng.choice(INSPECT_JSON_SOURCES)
    item.folder.mkdir(parents=True)
    doc = _inspect_doc(json.loads(item.source.read_text()), item)
    (item.folder / item.source.name).write_bytes(mutate(rng, doc, item))
    item.results_mutated = mutate is not intact


def inspect_eval_item(rng: random.Random, item: Item, mutate: Callable[[random.Random, dict, Item], bytes]) -> None:
    """An inspect_ai ``.eval`` log: its header.json broken, the archive written again (deflate, as the source)."""
    import zipfile

    item.source = rng.choice(INSPECT_EVAL_SOURCES)
    item.folder.mkdir(parents=True)
    with zipfile.ZipFile(item.source) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    header = _inspect_doc(json.loads(members["header.json"]), item)
    members["header.json"] = mutate(rng, header, item)
    target = item.folder / item.source.name
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    item.results_mutated = mutate is not intact


def eval_truncated(rng: random.Random, item: Item) -> None:
    inspect_eval_item(rng, item, intact)
    target = item.folder / item.source.name
    data = target.read_bytes()
    target.write_bytes(data[: rng.randrange(1, len(data) - 1)])


def eval_not_a_zip(rng: random.Random, item: Item) -> None:
    inspect_eval_item(rng, item, intact)
    (item.folder / item.source.name).write_bytes(rng.choice([b"", b"not a zip\n", PNG + rng.randbytes(100)]))


def _history(rng: random.Random, item: Item) -> tuple[list[str], list[list[str]], Path]:
    """A copy of the W&B CSV history, under the item's name (its run), with the run's config beside."""
    item.source = WANDB_CSV
    item.folder.mkdir(parents=True)
    shutil.copyfile(WANDB_CSV.with_name("config.yaml"), item.folder / "config.yaml")
    import csv
    import io

    rows = list(csv.reader(io.StringIO(WANDB_CSV.read_text())))
    return rows[0], rows[1:], item.folder / f"{item.name}.csv"


def _write_csv(path: Path, header: list[str], body: list[list[str]]) -> None:
    import csv

    with path.open("w", newline="") as file:
        csv.writer(file).writerows([header, *body])


def _score_cells(header: list[str], body: list[list[str]]) -> list[tuple[int, int]]:
    """(row, column) of each eval/<set>_accuracy cell with a value: the default patterns' scores."""
    columns = [i for i, name in enumerate(header) if name.startswith("eval/") and name.endswith("_accuracy")]
    return [(r, c) for r, row in enumerate(body) for c in columns if row[c]]


def w_cell(rng: random.Random, item: Item, text: str | None = None) -> tuple[list[str], list[list[str]], Path]:
    header, body, path = _history(rng, item)
    row, column = rng.choice(_score_cells(header, body))
    if text is not None:
        body[row][column] = text
    return header, body, path


def w_intact(rng: random.Random, item: Item) -> None:
    header, body, path = _history(rng, item)
    _write_csv(path, header, body)


def w_not_a_number(rng: random.Random, item: Item) -> None:
    _write_csv(*_reordered(w_cell(rng, item, rng.choice(["abc", "0.5.1", "[0.5]", "true", "N/A"]))))
    item.results_mutated = True


def w_too_large(rng: random.Random, item: Item) -> None:
    _write_csv(*_reordered(w_cell(rng, item, rng.choice(TOO_LARGE[:4]))))
    item.results_mutated = True


def w_infinity(rng: random.Random, item: Item) -> None:
    header, body, path = _history(rng, item)
    row, column = rng.choice(_score_cells(header, body))
    text = rng.choice(["inf", "-inf", "Infinity", "-Infinity", "INF"])
    body[row][column] = text
    task = header[column].removeprefix("eval/").removesuffix("_accuracy")
    step = int(body[row][header.index("_step")])
    item.planted = (task, "accuracy", "none", "value", float("-inf") if text.startswith("-") else float("inf"), step)
    _write_csv(path, header, body)


def w_long_name(rng: random.Random, item: Item) -> None:
    header, body, path = _history(rng, item)
    column = rng.choice([i for i, name in enumerate(header) if name.endswith("_accuracy")])
    header[column] = f"eval/{'t' * rng.choice([1001, 5000])}_accuracy"
    _write_csv(path, header, body)
    item.results_mutated = True


def w_truncated(rng: random.Random, item: Item) -> None:
    header, body, path = _history(rng, item)
    _write_csv(path, header, body)
    data = path.read_bytes()
    path.write_bytes(data[: rng.randrange(len(",".join(header)) + 2, len(data) - 1)])
    item.results_mutated = True


def w_binary(rng: random.Random, item: Item) -> None:
    header, body, path = _history(rng, item)
    path.write_bytes(PNG + rng.randbytes(rng.randrange(1, 2000)))
    item.results_mutated = True


def w_run_file(rng: random.Random, item: Item) -> None:
    """A W&B run's binary ``.wandb`` file (its header: wandb/sdk/internal/datastore.py), not a history."""
    import struct

    item.source = WANDB_CSV
    item.folder.mkdir(parents=True)
    (item.folder / f"run-{item.name}.wandb").write_bytes(struct.pack("<4sHB", b":W&B", 0xBEE1, 0) + rng.randbytes(500))
    item.results_mutated = True


def _reordered(parts: tuple[list[str], list[list[str]], Path]) -> tuple[Path, list[str], list[list[str]]]:
    header, body, path = parts
    return path, header, body


def _parquet(rng: random.Random, item: Item) -> tuple[Any, Path]:
    import polars as pl

    item.source = WANDB_PARQUET
    item.folder.mkdir(parents=True)
    return pl.read_parquet(WANDB_PARQUET), item.folder / f"{item.name}.parquet"


def p_intact(rng: random.Random, item: Item) -> None:
    frame, path = _parquet(rng, item)
    frame.write_parquet(path)


def p_truncated(rng: random.Random, item: Item) -> None:
    frame, path = _parquet(rng, item)
    frame.write_parquet(path)
    data = path.read_bytes()
    path.write_bytes(data[: rng.randrange(1, len(data) - 1)])
    item.results_mutated = True


def p_infinity(rng: random.Random, item: Item) -> None:
    import polars as pl

    frame, path = _parquet(rng, item)
    column = "eval/hans/accuracy"
    rows = [i for i, value in enumerate(frame[column].to_list()) if value is not None and value == value]
    row = rng.choice(rows)
    value = rng.choice([float("inf"), float("-inf")])
    frame = frame.with_columns(pl.Series(column, [value if i == row else v for i, v in enumerate(frame[column])]))
    item.planted = ("hans", "accuracy", "none", "value", value, int(frame["_step"][row]))
    frame.write_parquet(path)


WANDB_KINDS: list[tuple[str, str, Callable[[random.Random, Item], None]]] = [
    ("W&B CSV: a score that is not a number", BAD, w_not_a_number),
    ("W&B CSV: number beyond DOUBLE", BAD, w_too_large),
    ("W&B CSV: name too long", BAD, w_long_name),
    ("W&B CSV: truncated", ANY, w_truncated),
    ("W&B CSV: binary bytes", NOT_STORED, w_binary),
    ("W&B: a run's binary .wandb file", NOT_STORED, w_run_file),
    ("W&B CSV: Infinity in a score", STORE, w_infinity),
    ("W&B CSV: good files (intact copies)", STORE, w_intact),
    ("W&B Parquet: truncated", NOT_STORED, p_truncated),
    ("W&B Parquet: Infinity in a score", STORE, p_infinity),
    ("W&B Parquet: good files (intact copies)", STORE, p_intact),
]


def other_format_kinds() -> list[Kind]:
    """The classes of the other formats (each EEE class picks among every version)."""
    out = [Kind(name, expect, lambda rng, item, m=mutate: eee_item(rng, item, m)) for name, expect, mutate in EEE_KINDS]
    out += [
        Kind(f"inspect .json: {name}", expect, lambda rng, item, m=mutate: inspect_json_item(rng, item, m))
        for name, expect, mutate in INSPECT_KINDS
    ]
    out += [
        Kind(f"inspect .eval: header {name}", expect, lambda rng, item, m=mutate: inspect_eval_item(rng, item, m))
        for name, expect, mutate in INSPECT_KINDS
        if name in ("number beyond DOUBLE in a score", "deleted keys", "wrong types", "NaN or Infinity in a score",
                    "good files (intact copies)")
    ]  # fmt: skip
    out += [Kind("inspect .eval: truncated archive", BAD, eval_truncated)]
    out += [Kind("inspect .eval: not a zip archive", BAD, eval_not_a_zip)]
    out += [Kind(name, expect, write) for name, expect, write in WANDB_KINDS]
    return out


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
    return out + other_format_kinds()


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
