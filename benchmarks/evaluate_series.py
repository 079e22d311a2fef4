"""Loading and scoring against the old way: a LoRA series on one base, full checkpoints in place, the verbalizer scorer.

    python benchmarks/evaluate_series.py [--width 384] [--layers 6] [--vocab 50272] [--checkpoints 12]
                                         [--docs 2] [--suite-docs 300]

Set-up (not timed): a byte-level BPE tokenizer trained from code on the generated texts, its vocabulary
filled up with unused entries to --vocab (OPT's 50,272 by default: the language-model head has its real
width); a randomly initialized OPT of --layers layers and --width dimensions (OPT's shape rules: a
feed-forward layer 4 x as wide, 64-dimensional heads; word embeddings tied to the head), saved in float32
safetensors as (the default, 30.7M parameters, is the largest of those tried whose whole benchmark stays under ten
minutes on the project's 2-core CPUs: 7.4 min on a quiet machine; width 256 and 4 layers, 16.6M, 6.2 min; the last
run's output is benchmarks/results/evaluate_series.txt)
  (a) a LoRA series: the base model and --checkpoints adapters of it (rank 8 on q_proj and v_proj, random
      weights, as PEFT saves them), and
  (b) --checkpoints full checkpoints, each with weights of its own;
and --data-dir folders of the ood_nli suite's 10 testsets, each the suite's fixture rows
(tests/fixtures/nli-suite) repeated to --docs rows (a, b) and --suite-docs rows (c), made distinct by a
number (benchmarks/evaluate_cluster.py's suite_data). A warm-up evaluation of one document per testset
fills the datasets cache, for every measurement alike.

Timed, each in a fresh process: `store.evaluate` inline (this process; torch's threads on every core),
per-sample rows logged and stored, batch size 16, side by side:
  (a) the 12 adapters: a run's model kept (the base read once, each adapter swapped in) vs loaded afresh
      for every checkpoint (base and adapter, as before), and kept with the verbalizer scorer;
  (b) the 12 full checkpoints: kept (each checkpoint's tensors copied into the loaded model, read ahead
      while the one before is scored) vs `from_pretrained` for every checkpoint, and kept with the
      verbalizer scorer;
  (c) the first two checkpoints of (b) on --suite-docs rows of each testset (300 by default, about 2,500
      documents per checkpoint, a 25th of the real suite's 63,489): --scorer verbalizer vs --scorer lm-eval
      (lm-eval's hf model), the run's model kept.
Reported from the units' completion markers (ood_store._evaluate.timings) and the wall clock: for (a) and (b)
the share of the wall time, and of the units' time, spent loading (target: under 10% with the model kept),
the seconds of a load after the run's first, and the units' shares in the forward passes, in bookkeeping and
in writing files; for (c) documents/s end to end, without the model's loading, and on the run's last
checkpoint alone (a run's steady state: encodings cached, the model kept), and the ratios (target: >= 3x
lm-eval's). Then one JSON line with every figure. The machine this runs on is shared and noisy: read ratios
and shares, not seconds. With (c)'s earlier default of 40 rows per testset (about 330 documents), the fixed
costs of one evaluation (lm-eval building its tasks, imports, garbage collection) were most of both scorers'
time and the ratio measured them, not the scorers: 1.3-2.5x. tests/test_benchmark_series.py runs the tiny
form (--width 32 --layers 1) on every CI run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from evaluate_cluster import suite_data  # noqa: E402

TASKS = "ood_nli"  # the suite's 10 testsets
BATCH = 16
PARTS = ("load_s", "forward_s", "bookkeeping_s", "write_s")
MEASUREMENTS = {  # name -> (what is evaluated, keep the run's model, scorer)
    "lora-fresh": ("lora", False, "lm-eval"),
    "lora-series": ("lora", True, "lm-eval"),
    "lora-series-verbalizer": ("lora", True, "verbalizer"),
    "full-fresh": ("full", False, "lm-eval"),
    "full-series": ("full", True, "lm-eval"),
    "full-series-verbalizer": ("full", True, "verbalizer"),
    "suite-lm-eval": ("suite", True, "lm-eval"),
    "suite-verbalizer": ("suite", True, "verbalizer"),
}
#: (c) scores this many checkpoints of the full series: the run's first (loaded from scratch), then the steady state.
SUITE_CHECKPOINTS = 2


def padded_tokenizer(texts: list[str], vocab: int):
    """A BPE tokenizer trained on ``texts`` (8,192 entries at most) whose vocabulary is filled up with unused
    entries to ``vocab`` (none of them ever produced), so that the model's head has ``vocab`` rows."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    from ood_store._examples import toy

    trained = toy.build_tokenizer(texts, vocab_size=min(8192, vocab))
    data = json.loads(trained.backend_tokenizer.to_str())
    entries = data["model"]["vocab"]
    for index in range(len(entries), vocab):
        entries[f"<unused{index}>"] = index
    special = {"unk_token": "<unk>", "eos_token": "<|endoftext|>", "bos_token": "<|endoftext|>"}
    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(json.dumps(data)), pad_token="<|endoftext|>", **special
    )


def opt_shape(width: int, layers: int) -> dict[str, int]:
    """OPT's shape rules for a width and depth: a feed-forward layer 4 x as wide, 64-dimensional heads."""
    return {"hidden_size": width, "num_hidden_layers": layers, "ffn_dim": 4 * width,
            "num_attention_heads": max(1, width // 64)}  # fmt: skip


def build(
    root: Path, shape: dict[str, int], vocab: int, checkpoints: int, data: dict[str, Any], dtype: str = "float32"
) -> int:
    """Under ``root``: ``full/checkpoint-N`` (``checkpoints`` randomly initialized OPTs of ``shape``, each with
    weights of its own, in ``dtype``), ``lora/checkpoint-N`` (as many LoRA adapters of the first, rank 8 on
    q_proj and v_proj, random weights) and a data folder per ``data`` entry (name -> rows per testset, see
    suite_data); returns the model's parameter count."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import OPTConfig, OPTForCausalLM

    from ood_store._evaluate.suite.variant import PATTERNS
    from ood_store._examples import toy

    folders = [suite_data(root / name, docs) for name, docs in data.items()]
    texts = [
        value
        for folder in folders
        for path in sorted(folder.glob("*.jsonl"))
        for line in path.read_text("utf-8").splitlines()
        for value in json.loads(line).values()
        if isinstance(value, str)
    ]
    # The prompts with their answers, often: every verbalizer becomes one token, as in real tokenizers.
    texts += [p.text.format(premise="it", hypothesis="it") + v for p in PATTERNS.values() for v in p.verbalizers] * 50
    tokenizer = padded_tokenizer(texts, vocab)
    config = OPTConfig(
        vocab_size=len(tokenizer), **shape, word_embed_proj_dim=shape["hidden_size"], max_position_embeddings=2048,
        do_layer_norm_before=True, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    params = 0
    device = "cuda" if torch.cuda.is_available() else "cpu"  # initializing a billion weights: faster on a GPU
    for index in range(checkpoints):
        torch.manual_seed(index)
        with torch.device(device):
            model = OPTForCausalLM(config).to(getattr(torch, dtype))
        params = sum(p.numel() for p in model.parameters())
        toy.save_checkpoint(model.cpu(), tokenizer, root / "full" / f"checkpoint-{(index + 1) * 100}")
        del model
    base = root / "full" / "checkpoint-100"
    for index in range(checkpoints):
        torch.manual_seed(1000 + index)
        lora = LoraConfig(r=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
        adapter = get_peft_model(OPTForCausalLM.from_pretrained(base), lora)
        adapter.save_pretrained(root / "lora" / f"checkpoint-{(index + 1) * 100}")
        del adapter
    return params


def evaluate(
    checkpoints: list[Path], data: Path, out: Path, *, keep: bool, scorer: str, **options: Any
) -> dict[str, Any]:
    """``store.evaluate`` of ``checkpoints`` on the suite, inline, a run's model kept or not; its figures from
    the units' completion markers: documents, wall and unit seconds, each part's seconds, tokens, how each
    model was loaded, and the bytes those loads read from checkpoint files."""
    import ood_store
    from ood_store._evaluate.series import ModelSession

    reuse, ModelSession.reuse = ModelSession.reuse, keep
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        with ood_store.open(out / "store.duckdb") as store:
            report = store.evaluate(
                checkpoints, run="bench", tasks=[TASKS], data_dir=data, output_dir=out / "lm-eval",
                work_dir=out / "work", scorer=scorer, **options,
            )  # fmt: skip
            wall = time.perf_counter() - started
            documents = store.query("SELECT sum(n_samples) AS n FROM scores WHERE metric = 'acc'")["n"][0]
    finally:
        ModelSession.reuse = reuse
    failed = [f"{c.checkpoint}: {c.error}" for c in report.failed]
    if failed:
        raise SystemExit("evaluation failed: " + "; ".join(failed))
    markers = sorted((json.loads(p.read_text()) for p in (out / "work" / "done").glob("*.json")),
                     key=lambda m: m["finished"])  # fmt: skip
    units = {p.stem: json.loads(p.read_text()) for p in (out / "work" / "units").glob("*.json")}
    read = [(m["timings"]["load_s"], bytes_read(units[m["unit"]]["checkpoint"], m["timings"]["load"]))
            for m in markers]  # fmt: skip
    return {
        "units": len(markers),
        "documents": int(documents),
        "wall_s": wall,
        "unit_s": sum(m["seconds"] for m in markers),
        **{part: sum(m["timings"][part] for m in markers) for part in PARTS},
        "tokens": sum(m["timings"]["tokens"] for m in markers),
        "loads": dict(Counter(m["timings"]["load"] for m in markers)),
        "prefetched": sum(bool(m["timings"]["prefetched"]) for m in markers),
        "bytes_read": sum(b for _, b in read),
        "read_s": sum(s for s, b in read if b),
        "load_s_each": [m["timings"]["load_s"] for m in markers],  # in the order the units finished
        "scoring_s_each": [m["seconds"] - m["timings"]["load_s"] for m in markers],
    }


def bytes_read(checkpoint: dict[str, Any], how: str) -> int:
    """The bytes of weight files a unit's load read: the checkpoint's (and an adapter's base's, loaded afresh)."""
    from ood_store._evaluate.series import adapter_weight_file, weight_files

    files = []
    if checkpoint.get("base_model"):
        files.append(adapter_weight_file(checkpoint["model"]))
        if how == "from_pretrained":
            files += weight_files(checkpoint["base_model"]) or []
    else:
        files += weight_files(checkpoint["model"]) or []
    return sum(f.stat().st_size for f in files if f is not None)


def imported() -> None:
    """What loading a model imports the first time in a process (transformers' OPT code, PEFT, lm-eval's hf
    model), imported before anything is timed: Python's imports are not reading checkpoints."""
    import lm_eval.models.huggingface  # noqa: F401
    import peft  # noqa: F401
    from transformers import OPTForCausalLM  # noqa: F401


def measure(root: Path, name: str, out: Path) -> dict:
    """In this (fresh) process: one measurement of MEASUREMENTS; see :func:`evaluate`."""
    imported()
    what, keep, scorer = MEASUREMENTS[name]
    suite = [root / "full" / f"checkpoint-{(i + 1) * 100}" for i in range(SUITE_CHECKPOINTS)]
    checkpoints = suite if what == "suite" else [root / what]
    data = root / ("data-suite" if what == "suite" else "data-small")
    return evaluate(checkpoints, data, out, keep=keep, scorer=scorer, device="cpu", batch_size=BATCH)


def child(root: Path, name: str) -> dict:
    """:func:`measure` in a fresh process (what it imports and caches is its own); returns its figures."""
    out = root / "measured" / name
    out.mkdir(parents=True)
    result = subprocess.run([sys.executable, __file__, "--measure", str(root), name], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{name} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.splitlines()[-1])


def warm_up(root: Path, out: Path) -> dict:
    """The datasets cache of both data folders (not measured)."""
    import ood_store

    for data in ("data-small", "data-suite"):
        with ood_store.open(out / f"{data}.duckdb") as store:
            store.evaluate(
                [root / "full" / "checkpoint-100"], run="warm", tasks=[TASKS], data_dir=root / data, limit=1,
                output_dir=out / data, work_dir=out / f"{data}-work", device="cpu", batch_size=BATCH,
            )  # fmt: skip
    return {}


def share(figures: dict, part: str) -> float:
    """``part``'s seconds as a share (%) of the units' time."""
    return 100 * figures[part] / figures["unit_s"] if figures["unit_s"] else 0.0


def wall_share(figures: dict) -> float:
    """Loading's seconds as a share (%) of the wall time of the whole ``evaluate`` call (planning, building the
    tasks and storing each result included)."""
    return 100 * figures["load_s"] / figures["wall_s"] if figures["wall_s"] else 0.0


def later_loads(figures: dict) -> float:
    """The mean seconds of a load after the run's first (which every way loads from scratch)."""
    later = figures["load_s_each"][1:]
    return sum(later) / len(later) if later else 0.0


def rates(figures: dict) -> dict[str, float]:
    """(c): documents/s of each scorer, end to end and without loading the model (all checkpoints, and the last
    one alone: a run's steady state), and the ratios."""
    out = {}
    for name in ("lm-eval", "verbalizer"):
        f = figures[f"suite-{name}"]
        out[name] = f["documents"] / f["wall_s"]
        out[f"{name} scoring"] = f["documents"] / (f["unit_s"] - f["load_s"])
        out[f"{name} steady"] = f["documents"] / f["units"] / f["scoring_s_each"][-1]
    out["ratio"] = out["verbalizer scoring"] / out["lm-eval scoring"]
    out["ratio steady"] = out["verbalizer steady"] / out["lm-eval steady"]
    out["ratio end to end"] = out["verbalizer"] / out["lm-eval"]
    return out


def report(figures: dict) -> list[str]:
    """What the benchmark prints about its measurements (MEASUREMENTS -> the figures of :func:`measure`)."""
    lines = []
    for label, what in (("(a) LoRA series", "lora"), ("(b) full checkpoints", "full")):
        before, after, verbalizer = (figures[f"{what}-{kind}"] for kind in ("fresh", "series", "series-verbalizer"))
        lines.append(f"{label}, {before['units']} checkpoints:")
        for kind, f in (("loaded afresh", before), ("model kept", after), ("kept, verbalizer", verbalizer)):
            loads = ", ".join(f"{n} {how}" for how, n in sorted(f["loads"].items()))
            lines.append(
                f"  {kind:16s} {f['wall_s']:6.1f} s; loading {wall_share(f):4.1f}% of the wall time, "
                f"{share(f, 'load_s'):4.1f}% of the units' (forward {share(f, 'forward_s'):4.1f}%, bookkeeping "
                f"{share(f, 'bookkeeping_s'):4.1f}%, writing {share(f, 'write_s'):4.1f}%); a load after the first "
                f"{later_loads(f):.3f} s ({loads}; {f['prefetched']} read ahead)"
            )
        lines.append(
            f"  wall time {before['wall_s'] / after['wall_s']:.2f}x shorter; loading share with the model kept: "
            f"{wall_share(after):.1f}% of the wall time, {share(after, 'load_s'):.1f}% of the units' (target < 10%); "
            f"verbalizer scorer: {wall_share(verbalizer):.1f}%, {share(verbalizer, 'load_s'):.1f}%"
        )
    r = rates(figures)
    lm_eval = figures["suite-lm-eval"]
    lines.append(
        f"(c) the ood_nli suite, {lm_eval['documents'] // lm_eval['units']:,} documents per checkpoint, "
        f"{lm_eval['units']} checkpoints of one run:"
    )
    for name in ("lm-eval", "verbalizer"):
        lines.append(
            f"  {name:10s} {r[name]:7.1f} documents/s end to end, {r[name + ' scoring']:7.1f} without loading the "
            f"model, {r[name + ' steady']:7.1f} on the run's last checkpoint; forward passes "
            f"{share(figures['suite-' + name], 'forward_s'):4.1f}% of the units' time"
        )
    lines.append(
        f"  verbalizer / lm-eval: {r['ratio']:.2f}x documents/s without loading ({r['ratio steady']:.2f}x on the last "
        f"checkpoint, {r['ratio end to end']:.2f}x end to end; target >= 3x)"
    )
    return lines


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=384, help="the model's width (default 384)")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--vocab", type=int, default=50272, help="vocabulary entries (default OPT's 50,272)")
    parser.add_argument("--checkpoints", type=int, default=12)
    parser.add_argument("--docs", type=int, default=2, help="rows per testset for (a) and (b) (default 2)")
    parser.add_argument("--suite-docs", type=int, default=300, help="rows per testset for (c) (default 300)")
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)  # the child process: ROOT NAME
    args = parser.parse_args()
    os.environ.update(
        HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TQDM_DISABLE="1", HF_HUB_DISABLE_PROGRESS_BARS="1",
        HF_DATASETS_DISABLE_PROGRESS_BARS="1",
    )  # fmt: skip
    if args.measure:
        root, name = Path(args.measure[0]), args.measure[1]
        os.environ["HF_DATASETS_CACHE"] = str(root / "hf-datasets")
        out = root / "measured" / name
        print(json.dumps(warm_up(root, out) if name == "warm-up" else measure(root, name, out)))
        return
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ood-store-bench-series-") as tmp:
        root = Path(tmp)
        os.environ["HF_DATASETS_CACHE"] = str(root / "hf-datasets")
        data = {"data-small": args.docs, "data-suite": args.suite_docs}
        params = build(root, opt_shape(args.width, args.layers), args.vocab, args.checkpoints, data)
        print(
            f"A randomly initialized OPT of {params / 1e6:,.1f}M parameters (width {args.width}, {args.layers} layers, "
            f"{args.vocab:,} vocabulary entries, float32), CPU ({os.cpu_count()} cores, torch {torch.__version__}, "
            f"{torch.get_num_threads()} threads), batch size {BATCH}; (a), (b): {args.checkpoints} checkpoints x the "
            f"10 ood_nli testsets x {args.docs} rows; (c): {SUITE_CHECKPOINTS} checkpoints x {args.suite_docs} rows "
            "per testset",
            flush=True,
        )
        child(root, "warm-up")
        figures = {}
        for name in MEASUREMENTS:
            figures[name] = child(root, name)
            print(f"  {name:17s} {figures[name]['wall_s']:7.1f} s", file=sys.stderr, flush=True)
    for line in report(figures):
        print(line)
    ratio = rates(figures)["ratio"]
    summary = {
        "parameters": params, "width": args.width, "layers": args.layers, "vocab": args.vocab,
        "checkpoints": args.checkpoints, "docs": args.docs, "suite_docs": args.suite_docs,
        "total_s": time.perf_counter() - began, "ratio_c": ratio, "rates_c": rates(figures), "measurements": figures,
    }  # fmt: skip
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
