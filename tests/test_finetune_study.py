"""A finetuning study end to end, offline: 2 data seeds x 2 shot counts, LoRA and full, trained on the toy; the
study file it writes evaluated by ``evaluate --study`` and analyzed, in one test.

Independent sources: the shots are llmft's rule computed here with NumPy's global generator over the
training rows read with json (for the suite's MNLI, over its rows with neutral ones dropped, as llmft
casts MNLI); the schedule's steps are computed by hand; the study file is read with tomllib; the
weights are read with safetensors.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tomllib

import numpy as np
import pytest

import ood_store
from conftest import FINETUNE_TASKS
from ood_store._cli import main

STUDY = """
base_model = "{base}"
in_domain = "toy_nli"
data_dir = "{data}"
tasks = {tasks}
include_path = ["{task_dir}"]
shots = [16, 32]
data_seeds = [0, 1]
schedule = {{ kind = "log", checkpoints = 5 }}
name = "toy-{{method}}-k{{shots}}-d{{data_seed}}"

[training]
max_steps = 6
per_device_train_batch_size = 8
learning_rate = 3e-3
warmup_steps = 0

[evaluate]
batch_size = 16

[attributes]
family = "toy-gpt2"

[[runs]]
method = "full"

[[runs]]
method = "lora"
size = "r4"
[runs.lora]
r = 4
"""
# The log schedule of 5 checkpoints over 6 steps: 0, then 6 ** (i / 3) for i = 0..3 = 1, 1.82, 3.30, 6, rounded.
STEPS = [0, 1, 2, 3, 6]
RUNS = [f"toy-{m}-k{k}-d{d}" for m in ("full", "lora") for k in (16, 32) for d in (0, 1)]


def llmft_indices(rows: int, shots: int, data_seed: int) -> list[int]:
    """Mosbach et al.'s ft.py: np.random.seed(data_seed); np.random.choice(range(len(train)), size, replace=False)."""
    np.random.seed(data_seed)
    return [int(i) for i in np.random.choice(range(rows), size=shots, replace=False)]


@pytest.fixture(scope="module")
def study(finetune_inputs, tmp_path_factory):
    from click.testing import CliRunner

    root = tmp_path_factory.mktemp("finetune-study")
    path = root / "study.toml"
    path.write_text(
        STUDY.format(
            base=finetune_inputs["base"],
            data=finetune_inputs["data"],
            task_dir=finetune_inputs["tasks"],
            tasks=json.dumps(list(FINETUNE_TASKS)),
        ),
        "utf-8",
    )
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    for command in (["init", "-q"], ["add", "study.toml"], ["commit", "-q", "-m", "the study"]):
        subprocess.run([*git, *command], cwd=root, check=True, capture_output=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True, text=True)
    out = root / "runs"
    result = CliRunner().invoke(main, ["finetune", str(path), "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    return {"path": path, "out": out, "root": root, "output": result.output, "commit": commit.stdout.strip()}


@pytest.mark.xdist_group("finetune-study")
def test_the_study_trains_writes_the_study_file_and_evaluate_and_analyze_run_on_it(study, finetune_inputs, runner):
    from safetensors.torch import load_file

    out = study["out"]
    assert study["output"].splitlines()[0] == f"Finetuned 8 runs into {out}:"
    assert f"  toy-full-k16-d0: 6 steps, checkpoints at {', '.join(map(str, STEPS))}" in study["output"]
    rows = (finetune_inputs["data"] / "toy_nli.train.jsonl").read_text().splitlines()
    written = tomllib.loads((out / "study.toml").read_text())
    assert [entry["run"] for entry in written["runs"]] == RUNS
    for entry in written["runs"]:
        method, shots, data_seed = entry["run"].split("-")[1:]
        shots, data_seed = int(shots[1:]), int(data_seed[1:])
        folder = out / entry["run"]
        # The schedule's steps exist as checkpoints, LoRA adapters or full weights, and the study file lists them.
        assert entry["checkpoints"] == [f"{entry['run']}/checkpoint-{s}" for s in STEPS]
        assert sorted(int(p.name.split("-")[1]) for p in folder.glob("checkpoint-*")) == STEPS
        weights = "adapter_model.safetensors" if method == "lora" else "model.safetensors"
        for step in STEPS:
            assert (folder / f"checkpoint-{step}" / weights).is_file()
            assert not (folder / f"checkpoint-{step}" / "optimizer.pt").exists()  # keep_checkpoints = weights
        # The shots are llmft's for the data seed; their digest is a run attribute.
        indices = llmft_indices(len(rows), shots, data_seed)
        recorded = json.loads((folder / "train_indices.json").read_text())
        assert recorded["indices"] == indices
        digest = hashlib.sha256(",".join(map(str, indices)).encode()).hexdigest()
        assert recorded["sha256"] == digest
        examples = [json.loads(line) for line in (folder / "train_examples.jsonl").read_text().splitlines()]
        assert [e["index"] for e in examples] == indices
        assert [e["answer"] for e in examples] == [json.loads(rows[i])["label"] for i in indices]
        assert entry["attributes"] == {
            "family": "toy-gpt2",
            **({"size": "r4"} if method == "lora" else {}),
            "base_model": str(finetune_inputs["base"]),
            "in_domain": "toy_nli",
            "method": method,
            "loss": "vocabulary",
            "train_shots": shots,
            "data_seed": data_seed,
            "seed": 0,
            "balanced": False,
            "train_indices_sha256": digest,
            "max_length": 128,  # the toy's n_positions, as lm-eval reads it
            "truncation": "left",
        }
        assert "suite" not in entry  # the toy tasks are not the suite's
        # Step 0 is the base model (full) or an adapter that changes nothing yet (LoRA's B is zero); training moved.
        first, last = (load_file(folder / f"checkpoint-{s}" / weights) for s in (0, STEPS[-1]))
        if method == "full":
            base = load_file(finetune_inputs["base"] / "model.safetensors")
            assert all(np.array_equal(first[k].numpy(), base[k].numpy()) for k in base)
        else:
            assert all(not v.any() for k, v in first.items() if "lora_B" in k)
        assert any(not np.array_equal(first[k].numpy(), last[k].numpy()) for k in first)
    assert (written["tasks"], written["include_path"], written["output_dir"]) == (
        list(FINETUNE_TASKS), [str(finetune_inputs["tasks"])], "lm-eval-results"
    )  # fmt: skip

    # evaluate takes the study file as it is; analyze finds the in-domain task in the runs' attributes.
    db = study["root"] / "store.duckdb"
    result = runner.invoke(main, ["--db", str(db), "evaluate", "--study", str(out / "study.toml"), "-q"])
    assert result.exit_code == 0, result.output
    with ood_store.open(db, read_only=True) as store:
        rows_ = store.query(
            "SELECT run, count(DISTINCT step) AS steps, count(DISTINCT task) AS tasks, any_value(in_domain_task) AS d, "
            "any_value(attributes->>'train_shots') AS shots FROM scores JOIN runs USING (run) WHERE metric = 'acc' "
            "GROUP BY run ORDER BY run"
        ).rows()
    assert [r[0] for r in rows_] == sorted(RUNS)
    assert {r[1:4] for r in rows_} == {(len(STEPS), len(FINETUNE_TASKS), "toy_nli")}
    assert {r[0]: r[4] for r in rows_} == {r: r.split("-")[2][1:] for r in RUNS}
    result = runner.invoke(main, ["--db", str(db), "analyze", "--format", "csv"])
    assert result.exit_code == 0, result.output
    table = [line.split(",") for line in result.output.splitlines()[1:]]
    assert sorted(row[0] for row in table) == sorted(RUNS)  # one pair per run: toy_ood_long, toy_ood_never
    assert {(row[1], row[2], row[3]) for row in table} == {("toy_ood_long", "toy_ood_never", str(len(STEPS)))}

    # The same command again trains nothing.
    before = {p: p.stat().st_mtime_ns for p in out.glob("*/checkpoint-*/*.safetensors")}
    again = runner.invoke(main, ["finetune", str(study["path"]), "--output-dir", str(out)])
    assert again.exit_code == 0, again.output
    assert "Already finished: 8 runs (remove a run's folder to train it again)." in again.output
    assert {p: p.stat().st_mtime_ns for p in out.glob("*/checkpoint-*/*.safetensors")} == before


def test_the_shots_of_a_suite_testset_are_llmfts_over_its_rows_without_neutral(tmp_path):
    """MNLI in GLUE's schema (premise, hypothesis, label 0/1/2, idx): llmft drops the neutral rows (label 1) and
    draws from what is left, in order; so does ood-store under the neutral scheme drop."""
    from ood_store._finetune import data

    rng = np.random.default_rng(7)
    rows = [{"premise": f"p{i}", "hypothesis": f"h{i}", "label": int(rng.integers(0, 3)), "idx": i} for i in range(60)]
    (tmp_path / "ood_nli_mnli.train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    split = data.load_split("mnli", "ood_nli_mnli", "drop", str(tmp_path))
    kept = [r for r in rows if r["label"] != 1]
    assert [r["premise"] for r in split.rows] == [r["premise"] for r in kept]
    assert split.answers == [0 if r["label"] == 0 else 1 for r in kept]  # contradiction answers No
    for data_seed in range(3):
        indices = data.sample(split.answers, 16, data_seed)
        assert indices == llmft_indices(len(kept), 16, data_seed)
    # Neutral as No: every row, neutral ones answering No.
    split = data.load_split("mnli", "ood_nli_mnli", "no", str(tmp_path))
    assert split.answers == [0 if r["label"] == 0 else 1 for r in rows]


def test_balanced_shots_take_half_from_each_answer():
    from ood_store._finetune import data

    answers = [0] * 30 + [1] * 70
    indices = data.sample(answers, 9, 4, balanced=True)
    assert len(set(indices)) == 9
    assert [answers[i] for i in indices] == [0] * 5 + [1] * 4  # entailed first, with the odd one
    # One stream: each answer's rows drawn with choice, entailed then not, from RandomState(data_seed).
    generator = np.random.RandomState(4)
    expected = [int(i) for i in generator.choice(30, size=5, replace=False)]
    expected += [30 + int(i) for i in generator.choice(70, size=4, replace=False)]
    assert indices == expected


def test_the_run_folder_records_what_defines_the_run(study, finetune_inputs):
    record = json.loads((study["out"] / "toy-lora-k32-d1" / "finetune.json").read_text())
    config = record["config"]
    assert (config["method"], config["shots"], config["data_seed"], config["lora"]) == ("lora", 32, 1, {"r": 4})
    assert config["variant"] == {"pattern": "{premise} Question: {hypothesis} Yes or No?",
                                 "verbalizers": [" Yes", " No"], "neutral": "drop"}  # fmt: skip
    assert config["training"] == {"max_steps": 6, "per_device_train_batch_size": 8, "learning_rate": 3e-3,
                                  "warmup_steps": 0}  # fmt: skip
    from importlib.metadata import version

    assert record["versions"]["transformers"] == version("transformers") and record["versions"]["peft"]
    assert record["git"] == {"commit": study["commit"], "dirty": False}  # the study's project (its folder's repo)
    assert record["data"] == {"source": str(finetune_inputs["data"] / "toy_nli.train.jsonl"), "rows": 256}
    done = json.loads((study["out"] / "toy-lora-k32-d1" / "finetune-done.json").read_text())
    assert (done["steps"], done["checkpoints"]) == (6, STEPS)
    schedule = json.loads((study["out"] / "toy-lora-k32-d1" / "schedule.json").read_text())
    assert schedule == {"max_steps": 6, "steps": STEPS}
