"""Whole-process timing of `ood-store evaluate` on 5 tiny checkpoints × 3 tasks, against baselines run alongside.

    python benchmarks/evaluate_checkpoints.py [--repeats 3] [--docs 100]

Set-up (not timed): a toy run from ood_store._examples.toy, 5 checkpoints
(checkpoint-0, -2, -4, -6, -8 of an 8-step finetune of a 42k-parameter GPT-2)
and 3 local JSONL lm-eval tasks of --docs documents each. Offline.

Timed, each a fresh process tree writing to a fresh folder, per-sample logs on,
CPU, batch size 16, everything else as lm-eval defaults:
  cli       the lm_eval command once per checkpoint, as a shell loop over checkpoints does
            (`lm-eval run --model hf --model_args pretrained=CKPT --tasks ... --include_path ...
            --log_samples --output_path ...`);
  loop      the fastest hand-written Python script: one process, one TaskManager built once
            without lm-eval's built-in tasks, simple_evaluate per checkpoint, results and
            samples saved with EvaluationTracker; no store, no resumption;
  ood-store `ood-store evaluate RUN_DIR --run ... --tasks ... --include-path ...`, which also
            writes every score and sample row into the store, one transaction per checkpoint.
Reported: median wall seconds of each and the ratios cli/ood-store and ood-store/loop.
Machines here are noisy: read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
TASKS = ("toy_nli", "toy_ood_never", "toy_ood_long")

LOOP = r"""
import sys
from pathlib import Path
import lm_eval
from lm_eval.loggers import EvaluationTracker
from lm_eval.tasks import TaskManager

run_dir, tasks_dir, out, tasks = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4].split(",")
manager = TaskManager(include_path=tasks_dir, include_defaults=False)
for checkpoint in sorted(run_dir.glob("checkpoint-*")):
    tracker = EvaluationTracker(output_path=str(out / checkpoint.name))
    result = lm_eval.simple_evaluate(
        model="hf", model_args={"pretrained": str(checkpoint)}, tasks=tasks, task_manager=manager,
        device="cpu", batch_size=16, log_samples=True, evaluation_tracker=tracker,
    )
    samples = result.pop("samples")
    tracker.save_results_aggregated(results=result, samples=samples)
    for task in samples:
        tracker.save_results_samples(task_name=task, samples=samples[task])
"""


def build(root: Path, docs: int) -> tuple[Path, Path]:
    from ood_store._examples import toy

    tokenizer = toy.build_tokenizer()
    model = toy.build_model(tokenizer)
    toy.finetune(model, tokenizer, toy.training_rows(), root / "run", steps=8, save_every=2)
    toy.write_tasks(root / "tasks", [s for s in toy.toy_sets(docs) if s.name in TASKS])
    return root / "run", root / "tasks"


def timed(commands: list[list[str]], env: dict[str, str]) -> float:
    start = time.perf_counter()
    for command in commands:
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--docs", type=int, default=100, help="documents per task")
    args = parser.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TQDM_DISABLE": "1"}
    with tempfile.TemporaryDirectory(prefix="ood-store-bench-") as tmp:
        root = Path(tmp)
        run_dir, tasks_dir = build(root, args.docs)
        checkpoints = sorted(run_dir.glob("checkpoint-*"))
        assert len(checkpoints) == 5, checkpoints
        tasks = ",".join(TASKS)

        def cli(out: Path) -> list[list[str]]:
            return [
                [str(BIN / "lm-eval"), "run", "--model", "hf", "--model_args", f"pretrained={c}", "--tasks", tasks,
                 "--include_path", str(tasks_dir), "--device", "cpu", "--batch_size", "16", "--log_samples",
                 "--output_path", str(out / c.name)]
                for c in checkpoints
            ]  # fmt: skip

        def loop(out: Path) -> list[list[str]]:
            return [[sys.executable, "-c", LOOP, str(run_dir), str(tasks_dir), str(out), tasks]]

        def ood_store(out: Path) -> list[list[str]]:
            return [
                [str(BIN / "ood-store"), "--db", str(out / "store.duckdb"), "evaluate", str(run_dir), "--run", "bench",
                 "--tasks", tasks, "--include-path", str(tasks_dir), "--device", "cpu", "--batch-size", "16",
                 "--output-dir", str(out / "lm-eval"), "-q"]
            ]  # fmt: skip

        methods = {"cli": cli, "loop": loop, "ood-store": ood_store}
        timed(loop(root / "warm-up"), env)  # builds the datasets cache of the JSON tasks, for all alike
        times: dict[str, list[float]] = {name: [] for name in methods}
        for repeat in range(args.repeats):
            for name, commands in methods.items():
                out = root / f"{name}-{repeat}"
                out.mkdir()
                times[name].append(timed(commands(out), env))
                print(f"  {name:9s} run {repeat + 1}: {times[name][-1]:6.2f} s", file=sys.stderr)
        stored = subprocess.run(
            [str(BIN / "ood-store"), "--db", str(root / "ood-store-0" / "store.duckdb"), "query",
             "SELECT count(DISTINCT step) AS checkpoints, count(DISTINCT task) AS tasks, count(*) AS samples "
             "FROM samples_all", "--format", "csv"],
            check=True, capture_output=True, text=True, env=env,
        ).stdout.splitlines()[1]  # fmt: skip

    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"5 tiny checkpoints x 3 tasks x {args.docs} documents, log_samples, CPU; median of {args.repeats} runs")
    for name, value in median.items():
        print(f"  {name:9s} {value:7.2f} s")
    print(f"ood-store stored (checkpoints, tasks, sample rows): {stored}")
    print(f"cli / ood-store:  {median['cli'] / median['ood-store']:.2f}x (ood-store this many times faster)")
    print(f"ood-store / loop: {median['ood-store'] / median['loop']:.2f}x (the cost of the store and resumability)")


if __name__ == "__main__":
    main()
