"""Evaluation throughput on a GPU: a randomly initialised model of real size over generated local NLI tasks.

    python benchmarks/evaluate_gpu.py                                   # a GPU machine: OPT-1.3b's shape, bf16
    python benchmarks/evaluate_gpu.py --model tiny --device cpu --dtype float32 --docs 3   # the same, on a CPU

Set-up (not timed): a randomly initialised OPT of the shape --model names (opt-1.3b: 24 layers, width
2048, 50,272 vocabulary entries, 1.3B parameters; opt-125m; tiny), saved once in --dtype and linked
into --checkpoints checkpoint folders (each is loaded afresh, as the checkpoints of a study are); a
byte-level BPE tokenizer trained from code on the generated texts (nothing is downloaded); and a
--data-dir for the ood_nli suite's 10 testsets, each the suite's fixture rows (tests/fixtures/nli-suite,
in the datasets' own schemas) repeated, each made distinct by a number, to --docs rows (default 0: each
testset's real evaluated size, 63,489 rows in all, as the suite's definition gives them). A warm-up
evaluation of one document per testset builds the datasets cache (kept under the benchmark's own
folder, never ~/.cache) and the CUDA context.

Timed, in a fresh process: `store.evaluate` of every checkpoint on `--tasks ood_nli` (inline: one GPU),
per-sample rows logged and stored, as `ood-store evaluate` does; lm-eval's forward passes
(HFLM._model_call, synchronised on CUDA) and model loading (HFLM.__init__) timed by wrapping them.
Meanwhile this process samples the GPU's utilisation and memory with nvidia-smi every 0.5 s.

Reported: documents evaluated (the stored scores' n_samples), wall seconds, documents/s end to end and
within the forward passes, model loading per checkpoint, GPU utilisation (mean, median and max of the
samples taken while evaluating) and peak memory, then one JSON line with every figure. On a CPU the GPU
figures are null. CI never needs a GPU for this: tests/test_benchmark_gpu.py runs the tiny form on a CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from evaluate_cluster import Timers, suite_data  # noqa: E402

RUN = "bench-gpu"
TASKS = "ood_nli"  # the suite's 10 testsets
#: Model shapes: OPT's published configurations (facebook/opt-1.3b, opt-125m), and a tiny one for CPUs.
SHAPES: dict[str, dict[str, int | None]] = {
    "opt-1.3b": {"hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 32, "ffn_dim": 8192,
                 "vocab_size": 50272},
    "opt-125m": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "ffn_dim": 3072,
                 "vocab_size": 50272},
    "tiny": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "ffn_dim": 64, "vocab_size": None},
}  # fmt: skip


def real_sizes() -> dict[str, int]:
    """Each suite testset's evaluated split size, from the suite's definition."""
    from ood_store._evaluate.suite.testsets import testsets

    return {t.name: min(t.rows[t.split]) for t in testsets()}


def build(root: Path, shape: str, dtype: str, checkpoints: int, docs: int) -> tuple[Path, Path, int]:
    """The checkpoint folders and the data folder; returns them and the model's parameter count."""
    import torch
    from transformers import OPTConfig, OPTForCausalLM

    from ood_store._examples import toy

    data = suite_data(root / "nli-data", docs or real_sizes())
    texts = [
        value
        for path in sorted(data.glob("*.jsonl"))
        for line in path.read_text("utf-8").splitlines()
        for value in json.loads(line).values()
        if isinstance(value, str)
    ]
    tokenizer = toy.build_tokenizer(texts, vocab_size=8192)
    dims = dict(SHAPES[shape])
    dims["vocab_size"] = max(dims["vocab_size"] or 0, len(tokenizer))
    config = OPTConfig(
        **dims, max_position_embeddings=2048, word_embed_proj_dim=dims["hidden_size"], do_layer_norm_before=True,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):  # initialising 1.3B weights: faster on a GPU
        model = OPTForCausalLM(config).to(getattr(torch, dtype))
    params = sum(p.numel() for p in model.parameters())
    weights = toy.save_checkpoint(model, tokenizer, root / "weights")
    del model
    for index in range(checkpoints):  # the same weights under every checkpoint's name, linked, not copied
        folder = root / "run" / f"checkpoint-{index * 100}"
        folder.mkdir(parents=True)
        for file in weights.iterdir():
            (folder / file.name).symlink_to(file)
    return root / "run", data, params


class GpuSampler:
    """nvidia-smi's utilisation (%) and memory used (MiB) of one GPU, every ``every`` seconds, in a thread."""

    def __init__(self, gpu: str, every: float = 0.5):
        self.gpu, self.every = gpu, every
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        query = ["nvidia-smi", f"--id={self.gpu}", "--query-gpu=utilization.gpu,memory.used",
                 "--format=csv,noheader,nounits"]  # fmt: skip
        while not self._stop.wait(self.every):
            try:
                line = subprocess.run(query, capture_output=True, text=True, timeout=10).stdout.strip()
                utilisation, memory = (float(x) for x in line.splitlines()[0].split(","))
            except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
                continue
            self.samples.append((utilisation, memory))

    def __enter__(self) -> GpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, float | None]:
        used = [u for u, _ in self.samples]
        return {
            "gpu_samples": len(self.samples),
            "gpu_utilisation_mean": statistics.fmean(used) if used else None,
            "gpu_utilisation_median": statistics.median(used) if used else None,
            "gpu_utilisation_max": max(used) if used else None,
            "gpu_memory_peak_mib": max((m for _, m in self.samples), default=None),
        }


def measure(run_dir: Path, data: Path, out: Path, device: str, dtype: str, batch_size: str, limit: int | None):
    """In this (fresh) process: evaluate every checkpoint, timing the forward passes and model loading."""
    import lm_eval.models.huggingface as hf
    import torch

    import ood_store

    cuda = device.startswith("cuda")
    real_call = hf.HFLM._model_call

    def synced_call(self, *args, **kwargs):  # CUDA runs asynchronously: the forward pass ends when it is synchronised
        logits = real_call(self, *args, **kwargs)
        if cuda:
            torch.cuda.synchronize()
        return logits

    hf.HFLM._model_call = synced_call
    timers = Timers()
    timers.wrap(hf.HFLM, "_model_call", "forward passes")
    timers.wrap(hf.HFLM, "__init__", "model loading")
    out.mkdir(parents=True)
    started = time.perf_counter()
    with ood_store.open(out / "store.duckdb") as store:
        report = store.evaluate(
            [run_dir], run=RUN, tasks=[TASKS], data_dir=data, output_dir=out / "lm-eval", device=device, dtype=dtype,
            batch_size=batch_size, limit=limit,
        )  # fmt: skip
        wall = time.perf_counter() - started
        documents = store.query("SELECT sum(n_samples) AS n FROM scores WHERE metric = 'acc'")["n"][0]
    failed = [f"{c.checkpoint}: {c.error}" for c in report.failed]
    if failed:
        raise SystemExit("evaluation failed: " + "; ".join(failed))
    return {
        "checkpoints": len(report.evaluated),
        "documents": int(documents),
        "wall_s": wall,
        "forward_s": timers.seconds["forward passes"],
        "model_loading_s": timers.seconds["model loading"],
        "torch_peak_memory_mib": torch.cuda.max_memory_allocated() / 2**20 if cuda else None,
    }


def child(root: Path, run_dir: Path, data: Path, out: str, args: argparse.Namespace, limit: int | None) -> dict:
    """:func:`measure` in a fresh process (what it imports and caches is its own); returns its figures."""
    command = [
        sys.executable, __file__, "--measure", str(run_dir), str(data), str(root / out), "--device", args.device,
        "--dtype", args.dtype, "--batch-size", args.batch_size, *(["--limit", str(limit)] if limit else []),
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"the evaluation failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.splitlines()[-1])


def main() -> None:
    import torch

    default_device = "cuda" if torch.cuda.is_available() else "cpu"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(SHAPES), default="opt-1.3b", help="the model's shape")
    parser.add_argument("--dtype", default="bfloat16", help="torch dtype of the weights (default bfloat16)")
    parser.add_argument("--device", default=default_device, help=f"default: {default_device}")
    parser.add_argument("--checkpoints", type=int, default=2)
    parser.add_argument("--docs", type=int, default=0, help="rows per testset (default 0: each testset's real size)")
    parser.add_argument("--batch-size", help="lm-eval's batch size: a number or auto (default: 256 on a GPU, else 16)")
    parser.add_argument("--measure", nargs=3, help=argparse.SUPPRESS)  # the child process: RUN_DIR DATA OUT
    parser.add_argument("--limit", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.batch_size = args.batch_size or ("256" if args.device.startswith("cuda") else "16")
    if args.measure:
        run_dir, data, out = map(Path, args.measure)
        print(json.dumps(measure(run_dir, data, out, args.device, args.dtype, args.batch_size, args.limit)))
        return
    with tempfile.TemporaryDirectory(prefix="ood-store-bench-gpu-") as tmp:
        root = Path(tmp)
        os.environ.update(
            HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TQDM_DISABLE="1", HF_HUB_DISABLE_PROGRESS_BARS="1",
            HF_DATASETS_CACHE=str(root / "hf-datasets"),
        )  # fmt: skip
        run_dir, data, params = build(root, args.model, args.dtype, args.checkpoints, args.docs)
        where = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else f"CPU ({os.cpu_count()} cores)"
        rows = sum(
            len(p.read_text("utf-8").splitlines()) for p in data.glob("ood_nli_*.jsonl") if ".train." not in p.name
        )
        print(
            f"{args.checkpoints} checkpoints of a randomly initialised {args.model} ({params / 1e6:,.1f}M parameters, "
            f"{args.dtype}) x the 10 ood_nli testsets ({rows:,} generated rows), {where}, torch {torch.__version__}, "
            f"batch size {args.batch_size}",
            flush=True,
        )
        child(root, run_dir, data, "warm-up", args, limit=1)  # the datasets cache, CUDA's start-up: not measured
        gpu = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0]
        sampling = args.device.startswith("cuda") and shutil.which("nvidia-smi") is not None
        sampler = GpuSampler(gpu)
        if sampling:
            with sampler:
                figures = child(root, run_dir, data, "measured", args, limit=None)
        else:
            figures = child(root, run_dir, data, "measured", args, limit=None)
    figures |= {"model": args.model, "parameters": params, "dtype": args.dtype, "device": where,
                "batch_size": args.batch_size}  # fmt: skip
    figures |= sampler.summary() if sampling else GpuSampler(gpu).summary()
    figures["documents_per_s"] = figures["documents"] / figures["wall_s"]
    figures["documents_per_forward_s"] = figures["documents"] / figures["forward_s"] if figures["forward_s"] else None
    n = figures["checkpoints"]
    print(f"evaluated {figures['documents']:,} documents ({n} checkpoints) in {figures['wall_s']:.1f} s")
    print(f"  end to end:          {figures['documents_per_s']:,.0f} documents/s")
    if figures["documents_per_forward_s"]:
        print(
            f"  forward passes only: {figures['documents_per_forward_s']:,.0f} documents/s "
            f"({100 * figures['forward_s'] / figures['wall_s']:.0f}% of the wall time)"
        )
    print(f"  model loading:       {figures['model_loading_s'] / n:.1f} s per checkpoint")
    if figures["gpu_utilisation_mean"] is not None:
        print(
            f"  GPU utilisation:     mean {figures['gpu_utilisation_mean']:.0f}%, median "
            f"{figures['gpu_utilisation_median']:.0f}%, max {figures['gpu_utilisation_max']:.0f}% "
            f"({figures['gpu_samples']} samples); peak memory {figures['gpu_memory_peak_mib']:,.0f} MiB"
        )
    else:
        print("  GPU utilisation:     not measured (no GPU, or no nvidia-smi)")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
