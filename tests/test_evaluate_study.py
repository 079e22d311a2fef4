"""Study files: many runs in one TOML or YAML file, evaluated with one command, resumed after Ctrl-C.

Expected values are written out by hand from the files the tests write; the scores of a study's runs
are checked against an evaluation of the same checkpoints run by run (tests/test_evaluate.py checks
those against lm-eval's own files).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ood_store
from conftest import TOY_STEPS, TOY_TASKS, table_dump
from ood_store._cli import main
from ood_store._errors import InputError
from ood_store._evaluate import study
from ood_store._evaluate.plan import RunRequest
from ood_store._evaluate.suite.variant import Variant

TASKS = list(TOY_TASKS[:2])
RUN_A = '[[runs]]\nrun = "a"\ncheckpoints = "x"\n'

STUDY_TOML = """
tasks = ["toy_nli", "toy_ood_never"]
include_path = ["tasks/"]
batch_size = 8
[attributes]
in_domain = "toy_nli"
[executor]
name = "local"
workers = 2
[[runs]]
run = "toy-a-s0"
checkpoints = "models/run/checkpoint-*"
family = "toy-a"
seed = 0
[[runs]]
run = "toy-b-s1"
checkpoints = ["models/run/checkpoint-0", "models/run/checkpoint-4", "models/run/checkpoint-8"]
tasks = ["toy_nli"]
num_fewshot = 0
family = "toy-b"
seed = 1
[runs.attributes]
note = "second"
"""

STUDY_YAML = """
tasks: [toy_nli, toy_ood_never]
include_path: [tasks/]
batch_size: 8
attributes: {in_domain: toy_nli}
executor: {name: local, workers: 2}
runs:
  - run: toy-a-s0
    checkpoints: models/run/checkpoint-*
    family: toy-a
    seed: 0
  - run: toy-b-s1
    checkpoints: [models/run/checkpoint-0, models/run/checkpoint-4, models/run/checkpoint-8]
    tasks: [toy_nli]
    num_fewshot: 0
    family: toy-b
    seed: 1
    attributes: {note: second}
"""


@pytest.fixture
def study_dir(tmp_path, toy_run) -> Path:
    """A folder with the toy run's checkpoints under models/ and its tasks under tasks/, as a study would have."""
    folder = tmp_path / "study"
    (folder / "models").mkdir(parents=True)
    (folder / "models" / "run").symlink_to(toy_run["run"], target_is_directory=True)
    (folder / "tasks").symlink_to(toy_run["tasks"], target_is_directory=True)
    return folder


@pytest.mark.parametrize(("name", "text"), [("study.toml", STUDY_TOML), ("study.yaml", STUDY_YAML)])
def test_a_study_file_names_runs_options_attributes_and_the_executor(study_dir, name, text):
    (study_dir / name).write_text(text)
    loaded = study.load_study(study_dir / name)
    base = study_dir.resolve()
    assert loaded.executor == {"name": "local", "workers": 2}
    assert [(r.run, r.checkpoints, r.options, r.attributes) for r in loaded.runs] == [
        (
            "toy-a-s0",
            [str(base / "models/run/checkpoint-*")],
            {"tasks": TASKS, "include_paths": [str(base / "tasks")], "batch_size": 8},
            {"in_domain_task": "toy_nli", "family": "toy-a", "seed": 0},
        ),
        (
            "toy-b-s1",
            [str(base / f"models/run/checkpoint-{s}") for s in TOY_STEPS],
            {"tasks": ["toy_nli"], "include_paths": [str(base / "tasks")], "batch_size": 8, "num_fewshot": 0},
            {"in_domain_task": "toy_nli", "family": "toy-b", "seed": 1, "note": "second"},
        ),
    ]
    [a, b] = loaded.requests({"limit": 4})  # options given for every run win over the file
    assert (a.limit, b.limit, b.num_fewshot, a.num_fewshot) == (4, 4, 0, None)


def test_the_prompt_length_is_an_option_in_a_suite_table_or_beside_it(tmp_path):
    # As ood-store finetune writes it: in [suite]; a run's own (either place) wins over the study's.
    path = tmp_path / "study.toml"
    path.write_text(
        'tasks = ["t"]\nmax_length = 64\n[suite]\npattern = "minimal"\n'
        '[[runs]]\nrun = "a"\ncheckpoints = "x"\n[runs.suite]\nmax_length = 128\ntruncation = "right"\n'
        '[[runs]]\nrun = "b"\ncheckpoints = "y"\n'
    )
    a, b = study.load_study(path).requests()
    assert (a.max_length, a.truncation, b.max_length, b.truncation) == (128, "right", 64, "left")
    assert a.variant == b.variant == Variant.of("minimal")  # the prompt length is not part of the variant


def test_study_options_are_the_per_run_fields_of_a_run_request():
    # A field added to RunRequest (e.g. a prompt variant of the suite) is a study option at once.
    import dataclasses

    assert set(study.RUN_OPTIONS) == {f.name for f in dataclasses.fields(RunRequest)} - {
        "run",
        "checkpoints",
        "attributes",
    }
    assert {"tasks", "include_paths", "num_fewshot", "limit", "batch_size", "lm_eval_kwargs"} <= set(study.RUN_OPTIONS)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('tasks = ["t"]\n[[runs]]\ncheckpoints = "x"\n', "study.toml: runs[1].run: missing: every run needs a name"),
        ('tasks = ["t"]\n[[runs]]\nrun = "a"\n', "study.toml: runs[1].checkpoints: missing"),
        ('[[runs]]\nrun = "a"\ncheckpoints = "x"\n', "study.toml: runs[1].tasks: missing"),
        ('tasks = ["t"]\n', "study.toml: runs: missing: a study needs at least one [[runs]] table"),
        (
            'tasks = ["t"]\nfamily = "OPT"\n[[runs]]\nrun = "a"\ncheckpoints = "x"\n',
            "study.toml: family: not a study key",
        ),
        (
            'tasks = ["t"]\n[[runs]]\nrun = "a"\ncheckpoints = "x"\nsize = [1, 2]\n',
            "study.toml: runs[1].size: an attribute must be a string, number or boolean, got list",
        ),
        (
            'tasks = ["t"]\n[[runs]]\nrun = "a"\ncheckpoints = "x"\n[runs.attributes]\nextra = {k = 1}\n',
            "study.toml: runs[1].attributes.extra: an attribute must be a string, number or boolean, got dict",
        ),
        (
            'tasks = ["t"]\n[[runs]]\nrun = "a"\ncheckpoints = "x"\nseed = "one"\n',
            "study.toml: runs[1].seed: expected an integer, got 'one'",
        ),
        (
            'tasks = ["t"]\n[[runs]]\nrun = "a"\ncheckpoints = "x"\nnum_fewshot = -1\n',
            "study.toml: runs[1].num_fewshot: expected a whole number, 0 or more, got -1",
        ),
        (
            'tasks = ["t"]\nbatch_size = "big"\n[[runs]]\nrun = "a"\ncheckpoints = "x"\n',
            "study.toml: batch_size: expected",
        ),
        (
            'tasks = ["t"]\n[[runs]]\nrun = "a"\ncheckpoints = "x"\n[[runs]]\nrun = "a"\ncheckpoints = "y"\n',
            "study.toml: runs[2].run: 'a' is in the study twice",
        ),
        (
            'tasks = ["t"]\n[executor]\nname = "slurm"\nslurm_partiton = "gpu"\n' + RUN_A,
            "study.toml: executor.slurm_partiton: not an executor option",
        ),
        (
            'tasks = ["t"]\n[executor]\nname = "local"\nslurm_partition = "gpu"\n' + RUN_A,
            "study.toml: executor.slurm_partition: only for the slurm executor, not `executor` local",
        ),
        (
            'tasks = ["t"]\nexecutor = "k8s"\n[[runs]]\nrun = "a"\ncheckpoints = "x"\n',
            "study.toml: executor.name: unknown executor 'k8s' (inline, local, slurm or ray)",
        ),
        ('tasks = ["t"\n', "study.toml: not a valid study file: "),
        (
            'tasks = ["t"]\n[suite]\npattern = "nope"\n' + RUN_A,
            "study.toml: suite.pattern: 'nope' is neither a shipped pattern",
        ),
        (
            RUN_A.replace("[[runs]]", 'tasks = ["t"]\n[[runs]]') + "[runs.suite]\ncolor = 1\n",
            "study.toml: runs[1].suite.color: unknown key",
        ),
        (
            'tasks = ["t"]\n[suite]\npattern = "minimal"\n' + RUN_A + '[runs.suite]\nverbalizer = "Yes"\n',
            "study.toml: runs[1].suite.verbalizer: expected two verbalizers",
        ),
        (
            RUN_A.replace("[[runs]]", 'tasks = ["t"]\n[[runs]]') + "max_length = 64\n[runs.suite]\nmax_length = 128\n",
            "study.toml: runs[1].suite.max_length: given twice (as max_length too)",
        ),
        (
            RUN_A.replace("[[runs]]", 'tasks = ["t"]\n[[runs]]') + '[runs.suite]\ntruncation = "middle"\n',
            "study.toml: runs[1].suite.truncation: expected left or right, got 'middle'",
        ),
        (
            'tasks = ["t"]\n[suite]\nmax_length = 0\n' + RUN_A,
            "study.toml: suite.max_length: expected a whole number of tokens, 1 or more, got 0",
        ),
    ],
)
def test_a_bad_study_file_is_one_line_naming_the_file_and_field(tmp_path, text, message):
    path = tmp_path / "study.toml"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        study.load_study(path)
    assert str(error.value).startswith(f"{tmp_path}/{message}"), str(error.value)


def test_a_bad_study_is_refused_before_anything_is_planned_or_submitted(runner, tmp_path):
    db = tmp_path / "store.duckdb"
    runner.invoke(main, ["--db", str(db), "ingest", "-q", "tests/fixtures/lm-eval-real/v0.4/saucam-PowerBot-8B"])
    before = table_dump(db)
    (tmp_path / "study.toml").write_text('tasks = ["t"]\n[[runs]]\nrun = "a"\ncheckpoints = "x"\nsize = [1]\n')
    result = runner.invoke(main, ["--db", str(db), "evaluate", "--study", str(tmp_path / "study.toml")])
    assert result.exit_code == 1
    assert (
        result.output
        == f"Error: {tmp_path}/study.toml: runs[1].size: an attribute must be a string, number or boolean, got list\n"
    )
    assert table_dump(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.duckdb", "study.toml"]  # no work folder either
    for flag in (["--run", "x"], ["--attr", "seed=1"], ["checkpoint-0"]):
        both = runner.invoke(main, ["--db", str(db), "evaluate", "--study", str(tmp_path / "study.toml"), *flag])
        shown = "CHECKPOINT" if flag[0] == "checkpoint-0" else flag[0]
        assert both.output == (
            f"Error: {shown}: not with --study: a study names its runs, their checkpoints and attributes\n"
        )


def test_a_study_evaluates_with_one_command_and_resumes_after_ctrl_c(study_dir, tmp_path):
    """2 runs x 3 checkpoints x 2 tasks, inline: Ctrl-C after the first unit is stored, then the same command."""
    (study_dir / "study.toml").write_text(
        STUDY_TOML.replace('tasks = ["toy_nli"]\n', "").replace('name = "local"\nworkers = 2\n', 'name = "inline"\n')
    )
    db = tmp_path / "store.duckdb"
    command = [str(Path(sys.executable).parent / "ood-store"), "--db", str(db), "evaluate", "--study",
               str(study_dir / "study.toml")]  # fmt: skip
    stored = study_dir / "lm-eval-results-work" / "stored"
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=study_dir,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # pytest-xdist's workers ignore SIGINT
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while not (stored.is_dir() and any(stored.iterdir())) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stdout + stderr
    with ood_store.open(db, read_only=True) as store:
        before = store.query("SELECT count(*) AS n FROM evaluations")["n"][0]
    assert 1 <= before < 6
    assert stderr.splitlines()[-1] == (
        f"Interrupted: {before} unit{'s' if before > 1 else ''} of 6 stored in {db}. Run the same command again "
        "to resume: what is stored or finished is not evaluated again."
    )

    again = subprocess.run(command, capture_output=True, text=True, cwd=study_dir)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0].startswith(f"Evaluated {6 - before} checkpoint")
    assert f"of 2 runs into {db}" in again.stdout.splitlines()[0]
    with ood_store.open(db, read_only=True) as store:
        scores = store.query("SELECT run, step, task, count(*) AS n FROM scores_all GROUP BY ALL ORDER BY ALL").rows()
        runs = store.query("SELECT run, family, in_domain_task, seed, attributes FROM runs ORDER BY run").rows()
    assert scores == [(r, s, t, 1) for r in ("toy-a-s0", "toy-b-s1") for s in TOY_STEPS for t in TASKS]
    assert runs == [("toy-a-s0", "toy-a", "toy_nli", 0, "{}"), ("toy-b-s1", "toy-b", "toy_nli", 1, '{"note":"second"}')]


def test_the_cluster_pages_study_file_is_a_valid_study(tmp_path):
    import re

    page = (Path(__file__).resolve().parents[1] / "docs" / "how-to" / "cluster.md").read_text()
    section = page.split("## Running a study on a cluster", 1)[1].split("\n## ", 1)[0]
    [text] = [block for block in re.findall(r"```toml\n(.*?)```", section, flags=re.DOTALL) if "[[runs]]" in block]
    (tmp_path / "study.toml").write_text(text)
    loaded = study.load_study(tmp_path / "study.toml")
    assert [r.run for r in loaded.runs] == ["opt-1.3b-mnli-s0", "olmo2-1b-mnli-s0"]
    assert loaded.runs[0].checkpoints == [str(tmp_path / "runs/opt-1.3b-mnli-s0/checkpoint-*")]
    assert loaded.runs[0].attributes == {
        "train_shots": 16, "family": "OPT", "size": "1.3b", "in_domain_task": "mnli", "seed": 0,
    }  # fmt: skip
    assert loaded.runs[1].options == {
        "tasks": ["ood_nli"], "include_paths": [str(tmp_path / "my_tasks")], "batch_size": 16, "dtype": "bfloat16",
        "variant": Variant.of("minimal", neutral="no"),
    }  # fmt: skip
    assert "variant" not in loaded.runs[0].options
    assert loaded.executor == {
        "name": "slurm", "slurm_partition": "gpu", "gpus_per_task": 1, "timeout_min": 240, "max_parallel": 32,
        "slurm_params": {"qos": "normal"},
    }  # fmt: skip


def test_each_run_of_a_study_is_evaluated_with_its_own_suite_prompt(runner, tmp_path):
    """A [suite] table per run: the default prompt for one run, `minimal` (with neutral as no) for the other."""
    from conftest import FIXTURES

    (tmp_path / "study.toml").write_text(
        f'tasks = ["ood_nli_rte", "ood_nli_snli"]\ndata_dir = "{FIXTURES / "nli-suite"}"\nbatch_size = 8\n'
        'output_dir = "lm-eval-results"\n'  # beside the study (the default is the current folder's)
        f'[[runs]]\nrun = "plain"\ncheckpoints = "{FIXTURES / "toy-checkpoint"}"\n'
        f'[[runs]]\nrun = "minimal"\ncheckpoints = "{FIXTURES / "toy-checkpoint"}"\n'
        '[runs.suite]\npattern = "minimal"\nneutral = "no"\n'
    )
    db = tmp_path / "store.duckdb"
    result = runner.invoke(main, ["--db", str(db), "evaluate", "--study", str(tmp_path / "study.toml"), "-q"])
    assert result.exit_code == 0, result.output
    with ood_store.open(db, read_only=True) as store:
        rows = store.query("SELECT run, task FROM scores WHERE metric = 'acc' ORDER BY run, task").rows()
        configs = store.query("SELECT run, config->'$.ood_nli.variant.pattern' AS p FROM evaluations ORDER BY run")
    assert rows == [
        ("minimal", "ood_nli_rte__minimal__neutral-no"), ("minimal", "ood_nli_snli__minimal__neutral-no"),
        ("plain", "ood_nli_rte"), ("plain", "ood_nli_snli"),
    ]  # fmt: skip
    assert configs.rows() == [
        ("minimal", '"{premise} {hypothesis} ?"'),
        ("plain", '"{premise} Question: {hypothesis} Yes or No?"'),
    ]
