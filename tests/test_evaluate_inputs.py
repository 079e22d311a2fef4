"""What evaluate is asked to do: checkpoint arguments and run files, checked before any model runs."""

from __future__ import annotations

import json

import pytest

from ood_store._errors import InputError
from ood_store._evaluate.checkpoints import Checkpoint, resolve
from ood_store._store.runs import read_run_file


def make(folder, adapter_base: str | None = None):
    folder.mkdir(parents=True)
    if adapter_base is None:
        (folder / "config.json").write_text("{}")
    else:
        (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": adapter_base}))
    return folder


def test_a_folder_of_checkpoints_in_step_order(tmp_path):
    for name in ("checkpoint-10", "checkpoint-2", "step-5"):
        make(tmp_path / "run" / name)
    (tmp_path / "run" / "runs").mkdir()  # a logging folder: not a checkpoint
    (tmp_path / "run" / "checkpoint-7").mkdir()  # no weights yet: not a checkpoint
    got = resolve([str(tmp_path / "run")])
    assert [(c.step, c.model) for c in got] == [
        (2, str(tmp_path / "run/checkpoint-2")),
        (5, str(tmp_path / "run/step-5")),
        (10, str(tmp_path / "run/checkpoint-10")),
    ]
    assert [c.step for c in resolve([str(tmp_path / "run/checkpoint-1*"), str(tmp_path / "run/step-5")])] == [5, 10]


def test_a_single_checkpoint_and_a_final_model(tmp_path):
    assert resolve([str(make(tmp_path / "checkpoint-3"))]) == [Checkpoint(str(tmp_path / "checkpoint-3"), 3)]
    [final] = resolve([str(make(tmp_path / "final-model"))])
    assert final.step is None and final.model_args("bfloat16") == {
        "pretrained": str(tmp_path / "final-model"),
        "dtype": "bfloat16",
    }


def test_hub_revisions():
    got = resolve(["EleutherAI/pythia-160m@step2000", "EleutherAI/pythia-160m@step1000"])
    assert [(c.step, c.model_args()) for c in got] == [
        (1000, {"pretrained": "EleutherAI/pythia-160m", "revision": "step1000"}),
        (2000, {"pretrained": "EleutherAI/pythia-160m", "revision": "step2000"}),
    ]


def test_peft_adapters(tmp_path):
    [adapter] = resolve([str(make(tmp_path / "lora" / "checkpoint-50", adapter_base="facebook/opt-125m"))])
    assert adapter.model_args() == {"pretrained": "facebook/opt-125m", "peft": str(tmp_path / "lora/checkpoint-50")}
    [other] = resolve([str(tmp_path / "lora")], base_model="my/base")
    assert other.model_args()["pretrained"] == "my/base"
    broken = tmp_path / "broken" / "checkpoint-1"
    broken.mkdir(parents=True)
    (broken / "adapter_config.json").write_text('{"r": 8}')
    with pytest.raises(InputError, match=r"checkpoint-1/adapter_config.json: base_model_name_or_path: missing"):
        resolve([str(broken)])


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("does/not/exist", "does/not/exist: no such checkpoint folder"),
        ("org/model@", "org/model@: expected HF_REPO@REVISION"),
        ("nothing-*", "nothing-*: no checkpoint folders match this pattern"),
    ],
)
def test_arguments_that_name_nothing(argument, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=message.replace("*", r"\*")):
        resolve([argument])


def test_two_checkpoints_with_one_step_are_refused(tmp_path):
    a, b = make(tmp_path / "a" / "checkpoint-5"), make(tmp_path / "b" / "step-5")
    with pytest.raises(InputError, match=r"step 5, like .*/a/checkpoint-5: one run holds one checkpoint per step"):
        resolve([str(a), str(b)])


def test_run_files(tmp_path):
    toml = tmp_path / "run.toml"
    toml.write_text('run = "opt-mnli-s1"\nfamily = "OPT"\nsize = "2.7b"\nseed = 1\n[attributes]\nshots = 16\n')
    assert read_run_file(toml) == ("opt-mnli-s1", {"family": "OPT", "size": "2.7b", "seed": 1, "shots": 16})
    yaml = tmp_path / "run.yaml"
    yaml.write_text("family: OPT\nin_domain: mnli\nseed: '2'\n")
    assert read_run_file(yaml) == (None, {"family": "OPT", "in_domain_task": "mnli", "seed": 2})
    for text, message in [
        ("family = [1, 2]\n", "run.toml: family: expected a string, number or boolean, got list"),
        ("seed = 'x'\n", "run.toml: seed: expected an integer"),
        ("run = 3\n", "run.toml: run: expected a non-empty string"),
        ("= broken", "run.toml: not a valid run file"),
    ]:
        toml.write_text(text)
        with pytest.raises(InputError, match=message):
            read_run_file(toml)


def test_a_report_lists_its_outcomes_by_status():
    import typing

    from ood_store._evaluate.runner import CheckpointOutcome, EvaluateReport, Status

    statuses = typing.get_args(Status)
    outcomes = [CheckpointOutcome(f"c{i}", i, status, []) for i, status in enumerate(statuses * 2)]
    report = EvaluateReport(["r"], outcomes)
    for i, status in enumerate(statuses):
        assert [c.checkpoint for c in getattr(report, status)] == [f"c{i}", f"c{i + len(statuses)}"]
    with pytest.raises(AttributeError, match="failed: read-only"):
        report.failed = []  # type: ignore[misc]
