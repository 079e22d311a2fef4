"""Which run and step a results file belongs to (the rules in ingest/identity.py)."""

from __future__ import annotations

import pytest

from ood_store.ingest.identity import Overrides, identify, parse_model_args, step_in


def ident(model_args, config=None, top=None, **overrides):
    config = {"model_args": model_args, **(config or {})}
    return identify(parse_model_args(model_args), config, top or {}, Overrides(**overrides))


@pytest.mark.parametrize(
    ("name", "step"),
    [
        ("step1000", 1000),
        ("step-1000", 1000),
        ("step_1000", 1000),
        ("global_step1000", 1000),
        ("checkpoint-1000", 1000),
        ("ckpt_20", 20),
        ("stage1-step140000-tokens587B", 140000),  # OLMo / OLMo 2 hub revisions
        ("main", None),
        ("v1.0", None),
        ("pythia-160m", None),
        ("stepwise", None),
        ("", None),
        (None, None),
    ],
)
def test_step_in_names(name, step):
    assert step_in(name) == step


def test_revision_names_the_step_and_the_model_is_the_run():
    got = ident("pretrained=EleutherAI/pythia-160m,revision=step3000,dtype=float16")
    assert (got.run, got.step, got.source) == ("EleutherAI/pythia-160m", 3000, "revision")
    assert got.base_model == "EleutherAI/pythia-160m" and got.revision == "step3000"


@pytest.mark.parametrize(
    ("path", "run", "step"),
    [
        ("/scratch/opt-mnli-s1/checkpoint-500", "/scratch/opt-mnli-s1", 500),
        ("runs/opt-mnli-s1/checkpoint-500/", "runs/opt-mnli-s1", 500),
        ("runs/smollm/step-40", "runs/smollm", 40),
        ("runs/smollm/step40", "runs/smollm", 40),
        ("ckpts/olmo/global_step1200", "ckpts/olmo", 1200),
    ],
)
def test_checkpoint_path_names_run_and_step(path, run, step):
    got = ident(f"pretrained={path}")
    assert (got.run, got.step, got.source, got.model) == (run, step, "path", path.rstrip("/"))


def test_dict_model_args():
    got = ident({"pretrained": "allenai/OLMo-2-1124-7B", "revision": "stage1-step5000-tokens21B"})
    assert (got.run, got.step) == ("allenai/OLMo-2-1124-7B", 5000)


def test_model_revision_from_config_when_model_args_has_none():
    got = ident("pretrained=EleutherAI/pythia-410m", config={"model_revision": "step143000"})
    assert (got.run, got.step, got.revision) == ("EleutherAI/pythia-410m", 143000, "step143000")
    main = ident("pretrained=EleutherAI/pythia-410m", config={"model_revision": "main"})
    assert (main.step, main.revision) == (None, None)


def test_final_model_has_no_step():
    got = ident("pretrained=facebook/opt-1.3b,dtype=bfloat16")
    assert (got.run, got.step, got.source) == ("facebook/opt-1.3b", None, "model")


def test_null_model_args_falls_back_to_model_name():
    got = ident(None, top={"model_name": "my-model/checkpoint-7"})
    assert (got.run, got.step) == ("my-model", 7)


def test_nothing_named_gives_none():
    assert ident(None) is None


def test_peft_adapter_path_is_the_checkpoint():
    got = ident("pretrained=facebook/opt-1.3b,peft=/runs/opt-lora-mnli/checkpoint-300")
    assert (got.run, got.step, got.base_model) == ("/runs/opt-lora-mnli", 300, "facebook/opt-1.3b")


def test_overrides_win():
    got = ident("pretrained=runs/a/checkpoint-5", run="opt-mnli-seed1")
    assert (got.run, got.step, got.source) == ("opt-mnli-seed1", 5, "path+flags")
    got = ident("pretrained=runs/a/checkpoint-5", run="r", step=9)
    assert (got.run, got.step, got.source) == ("r", 9, "flags")
    got = ident(None, model="runs/b/step-12")
    assert (got.run, got.step) == ("runs/b", 12)


def test_model_args_strings_parse_like_lm_eval():
    assert parse_model_args("pretrained=x,revision=step1,trust_remote_code=True") == {
        "pretrained": "x",
        "revision": "step1",
        "trust_remote_code": True,
    }
    assert parse_model_args(None) == {}
    with pytest.raises(TypeError):
        parse_model_args(3)
