"""Server time of every page of `ood-store serve` on a study of 100 runs x 100 checkpoints x 90 tasks.

    python benchmarks/serve_pages.py [--runs 100] [--checkpoints 100] [--tasks 90] [--ood 10] [--repeats 5]
                                     [--workdir DIR]

The store is made the way a study's is: one lm-eval (v0.4) results file per checkpoint (RUNS x CHECKPOINTS
files of TASKS tasks: 900,000 scores by default), ingested by `Store.ingest`, runs given family, size, seed
and in_domain (4 families x 5 sizes x 5 seeds), and the partial correlations of OOD OOD tasks in every run
saved (linear; 45 pairs x 100 runs, 4,500 rows). With --workdir the store is kept there and made once.

Each page (and its .json twin) is requested through the viewer's ASGI application in this process, and its
server time measured inside the application, from the request's arrival to the last byte of the answer:

  cold       the first request to a fresh viewer: the store opened read-only, the page computed;
  warm       the median of REPEATS requests after it (the store file unchanged: the page kept for its
             size and modification time, as `serve` keeps it);
  uncached   the median of REPEATS requests to a viewer that keeps nothing (every request opens the store
             and computes the page: what the first request after each write to the store costs).

The targets: warm <= 200 ms for a page, <= 100 ms for its .json twin. The SQL box runs its statement on
every request (a statement may call now() or random(): nothing is kept), so its warm time is its uncached
time. The baselines run alongside are what `ood-store runs` and `ood-store query` cost in process
(`ood_store.open(read_only=True)`, then `Store.runs()` or `Store.query(SQL)`); each uncached time is also
given as a ratio to one of them (`query`'s for the SQL box): read the ratios, these machines are noisy.
The figures (PDF/SVG) of the charts are not pages and are not timed here.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path
from urllib.parse import quote

import numpy as np
import orjson

import ood_store
from ood_store._serve.app import Settings, create_app
from ood_store._serve.reading import CACHE_SIZE

FAMILIES = ("pythia", "opt", "qwen", "llama")
SIZES = ("70m", "160m", "410m", "1b", "1.4b")
SEEDS = (1, 2, 3, 4, 5)
IN_DOMAIN = "mnli"
ANALYSIS = "bench"
#: The SQL box's statement: the runs with their attributes (the box runs it on every request, nothing kept).
SQL = "SELECT run, family, size, seed FROM runs ORDER BY run"
PAGE_TARGET_S = 0.200
JSON_TARGET_S = 0.100


def run_names(count: int) -> list[tuple[str, str, str, int]]:
    grid = list(itertools.product(FAMILIES, SIZES, SEEDS))
    while len(grid) < count:  # more runs than the grid: further seeds
        grid += [(f, s, seed + len(SEEDS) * (len(grid) // 100)) for f, s, seed in grid[: count - len(grid)]]
    return [(f"bench/{f}-{s}-seed{k}", f, s, k) for f, s, k in grid[:count]]


def make_store(folder: Path, runs: int, checkpoints: int, tasks: int, ood: int) -> Path:
    """The study's lm-eval files under ``folder``/files, ingested into ``folder``/store.duckdb (made once)."""
    db = folder / "store.duckdb"
    if db.exists():
        return db
    names = [IN_DOMAIN] + [f"ood_{i:02d}" for i in range(tasks - 1)]
    files = folder / "files"
    started = time.perf_counter()
    for run, *_ in run_names(runs):
        rng = np.random.default_rng(zlib.crc32(run.encode()))
        base, slope = rng.uniform(0.3, 0.5, tasks), rng.uniform(0.1, 0.4, tasks)
        for k in range(checkpoints):
            step = 100 * k
            values = np.clip(base + slope * (1 - np.exp(-k / 20)) + rng.normal(0, 0.01, tasks), 0, 1)
            doc = {
                "results": {t: {"alias": t, "acc,none": round(float(v), 5), "acc_stderr,none": 0.01}
                            for t, v in zip(names, values, strict=True)},
                "versions": dict.fromkeys(names, 1.0),
                "n-shot": dict.fromkeys(names, 0),
                "config": {"model": "hf", "model_args": f"pretrained={run},revision=step{step}"},
                "lm_eval_version": "0.4.13",
                "date": 1767225600.0 + step,
            }  # fmt: skip
            path = files / run.replace("/", "__") / f"step-{step}" / "results_2026-01-01T00-00-00.000000.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(orjson.dumps(doc))
    print(f"wrote {runs * checkpoints} files in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    from ood_store._analysis import partial_correlations

    started = time.perf_counter()
    with ood_store.open(db) as store:
        report = store.ingest([files], samples=False, campaign="zero-shot")
        assert report.ok and len(report.ingested) == runs * checkpoints
        for run, family, size, seed in run_names(runs):
            store.set_run_attributes(run, {"family": family, "size": size, "seed": str(seed), "in_domain": IN_DOMAIN})
        result = partial_correlations(store, IN_DOMAIN, names[1 : ood + 1])
        store.save_analysis(ANALYSIS, result)
    print(f"ingested and analyzed in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return db


class Timed:
    """An ASGI application's time per request, from its call to the end of its answer's body."""

    def __init__(self, app):
        self.app = app
        self.last = 0.0

    async def __call__(self, scope, receive, send):
        started = time.perf_counter()
        await self.app(scope, receive, send)
        self.last = time.perf_counter() - started


def pages(runs: int) -> list[str]:
    run = run_names(runs)[0][0]
    pair = analysis_path(ANALYSIS, "pair", "ood_00", "ood_01")
    return [
        "/",
        "/runs",
        "/runs?where=family%3Dopt",
        "/runs/" + run,
        "/tasks",
        "/compare-step",
        "/compare-step?task=ood_00&by=size",
        "/analyses",
        analysis_path(ANALYSIS),
        analysis_path(ANALYSIS) + "?rows=family&cols=size",
        pair + "?run=" + quote(run),
        analysis_path(ANALYSIS, "signs") + "?by=family",
        "/sql?sql=" + quote(SQL),
    ]


def analysis_path(*parts: str) -> str:
    return "/analyses/" + "/".join(quote(p, safe="") for p in parts)


def twin(path: str) -> str:
    where, _, query = path.partition("?")
    return ("/index.json" if where == "/" else where + ".json") + ("?" + query if query else "")


def measure(db: Path, path: str, repeats: int, cache: bool) -> tuple[float, float]:
    """(the first request's server time, the median of ``repeats`` after it) on a fresh viewer."""
    from starlette.testclient import TestClient

    timed = Timed(create_app(Settings(db, cache_size=CACHE_SIZE if cache else 0)))
    client = TestClient(timed, base_url="http://127.0.0.1:8000")
    times = []
    for _ in range(repeats + 1):
        response = client.get(path)
        assert response.status_code == 200, (path, response.text[-300:])
        times.append(timed.last)
    return times[0], statistics.median(times[1:])


def baseline(db: Path, repeats: int, action) -> float:
    """What a command costs in process: the store opened read-only, ``action(store)``."""
    times = []
    for _ in range(repeats + 1):
        started = time.perf_counter()
        with ood_store.open(db, read_only=True) as store:
            action(store)
        times.append(time.perf_counter() - started)
    return statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--checkpoints", type=int, default=100)
    parser.add_argument("--tasks", type=int, default=90)
    parser.add_argument("--ood", type=int, default=10, help="OOD tasks of the saved analysis")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workdir", type=Path, help="Where the store is kept (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.workdir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        db = make_store(folder, args.runs, args.checkpoints, args.tasks, args.ood)
        listing = baseline(db, args.repeats, lambda store: store.runs())
        querying = baseline(db, args.repeats, lambda store: store.query(SQL))
        rows = []
        for path in pages(args.runs):
            for kind, url in (("page", path), ("json", twin(path))):
                cold, warm = measure(db, url, args.repeats, cache=True)
                _, uncached = measure(db, url, args.repeats, cache=False)
                target = PAGE_TARGET_S if kind == "page" else JSON_TARGET_S
                base = querying if path.startswith("/sql") else listing
                rows.append((url, cold, warm, uncached, target, base))
        print(
            f"{args.runs} runs x {args.checkpoints} checkpoints x {args.tasks} tasks "
            f"({args.runs * args.checkpoints * args.tasks:,} scores), analysis of {args.ood} OOD tasks; "
            f"server time in ms, warm and uncached: median of {args.repeats}"
        )
        print(f"baselines in process: `ood-store runs` (open read-only + Store.runs()) {listing * 1000:.0f} ms, "
              f"`ood-store query` (open read-only + Store.query) {querying * 1000:.0f} ms\n")  # fmt: skip
        print(f"{'request':<62} {'cold':>7} {'warm':>7} {'target':>7} {'uncached':>9} {'/base':>6}")
        failed = 0
        for url, cold, warm, uncached, target, base in rows:
            ok = warm <= target
            failed += not ok
            shown = url if len(url) <= 60 else url[:57] + "..."
            print(f"{shown:<62} {cold * 1000:7.0f} {warm * 1000:7.1f} {'<=' if ok else '> '}{target * 1000:4.0f} "
                  f"{uncached * 1000:9.0f} {uncached / base:6.2f}")  # fmt: skip
        print(
            f"\n{len(rows) - failed} of {len(rows)} requests within their target warm; /base: uncached over the "
            "baseline (`query`'s for the SQL box, which runs its statement on every request, `runs`' for the rest)"
        )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
