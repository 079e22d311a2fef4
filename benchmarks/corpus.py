"""Generated inputs of study scale, made from the repository's real lm-eval files.

* :func:`results_corpus`: 876 results files laid out as EleutherAI's Pythia-v1
  evaluations are (``evals/pythia-v1/<model>/<campaign>/<file>.json``: 16
  models × 27 zero-shot checkpoints, 269 five-shot files, baseline and
  intervention campaigns, 45 files directly in their model's folder), each a
  copy of one of the 81 real Pythia files with another model, step and task
  subset, and its values nudged: 130,000 scores in all, like the real corpus's
  130,410.
* :func:`samples_checkpoint`: one checkpoint's lm-eval 0.4.13 output, a results
  file and per-sample files of two multiple-choice NLI tasks and a generation
  task, lines shaped as the repository's 0.4.13 fixtures (~900 bytes each).
* :func:`samples_series`: the same at several checkpoints of one run, the same
  documents at each (as a checkpoint series evaluates the same testsets).

Everything is seeded: the same arguments write the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from common import PYTHIA, V0413

CHECKPOINT = V0413 / "toy-run__checkpoint-10"

ZERO_SHOT_STEPS = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000] + list(range(3000, 144000, 10000))
FIVE_SHOT_STEPS = list(range(3000, 144000, 10000))
SIZES = ("70m", "160m", "410m", "1b", "1.4b", "2.8b", "6.9b", "12b")

# (model folder, campaign folder or None, file prefix, steps, tasks kept, shots): the Pythia-v1 layout.
_LAYOUT = (
    *((f"pythia-{s}{d}", "zero-shot", f"{s}{d}", ZERO_SHOT_STEPS, 87, 0) for s in SIZES for d in ("", "-deduped")),
    *(
        (f"pythia-{s}{d}", "five-shot", f"{s}{d}-5shot", FIVE_SHOT_STEPS, 65, 5)
        for s in SIZES
        for d in ("", "-deduped")
        if s != "1b" or d
    ),
    ("pythia-1b-bf16", "five-shot", "1b-bf16-5shot", FIVE_SHOT_STEPS, 65, 5),
    ("pythia-1b-0.5MtokBS", "five-shot", "1b-0.5MtokBS-5shot", FIVE_SHOT_STEPS, 65, 5),
    ("pythia-70m-0.25MtokBS", "five-shot", "70m-0.25MtokBS-5shot", FIVE_SHOT_STEPS[:14], 65, 5),
    ("pythia-1.4b-deduped", "baseline", "baseline-1.4b-deduped", list(range(114000, 144000, 1000)), 45, 0),
    *((f"pythia-{s}-deduped", "baseline", f"baseline-{s}-deduped", list(range(134000, 144000, 1000)), 45, 0)
      for s in ("70m", "410m", "6.9b")),
    ("pythia-1.4b-deduped", "intervention", "intervention-1.4b-deduped", list(range(104000, 144000, 1000)), 80, 0),
    *((f"pythia-{s}-deduped", "intervention", f"intervention-{s}-deduped", list(range(134000, 144000, 1000)), 80, 0)
      for s in ("70m", "410m", "6.9b")),
    *((f"pythia-{m}", None, m, list(range(6000, 300000, 20000))[:15], 65, 5)
      for m in ("1.4b-1MtokBS", "160m-0.5MtokBS", "410m-0.5MtokBS")),
)  # fmt: skip


def results_corpus(out: Path) -> list[Path]:
    """Write the 876-file corpus under ``out`` (see the module's doc); returns the files."""
    sources = sorted(PYTHIA.rglob("*.json"))
    rng = random.Random(876)
    written = []
    for index, (folder, campaign, prefix, steps, kept, shots) in enumerate(_LAYOUT):
        model = f"EleutherAI/{'intervention-' if campaign == 'intervention' else ''}pythia-v1.1-{folder[7:]}"
        where = out / folder / campaign if campaign else out / folder
        where.mkdir(parents=True, exist_ok=True)
        for number, step in enumerate(steps):
            doc = json.loads(sources[(index * 7 + number) % len(sources)].read_text())
            doc["results"] = {task: _nudged(entry, rng) for task, entry in list(doc["results"].items())[:kept]}
            doc["versions"] = {task: doc["versions"][task] for task in doc["results"]}
            doc["config"]["model_args"] = f"pretrained={model},revision=step{step}"
            doc["config"]["num_fewshot"] = shots
            path = where / f"{prefix}_step{step}.json"
            path.write_text(json.dumps(doc, indent=2))
            written.append(path)
    return written


def _nudged(entry: dict, rng: random.Random) -> dict:
    return {key: value * (1 + rng.uniform(-0.01, 0.01)) for key, value in entry.items()}


def samples_checkpoint(out: Path, rows_per_task: int, tasks: tuple[str, ...] = ("toy_nli", "toy_nli_yn", "toy_gen")):
    """Write one checkpoint's results file and ``rows_per_task`` lines of per-sample file per task; returns them."""
    out.mkdir(parents=True, exist_ok=True)
    results = json.loads(next(CHECKPOINT.glob("results_*.json")).read_text())
    stamp = next(CHECKPOINT.glob("results_*.json")).name.removeprefix("results_").removesuffix(".json")
    for task in tasks:
        results["results"][task]["sample_len"] = rows_per_task
    (out / f"results_{stamp}.json").write_text(json.dumps(results, indent=2))
    files = []
    for task in tasks:
        template = json.loads(next(CHECKPOINT.glob(f"samples_{task}_*.jsonl")).read_text().splitlines()[0])
        rng = random.Random(task)
        path = out / f"samples_{task}_{stamp}.jsonl"
        with path.open("w") as fh:
            for doc_id in range(rows_per_task):
                fh.write(json.dumps(_sample(template, doc_id, task, rng)) + "\n")
        files.append(path)
    return files


def samples_series(out: Path, checkpoints: int, rows_per_task: int) -> list[Path]:
    """:func:`samples_checkpoint` at ``checkpoints`` steps of the run ``toy-run`` (``out/checkpoint-N``): the same
    per-sample lines at each, results files that name their own step; returns the samples files."""
    base = samples_checkpoint(out / "checkpoint-1", rows_per_task)
    results = next((out / "checkpoint-1").glob("results_*.json"))
    template = json.loads(results.read_text())
    files = []
    for k in range(1, checkpoints + 1):
        folder = out / f"checkpoint-{k}"
        folder.mkdir(parents=True, exist_ok=True)
        for file in base:
            if k > 1:
                (folder / file.name).write_bytes(file.read_bytes())
            files.append(folder / file.name)
        doc = dict(template, model_name=f"toy-run/checkpoint-{k}", date=template["date"] + k)
        doc["config"] = dict(template["config"], model_args=f"pretrained=toy-run/checkpoint-{k}")
        (folder / results.name).write_text(json.dumps(doc, indent=2))
    return files


_WORDS = "the a cat dog man woman runs sat red blue small big not no yes is mat walks on".split()


def _sample(template: dict, doc_id: int, task: str, rng: random.Random) -> dict:
    line = dict(template, doc_id=doc_id)
    premise = " ".join(rng.choice(_WORDS) for _ in range(26))
    hypothesis = " ".join(rng.choice(_WORDS) for _ in range(8))
    if task == "toy_gen":
        answer = " ".join(rng.choice(_WORDS) for _ in range(3))
        line["doc"] = {"question": premise, "answer": "runs"}
        line["arguments"] = {
            "gen_args_0": {"arg_0": f"Q: {premise} A:", "arg_1": template["arguments"]["gen_args_0"]["arg_1"]}
        }
        line["resps"], line["filtered_resps"] = [[answer]], [answer]
        line["exact_match"] = float(rng.random() < 0.3)
        return _hashed(line)
    label = rng.randint(0, 1)
    prompt = f"{premise} Question: {hypothesis} Yes or No?"
    line["doc"] = {"premise": premise, "hypothesis": hypothesis, "label": label}
    line["arguments"] = {
        f"gen_args_{i}": {"arg_0": prompt, "arg_1": answer} for i, answer in enumerate((" Yes", " No"))
    }
    pairs = [[str(-rng.uniform(10, 40)), str(rng.random() < 0.1)] for _ in range(2)]
    line["resps"], line["filtered_resps"] = [[pair] for pair in pairs], pairs
    line["target"] = str(label)
    line["acc"], line["acc_norm"] = float(rng.random() < 0.5), float(rng.random() < 0.5)
    return _hashed(line)


def _hashed(line: dict) -> dict:
    """The line with its document's own doc_hash (lm-eval's: the sha256 of the document as JSON), so that
    each line is a document of its own, as in lm-eval's files, not the template's."""
    line["doc_hash"] = hashlib.sha256(json.dumps(line["doc"], indent=2, ensure_ascii=False).encode()).hexdigest()
    return line
