"""A run's checkpoints on one loaded model (LoRA adapters on one base, full checkpoints in place) score as fresh loads.

The reference for every checkpoint is lm-eval loading it afresh on its own:
``lm_eval.simple_evaluate(model="hf", model_args={"pretrained": ..., "peft": ...})``.
The models are the toy run's tiny GPT-2 checkpoints (built from code, tests/conftest.py) and LoRA
adapters made from its last checkpoint with PEFT, their weights drawn at random
(``init_lora_weights=False``) so that every adapter changes the scores. Both sides compute in float32
on the CPU with the same batches, so the loglikelihoods agree to 1e-6 and the accuracies exactly.

How many times a model was read is counted by wrapping ``AutoModelForCausalLM.from_pretrained``,
which lm-eval's ``hf`` model calls to load a model (the base of an adapter included).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import ood_store

pytestmark = pytest.mark.xdist_group("series")
TASK = "toy_nli"
GOOD = (1, 2, 4, 5, 6, 7)  # the steps of the adapters of the run's base; step 3's is of another base
ADAPTERS = len(GOOD)


def lora(base: Path, out: Path, seed: int, **config) -> Path:
    """A LoRA adapter of ``base`` with random weights, saved to ``out`` (adapter_config names ``base``)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    settings = {"r": 2, "target_modules": ["c_attn"], "fan_in_fan_out": True, "init_lora_weights": False, **config}
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(base), LoraConfig(**settings))
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def runs(toy_run, tmp_path_factory) -> dict[str, Path]:
    """Three runs: ``lora`` (6 adapters of the toy run's checkpoint-8, the last of another rank and targets, and
    one of another base among them, at step 3), ``missing`` (an adapter whose base is gone), ``mixed`` (the toy
    run's full checkpoints, one with a changed config.json, and one of another architecture)."""
    from transformers import AutoTokenizer, OPTConfig, OPTForCausalLM

    root = tmp_path_factory.mktemp("series")
    base = toy_run["run"] / "checkpoint-8"
    for step in GOOD[:-1]:
        lora(base, root / "lora" / f"checkpoint-{step}", seed=step)
    lora(base, root / "lora" / f"checkpoint-{GOOD[-1]}", seed=GOOD[-1], r=4, target_modules=["c_attn", "c_proj"])
    lora(toy_run["run"] / "checkpoint-4", root / "lora" / "checkpoint-3", seed=3)  # of another base

    gone = lora(base, root / "missing" / "checkpoint-1", seed=11)
    config = json.loads((gone / "adapter_config.json").read_text())
    (gone / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": str(root / "gone")}))

    for step in (0, 4, 8):
        shutil.copytree(toy_run["run"] / f"checkpoint-{step}", root / "mixed" / f"checkpoint-{step}")
    changed = shutil.copytree(toy_run["run"] / "checkpoint-8", root / "mixed" / "checkpoint-12")
    config = json.loads((changed / "config.json").read_text())
    (changed / "config.json").write_text(json.dumps({**config, "layer_norm_epsilon": 1e-3}))
    tokenizer = AutoTokenizer.from_pretrained(base)
    opt = OPTForCausalLM(OPTConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, ffn_dim=32,
                                   num_attention_heads=2, word_embed_proj_dim=16))  # fmt: skip
    opt.save_pretrained(root / "mixed" / "checkpoint-16")
    tokenizer.save_pretrained(root / "mixed" / "checkpoint-16")
    return {"root": root, "base": base, "other_base": toy_run["run"] / "checkpoint-4", "tasks": toy_run["tasks"]}


_MANAGERS: dict[Path, object] = {}


def fresh(model_args: dict, tasks: Path) -> dict[int, tuple[list[float], float]]:
    """lm-eval's own scores of one checkpoint, loaded afresh: document -> (loglikelihoods, acc)."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    if tasks not in _MANAGERS:  # the toy tasks only: indexing lm-eval's 14,000 built-in tasks takes seconds
        _MANAGERS[tasks] = TaskManager(include_path=[str(tasks)], include_defaults=False)
    result = lm_eval.simple_evaluate(
        model="hf", model_args=model_args, tasks=[TASK], task_manager=_MANAGERS[tasks], batch_size=8, device="cpu"
    )
    return {s["doc_id"]: ([float(r[0][0]) for r in s["resps"]], s["acc"]) for s in result["samples"][TASK]}


def stored_samples(results_file: str) -> dict[int, tuple[list[float], float]]:
    """The same, from the samples file an evaluation wrote beside its results file."""
    path = Path(results_file)
    stamp = path.name.removeprefix("results_").removesuffix(".json")
    rows = [json.loads(line) for line in (path.parent / f"samples_{TASK}_{stamp}.jsonl").read_text().splitlines()]
    return {r["doc_id"]: ([float(x[0][0]) for x in r["resps"]], r["acc"]) for r in rows}


def assert_equal_scores(got: dict, expected: dict, what: str) -> None:
    assert got.keys() == expected.keys(), what
    for doc, (loglikelihoods, acc) in expected.items():
        assert got[doc][1] == acc, (what, doc)
        assert got[doc][0] == pytest.approx(loglikelihoods, abs=1e-6), (what, doc)


@pytest.fixture(scope="module")
def evaluated(runs, tmp_path_factory):
    """The three runs as one study, inline, with every model load and batch-size search counted."""
    import lm_eval.models.huggingface as hf
    from transformers import AutoModelForCausalLM

    root = tmp_path_factory.mktemp("evaluated")
    study = root / "study.toml"
    study.write_text(
        f'tasks = ["{TASK}"]\ninclude_path = ["{runs["tasks"]}"]\nbatch_size = "auto"\n'
        + "".join(f'[[runs]]\nrun = "{name}"\ncheckpoints = "{runs["root"] / name}"\n'
                  for name in ("lora", "missing", "mixed"))
    )  # fmt: skip
    loads, searches = [], []
    real_load, real_search = AutoModelForCausalLM.from_pretrained, hf.HFLM._detect_batch_size

    def counted_load(name, *args, **kwargs):
        loads.append(str(name))
        return real_load(name, *args, **kwargs)

    def counted_search(self, *args, **kwargs):
        searches.append(str(self.pretrained))
        return real_search(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AutoModelForCausalLM, "from_pretrained", counted_load)
        patch.setattr(hf.HFLM, "_detect_batch_size", counted_search)
        with ood_store.open(root / "store.duckdb") as store:
            report = store.evaluate(study=study, output_dir=root / "out", work_dir=root / "work")
    markers = {json.loads(p.read_text())["unit"]: json.loads(p.read_text()) for p in (root / "work/done").glob("*")}
    outcomes = {(c.run, c.step): c for c in report.checkpoints}
    return {"outcomes": outcomes, "loads": loads, "searches": searches, "markers": markers, "work": root / "work"}


def test_a_lora_series_reads_its_base_once_and_scores_as_adapters_loaded_afresh(runs, evaluated):
    outcomes, markers = evaluated["outcomes"], evaluated["markers"]
    base = str(runs["base"])
    for step in GOOD:
        outcome = outcomes[("lora", step)]
        assert outcome.status == "evaluated", outcome.error
        adapter = runs["root"] / "lora" / f"checkpoint-{step}"
        expected = fresh({"pretrained": base, "peft": str(adapter)}, runs["tasks"])
        assert_equal_scores(stored_samples(outcome.results_file), expected, f"adapter {step}")
        args = json.loads(Path(outcome.results_file).read_text())["config"]["model_args"]
        assert args == {"pretrained": base, "peft": str(adapter)}  # as if loaded afresh
    # The base was read once (the other model loads are the mixed run's), adapters swapped onto it, also after
    # the unit of another base failed (before anything changed the model).
    assert evaluated["loads"].count(base) == 1
    loads = [markers[outcomes[("lora", s)].unit]["timings"]["load"] for s in GOOD]
    assert loads == ["from_pretrained"] + ["adapter_swap"] * (ADAPTERS - 1)
    assert all(markers[outcomes[("lora", s)].unit]["timings"]["prefetched"] for s in GOOD[1:])


def test_full_checkpoints_loaded_in_place_score_as_checkpoints_loaded_afresh(runs, evaluated):
    outcomes, markers = evaluated["outcomes"], evaluated["markers"]
    for step in (0, 4, 8, 12):
        outcome = outcomes[("mixed", step)]
        assert outcome.status == "evaluated", outcome.error
        path = runs["root"] / "mixed" / f"checkpoint-{step}"
        assert_equal_scores(stored_samples(outcome.results_file), fresh({"pretrained": str(path)}, runs["tasks"]),
                            f"checkpoint {step}")  # fmt: skip
        assert json.loads(Path(outcome.results_file).read_text())["config"]["model_args"] == {"pretrained": str(path)}
    timings = [markers[outcomes[("mixed", s)].unit]["timings"] for s in (0, 4, 8, 12)]
    assert [t["load"] for t in timings] == ["from_pretrained", "in_place", "in_place", "from_pretrained"]
    assert timings[1]["prefetched"] and timings[2]["prefetched"]
    assert timings[3]["note"] == (
        f"{runs['root'] / 'mixed' / 'checkpoint-12'}: loaded afresh (its config.json differs from the loaded "
        "checkpoint's in layer_norm_epsilon)"
    )
    mixed = [str(runs["root"] / "mixed" / f"checkpoint-{s}") for s in (0, 12)]
    assert evaluated["loads"] == [str(runs["base"]), *mixed]  # nothing else was read with from_pretrained


def test_batch_size_auto_is_found_once_per_run(evaluated):
    """One search in the lora run, one in the mixed run, although its checkpoint-12 is a new model object."""
    assert len(evaluated["searches"]) == 2


def test_a_checkpoint_that_is_not_of_its_runs_model_fails_alone_in_one_line(runs, evaluated):
    outcomes, root = evaluated["outcomes"], runs["root"]
    failed = {key: c.error for key, c in outcomes.items() if c.status == "failed"}
    assert failed == {
        ("lora", 3): f"{root / 'lora/checkpoint-3'}: an adapter of {runs['other_base']}, but this run's adapters "
        f"are of {runs['base']} ({root / 'lora/checkpoint-1'}): one run is one base model",
        ("missing", 1): f"{root / 'missing/checkpoint-1'}: its base model {root / 'gone'} does not exist "
        "(adapter_config.json's base_model_name_or_path; `base_model` names another)",
        ("mixed", 16): f"{root / 'mixed/checkpoint-16'}: a checkpoint of OPTForCausalLM, but this run's checkpoints "
        f"are of GPT2LMHeadModel ({root / 'mixed/checkpoint-0'}): one run is one model",
    }  # fmt: skip
    assert sum(c.status == "evaluated" for c in outcomes.values()) == ADAPTERS + 4  # the others went on


def test_two_local_workers_keep_each_run_to_one_worker_where_they_can(runs, tmp_path):
    """2 runs, 2 worker processes: each worker reads each run's model at most once (the completion markers say how
    each unit's model was loaded, and by which process), and its first unit of a run is the one it read."""
    study = tmp_path / "study.toml"
    lora = ", ".join(f'"{runs["root"] / "lora" / f"checkpoint-{s}"}"' for s in GOOD[:4])
    full = ", ".join(f'"{runs["root"] / "mixed" / f"checkpoint-{s}"}"' for s in (0, 4, 8))
    study.write_text(
        f'tasks = ["{TASK}"]\ninclude_path = ["{runs["tasks"]}"]\nbatch_size = 8\nlimit = 4\nsamples = false\n'
        f'[executor]\nname = "local"\nworkers = 2\n'
        f'[[runs]]\nrun = "adapters"\ncheckpoints = [{lora}]\n[[runs]]\nrun = "full"\ncheckpoints = [{full}]\n'
    )
    with ood_store.open(tmp_path / "store.duckdb") as store:
        report = store.evaluate(study=study, output_dir=tmp_path / "out", work_dir=tmp_path / "work")
    assert len(report.evaluated) == 7, [c.error for c in report.failed]
    units = {p.stem: json.loads(p.read_text())["run"] for p in (tmp_path / "work" / "units").glob("*.json")}
    by_worker: dict[tuple[int, str], list[dict]] = {}
    for path in (tmp_path / "work" / "done").glob("*.json"):
        marker = json.loads(path.read_text())
        by_worker.setdefault((marker["pid"], units[marker["unit"]]), []).append(marker)
    for (pid, run), markers in by_worker.items():
        markers.sort(key=lambda m: m["finished"])
        loads = [m["timings"]["load"] for m in markers]
        assert loads[0] == "from_pretrained" and "from_pretrained" not in loads[1:], (pid, run, loads)


def test_workers_take_the_units_of_one_run_in_a_row(tmp_path):
    """Three workers, two runs of three units: each starts a run of its own until none is left, then joins the
    run with the most units left; none comes back to a run it left. The claims are real claim files."""
    from ood_store._evaluate.grouping import UnitQueue
    from ood_store._evaluate.workdir import Unit, WorkDir

    work = WorkDir(tmp_path / "work").create()
    units = [
        Unit(id=f"{run}.{step}", store="s", run=run, step=step, checkpoint={}, label=f"{run}/{step}", tasks=["t"],
             leaves=["t"], task_source={}, options={}, dtype=None, output=str(tmp_path / run / str(step)),
             samples=False, attributes=None, log_to_file=False)
        for run in ("a", "b") for step in (1, 2, 3)
    ]  # fmt: skip
    work.add_units(units)
    attempt = work.start_attempt([u.id for u in units], "local")
    one, two, three = (UnitQueue(work, attempt, [u.id for u in units]) for _ in range(3))
    assert one.take()[0].id == "a.1"
    assert one.upcoming().id == "a.2"  # its run's next, not claimed
    assert two.take()[0].id == "b.1"  # a run nobody evaluates
    assert three.take()[0].id == "a.2"  # every run has a worker: it joins one (a: 2 left, b: 2 left; a first)
    assert one.take()[0].id == "a.3"  # its own run first
    assert two.take()[0].id == "b.2"
    assert one.take()[0].id == "b.3"  # a has nothing left: one joins b, the run with units left
    assert three.take() is None and two.take() is None and one.upcoming() is None


def test_the_timings_docstring_examples_run():
    import doctest

    from ood_store._evaluate import timings

    result = doctest.testmod(timings)
    assert result.attempted >= 2 and result.failed == 0


def test_status_shows_where_the_time_went_as_the_docs_show_it(evaluated, runner):
    """The speed page's illustration of `ood-store status` (its seconds are a machine's): the same columns, and the
    line that adds the units' timings up, in the same form."""
    import re

    from ood_store._cli import main

    readme = (Path(__file__).resolve().parents[1] / "docs" / "how-to" / "speed.md").read_text()
    shown = readme.split("$ ood-store status scorers-work\n", 1)[1].split("```", 1)[0].splitlines()
    result = runner.invoke(main, ["status", str(evaluated["work"])])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    timed = re.compile(
        r"Time of \d+ units \([\d,]+ s\): ((loading|preparing|forward passes|bookkeeping|writing) \d+%(, |: )){4,5}"
        r"(load|compute|overhead|write)-bound; [\d,]+ documents/s, [\d,]+ µs a document outside the forward passes\.$"
    )
    assert timed.match(shown[1]) and timed.match(lines[1]), lines[1]
    assert lines[2].split() == shown[2].split()  # the table's columns
    done = sum(1 for m in evaluated["markers"].values() if m["timings"]["load"])
    assert lines[1].startswith(f"Time of {done} units (")
