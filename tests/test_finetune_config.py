"""The finetuning study file and its schedule, read and checked without torch: the grid, the overrides, the errors.

Expected runs, names and steps are written out by hand from the files the tests write.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ood_store._errors import InputError
from ood_store._finetune import config
from ood_store._finetune.schedule import Schedule, parse

GRID = """
base_model = "facebook/opt-125m"
in_domain = "mnli"
pattern = "minimal"
shots = [16, 64]
data_seeds = [0, 1]
schedule = { kind = "even", checkpoints = 5 }
[training]
learning_rate = 1e-4
per_device_train_batch_size = 8
[attributes]
study = "paper"
[[runs]]
family = "OPT"
size = "125m"
[[runs]]
base_model = "EleutherAI/pythia-160m"
family = "pythia"
method = "full"
seed = 3
shots = 16
verbalizer = " True,False"
[runs.training]
learning_rate = 1e-5
max_steps = 10
"""


def write(tmp_path: Path, text: str, name: str = "study.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    return path


def test_the_grid_is_each_entry_crossed_with_its_shots_data_seeds_and_seeds(tmp_path):
    study = config.load_finetune_study(write(tmp_path, GRID))
    got = [(r.run, r.method, r.shots, r.data_seed, r.seed) for r in study.runs]
    assert got == [
        ("opt-125m-mnli-lora-k16-d0-s0", "lora", 16, 0, 0),
        ("opt-125m-mnli-lora-k16-d1-s0", "lora", 16, 1, 0),
        ("opt-125m-mnli-lora-k64-d0-s0", "lora", 64, 0, 0),
        ("opt-125m-mnli-lora-k64-d1-s0", "lora", 64, 1, 0),
        ("pythia-160m-mnli-full-k16-d0-s3", "full", 16, 0, 3),
        ("pythia-160m-mnli-full-k16-d1-s3", "full", 16, 1, 3),
    ]
    opt, pythia = study.runs[0], study.runs[-1]
    # A run's tables merge over the top level's, key by key; attributes are the study's and the entry's.
    assert opt.training == {"learning_rate": 1e-4, "per_device_train_batch_size": 8}
    assert pythia.training == {"learning_rate": 1e-5, "per_device_train_batch_size": 8, "max_steps": 10}
    assert opt.attributes == {"study": "paper", "family": "OPT", "size": "125m"}
    assert pythia.attributes == {"study": "paper", "family": "pythia"}
    # The prompt: the shipped pattern's text, its verbalizers unless the run gives its own.
    assert opt.variant.pattern == "{premise} {hypothesis} ?" and opt.variant.verbalizers == (" Yes", " No")
    assert pythia.variant.verbalizers == (" True", " False")
    assert opt.testset == "ood_nli_mnli" and opt.in_domain_task == "ood_nli_mnli__minimal"
    assert pythia.in_domain_task == "ood_nli_mnli__minimal__v-True-False"
    assert opt.schedule == Schedule("even", checkpoints=5)
    # Where each setting came from, for errors.
    assert pythia.where("base_model") == "runs[2].base_model" and pythia.where("pattern") == "pattern"
    assert study.tasks == ["ood_nli"] and study.keep_checkpoints == "weights" and not study.in_loop


def test_options_given_as_arguments_win_and_are_named_as_arguments(tmp_path):
    path = write(tmp_path, GRID)
    study = config.load_finetune_study(path, shots=[8], pattern="gpt-3", training={"learning_rate": 2e-4})
    assert {r.shots for r in study.runs} == {8}  # the first entry's; the second sets its own
    assert study.runs[0].variant.pattern == "{premise} question: {hypothesis} Yes or No? answer:"
    assert study.runs[0].training == {"learning_rate": 2e-4, "per_device_train_batch_size": 8}
    with pytest.raises(InputError) as caught:
        config.load_finetune_study(path, data_seeds=[-1])
    assert (caught.value.path, caught.value.parameter) == (None, "data_seeds")
    assert str(caught.value) == "data_seeds: expected a whole number (0 or more) or a list of them, got [-1]"


def test_one_run_from_arguments_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models" / "base").mkdir(parents=True)
    study = config.load_finetune_study(base_model="models/base", in_domain="snli", shots=4, name="toy-{shots}")
    [run] = study.runs
    assert run.base_model == str(tmp_path / "models" / "base")  # a folder, read from the working directory
    assert (run.run, run.data_seed, run.seed, run.method, run.loss) == ("toy-4", 0, 0, "lora", "vocabulary")
    assert run.variant.pattern == "{premise} Question: {hypothesis} Yes or No?"  # the suite's own pattern


@pytest.mark.parametrize(
    ("text", "given", "message"),
    [
        ('base_model = "m/x"\nin_domain = "mnli"\nshots = 4\nlearning_rate = 1', {},
         "study.toml: learning_rate: not a key of a finetuning study (run attributes go in [attributes] or a "
         "[[runs]] entry)"),
        ('base_model = "m/x"\nin_domain = "mnli"\nshot = 4', {},
         "study.toml: shot: not a key of a finetuning study; did you mean shots?"),
        ('base_model = "m/x"\nin_domain = "mnli"', {}, "study.toml: shots: missing: how many training examples, "
         "e.g. shots = [16, 64]"),
        ('in_domain = "mnli"\nshots = 4', {}, "study.toml: base_model: missing: a causal LM's folder or hub id, e.g. "
         "facebook/opt-125m"),
        ('base_model = "m/x"\nin_domain = "mnli"\nshots = 4\nseeds = [1]\n[[runs]]\nseed = 2', {},
         "study.toml: runs[1].seed: give seeds or seed, not both"),
        ('base_model = "m/x"\nin_domain = "mnli"\nshots = 4\nschedule = { kind = "cosine" }', {},
         "study.toml: schedule.kind: expected one of log, even, manual, got 'cosine'"),
        ('base_model = "m/x"\nin_domain = "mnli"\nshots = 4\nschedule = { kind = "log", steps = [1] }', {},
         "study.toml: schedule.steps: not a key of a log schedule (it takes checkpoints = N)"),
        ('base_model = "m/x"\nin_domain = "mnli"\nshots = 4\n[training]\nsave_steps = 10', {},
         "study.toml: training.save_steps: set by ood-store: the checkpoint schedule decides when to save "
         "(schedule)"),
        ('base_model = "m/x"\nin_domain = "mnli"\nshots = 4\n[lora]\ntask_type = "SEQ_CLS"', {},
         "study.toml: lora.task_type: set by ood-store: a causal LM (CAUSAL_LM)"),
        ('base_model = "m/x"\nin_domain = "mnli"\nshots = 4\nname = "same"\ndata_seeds = [0, 1]', {},
         "study.toml: name: two runs are named 'same': set the name template (fields: model, in_domain, method, "
         "loss, shots, data_seed, seed, pattern, attributes) to tell them apart"),
        ('base_model = "m/x"\nin_domain = "mnli"\nshots = 4\nname = "{family}"', {},
         "study.toml: name: '{family}' names {family}, which is neither a field (model, in_domain, method, loss, "
         "shots, data_seed, seed, pattern) nor an attribute of the run"),
        ('base_model = "m/x"\nin_domain = "my_set"\nshots = 4', {},
         "study.toml: in_domain: 'my_set' is not a testset of the ood_nli suite (snli, mnli, scitail, rte, hans, "
         "anli_r1, anli_r2, anli_r3, wnli, paws); a set of your own needs data_dir, holding its training split "
         "as NAME.train.jsonl"),
        ('base_model = "./nowhere"\nin_domain = "mnli"\nshots = 4', {}, "study.toml: base_model: no such model "
         "folder: {dir}/nowhere"),
        ('base_model = "m/x"\nin_domain = "mnli"\nshots = 4\n[[runs]]\nmethod = "qlora"', {},
         "study.toml: runs[1].method: expected one of lora, full, got 'qlora'"),
        ('base_model = "m/x"\nin_domain = "mnli"\nshots = 4\n[[runs]]\nnotes = ["a"]', {},
         "study.toml: runs[1].notes: an attribute must be a string, number or boolean, got list"),
        ('base_model = "m/x"\nin_domain = "mnli"\nshots = 4\n[evaluate]\nbatch_size = 0', {},
         "study.toml: evaluate.batch_size: expected a positive number, auto or auto:N, got 0"),
        ('base_model = "m/x"\nin_domain = "mnli"\nshots = 4\n[executor]\nname = "local"\nslurm_partition = "gpu"', {},
         "study.toml: executor.slurm_partition: only for the slurm executor, not `executor` local"),
        ('base_model = "m/x"\nin_domain = "mnli"\nshots = 4', {"keep_checkpoints": "some"},
         "keep_checkpoints: expected one of all, weights, none, got 'some'"),
        ('base_model = "m/x"\nin_domain = "mnli"\nshots = 4', {"training": {"seed": 1}},
         "training: seed: set by ood-store: each seed is a run of the grid (seeds = [...] in a study, or the seed "
         "option)"),
    ],
)  # fmt: skip
def test_a_bad_study_is_one_line_naming_the_file_and_field(tmp_path, text, given, message):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        config.load_finetune_study(path, **given)
    expected = message.replace("study.toml", str(path)).replace("{dir}", str(tmp_path))
    assert str(caught.value) == expected
    assert "\n" not in str(caught.value)


def test_the_evaluate_options_of_the_study_file_are_checked_as_evaluate_checks_them(tmp_path):
    text = 'base_model = "m/x"\nin_domain = "mnli"\nshots = 4\n[evaluate]\nbatch_size = "auto:4"\nlimit = 0.5\n'
    assert config.load_finetune_study(write(tmp_path, text)).evaluate == {"batch_size": "auto:4", "limit": 0.5}


@pytest.mark.parametrize(
    ("schedule", "last", "steps"),
    [
        # log: 6 checkpoints up to step 100 are 0 and 100 ** (i / 4) for i = 0..4, rounded: 1, 3.16, 10, 31.6, 100.
        (Schedule("log", checkpoints=6), 100, [0, 1, 3, 10, 32, 100]),
        # log of 5 over 10 steps: 10 ** (i / 3) = 1, 2.15, 4.64, 10 -> 1, 2, 5, 10.
        (Schedule("log", checkpoints=5), 10, [0, 1, 2, 5, 10]),
        # 20 ** (i / 8), i = 0..8, rounded: 1, 1, 2, 3, 4, 7 (6.503), 9, 14, 20; each at least one after the one
        # before: 1, 2, 3, 4, 5, 7, ...
        (Schedule("log", checkpoints=10), 20, [0, 1, 2, 3, 4, 5, 7, 9, 14, 20]),
        # More checkpoints than steps: every step.
        (Schedule("log", checkpoints=24), 5, [0, 1, 2, 3, 4, 5]),
        (Schedule("even", checkpoints=9), 48, [0, 6, 12, 18, 24, 30, 36, 42, 48]),
        # even: round(i * 10 / 3) for i = 0..3 = 0, 3.33, 6.67, 10.
        (Schedule("even", checkpoints=4), 10, [0, 3, 7, 10]),
        (Schedule("manual", manual=(5, 20)), 30, [0, 5, 20, 30]),
        (Schedule("manual", manual=(0, 30)), 30, [0, 30]),
        (Schedule("log"), 0, [0]),
    ],
)
def test_schedules_save_step_0_and_the_last_step(schedule, last, steps):
    assert schedule.steps(last) == steps


def test_a_manual_step_after_the_last_is_refused():
    with pytest.raises(InputError, match=r"schedule.steps: step 40 is after the run's last step \(30\)"):
        Schedule("manual", manual=(40,)).steps(30)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("log:24", Schedule("log", checkpoints=24)),
        ("even:10", Schedule("even", checkpoints=10)),
        ("manual:50,0,100", Schedule("manual", manual=(0, 50, 100))),
        ({"kind": "manual", "steps": [3, 1]}, Schedule("manual", manual=(1, 3))),
        ({"kind": "log"}, Schedule("log", checkpoints=24)),
    ],
)
def test_schedules_from_text_and_tables(text, expected):
    assert parse(text) == expected


def test_the_default_log_schedule_has_24_checkpoints():
    assert len(Schedule().steps(10_000)) == 24


def test_the_docs_study_and_the_papers_worked_example_are_valid_studies(tmp_path):
    """The study file of docs/how-to/finetuning.md and docs/finetune-paper.toml, read as ood-store reads them;
    their grids by hand."""
    import re

    root = Path(__file__).resolve().parents[1]
    section = (root / "docs" / "how-to" / "finetuning.md").read_text()
    [block] = re.findall(r"```toml\n(.*?)```", section, flags=re.DOTALL)
    study = config.load_finetune_study(write(tmp_path, block))
    assert len(study.runs) == 12  # 2 models x 2 shot counts x 3 data seeds
    assert {(r.base_model, r.attributes["size"]) for r in study.runs} == {
        ("facebook/opt-125m", "125m"), ("facebook/opt-350m", "350m")
    }  # fmt: skip
    assert study.output_dir == tmp_path / "runs" and study.runs[0].training["max_steps"] == 400

    paper = config.load_finetune_study(root / "docs" / "finetune-paper.toml")
    assert len(paper.runs) == 4 * 4 * 10  # 4 models x 4 shot counts x 10 data seeds
    assert paper.runs[0].run == "OPT-125m-mnli-k16-d0" and paper.in_loop
    run = paper.runs[0]
    assert (run.variant.pattern, run.variant.verbalizers, run.variant.neutral) == (
        "{premise} {hypothesis} ?", (" Yes", " No"), "drop"
    )  # fmt: skip
    assert (run.method, run.loss, run.max_length, run.truncation, run.lora) == ("lora", "vocabulary", 128, "right",
                                                                               {"r": 8})  # fmt: skip
