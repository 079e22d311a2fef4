"""The fast scorer against lm-eval's and the verbalizer scorer on the suite at its real size, on a CPU standing in
for a GPU: the marginal seconds of a checkpoint, documents/s, and the time outside the forward passes.

    python benchmarks/evaluate_fast.py [--docs 0] [--checkpoints 3] [--batch-size 64]

Set-up (not timed), with benchmarks/evaluate_series.py's `build`: --checkpoints full checkpoints of a randomly
initialized OPT (STAND_IN: 1 layer, width 16, 1 attention head, a 32-wide feed-forward, the tokenizer's 2,048-entry
vocabulary: 67,824 parameters, float32) whose forward passes are nearly free, as a GPU's are for the suite next
to the Python around them; a byte-level BPE tokenizer trained from code; the ood_nli suite's 10 testsets generated
at their real evaluated sizes (63,489 documents; --docs N: N rows each). A warm-up evaluation of one document per
testset builds the datasets cache.

Why that shape: on a GPU, the suite's forward passes for a 1.3B model take about 12 s a checkpoint (2 x 1.3e9
parameters x 1.4M tokens at 40% of a 989 TFLOP/s bf16 peak: 9-12 s), small next to lm-eval's per-document Python
(about 1.8 ms a document, 100+ s a checkpoint). The stand-in's passes must be as small next to the Python around
them. The earlier stand-in (2 layers, width 32, 148,288 parameters) was FLOP-bound on one CPU thread: 6.5-10 s a
checkpoint over the 1.4M tokens, most of the fast scorer's cost. One layer of width 16 takes 1-2 s, about 1 ms a
batch of 64 rows: torch's per-operator overhead, the same on a CPU for width 8 or one head fewer, so nothing
narrower would be cheaper. It is still a real transformers OPT (attention, feed-forward, layer norms, the head
tied to the embeddings), loaded and scored identically by the three scorers, its vocabulary the tokenizer's.

Timed, each in a fresh process: `store.evaluate` inline of one checkpoint, and of all --checkpoints of one run,
for each scorer (lm-eval, verbalizer, fast), per-sample rows logged and stored, the run's model kept, each
process with a work folder of its own, torch on one
thread (OMP_NUM_THREADS=1: on a shared machine, threads oversubscribed by other processes slow torch's passes by
several times, and unevenly; one thread each makes the scorers' forward passes comparable). The fast scorer's
requests are prepared once, by an unmeasured process of one checkpoint (its preparation's seconds reported), and
read by both measured processes from their work folders' prepared/ (as every run of a study that shares tokenizer
and tasks reads them): preparing is lm-eval's bookkeeping once, tens of seconds that vary by several on a shared
machine, which the difference of two processes would carry, not cancel. The marginal
cost of a checkpoint is (wall time of N checkpoints - wall time of 1) / (N - 1): imports, start-up, building
tasks and the fast scorer's preparation cancel. Reported per scorer: the marginal seconds per checkpoint,
documents/s at that cost, and the marginal time outside the forward passes per document (the marginal
seconds less the forward passes' marginal seconds, from the units' completion markers); and the units' own
parts (load, prepare, forward, bookkeeping, write) of the last checkpoint, and the steady state from the units'
markers alone (the mean of checkpoints 2 to N of the N-checkpoint process: what a unit costs once the run's
model is loaded and its requests prepared; the whole-process difference adds storing the files and is noisier
on a shared machine), and that steady state with storing (each unit's commit by the collector, from its
completion marker's time to its stored marker's: the whole per-checkpoint path, unit and ingest, without the
two processes' difference). The marginal checkpoint splits exactly into: the steady unit, storing and the rest
of the process outside the units (the collector's commit, about 1 s), the N-checkpoint process's first unit less
the one-checkpoint process's unit (noise: the same unit, minutes apart on a shared machine), and start-up and
imports (the processes' whole time less their `evaluate`; noise too), each over N - 1; it is printed so.
Targets: the fast scorer's marginal
cost per checkpoint at most 1/10 of lm-eval's, and at most 50 µs per document outside the forward passes.
Then one JSON line with every figure; benchmarks/results/evaluate_fast.txt holds the last runs' output.
tests/test_benchmark_fast.py runs a tiny form (--docs 3 --checkpoints 2) on every CI run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from evaluate_gpu import VOCAB, offline, real_sizes  # noqa: E402
from evaluate_series import build, evaluate, imported  # noqa: E402

SCORERS = ("lm-eval", "verbalizer", "fast")
#: The stand-in model's shape (see the module): one layer, width 16, one head, a 32-wide feed-forward.
STAND_IN = {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 1, "ffn_dim": 32}
PARTS = ("load_s", "prepare_s", "forward_s", "bookkeeping_s", "write_s")


def measure(root: Path, scorer: str, checkpoints: int, out: Path, batch_size: str, limit: int | None) -> dict:
    """In this (fresh) process: ``checkpoints`` checkpoints of one run with ``scorer``; their figures."""
    imported()
    folders = [root / "full" / f"checkpoint-{(i + 1) * 100}" for i in range(checkpoints)]
    started = time.perf_counter()
    figures = evaluate(folders, root / "nli-data", out, keep=True, scorer=scorer, device="cpu",
                       batch_size=batch_size, limit=limit)  # fmt: skip
    markers = sorted((json.loads(p.read_text()) for p in (out / "work" / "done").glob("*.json")),
                     key=lambda m: m["finished"])  # fmt: skip
    later = markers[1:] or markers
    stored = out / "work" / "stored"  # the collector's marker, written when the unit's commit is done
    storing = {m["unit"]: (stored / f"{m['unit']}.json").stat().st_mtime - m["finished"] for m in markers}
    steady = {"seconds": sum(m["seconds"] for m in later) / len(later),
              "forward_s": sum(m["timings"]["forward_s"] for m in later) / len(later),
              "documents": sum(m["timings"]["documents"] for m in later) / len(later),
              "storing_s": sum(storing[m["unit"]] for m in later) / len(later)}  # fmt: skip
    return figures | {"process_s": time.perf_counter() - started, "steady": steady,
                      "last": markers[-1]["timings"] | {"seconds": markers[-1]["seconds"]}}  # fmt: skip


def child(root: Path, scorer: str, checkpoints: int, args: argparse.Namespace, limit: int | None = None) -> dict:
    """:func:`measure` in a fresh process (``--in-process``: in this one, for the test); its figures, with the
    process's whole wall time (``whole_s``: Python's start-up and imports included)."""
    out = root / "measured" / f"{scorer}-{checkpoints}-{limit or 'all'}-{len(list(root.glob('measured/*')))}"
    out.mkdir(parents=True)
    shared, prepared = root / "prepared", out / "work" / "prepared"
    if shared.is_dir():  # the fast scorer's prepared requests
        shutil.copytree(shared, prepared)
    started = time.perf_counter()
    if args.in_process:
        figures = measure(root, scorer, checkpoints, out, args.batch_size, limit)
    else:
        command = [sys.executable, __file__, "--measure", str(root), scorer, str(checkpoints), str(out),
                   "--batch-size", args.batch_size, *(["--limit", str(limit)] if limit else [])]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, env=os.environ)
        if result.returncode != 0:
            raise SystemExit(f"{scorer} x {checkpoints} failed ({result.returncode}):\n{result.stderr[-3000:]}")
        figures = json.loads(result.stdout.splitlines()[-1])
    whole = time.perf_counter() - started
    if prepared.is_dir():
        shutil.copytree(prepared, shared, dirs_exist_ok=True)
    return figures | {"whole_s": whole}


def marginal(one: dict, many: dict, checkpoints: int) -> dict:
    """The marginal checkpoint's figures: (N checkpoints - 1) / (N - 1)."""
    per_checkpoint = many["documents"] / checkpoints
    seconds = (many["whole_s"] - one["whole_s"]) / (checkpoints - 1)
    forward = (many["forward_s"] - one["forward_s"]) / (checkpoints - 1)
    return {
        "documents_per_checkpoint": per_checkpoint,
        "marginal_s": seconds,
        "marginal_forward_s": forward,
        "documents_per_s": per_checkpoint / seconds if seconds > 0 else None,
        "outside_forward_us_per_document": 1e6 * (seconds - forward) / per_checkpoint,
        "steady_s": many["steady"]["seconds"],
        "steady_forward_s": many["steady"]["forward_s"],
        "steady_outside_us_per_document": 1e6
        * (many["steady"]["seconds"] - many["steady"]["forward_s"])
        / max(1.0, many["steady"]["documents"]),
        "steady_storing_s": many["steady"]["storing_s"],
        "stored_outside_us_per_document": 1e6
        * (many["steady"]["seconds"] + many["steady"]["storing_s"] - many["steady"]["forward_s"])
        / max(1.0, many["steady"]["documents"]),
        # marginal_s = steady_s + outside_units_s + first_unit_s + startup_s (each over N - 1)
        "outside_units_s": ((many["process_s"] - many["unit_s"]) - (one["process_s"] - one["unit_s"]))
        / (checkpoints - 1),
        "first_unit_s": (many["unit_s"] - (checkpoints - 1) * many["steady"]["seconds"] - one["unit_s"])
        / (checkpoints - 1),
        "startup_s": ((many["whole_s"] - many["process_s"]) - (one["whole_s"] - one["process_s"])) / (checkpoints - 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=0, help="rows per testset (default 0: each testset's real size)")
    parser.add_argument("--checkpoints", type=int, default=3, help="checkpoints of the run (default 3)")
    parser.add_argument("--batch-size", default="64", help="the batch size of every scorer (default 64)")
    parser.add_argument("--scorers", default=",".join(SCORERS), help="the scorers measured (default: all three)")
    parser.add_argument("--in-process", action="store_true", help="measure in this process (for tests)")
    parser.add_argument("--measure", nargs=4, help=argparse.SUPPRESS)  # the child: ROOT SCORER CHECKPOINTS OUT
    parser.add_argument("--limit", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.checkpoints < 2:
        parser.error("--checkpoints: 2 or more (the marginal checkpoint is N - 1)")
    if args.measure:
        root, scorer, checkpoints, out = args.measure
        print(json.dumps(measure(Path(root), scorer, int(checkpoints), Path(out), args.batch_size, args.limit)))
        return
    scorers = [s.strip() for s in args.scorers.split(",") if s.strip()]
    os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")  # the children's torch: one thread (see above)
    with tempfile.TemporaryDirectory(prefix="ood-store-bench-fast-") as tmp:
        root = Path(tmp)
        offline(root)
        rows = args.docs or real_sizes()
        params = build(root, STAND_IN, VOCAB["tiny"], args.checkpoints, {"nli-data": rows})
        files = [p for p in (root / "nli-data").glob("*.jsonl") if ".train." not in p.name]
        generated = sum(len(p.read_text("utf-8").splitlines()) for p in files)
        print(
            f"{args.checkpoints} checkpoints of one run of a randomly initialized tiny OPT ({params:,} parameters, "
            f"float32) x the 10 ood_nli testsets ({generated:,} generated rows), CPU ({os.cpu_count()} cores), "
            f"batch size {args.batch_size}, scorers {', '.join(scorers)}",
            flush=True,
        )
        child(root, "lm-eval", 1, args, limit=1)  # the datasets cache: not measured
        figures: dict[str, dict] = {}
        preparing = None
        for scorer in scorers:
            if scorer == "fast":  # its requests prepared once, by a process not measured
                preparing = child(root, "fast", 1, args)["last"]["prepare_s"]
            one = child(root, scorer, 1, args)
            many = child(root, scorer, args.checkpoints, args)
            figures[scorer] = {"one": one, "many": many, **marginal(one, many, args.checkpoints)}
            print(f"{scorer}: {figures[scorer]['marginal_s']:.2f} s per marginal checkpoint", flush=True)
    base = figures.get("lm-eval", {}).get("marginal_s")
    for scorer, f in figures.items():
        last = f["many"]["last"]
        parts = ", ".join(f"{p.removesuffix('_s')} {last.get(p, 0.0):.2f}" for p in PARTS)
        ratio = f" ({base / f['marginal_s']:.1f}x fewer seconds than lm-eval's)" if base and scorer != "lm-eval" \
            and f["marginal_s"] > 0 else ""  # fmt: skip
        print(f"{scorer}: {f['documents_per_checkpoint']:,.0f} documents per checkpoint")
        rate = f"{f['documents_per_s']:,.0f}" if f["documents_per_s"] else "?"
        print(f"  marginal checkpoint:  {f['marginal_s']:.2f} s{ratio}, {rate} documents/s")
        print(f"  outside the forward passes: {f['outside_forward_us_per_document']:,.1f} µs per document "
              f"(forward passes {f['marginal_forward_s']:.2f} s)")  # fmt: skip
        print(f"  whole processes: 1 checkpoint {f['one']['whole_s']:.1f} s, {args.checkpoints} checkpoints "
              f"{f['many']['whole_s']:.1f} s")  # fmt: skip
        print(f"  steady state (units 2 to {args.checkpoints}): {f['steady_s']:.2f} s a checkpoint, forward passes "
              f"{f['steady_forward_s']:.2f} s, {f['steady_outside_us_per_document']:,.1f} µs per document outside "
              "them")  # fmt: skip
        print(f"  steady state and storing: {f['steady_s'] + f['steady_storing_s']:.2f} s a checkpoint (storing "
              f"{f['steady_storing_s']:.2f} s), {f['stored_outside_us_per_document']:,.1f} µs per document outside "
              "the forward passes")  # fmt: skip
        print(f"  last unit's own parts (s): {parts}; unit {last['seconds']:.2f}")
        print(f"  the marginal checkpoint's parts (s): steady unit {f['steady_s']:.2f}, storing and the rest "
              f"outside the units {f['outside_units_s']:.2f}, first units' difference {f['first_unit_s']:.2f}, "
              f"start-up and imports {f['startup_s']:.2f}")  # fmt: skip
    fast = figures.get("fast")
    if fast and base:
        steady = figures["lm-eval"]["steady_s"]
        print(
            f"targets: marginal cost <= 1/10 of lm-eval's: {fast['marginal_s'] / base:.3f} "
            f"({'met' if 0 < fast['marginal_s'] <= base / 10 else 'NOT met'}; steady state "
            f"{fast['steady_s'] / steady:.3f}); <= 50 µs per document outside the forward passes: "
            f"{fast['outside_forward_us_per_document']:.1f} "
            f"({'met' if fast['outside_forward_us_per_document'] <= 50 else 'NOT met'}; steady state "
            f"{fast['steady_outside_us_per_document']:.1f}, with storing {fast['stored_outside_us_per_document']:.1f})"
        )
    if preparing is not None:
        print(f"the fast scorer's preparation (once per run, or per work folder): {preparing:.1f} s")
    print(json.dumps({"parameters": params, "documents": generated, "checkpoints": args.checkpoints,
                      "batch_size": args.batch_size, "cores": os.cpu_count(), "fast_prepare_s": preparing,
                      "scorers": figures}))  # fmt: skip


if __name__ == "__main__":
    main()
