"""Workers and task reuse: 2 local workers against inline, and per-checkpoint overhead before and after reusing tasks.

    python benchmarks/evaluate_cluster.py [--checkpoints 8] [--docs 120] [--width 256] [--layers 4] [--repeats 2]

Set-up (not timed): a randomly initialized GPT-2 of --layers layers and --width dimensions (a byte-level
BPE tokenizer built from code, as ood_store._examples.toy does), saved as --checkpoints checkpoints
(different seeds), and the ood_nli suite's 10 testsets (`--tasks ood_nli`) read from a generated
--data-dir: each testset's fixture rows (tests/fixtures/nli-suite, in its dataset's own schema)
repeated to --docs documents. Offline, CPU, batch size 16, per-sample rows logged and stored.

1. Throughput, each a fresh `ood-store evaluate` process tree into a fresh store and folders:
     inline    --executor inline (one process; torch uses every core)
     inline-1  the same with OMP_NUM_THREADS=1 (one core's worth: the work each local worker does)
     local     --executor local --workers 2 (two worker processes; the cores shared out, one thread each)
   Reported: median wall seconds and the ratios inline / local (the target on 2 cores: >= 1.6x),
   inline-1 / local (what the second process adds), and the ceiling inline / (inline-1 / 2): where torch's
   threads already scale inline over the cores, two one-thread workers cannot beat it by more than that.
2. Per-checkpoint overhead, in this process (inline), measured by wrapping lm-eval's and ood-store's own
   functions: the model's forward passes (HFLM._model_call), planning (once, shared out), task building
   (TaskManager.load of names and configs), model loading (HFLM.__init__), building the prompts
   (Task.build_all_requests), lm-eval's file writing, and the collector's ingest; overhead is the wall
   time of planning, task building, model loading, file writing and ingest as a share of the wall time
   (and, for reference, all the time outside the forward passes, which includes lm-eval's work per
   document), with task objects rebuilt for every checkpoint (before) and built once (after); each in a
   fresh process with one thread (OMP_NUM_THREADS=1, so that the forward passes take the same time in
   both). The target: under 15 %.
Machines here are shared and noisy: read the ratios and shares, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

BIN = Path(sys.executable).parent
TASKS = ("ood_nli",)  # the suite's 10 testsets
RUN = "bench"
#: What a checkpoint costs besides its documents: the overhead the target is about.
PER_CHECKPOINT = ("planning", "task building", "model loading", "file writing", "ingest")


def suite_data(folder: Path, docs: int | Mapping[str, int]) -> Path:
    """A --data-dir for the ood_nli suite: each testset's fixture rows (tests/fixtures/nli-suite, in the datasets'
    own schemas) repeated to ``docs`` rows (or ``docs[task]``), each made distinct by a number in its first text
    field."""
    fixtures = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "nli-suite"
    folder.mkdir(parents=True)
    for source in sorted(fixtures.glob("ood_nli_*.jsonl")):
        rows = [json.loads(line) for line in source.read_text("utf-8").splitlines()]
        if source.name.endswith(".train.jsonl"):
            (folder / source.name).write_text(source.read_text("utf-8"), "utf-8")
            continue
        out = []
        for index in range(docs if isinstance(docs, int) else docs[source.name.removesuffix(".jsonl")]):
            row = dict(rows[index % len(rows)])
            text = next(k for k in ("premise", "sentence1", "context") if k in row)
            row[text] = f"{row[text]} ({index})"
            out.append(json.dumps(row))
        (folder / source.name).write_text("\n".join(out) + "\n", "utf-8")
    return folder


def build(root: Path, checkpoints: int, docs: int, width: int, layers: int) -> tuple[Path, Path]:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from ood_store._examples import toy

    tokenizer = toy.build_tokenizer()
    for index in range(checkpoints):
        torch.manual_seed(index)
        config = GPT2Config(
            vocab_size=len(tokenizer), n_positions=128, n_embd=width, n_layer=layers, n_head=max(1, width // 64),
            bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        )  # fmt: skip
        toy.save_checkpoint(GPT2LMHeadModel(config), tokenizer, root / "run" / f"checkpoint-{index * 100}")
    return root / "run", suite_data(root / "nli-data", docs)


def evaluate_command(run_dir: Path, tasks_dir: Path, out: Path, *executor: str) -> list[str]:
    return [
        str(BIN / "ood-store"), "--db", str(out / "store.duckdb"), "evaluate", str(run_dir), "--run", RUN,
        "--tasks", ",".join(TASKS), "--data-dir", str(tasks_dir), "--device", "cpu", "--batch-size", "16",
        "--output-dir", str(out / "lm-eval"), "-q", *executor,
    ]  # fmt: skip


def throughput(run_dir: Path, tasks_dir: Path, root: Path, repeats: int, env: dict[str, str]) -> dict[str, float]:
    one_thread = {**env, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    methods = {
        "inline": (("--executor", "inline"), env),
        "inline-1": (("--executor", "inline"), one_thread),
        "local": (("--executor", "local", "--workers", "2"), env),
    }
    times: dict[str, list[float]] = defaultdict(list)
    for repeat in range(repeats):
        for name, (executor, environment) in methods.items():
            out = root / f"{name}-{repeat}"
            out.mkdir()
            started = time.perf_counter()
            subprocess.run(evaluate_command(run_dir, tasks_dir, out, *executor), check=True, env=environment)
            times[name].append(time.perf_counter() - started)
            print(f"  {name:7s} run {repeat + 1}: {times[name][-1]:7.2f} s", file=sys.stderr)
    return {name: statistics.median(values) for name, values in times.items()}


class Timers:
    """Seconds spent in wrapped functions (outermost calls only), by name."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self._depth: dict[str, int] = defaultdict(int)

    def wrap(self, owner, attribute: str, name: str, when=lambda *a, **k: True):
        real = getattr(owner, attribute)

        def timed(*args, **kwargs):
            if not when(*args, **kwargs) or self._depth[name]:
                return real(*args, **kwargs)
            self._depth[name] += 1
            started = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - started
                self._depth[name] -= 1

        setattr(owner, attribute, timed)
        return lambda: setattr(owner, attribute, real)


def overhead(run_dir: Path, tasks_dir: Path, out: Path, reuse: bool) -> dict[str, float]:
    """Per-checkpoint seconds of each part, and the wall time, of an inline evaluation (in a fresh process)."""
    result = subprocess.run(
        [sys.executable, __file__, "--overhead-of", str(run_dir), str(tasks_dir), str(out), str(int(reuse))],
        check=True, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    )  # fmt: skip
    return json.loads(result.stdout.splitlines()[-1])


def measure_overhead(run_dir: Path, tasks_dir: Path, out: Path, reuse: bool) -> dict[str, float]:
    import lm_eval.models.huggingface as hf
    from lm_eval.api.task import Task
    from lm_eval.tasks import TaskManager

    import ood_store
    from ood_store._evaluate import harness, runner
    from ood_store._evaluate.tasklist import TaskObjects

    timers = Timers()

    def by_name(self, task_list, *args, **kwargs):  # building from a name or config, not passing objects through
        items = task_list if isinstance(task_list, list) else [task_list]
        return any(isinstance(item, str | dict) for item in items)

    timers.wrap(hf.HFLM, "_model_call", "forward passes")
    timers.wrap(hf.HFLM, "__init__", "model loading")
    timers.wrap(TaskManager, "load", "task building", when=by_name)
    timers.wrap(Task, "build_all_requests", "prompts")
    timers.wrap(harness, "save", "file writing")
    timers.wrap(runner, "collect", "ingest")
    timers.wrap(runner, "plan", "planning")
    TaskObjects.reuse = reuse
    out.mkdir()
    started = time.perf_counter()
    with ood_store.open(out / "store.duckdb") as store:
        report = store.evaluate(
            [run_dir], run=RUN, tasks=list(TASKS), data_dir=tasks_dir, output_dir=out / "lm-eval",
            device="cpu", batch_size=16,
        )  # fmt: skip
    wall = time.perf_counter() - started
    n = len(report.evaluated)
    assert n == len(report.checkpoints), report
    return {"wall": wall / n, **{k: v / n for k, v in timers.seconds.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoints", type=int, default=8)
    parser.add_argument("--docs", type=int, default=120, help="documents per testset")
    parser.add_argument("--width", type=int, default=256, help="the model's embedding width")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2, help="runs of each throughput method (median)")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--overhead-of", nargs=4, help=argparse.SUPPRESS)  # the child process of part 2
    args = parser.parse_args()
    os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TQDM_DISABLE="1", RAY_USAGE_STATS_ENABLED="0")
    if args.overhead_of:
        run_dir, tasks_dir, out, reuse = args.overhead_of
        print(json.dumps(measure_overhead(Path(run_dir), Path(tasks_dir), Path(out), reuse == "1")))
        return
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="ood-store-bench-") as tmp:
        root = Path(tmp)
        run_dir, tasks_dir = build(root, args.checkpoints, args.docs, args.width, args.layers)
        import torch
        from transformers import AutoModelForCausalLM

        params = sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(next(run_dir.iterdir())).parameters())
        print(
            f"{args.checkpoints} checkpoints of a {params / 1e6:.1f}M-parameter GPT-2 x the 10 ood_nli testsets x "
            f"{args.docs} documents, CPU ({os.cpu_count()} cores, torch {torch.__version__}), batch size 16"
        )
        # Warm-up (not reported): the datasets cache of the JSON files, for all alike.
        (root / "warm-up").mkdir()
        subprocess.run(evaluate_command(run_dir, tasks_dir, root / "warm-up", "--limit", "2"), check=True, env=env)
        if not args.skip_throughput:
            median = throughput(run_dir, tasks_dir, root, args.repeats, env)
            print(f"Throughput, median of {args.repeats} runs:")
            for name, value in median.items():
                print(f"  {name:7s} {value:7.2f} s")
            print(f"inline / local (2 workers): {median['inline'] / median['local']:.2f}x (target >= 1.6x)")
            print(f"inline with 1 thread / local (2 workers): {median['inline-1'] / median['local']:.2f}x")
            # Inline already spreads the forward passes over the cores (torch's threads): two one-thread
            # workers can at best halve inline-1's time, so this is the most these two workers can gain.
            ceiling = median["inline"] / (median["inline-1"] / 2)
            print(f"ceiling for 2 workers (inline / half of inline with 1 thread): {ceiling:.2f}x")
        if args.skip_overhead:
            return
        before = overhead(run_dir, tasks_dir, root / "overhead-before", reuse=False)
        after = overhead(run_dir, tasks_dir, root / "overhead-after", reuse=True)
    print("Per checkpoint, inline, seconds (share of wall time):")
    parts = ["forward passes", "planning", "task building", "model loading", "prompts", "file writing", "ingest"]
    print(f"  {'':16s} {'before':>16s} {'after':>16s}")
    for part in ["wall", *parts]:
        cells = [f"{m.get(part, 0.0):7.3f} ({100 * m.get(part, 0.0) / m['wall']:5.1f}%)" for m in (before, after)]
        print(f"  {part:16s} {cells[0]:>16s} {cells[1]:>16s}")
    for label, m in (("before", before), ("after", after)):
        share = sum(m.get(part, 0.0) for part in PER_CHECKPOINT) / m["wall"]
        print(f"per-checkpoint overhead ({', '.join(PER_CHECKPOINT)}), {label} reusing tasks: {100 * share:.1f}%")
    print("  (target < 15%)")
    for label, m in (("before", before), ("after", after)):
        share = 1 - m.get("forward passes", 0.0) / m["wall"]
        print(f"all outside the forward passes, {label} reusing tasks: {100 * share:.1f}%")
    print("  (also lm-eval's work per document: prompts, tokenizing, scoring; it grows with the documents)")


if __name__ == "__main__":
    main()
