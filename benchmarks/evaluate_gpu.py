"""Evaluation on a GPU: documents/s, model FLOP utilization, checkpoint read bandwidth and GPU utilization, for
the fast scorer (and lm-eval's and the verbalizer scorer), on full checkpoints and on a LoRA series.

    python benchmarks/evaluate_gpu.py                                   # a GPU machine: OPT-1.3b's shape, bf16
    python benchmarks/evaluate_gpu.py --scorers lm-eval,verbalizer,fast --docs 300   # all three, a slice
    python benchmarks/evaluate_gpu.py --model tiny --device cpu --dtype float32 --docs 3   # the same, on a CPU

The default (the fast scorer, the suite at its real size, 2 full checkpoints and 2 adapters) is meant to
finish in under 5 minutes on one H200: lm-eval's scorer alone takes about 170 s per checkpoint of OPT-1.3b on
the real suite, so the other scorers are measured when --scorers names them (with --docs, a slice).

Set-up (not timed), with benchmarks/evaluate_series.py's `build`: randomly initialized OPTs of the shape
--model names (opt-1.3b: 24 layers, width 2048, 50,272 vocabulary entries, 1.3B parameters; opt-125m; tiny),
--checkpoints full checkpoints each with weights of its own in --dtype (distinct files: each is read from
the disk, as a study's checkpoints are), and --checkpoints LoRA adapters of the first (rank 8 on q_proj and
v_proj); a byte-level BPE tokenizer trained from code on the generated texts, its vocabulary filled up to
the model's (nothing is downloaded); and a --data-dir for the ood_nli suite's 10 testsets, each the suite's
fixture rows (tests/fixtures/nli-suite, in the datasets' own schemas) repeated to --docs rows (default 0:
each testset's real evaluated size, 63,489 rows in all, as the suite's definition gives them). A warm-up
evaluation of one document per testset builds the datasets cache (kept under the benchmark's own folder,
never ~/.cache) and the CUDA context.

Timed, each in a fresh process, after every checkpoint file has been dropped from the page cache
(`posix_fadvise(DONTNEED)`, so that loading reads the disk): `store.evaluate` inline (one GPU) of the full
checkpoints and of the LoRA series, each with every scorer of --scorers (default: fast), a run's model kept
between its checkpoints (ood_store._evaluate.series), per-sample rows logged and stored, as
`ood-store evaluate` does. The fast scorer's prepared requests (ood_store._evaluate.fast) are kept between its
measurements, as a work folder keeps them for every run that shares tokenizer and tasks: the full series
prepares them, the LoRA series reads them. Meanwhile this process samples the GPU's utilization and memory
with nvidia-smi every 0.5 s. The figures come from the units' completion markers (ood_store._evaluate.timings).

Reported per measurement: documents, wall seconds, documents/s end to end and within the forward passes;
model FLOP utilization within the forward passes, 2 x parameters x tokens / forward seconds / the device's
dense bf16 peak (--peak-tflops, default from the GPU's name: H200 and H100 SXM 989, H100 PCIe 756, A100
312, L40S 362, L4 121; tokens are the positions the passes ran, padding included); the loads by kind and
the checkpoint read bandwidth (bytes of the weight files the loads read / their seconds) against the
disk's own (dd of a checkpoint's weights file, O_DIRECT where the file system allows it, else dropped from
the page cache first); GPU utilization (mean, median, max of the samples, and the mean of those taken
while a checkpoint was scored: from the end of its loading and preparation to the start of its writing)
and peak memory; and the run's last checkpoint alone (its steady state): its seconds end to end against its
forward passes'. Targets for the fast scorer with OPT-1.3b's shape in bf16 on the real suite: a checkpoint
end to end at most 2 x its forward passes, GPU utilization while scored at least 60%, FLOP utilization
within the forward passes at least 35%. Then one JSON line with every figure. On a CPU the GPU figures are
null (and the FLOP utilization too, unless --peak-tflops is given). CI never needs a GPU for this:
tests/test_benchmark_gpu.py runs the tiny form on a CPU.
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
from evaluate_series import build, evaluate, imported  # noqa: E402

#: Model shapes: OPT's published configurations (facebook/opt-1.3b, opt-125m), and a tiny one for CPUs.
SHAPES: dict[str, dict[str, int]] = {
    "opt-1.3b": {"hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 32, "ffn_dim": 8192},
    "opt-125m": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "ffn_dim": 3072},
    "tiny": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "ffn_dim": 64},
}
VOCAB = {"opt-1.3b": 50272, "opt-125m": 50272, "tiny": 2048}
#: Dense bf16 peaks (TFLOP/s) from the vendors' data sheets, by a part of the device's name (first match wins).
PEAK_BF16_TFLOPS = (("H200", 989.0), ("H100 PCIe", 756.0), ("H100", 989.0), ("A100", 312.0), ("L40S", 362.0),
                    ("L4", 121.0))  # fmt: skip
MEASUREMENTS = {  # name -> (what is evaluated, scorer)
    "full-lm-eval": ("full", "lm-eval"),
    "full-verbalizer": ("full", "verbalizer"),
    "full-fast": ("full", "fast"),
    "lora-lm-eval": ("lora", "lm-eval"),
    "lora-verbalizer": ("lora", "verbalizer"),
    "lora-fast": ("lora", "fast"),
}


def real_sizes() -> dict[str, int]:
    """Each suite testset's evaluated split size, from the suite's definition."""
    from ood_store._evaluate.suite.testsets import testsets

    return {t.name: min(t.rows[t.split]) for t in testsets()}


def offline(root: Path) -> None:
    """This process and its children: nothing downloaded, no progress bars, the datasets cache under ``root``."""
    os.environ.update(
        HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TQDM_DISABLE="1", HF_HUB_DISABLE_PROGRESS_BARS="1",
        HF_DATASETS_DISABLE_PROGRESS_BARS="1", HF_DATASETS_CACHE=str(root / "hf-datasets"),
    )  # fmt: skip


def peak_tflops(device: str) -> float | None:
    """The dense bf16 peak of a GPU named ``device`` (None: not in the table, or not a GPU)."""
    return next((peak for part, peak in PEAK_BF16_TFLOPS if part in device), None)


def weight_files(root: Path) -> list[Path]:
    return sorted(root.glob("full/*/*.safetensors")) + sorted(root.glob("lora/*/*.safetensors"))


def drop_from_page_cache(files: list[Path]) -> None:
    """Written to the disk and dropped from the page cache: the next read of each file reads the disk."""
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def disk_read(path: Path) -> dict[str, float | str]:
    """dd's read of ``path``: O_DIRECT where the file system allows it, else after dropping it from the page cache."""
    size = path.stat().st_size
    for flags in (["iflag=direct"], []):
        drop_from_page_cache([path])
        started = time.perf_counter()
        done = subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=64M", *flags], capture_output=True)
        seconds = time.perf_counter() - started
        if done.returncode == 0:
            return {"bytes": size, "seconds": seconds, "how": "O_DIRECT" if flags else "page cache dropped"}
    raise SystemExit(f"dd could not read {path}: {done.stderr.decode(errors='replace')[-300:]}")


class GpuSampler:
    """nvidia-smi's utilization (%) and memory used (MiB) of one GPU, every ``every`` seconds, in a thread."""

    def __init__(self, gpu: str, every: float = 0.5):
        self.gpu, self.every = gpu, every
        self.samples: list[tuple[float, float]] = []
        self.times: list[float] = []  # time.time() of each sample
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        query = ["nvidia-smi", f"--id={self.gpu}", "--query-gpu=utilization.gpu,memory.used",
                 "--format=csv,noheader,nounits"]  # fmt: skip
        while not self._stop.wait(self.every):
            try:
                line = subprocess.run(query, capture_output=True, text=True, timeout=10).stdout.strip()
                utilization, memory = (float(x) for x in line.splitlines()[0].split(","))
            except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
                continue
            self.samples.append((utilization, memory))
            self.times.append(time.time())

    def __enter__(self) -> GpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self, windows: list[list[float]] = ()) -> dict[str, float | None]:
        """The samples' figures; ``windows``: (start, end) times while checkpoints were scored."""
        used = [u for u, _ in self.samples]
        scoring = [
            u for t, (u, _) in zip(self.times, self.samples, strict=True) if any(a <= t <= b for a, b in windows)
        ]
        return {
            "gpu_utilisation_scoring": statistics.fmean(scoring) if scoring else None,
            "gpu_samples": len(self.samples),
            "gpu_utilisation_mean": statistics.fmean(used) if used else None,
            "gpu_utilisation_median": statistics.median(used) if used else None,
            "gpu_utilisation_max": max(used) if used else None,
            "gpu_memory_peak_mib": max((m for _, m in self.samples), default=None),
        }


def measure(root: Path, name: str, out: Path, device: str, dtype: str, batch_size: str, limit: int | None) -> dict:
    """In this (fresh) process: one measurement of MEASUREMENTS (or the warm-up), inline."""
    import torch

    imported()
    what, scorer = MEASUREMENTS.get(name, ("full", "lm-eval"))
    checkpoints = [root / "full" / "checkpoint-100"] if name == "warm-up" else [root / what]
    figures = evaluate(
        checkpoints, root / "nli-data", out, keep=True, scorer=scorer, device=device, dtype=dtype,
        batch_size=batch_size, limit=limit,
    )  # fmt: skip
    cuda = device.startswith("cuda")
    markers = sorted((json.loads(p.read_text()) for p in (out / "work" / "done").glob("*.json")),
                     key=lambda m: m["finished"])  # fmt: skip
    windows = []  # while each checkpoint was scored: after its loading and preparation, before its writing
    for m in markers:
        t = m["timings"]
        windows.append([m["finished"] - m["seconds"] + t["load_s"] + t.get("prepare_s", 0.0),
                        m["finished"] - t["write_s"]])  # fmt: skip
    last = markers[-1]
    return figures | {
        "torch_peak_memory_mib": torch.cuda.max_memory_allocated() / 2**20 if cuda else None,
        "windows": windows,
        "prepare_s": sum(m["timings"].get("prepare_s", 0.0) for m in markers),
        "last_s": last["seconds"],
        "last_forward_s": last["timings"]["forward_s"],
    }


def child(root: Path, name: str, args: argparse.Namespace, limit: int | None = None) -> dict:
    """:func:`measure` in a fresh process (what it imports and caches is its own; ``--in-process``: in this one,
    for the tiny form's test); returns its figures."""
    out = root / "measured" / name
    out.mkdir(parents=True)
    shared, prepared = root / "prepared", out / "work" / "prepared"
    if shared.is_dir():  # the fast scorer's prepared requests, kept from the measurements before
        shutil.copytree(shared, prepared)
    if args.in_process:
        figures = measure(root, name, out, args.device, args.dtype, args.batch_size, limit)
    else:
        command = [
            sys.executable, __file__, "--measure", str(root), name, str(out), "--device", args.device, "--dtype",
            args.dtype, "--batch-size", args.batch_size, *(["--limit", str(limit)] if limit else []),
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, env=os.environ)
        if result.returncode != 0:
            raise SystemExit(f"{name} failed ({result.returncode}):\n{result.stderr[-3000:]}")
        figures = json.loads(result.stdout.splitlines()[-1])
    if prepared.is_dir():
        shutil.copytree(prepared, shared, dirs_exist_ok=True)
    return figures


def derived(f: dict, params: int, peak: float | None) -> dict:
    """documents/s, FLOP utilization and read bandwidth of one measurement's figures."""
    forward = f["forward_s"]
    return {
        "documents_per_s": f["documents"] / f["wall_s"],
        "documents_per_forward_s": f["documents"] / forward if forward else None,
        "mfu": 2 * params * f["tokens"] / forward / (peak * 1e12) if forward and peak else None,
        "read_gb_per_s": f["bytes_read"] / f["read_s"] / 1e9 if f["read_s"] else None,
        "last_per_forward": f["last_s"] / f["last_forward_s"] if f["last_forward_s"] else None,
    }


def main() -> None:
    import torch

    default_device = "cuda" if torch.cuda.is_available() else "cpu"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(SHAPES), default="opt-1.3b", help="the model's shape")
    parser.add_argument("--dtype", default="bfloat16", help="torch dtype of the weights (default bfloat16)")
    parser.add_argument("--device", default=default_device, help=f"default: {default_device}")
    parser.add_argument("--checkpoints", type=int, default=2, help="full checkpoints, and adapters (default 2)")
    parser.add_argument("--docs", type=int, default=0, help="rows per testset (default 0: each testset's real size)")
    parser.add_argument("--batch-size", help="the batch size: a number or auto (default: auto on a GPU, else 16)")
    parser.add_argument("--scorers", default="fast", help="the scorers measured: lm-eval, verbalizer, fast "
                        "(default: fast)")  # fmt: skip
    parser.add_argument("--peak-tflops", type=float, help="the device's dense bf16 peak (default: from its name)")
    parser.add_argument("--in-process", action="store_true", help="measure in this process (for tests)")
    parser.add_argument("--measure", nargs=3, help=argparse.SUPPRESS)  # the child process: ROOT NAME OUT
    parser.add_argument("--limit", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.batch_size = args.batch_size or ("auto" if args.device.startswith("cuda") else "16")
    if args.measure:
        root, name, out = args.measure
        figures = measure(Path(root), name, Path(out), args.device, args.dtype, args.batch_size, args.limit)
        print(json.dumps(figures))
        return
    with tempfile.TemporaryDirectory(prefix="ood-store-bench-gpu-") as tmp:
        root = Path(tmp)
        offline(root)
        rows = args.docs or real_sizes()
        params = build(root, SHAPES[args.model], VOCAB[args.model], args.checkpoints, {"nli-data": rows}, args.dtype)
        cuda = args.device.startswith("cuda")
        where = torch.cuda.get_device_name(0) if cuda else f"CPU ({os.cpu_count()} cores)"
        peak = args.peak_tflops or (peak_tflops(where) if cuda else None)
        files = [p for p in (root / "nli-data").glob("*.jsonl") if ".train." not in p.name]
        documents = sum(len(p.read_text("utf-8").splitlines()) for p in files)
        print(
            f"{args.checkpoints} checkpoints and {args.checkpoints} LoRA adapters of a randomly initialized "
            f"{args.model} ({params / 1e6:,.1f}M parameters, {args.dtype}) x the 10 ood_nli testsets ({documents:,} "
            f"generated rows), {where}, torch {torch.__version__}, batch size {args.batch_size}, peak "
            f"{peak or '?'} TFLOP/s",
            flush=True,
        )
        child(root, "warm-up", args, limit=1)  # the datasets cache, CUDA's start-up: not measured
        disk = disk_read(next(root.glob("full/checkpoint-200/*.safetensors"), weight_files(root)[0]))
        gpu = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0]
        sampling = cuda and shutil.which("nvidia-smi") is not None
        figures = {}
        scorers = {s.strip() for s in args.scorers.split(",")}
        unknown = scorers - {scorer for _, scorer in MEASUREMENTS.values()}
        if unknown:
            parser.error(f"--scorers: unknown {', '.join(sorted(unknown))}")
        for name in (n for n, (_, scorer) in MEASUREMENTS.items() if scorer in scorers):
            drop_from_page_cache(weight_files(root))
            sampler = GpuSampler(gpu)
            if sampling:
                with sampler:
                    figures[name] = child(root, name, args)
            else:
                figures[name] = child(root, name, args)
            figures[name] |= sampler.summary(figures[name]["windows"]) | derived(figures[name], params, peak)
    disk["gb_per_s"] = disk["bytes"] / disk["seconds"] / 1e9
    print(f"disk: dd reads a checkpoint's weights at {disk['gb_per_s']:.2f} GB/s ({disk['how']})")
    for name, f in figures.items():
        loads = ", ".join(f"{n} {how}" for how, n in sorted(f["loads"].items()))
        print(f"{name}: evaluated {f['documents']:,} documents ({f['units']} checkpoints) in {f['wall_s']:.1f} s")
        print(f"  end to end:          {f['documents_per_s']:,.0f} documents/s")
        if f["documents_per_forward_s"]:
            print(
                f"  forward passes only: {f['documents_per_forward_s']:,.0f} documents/s "
                f"({100 * f['forward_s'] / f['unit_s']:.0f}% of the units' time)"
            )
        mfu = f"{100 * f['mfu']:.1f}%" if f["mfu"] is not None else "not known (no peak for this device)"
        print(f"  FLOP utilization:    {mfu} within the forward passes ({f['tokens']:,} positions)")
        bandwidth = f"{f['read_gb_per_s']:.2f} GB/s" if f["read_gb_per_s"] else "nothing read"
        print(f"  loading:             {f['load_s']:.1f} s ({loads}); read {bandwidth} (dd: {disk['gb_per_s']:.2f})")
        if f["last_per_forward"]:
            print(
                f"  the run's last checkpoint: {f['last_s']:.1f} s end to end, {f['last_per_forward']:.2f} x its "
                f"forward passes ({f['last_forward_s']:.1f} s); preparing the requests {f['prepare_s']:.1f} s in all"
            )
        if f["gpu_utilisation_mean"] is not None:
            scoring = f["gpu_utilisation_scoring"]
            print(
                f"  GPU utilization:     mean {f['gpu_utilisation_mean']:.0f}%, median "
                f"{f['gpu_utilisation_median']:.0f}%, max {f['gpu_utilisation_max']:.0f}% "
                f"({f['gpu_samples']} samples), while scored "
                f"{'?' if scoring is None else f'{scoring:.0f}%'}; peak memory {f['gpu_memory_peak_mib']:,.0f} MiB"
            )
        else:
            print("  GPU utilization:     not measured (no GPU, or no nvidia-smi)")
    summary = {"model": args.model, "parameters": params, "dtype": args.dtype, "device": where,
               "batch_size": args.batch_size, "peak_tflops": peak, "disk": disk, "measurements": figures}  # fmt: skip
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
