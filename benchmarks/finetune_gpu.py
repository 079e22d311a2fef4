"""Finetuning throughput on a GPU: `ood-store finetune` of a randomly initialized model of real size, LoRA and full.

    python benchmarks/finetune_gpu.py                                   # a GPU machine: OPT-1.3b's shape, bf16
    python benchmarks/finetune_gpu.py --model tiny --device cpu --steps 3 --shots 16 --batch 4   # the same, on a CPU

Set-up (not timed): generated NLI rows (the toy's sentences, ood_store._examples.toy, --rows of them) as
a local training split; a byte-level BPE tokenizer trained from code on them, its vocabulary filled up to the shape's
(benchmarks/evaluate_series.py's; nothing is downloaded); a randomly initialized OPT of the shape
--model names (benchmarks/evaluate_gpu.py's shapes: opt-1.3b is 24 layers, width 2048, 1.3B
parameters), saved as the base model.

Timed, each method in a fresh process: `ood_store.finetune` of one run of --shots shots for --steps
optimizer steps of --batch examples, a log schedule of 5 checkpoints from step 0; on a GPU with bf16
mixed precision (TrainingArguments bf16), the base model's weights in float32 for full finetuning and in
--dtype under LoRA (rank 8). Meanwhile this process samples the GPU's utilisation and memory with
nvidia-smi every 0.5 s.

Reported per method: the Trainer's own train_runtime (steps and saves, without loading), tokens/s over
it (the examples' tokens times the epochs the steps make), steps/s, the whole command's wall seconds,
GPU utilisation (mean, median, max of the samples taken) and peak memory; then one JSON line with every
figure. On a CPU the GPU figures are null. CI never needs a GPU for this: tests/test_benchmark_finetune.py
runs the tiny form on a CPU.
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
from evaluate_gpu import SHAPES, VOCAB, GpuSampler  # noqa: E402
from evaluate_series import padded_tokenizer  # noqa: E402

STUDY = """
base_model = "{base}"
in_domain = "gen_nli"
data_dir = "{data}"
tasks = ["gen_nli"]
method = "{method}"
shots = {shots}
dtype = "{dtype}"
schedule = {{ kind = "log", checkpoints = 5 }}
name = "bench-{method}"
[training]
max_steps = {steps}
per_device_train_batch_size = {batch}
learning_rate = 1e-4
warmup_steps = 0
bf16 = {bf16}
use_cpu = {cpu}
[lora]
r = 8
"""


def build(root: Path, shape: str, rows: int) -> tuple[Path, Path, int]:
    """The base model folder, the data folder and the model's parameter count."""
    import torch
    from transformers import OPTConfig, OPTForCausalLM

    from ood_store._examples import toy

    data = root / "data"
    data.mkdir()
    generated = toy.training_rows(rows)
    (data / "gen_nli.train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in generated), "utf-8")
    texts = [f"{r['premise']} Question: {r['hypothesis']} Yes or No? {('Yes', 'No')[r['label']]}" for r in generated]
    tokenizer = padded_tokenizer(toy.toy_texts() + texts, VOCAB[shape])  # the shape's vocabulary, as evaluate_gpu's
    dims = SHAPES[shape]
    config = OPTConfig(
        vocab_size=len(tokenizer), **dims, max_position_embeddings=2048, word_embed_proj_dim=dims["hidden_size"],
        do_layer_norm_before=True, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):  # initializing 1.3B weights: faster on a GPU
        model = OPTForCausalLM(config).float()
    params = sum(p.numel() for p in model.parameters())
    base = toy.save_checkpoint(model, tokenizer, root / "base")
    return base, data, params


def measure(study: Path, out: Path) -> dict:
    """In this (fresh) process: finetune the study's run; its figures from the run folder."""
    import ood_store

    started = time.perf_counter()
    report = ood_store.finetune(study, output_dir=out)
    wall = time.perf_counter() - started
    if report.failed:
        raise SystemExit("finetuning failed: " + "; ".join(f"{r.run}: {r.error}" for r in report.failed))
    [run] = report.runs
    logs = [json.loads(line) for line in (run.folder / "train_log.jsonl").read_text().splitlines()]
    runtime = float(next(entry["train_runtime"] for entry in reversed(logs) if "train_runtime" in entry))
    examples = [json.loads(line) for line in (run.folder / "train_examples.jsonl").read_text().splitlines()]
    batch = json.loads((run.folder / "finetune.json").read_text())["config"]["training"]["per_device_train_batch_size"]
    tokens = run.steps * batch * sum(len(e["input_ids"]) for e in examples) / len(examples)
    return {"steps": run.steps, "checkpoints": run.checkpoints, "train_runtime_s": runtime, "wall_s": wall,
            "tokens": tokens, "tokens_per_s": tokens / runtime, "steps_per_s": run.steps / runtime}  # fmt: skip


def main() -> None:
    import torch

    default_device = "cuda" if torch.cuda.is_available() else "cpu"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(SHAPES), default="opt-1.3b", help="the model's shape")
    parser.add_argument("--dtype", default="bfloat16", help="the base weights' dtype under LoRA (default bfloat16)")
    parser.add_argument("--device", default=default_device, help=f"default: {default_device}")
    parser.add_argument("--methods", default="lora,full")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--shots", type=int, default=512)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rows", type=int, default=2048, help="generated training rows")
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)  # the child process: STUDY OUT
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(Path(args.measure[0]), Path(args.measure[1]))))
        return
    cuda = args.device.startswith("cuda")
    with tempfile.TemporaryDirectory(prefix="ood-store-bench-finetune-gpu-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TQDM_DISABLE": "1"}
        if not cuda:
            env["CUDA_VISIBLE_DEVICES"] = ""
        base, data, params = build(root, args.model, args.rows)
        where = torch.cuda.get_device_name(0) if cuda else f"CPU ({os.cpu_count()} cores)"
        print(
            f"a randomly initialized {args.model} ({params / 1e6:,.1f}M parameters), {args.shots} generated shots, "
            f"{args.steps} steps of {args.batch}, {where}, torch {torch.__version__}",
            flush=True,
        )
        gpu = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0]
        sampling = cuda and shutil.which("nvidia-smi") is not None
        figures: dict[str, dict] = {}
        for method in args.methods.split(","):
            study = root / f"{method}.toml"
            dtype = args.dtype if method == "lora" else "float32"  # full: float32 master weights, bf16 autocast
            study.write_text(
                STUDY.format(base=base, data=data, method=method, shots=args.shots, dtype=dtype, steps=args.steps,
                             batch=args.batch, bf16=str(cuda).lower(), cpu=str(not cuda).lower()),
                "utf-8",
            )  # fmt: skip
            sampler = GpuSampler(gpu)
            command = [sys.executable, __file__, "--measure", str(study), str(root / method)]
            if sampling:
                with sampler:
                    result = subprocess.run(command, capture_output=True, text=True, env=env)
            else:
                result = subprocess.run(command, capture_output=True, text=True, env=env)
            if result.returncode != 0:
                raise SystemExit(f"{method} failed ({result.returncode}):\n{result.stderr[-3000:]}")
            figures[method] = json.loads(result.stdout.splitlines()[-1]) | sampler.summary()
            f = figures[method]
            print(f"{method}: {f['steps']} steps in {f['train_runtime_s']:.1f} s of training ({f['wall_s']:.1f} s in "
                  f"all): {f['tokens_per_s']:,.0f} tokens/s, {f['steps_per_s']:.2f} steps/s")  # fmt: skip
            if f["gpu_utilisation_mean"] is not None:
                used = f"mean {f['gpu_utilisation_mean']:.0f}%, median {f['gpu_utilisation_median']:.0f}%"
                print(
                    f"  GPU utilisation: {used}, max {f['gpu_utilisation_max']:.0f}%; peak memory "
                    f"{f['gpu_memory_peak_mib']:,.0f} MiB"
                )
            else:
                print("  GPU utilisation: not measured (no GPU, or no nvidia-smi)")
    print(json.dumps({"model": args.model, "parameters": params, "device": where, **figures}))


if __name__ == "__main__":
    main()
