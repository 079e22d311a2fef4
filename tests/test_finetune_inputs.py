"""Bad input to ``ood-store finetune``: one line naming the field (or flag), before anything trains, nothing written.

The toy base model and its training split are built from code (``finetune_inputs`` in conftest.py); what
each message names is written out by hand: the verbalizer's tokens come from the toy tokenizer itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import FINETUNE_ROWS
from ood_store._cli import main

STUDY = """
base_model = "{base}"
in_domain = "toy_nli"
data_dir = "{data}"
shots = [8]
method = "full"
[training]
max_steps = 2
"""


@pytest.fixture
def study(tmp_path, finetune_inputs):
    def write(top: str = "", tail: str = "", **replace: str) -> Path:
        """The study with ``top`` (top-level keys) first, ``tail`` (tables) last, and keys' values replaced."""
        text = STUDY.format(base=finetune_inputs["base"], data=finetune_inputs["data"])
        for key, value in replace.items():
            text = text.replace(f"{key} = ", f"{key} = {value}\n# was: ", 1)
        path = tmp_path / "study.toml"
        path.write_text(top + text + tail, "utf-8")
        return path

    return write


def refused(runner, tmp_path, *args: str) -> str:
    """Runs the command; it must exit with status 1, one line, and write nothing."""
    out = tmp_path / "runs"
    result = runner.invoke(main, ["finetune", *args, "--output-dir", str(out)])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert "Traceback" not in result.output
    assert not out.exists()  # nothing written: no run folder, no work folder, no study file
    return lines[0]


def toy_tokens(text: str, finetune_inputs) -> list[str]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(finetune_inputs["base"])
    return tokenizer.convert_ids_to_tokens(tokenizer(text)["input_ids"])


def test_a_verbalizer_of_several_tokens_is_refused_naming_the_field(runner, tmp_path, study, finetune_inputs):
    pieces = toy_tokens(" Nope", finetune_inputs)
    assert len(pieces) > 1  # the toy tokenizer has no token for it
    shown = ", ".join(repr(p) for p in pieces)
    path = study('verbalizer = [" Yes", " Nope"]\n')
    line = refused(runner, tmp_path, str(path))
    assert line == (
        f"Error: {path}: verbalizer: ' Nope' is {len(pieces)} tokens ({shown}) after the pattern for this tokenizer: "
        f"choose verbalizers that are one token each ({finetune_inputs['base']})"
    )
    # Given as a flag, the flag is named.
    line = refused(runner, tmp_path, str(study()), "--verbalizer", " Nope,No")
    assert line.startswith("Error: --verbalizer: ' Nope' is ")


def test_a_verbalizer_in_one_run_is_named_with_its_entry(runner, tmp_path, study):
    path = study(tail='[[runs]]\nname = "a"\n[[runs]]\nname = "b"\nverbalizer = " Yes,Nope"\n')
    assert refused(runner, tmp_path, str(path)).startswith(f"Error: {path}: runs[2].verbalizer: ' Nope' is ")


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("{hypothesis} ?", "'{hypothesis} ?' has no {premise}: a pattern needs both fields"),
        ("{premise} ?", "'{premise} ?' has no {hypothesis}"),
        ("{premise} {claim} ?", "'{premise} {claim} ?': unknown field {claim}; a pattern has {premise} and "
         "{hypothesis}"),
    ],
)  # fmt: skip
def test_a_pattern_without_both_placeholders_is_refused(runner, tmp_path, study, pattern, message):
    path = study(f'pattern = "{pattern}"\n')
    assert refused(runner, tmp_path, str(path)) == f"Error: {path}: pattern: {message}"
    assert refused(runner, tmp_path, str(study()), "--pattern", pattern) == f"Error: --pattern: {message}"


def test_more_shots_than_the_training_split_has_is_refused(runner, tmp_path, study, finetune_inputs):
    split = finetune_inputs["data"] / "toy_nli.train.jsonl"
    too_many = FINETUNE_ROWS + 1
    line = refused(runner, tmp_path, str(study()), "--shots", "8", "--shots", str(too_many))
    assert line == f"Error: --shots: {too_many} shots, but the training split has {FINETUNE_ROWS} rows ({split})"
    path = study(shots=f"[{too_many}]")
    line = refused(runner, tmp_path, str(path))
    assert line == f"Error: {path}: shots: {too_many} shots, but the training split has {FINETUNE_ROWS} rows ({split})"


def test_more_balanced_shots_than_one_answer_has_is_refused(runner, tmp_path, study):
    data = tmp_path / "data"
    data.mkdir()
    rows = [(f"p{i}", f"h{i}", 0 if i < 3 else 1) for i in range(10)]  # 3 entailed, 7 not
    split = data / "toy_nli.train.jsonl"
    split.write_text("".join(f'{{"premise": "{p}", "hypothesis": "{h}", "label": {a}}}\n' for p, h, a in rows))
    line = refused(runner, tmp_path, str(study()), "--data-dir", str(data), "--shots", "8", "--balanced")
    assert line == f"Error: --balanced: 8 class-balanced shots need 4 entailed rows; the split has 3 ({split})"


def test_the_training_and_lora_arguments_are_checked_before_training(runner, tmp_path, study):
    path = study(tail="learning_rat = 1\n")  # in the study's [training] table
    line = refused(runner, tmp_path, str(path))
    assert line == f"Error: {path}: training.learning_rat: not an argument of transformers.TrainingArguments; did " \
        "you mean learning_rate?"  # fmt: skip
    line = refused(runner, tmp_path, str(study()), "--method", "lora", "--lora", "rank=4")
    assert line == "Error: --lora: rank: not an argument of peft.LoraConfig"
    line = refused(runner, tmp_path, str(study()), "--schedule", "manual:5")
    assert line == "Error: --schedule: step 5 is after the run's last step (2)"


def test_a_missing_extra_is_named(runner, tmp_path, study, monkeypatch):
    monkeypatch.setitem(sys.modules, "peft", None)  # import peft fails, as where it is not installed
    line = refused(runner, tmp_path, str(study()), "--method", "lora")
    assert line == 'Error: finetuning needs peft: install the finetune extra, pip install -e ".[finetune]"'


def test_a_training_split_that_does_not_fit_is_named_by_line(runner, tmp_path, study):
    data = tmp_path / "data"
    data.mkdir()
    (data / "toy_nli.train.jsonl").write_text('{"premise": "a", "hypothesis": "b", "label": 0}\n'
                                               '{"premise": "a", "hypothesis": "b", "label": 2}\n')  # fmt: skip
    line = refused(runner, tmp_path, str(study()), "--data-dir", str(data))
    assert line == f"Error: {data / 'toy_nli.train.jsonl'}: line 2.label: expected 0 (entailed) or 1 (not entailed), " \
        "got 2"  # fmt: skip
